"""Slots: single-select extension points where exactly one provider is active, by config.

One mechanism for every slot (`context_engine`, `memory`, and any a host declares): providers
register by name, the config picks one, and each agent session gets its own instance.
"""

from __future__ import annotations

import copy
import inspect
import logging
import threading
from typing import Any

import attrs

from .._config.config import Config
from .._errors import (
    ProviderConflictError,
    ProviderCopyError,
    RegistrationError,
    SlotError,
    UnknownProviderError,
    owner,
)
from .._hermes import names as hermes_names
from .._runtime.invoke import contained
from .._undo import Undo, put
from .declarations import BUILTIN_SLOTS, SlotDecl

__all__ = ["SlotRegistry", "SlotProvider", "SlotDecl"]

log = logging.getLogger("hermes_core.slots")


class _Lease:
    """A registered instance lent to one session at a time."""

    __slots__ = ("lock", "lent")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lent = False


@attrs.frozen
class SlotProvider:
    """A provider registered in a slot: a class or factory (called per session) or an
    instance (deep-copied per session; one that cannot be copied, holding a lock or a
    connection, is lent to one session at a time, as Hermes uses the one instance), the plugin
    it came from, and whether that plugin is built in (the host hands its own settings and
    summariser to built-in engines only)."""

    slot: str
    name: str
    provider: Any = attrs.field(repr=False)
    plugin_id: str | None
    builtin: bool = attrs.field(default=False, kw_only=True)
    # a class accepted by its shape: the class with the slot's base behind it, which sessions get
    adapted: type | None = attrs.field(default=None, kw_only=True, repr=False)
    # the folder its plugin was found in, when it is a folder plugin (the slot selects it by that name too)
    folder: str | None = attrs.field(default=None, kw_only=True)
    # whether the uncopyable registered instance is lent to a session (see new_instance)
    _lease: _Lease = attrs.field(factory=lambda: _Lease(), init=False, eq=False, repr=False)

    @property
    def style(self) -> str:
        if inspect.isclass(self.provider):
            return "class"
        if inspect.isfunction(self.provider) or inspect.ismethod(self.provider):
            return "factory"
        return "instance"

    def new_instance(self) -> Any:
        """A fresh provider for one agent session. An instance is deep-copied; one that cannot
        be (it holds a lock, a socket, a client) is itself lent to the session, as Hermes uses
        the one instance it was given, until `release` gives it back."""
        who = f"{self.slot} provider {self.name!r} of {owner(self.plugin_id)}"
        if self.style == "instance":
            try:
                return copy.deepcopy(self.provider)
            except BaseException as exc:  # noqa: BLE001 - reported with the fix
                contained(exc)
                with self._lease.lock:
                    if not self._lease.lent:
                        self._lease.lent = True
                        log.debug("%s cannot be copied (%s: %s); this session uses the registered instance",
                                  who, type(exc).__name__, exc)
                        return self.provider
                raise ProviderCopyError(
                    f"{who} was registered as an instance that cannot be copied ({type(exc).__name__}: {exc}), "
                    "and another open session is using it; close that session, or make the provider "
                    "copyable (define __deepcopy__) or register its class (or a factory) instead"
                ) from exc
        try:
            return (self.adapted or self.provider)()
        except BaseException as exc:  # noqa: BLE001
            contained(exc)
            raise SlotError(f"{who} could not be created: {type(exc).__name__}: {exc}") from exc


    def release(self, instance: Any) -> None:
        """A session is done with `instance`: the registered instance, if it was lent, is free again."""
        if instance is self.provider:
            with self._lease.lock:
                self._lease.lent = False


def _lacks(provider: Any, member: str) -> bool:
    try:
        value = getattr(provider, member, None)
    except Exception:  # noqa: BLE001 - a stand-in's property that raises NotImplementedError
        return True
    return value is None or bool(getattr(value, "__isabstractmethod__", False))


class _FromInstance:
    """An abstract member of the base that a provider sets on its instances (`self.name = ...` in
    `__init__`): a non-data descriptor, so the instance's own value is found first."""

    def __init__(self, member: str) -> None:
        self.member = member

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        raise AttributeError(f"{type(obj).__name__!r} object has no attribute {self.member!r}")


_ADAPTED: dict[tuple[type, type], type] = {}


def _adapted(cls: type, base: type) -> type:
    """`cls` with `base` behind it: the base's optional members and defaults where `cls` has none
    (made once per class, so that every session's instance has the same class). `cls` was
    accepted by its shape, so nothing of the base is abstract in it any more."""
    if (cls, base) not in _ADAPTED:
        on_instances = {m: _FromInstance(m) for m in getattr(base, "__abstractmethods__", ()) if _lacks(cls, m)}
        adapted = type(cls.__name__, (cls, base), {
            "__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
            "__hermes_core_adapted_from__": cls, **on_instances})
        setattr(adapted, "__abstractmethods__", frozenset())  # noqa: B010 - mypy knows no such attribute
        _ADAPTED[cls, base] = adapted
    return _ADAPTED[cls, base]


def _import_path(base: type) -> str:
    """Where a plugin imports `base` from: its public module, or `hermes_core` for a re-export."""
    module = base.__module__
    if module.startswith("hermes_core") and any(part.startswith("_") for part in module.split(".")):
        module = "hermes_core"
    return f"{module}.{base.__qualname__}"


def conform(provider: Any, decl: SlotDecl, plugin_id: str | None) -> Any:
    """`provider` as a provider of `decl`'s slot. One that derives from the slot's base is
    itself. One that has every abstract member of the base without deriving from it (its
    plugin subclassed a stand-in for Hermes' class) is accepted, adapted so that the base's
    optional members and defaults are there too. Anything else is a `RegistrationError`
    naming the members it lacks and the bases it has. Factories are checked when called."""
    base = decl.base_class()
    if base is None or inspect.isfunction(provider) or inspect.ismethod(provider):
        return provider
    cls: type = provider if inspect.isclass(provider) else type(provider)
    if issubclass(cls, base):
        return provider
    abstract = sorted(getattr(base, "__abstractmethods__", ()))
    # `name` is often set in __init__: on a class it is read (or refused) when its name is asked for
    missing = [m for m in abstract if _lacks(provider, m) and not (m == "name" and provider is cls)]
    if missing or not abstract:  # a base with no abstract members has no shape to match: derive from it
        bases = ", ".join(f"{b.__module__}.{b.__qualname__}" for b in cls.__mro__[1:-1]) or "object only"
        lacks = f"it lacks {', '.join(missing)}" if missing else "it does not derive from it"
        hermes = hermes_names.hermes_name(base)
        raise RegistrationError(
            f"{owner(plugin_id)} registered {cls.__module__}.{cls.__qualname__} in slot {decl.name!r}, but it is "
            f"not a {base.__name__}: {lacks} (its bases: {bases}); derive it from {_import_path(base)}"
            + (f" (Hermes plugins get it as {hermes})" if hermes else "")
            + (" or define what it lacks" if missing else ""),
            plugin_id=plugin_id,
        )
    try:
        adapted = _adapted(cls, base)
    except TypeError:  # a metaclass or layout that cannot mix with the base: used as it is
        return provider
    if provider is cls:
        return adapted
    try:
        provider.__class__ = adapted
    except TypeError:  # a __slots__ layout the adapted class cannot take
        pass
    return provider


def provider_name(provider: Any, name: str | None, slot: SlotDecl, plugin_id: str | None) -> str:
    """The name a provider registers under: `name=`, else its `name` attribute."""
    if name is None:
        value: Any = getattr(provider, "name", None)
        if inspect.isclass(provider) and not isinstance(value, str):
            try:  # a `name` property: ask a throwaway instance
                throwaway: Any = provider()
                value = throwaway.name
            except BaseException as exc:  # noqa: BLE001
                contained(exc)
                raise RegistrationError(
                    f"{owner(plugin_id)} registered a {slot.name} provider class {provider.__name__} whose name "
                    f"cannot be read without arguments ({type(exc).__name__}: {exc}); give the class a `name` "
                    "class attribute, or pass name=",
                    plugin_id=plugin_id,
                ) from exc
        name = value
    if not isinstance(name, str) or not name.strip():
        raise RegistrationError(
            f"{owner(plugin_id)} registered a {slot.name} provider without a name; "
            "give it a `name` attribute or pass name=",
            plugin_id=plugin_id,
        )
    return name.strip()


class SlotRegistry:
    """Every declared slot and the providers registered in it."""

    def __init__(self, slots: tuple[SlotDecl, ...] = BUILTIN_SLOTS) -> None:
        self._decls: dict[str, SlotDecl] = {}
        self._providers: dict[str, dict[str, SlotProvider]] = {}
        self._lock = threading.Lock()
        for decl in slots:
            self.declare(decl)

    def declare(self, decl: SlotDecl) -> None:
        """Declare a slot (a host may add its own: `SlotDecl("sandbox", "sandbox.provider", base=Sandbox)`)."""
        with self._lock:
            self._decls[decl.name] = decl
            self._providers.setdefault(decl.name, {})

    def decl(self, slot: str) -> SlotDecl:
        try:
            return self._decls[slot]
        except KeyError:
            raise SlotError(f"unknown slot {slot!r} (declared slots: {', '.join(sorted(self._decls))})") from None

    @property
    def declared(self) -> tuple[SlotDecl, ...]:
        return tuple(self._decls.values())

    def add(
        self, slot: str, provider: Any, plugin_id: str | None = None, *, name: str | None = None, builtin: bool = False,
        folder: str | None = None,
    ) -> Undo:
        """Register `provider` in `slot`; returns the function that undoes it.

        A name already taken raises `ProviderConflictError` naming both plugins; the first stays.
        """
        decl = self.decl(slot)
        conformed = conform(provider, decl, plugin_id)
        adapted = conformed if conformed is not provider else None  # only ever a class: instances adapt in place
        entry = SlotProvider(slot, provider_name(conformed, name, decl, plugin_id), provider, plugin_id,
                             builtin=builtin, adapted=adapted, folder=folder)
        with self._lock:
            existing = self._providers[slot].get(entry.name)
            if existing is not None:
                raise ProviderConflictError(
                    f"{slot} provider {entry.name!r} of {owner(plugin_id)} was rejected: the name is already "
                    f"registered by {owner(existing.plugin_id)}, which stays"
                )
            return put(self._providers[slot], entry.name, entry, self._lock)

    def providers(self, slot: str) -> list[SlotProvider]:
        self.decl(slot)
        return sorted(self._providers[slot].values(), key=lambda p: p.name)

    def names(self, slot: str) -> list[str]:
        return [p.name for p in self.providers(slot)]

    def select(self, slot: str, config: Config) -> SlotProvider | None:
        """The provider the config selects for `slot`.

        A configured name that nothing provides raises `UnknownProviderError` (naming the slot,
        the key and what is available). With nothing configured, the slot's default is used
        if it is provided, else the slot is inactive (None).
        """
        decl = self.decl(slot)
        configured = config.get(decl.config_key)
        if configured is not None and not isinstance(configured, str):
            raise SlotError(f"{decl.config_key} must be a provider name (a string), not {configured!r}")
        name = (configured or "").strip()
        if name:
            found = self._providers[slot].get(name) or self._by_plugin(slot, name)
            if found is None:
                raise UnknownProviderError(slot, decl.config_key, name, self.names(slot))
            return found
        if decl.default:
            return self._providers[slot].get(decl.default)
        return None

    def _by_plugin(self, slot: str, name: str) -> SlotProvider | None:
        """The one provider of `slot` that plugin `name` (its id, the id's last part, or its folder's
        name) registered: Hermes selects a memory provider by its plugin's folder (`memory.provider:
        local_memory` picks the folder `plugins/local_memory`, whatever its provider calls itself)."""
        mine = [p for p in self._providers[slot].values()
                if p.plugin_id is not None and name in (p.plugin_id, p.plugin_id.rpartition("/")[2], p.folder)]
        return mine[0] if len(mine) == 1 else None

    def create(self, slot: str, config: Config) -> Any:
        """A new instance of the selected provider of `slot` for one agent session (or None)."""
        selected = self.select(slot, config)
        return selected.new_instance() if selected is not None else None
