"""Slot providers the slot tests' plugins import: a context engine and a host's own slot base class."""

from __future__ import annotations

from hermes_core import ContextEngine


class Lossless(ContextEngine):
    name = "lcm"

    def __init__(self):
        self.turns = []

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None):
        return messages


class Engine:
    """A base class a host declares for its own slot."""
