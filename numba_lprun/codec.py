"""Frozen dataclasses to JSON and back, driven by their type hints.

Why generic: the profile is a tree of small frozen dataclasses (functions, lines'
code, notes, the sampling summary). Renderer and diagnosis tests build profiles
from small JSON fixtures instead of compiling Numba code, and a profile can be
saved and shown later; one codec that follows the type hints keeps every field
covered without a hand-written pair of functions per class. JSON object keys are
strings, so keys typed ``int`` are converted back on the way in.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from typing import Any


def to_data(value: Any) -> Any:
    """``value`` as JSON-ready data (dicts, lists, strings, numbers, None)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return [to_data(v) for v in items]
    return value


def from_data(cls: type, data: Any) -> Any:
    """An instance of dataclass ``cls`` from :func:`to_data`'s output."""
    return _build(cls, data)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build(hint: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return _build(options[0], data) if len(options) == 1 else data
    if dataclasses.is_dataclass(hint):
        hints = _hints(hint)
        known = {f.name for f in dataclasses.fields(hint) if f.init}
        return hint(**{k: _build(hints[k], v) for k, v in data.items() if k in known})
    if origin is dict:
        key, val = args
        return {_build(key, k): _build(val, v) for k, v in data.items()}
    if origin in (tuple, list, set, frozenset):
        item = args[0] if args else Any
        built = [_build(item, v) for v in data]
        return origin(built)
    if hint is int:
        return int(data)
    if hint is float:
        return float(data)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(data)
    return data
