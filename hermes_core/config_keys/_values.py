"""What a config key is (`Key`) and what its value may be: the checks the table in
`hermes_core.config_keys` is written with. Imports nothing beyond `typing`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Key(Generic[T]):
    """One config key: its dotted `name`, what its value must be, its `default`, its `help`.

    `free` keys hold a mapping whose contents are the operator's or a plugin's own (a
    plugin's settings, a price table): their inside is never checked against the table.
    """

    __slots__ = ("name", "parts", "expected", "_convert", "default", "help", "free", "_ids")

    def __init__(self, name: str, expected: str, convert: Callable[[Any], T], default: T, help: str, *,
                 free: bool = False) -> None:
        self.name = name
        self.parts = tuple(name.split("."))
        self._ids = self.parts.count("*")  # how many ids `path` takes
        self.expected = expected
        self._convert = convert
        self.default = default
        self.help = help
        self.free = free

    def __repr__(self) -> str:
        return f"Key({self.name!r}, default={self.default!r})"

    def path(self, *ids: str) -> tuple[str, ...]:
        """The key's parts with each `*` filled by the next of `ids`."""
        if not ids and not self._ids:  # most keys: read many times a turn
            return self.parts
        given = iter(ids)
        try:
            parts = tuple(next(given) if part == "*" else part for part in self.parts)
        except StopIteration:
            raise TypeError(f"config key {self.name} needs {self.parts.count('*')} id(s), got {len(ids)}") from None
        if next(given, None) is not None:
            raise TypeError(f"config key {self.name} takes {self.parts.count('*')} id(s), got {len(ids)}")
        return parts

    def convert(self, value: Any) -> T:
        """`value` as this key's type; `ValueError` when it is not one."""
        return self._convert(value)


# -- what a value may be ------------------------------------------------------------------

def _seconds(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError
    return float(value)


def _ratio(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ValueError
    return float(value)


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError
    return value


def _positive(value: Any) -> int:
    if _count(value) < 1:
        raise ValueError
    return int(value)


def _text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError
    return str(value).strip()


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError
    return value


def _names(value: Any) -> list[str]:
    if isinstance(value, str) or not isinstance(value, list):
        raise ValueError
    if not all(isinstance(item, (str, int, float)) and not isinstance(item, bool) for item in value):
        raise ValueError
    return [str(item).strip() for item in value]


def _mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError
    return value


def _entries(value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise ValueError
    return value


def _anything(value: Any) -> Any:
    return value


def _one_of(*choices: str) -> Callable[[Any], str]:
    """A value that must be one of `choices`."""
    def convert(value: Any) -> str:
        if value not in choices:
            raise ValueError
        return str(value)

    return convert


SECONDS, RATIO, COUNT, POSITIVE = "a number of seconds, 0 or more", "a fraction above 0 and at most 1", \
    "a whole number, 0 or more", "a whole number, 1 or more"
TEXT, FLAG, NAMES, MAPPING = "a string", "true or false", "a list of strings", "a mapping"
_EMPTY: Mapping[str, Any] = {}
