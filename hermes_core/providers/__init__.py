"""The base classes of the host-subsystem slots: web search, image and video generation, cloud
browser, speech in and out, terminal backends and secret sources.

They are Hermes Agent's provider classes with the same names, abstract members, optional members
and defaults, so a provider written for Hermes is one here, and a Hermes plugin importing
`agent.web_search_provider` (and the other Hermes modules) gets these classes. Each slot
(`web_search`, `image_gen`, ...) accepts a subclass, or any class that has every abstract
member of its base (see docs/hermes.md); the config (`<slot>.provider`) picks the active one.

>>> from hermes_core.providers import WebSearchProvider
>>> class Quick(WebSearchProvider):
...     name = "quick"
...     def is_available(self): return True
...     def search(self, query, limit=5):
...         return {"success": True, "data": {"web": []}}

One module per family: `_base` (what every provider has), `_media` (search, images, video,
browser, speech), `_terminal`, `_secrets`; Hermes' default values in `_defaults`.
"""

from __future__ import annotations

from ._base import CatalogProviderBase, ProviderBase
from ._media import (
    BrowserProvider, ImageGenProvider, TranscriptionProvider, TTSProvider, VideoGenProvider, WebSearchProvider,
)
from ._secrets import ErrorKind, FetchResult, SecretSource
from ._terminal import TerminalEnvironmentProvider

__all__ = [
    "BrowserProvider",
    "CatalogProviderBase",
    "ErrorKind",
    "FetchResult",
    "ImageGenProvider",
    "ProviderBase",
    "SecretSource",
    "TTSProvider",
    "TerminalEnvironmentProvider",
    "TranscriptionProvider",
    "VideoGenProvider",
    "WebSearchProvider",
]

# The classes are defined one family per module, but named (in messages, reprs and pickles) where
# plugins import them from.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
