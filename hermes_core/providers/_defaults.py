"""Hermes' default values for its provider classes, which its modules also export under their own
names (`agent.image_gen_provider.DEFAULT_ASPECT_RATIO`, ...): one home for both."""

from __future__ import annotations

__all__ = ["API_VERSION", "ASPECTS", "FETCH_TIMEOUT", "IMAGE_ASPECT", "RESOLUTION", "RESOLUTIONS", "VIDEO_ASPECT"]

API_VERSION = 1
FETCH_TIMEOUT = 120.0
IMAGE_ASPECT = "landscape"
VIDEO_ASPECT = "16:9"
RESOLUTION = "720p"
ASPECTS = ("16:9", "9:16", "1:1", "4:3", "3:4", "3:2", "2:3", "21:9")
RESOLUTIONS = ("480p", "540p", "720p", "768p", "1080p")
