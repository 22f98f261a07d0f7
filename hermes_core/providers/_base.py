"""What every provider has (`ProviderBase`), and a provider with a model catalog (`CatalogProviderBase`)."""

from __future__ import annotations

import abc
from typing import Any

__all__ = ["CatalogProviderBase", "ProviderBase"]


class ProviderBase(abc.ABC):
    """What every provider has: a `name` (its config value and registry key), a
    `display_name`, and a row for setup pickers."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """Stable lowercase id (hyphens allowed): the value `<slot>.provider` selects."""

    @property
    def display_name(self) -> str:
        """The label shown to people; `name` by default."""
        return self.name

    def get_setup_schema(self) -> dict[str, Any]:
        """The picker row: `{"name", "badge", "tag", "env_vars": [{"key", "prompt", "url"}, ...]}`."""
        return {"name": self.display_name, "badge": "", "tag": "", "env_vars": []}


class CatalogProviderBase(ProviderBase):
    """A provider with a model catalog: available unless it says otherwise, title-cased label."""

    @property
    def display_name(self) -> str:
        return self.name.title()

    def is_available(self) -> bool:
        """Whether it can serve calls (key set, SDK importable). Must not raise or touch the network."""
        return True

    def list_models(self) -> list[dict[str, Any]]:
        """The catalog: `{"id", "display", ...}` entries; `[]` by default."""
        return []

    def default_model(self) -> str | None:
        """The `id` of the first catalog entry, or None."""
        models = self.list_models()
        return models[0].get("id") if models else None
