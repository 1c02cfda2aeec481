"""A twin's identity: the key its compiled code is cached under, and the names it uses.

The key is a digest of what the twin is compiled from, known before it compiles:
its kind, code object, the name of the module it runs in (Numba's pickle names the
module to rebuild the code's environment from: a script's twin as ``__main__`` and as
an imported ``par`` are two entries, never one loaded for the other), defaults, target
options, ``locals``, compiler pipeline, probe configuration and the versions of
everything that generates code (``disk_cache.code_version``). What it reaches through
its globals is only known once the twins are linked, so that part joins the key at
compile time (``twin_cache.TwinRules.key``).

The key also names the twin's symbols: its counters (``_nlp_ctr_<tag>``) and its
functions' ABI tag. Two twins with the same key alive in one process (two
profilers of one function, closures made in a loop) must not share a counters
symbol, so the k-th of them is tagged with ``n<k>`` (``name_twin``).
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import linecache
import types as pytypes
import weakref
from dataclasses import dataclass

from ..internals import tag_in_symbols, use_disk_cache
from . import disk_cache
from . import probes as P
from .fingerprint import code_digest, describe, remember_twin, token_of
from .twin_cache import cache_for, no_cache, no_cache_like

_TAG_CHARS = 20
_live: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # tag -> twin dispatcher
_serial = itertools.count(1)


@dataclass(frozen=True)
class TwinNaming:
    """The key of one twin, and the tag its symbols carry."""

    key: str | None  # None: some input has no stable description (never cached)
    tag: str
    canonical: bool  # the tag is the key's own: the twin's code may be cached

    @property
    def token(self) -> str | None:
        """What the twin's cache key and its callers' keys record about it (None: not cached)."""
        return f"{self.key}:{self.tag}" if self.canonical else None


def twin_key(
    kind: str,
    py_func: pytypes.FunctionType,
    options: dict,
    locals_: dict,
    pipeline: type,
    slot: P.CounterSlot | None,
) -> str | None:
    """The digest of what the twin compiles from (None when something has no stable description)."""
    parts = [
        "twin-1",
        kind,
        code_digest(py_func.__code__),
        f"module={py_func.__globals__.get('__name__')!r}",
        describe(py_func.__defaults__),
        describe(py_func.__kwdefaults__),
        describe(options),
        describe(locals_),
        f"{pipeline.__module__}.{pipeline.__qualname__}",
        slot.config if slot is not None else "no probes",
        disk_cache.code_version(),
    ]
    if any(part is None for part in parts):
        return None
    return hashlib.sha256("|".join(parts).encode()).hexdigest()


def name_twin(key: str | None, slot: P.CounterSlot | None) -> TwinNaming:
    """Choose the tag (and counters symbol) of a twin about to be built.

    The first live twin of a key is tagged ``nlp<key>``, the k-th one alive at the
    same time ``nlp<key>n<k>``: the numbering repeats when a program makes the
    same twins in the same order (a closure made in a loop, a script run again),
    so each of them finds its code in the cache.
    """
    if key is None:
        if slot is not None:
            slot.bind(None)
        return TwinNaming(None, f"nlpanonx{next(_serial)}", False)
    stem = key[:_TAG_CHARS]
    for k in itertools.count(1):
        tag = f"nlp{stem}" if k == 1 else f"nlp{stem}n{k}"
        if tag not in _live and not P.symbol_taken(tag[3:]):
            break
    if slot is not None:
        slot.bind(tag[3:])
    return TwinNaming(key, tag, slot is None or slot.canonical)


def register(dispatcher: object, py_func: pytypes.FunctionType, naming: TwinNaming) -> None:
    """Keep the tag taken while ``dispatcher`` lives, and give it its disk cache when it may have one."""
    _live[naming.tag] = dispatcher
    remember_twin(dispatcher, naming.token)
    if naming.key is None:
        no_cache(dispatcher, "something it is compiled from (defaults, options) has no stable description")
    elif not naming.canonical:
        no_cache(dispatcher, "another live twin of the same code holds its counters' name")
    elif py_func.__code__.co_flags & inspect.CO_GENERATOR:
        # Numba registers a generator's implementation with its target context when it compiles
        # one, not when it loads one from a cache: a jitted consumer compiled after a load failed
        # (KeyError in get_generator_impl), raising into the user's program
        no_cache(dispatcher, "a generator loaded from a cache cannot be consumed by code compiled after it")
    else:
        cache = cache_for(py_func, naming.token)
        if cache is not None:
            use_disk_cache(dispatcher, cache)
        elif linecache.getlines(py_func.__code__.co_filename):
            no_cache(dispatcher, "Numba cannot place its cache files")
        else:
            no_cache(dispatcher, "its source cannot be read again to tell when it changes")


def symbol_mark(dispatcher: object) -> str:
    """What every symbol of ``dispatcher``'s code carries, a live twin's tag as Numba spells it in
    a name (``""``: no live twin's): code of its lines inlined elsewhere is its own only where
    the inlined function's name has it (another dispatcher of the same ``def`` has other code)."""
    for tag, twin in list(_live.items()):
        if twin is dispatcher:
            return tag_in_symbols(tag)
    return ""


def share_identity(dispatcher: object, model: object) -> None:
    """``dispatcher``, a twin, compiles ``model``'s code from now on (``internals.compile_as``):
    its callers' keys describe it as ``model``, and its code is cached, or not, as ``model``'s."""
    remember_twin(dispatcher, token_of(model))
    no_cache_like(dispatcher, model)
