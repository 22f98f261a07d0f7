"""What a host's facade (the `PluginManager`) shows of its loader: `LoaderPart`, one of the
loader's registries as a property that loads the plugins first."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast, overload

if TYPE_CHECKING:
    from .loader import Loader

__all__ = ["LoaderPart"]

T = TypeVar("T")


class Facade(Protocol):
    """A host's facade over a loader (a `PluginManager`)."""

    @property
    def _loader(self) -> Loader: ...

    def _ensure_loaded(self) -> None: ...


class LoaderPart(Generic[T]):
    """The loader's attribute `name` (through `view`, when given) as a read-only property of a
    facade, read once the plugins are loaded:
    `commands = LoaderPart[CommandRegistry]("commands", "Every slash command.")`."""

    def __init__(self, name: str, doc: str, view: Callable[[Any], T] | None = None) -> None:
        self.name, self.view = name, view
        self.__doc__ = doc

    @overload
    def __get__(self, facade: None, owner: type[Any]) -> LoaderPart[T]: ...

    @overload
    def __get__(self, facade: Facade, owner: type[Any]) -> T: ...

    def __get__(self, facade: Facade | None, owner: type[Any]) -> LoaderPart[T] | T:
        if facade is None:
            return self
        facade._ensure_loaded()
        part = getattr(facade._loader, self.name)
        return self.view(part) if self.view is not None else cast(T, part)
