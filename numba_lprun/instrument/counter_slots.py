"""The symbols through which a twin's probes reach its counters (see ``probes``).

The counters' address is not in the code: the probes name an external symbol, registered
with the JIT before the twin compiles, whose linker writes the address into the code when
it loads it, fresh or from the disk cache. Names derived from the twin's cache key are the
same in every process, so cached code fits; a name is only reused once the code using it
is gone.
"""

from __future__ import annotations

import itertools
import re
import weakref

from ..internals import register_symbol

SYMBOL_PREFIX = "_nlp_ctr_"
_taken: weakref.WeakValueDictionary[str, CounterSlot] = weakref.WeakValueDictionary()
_serial = itertools.count(1)
_CANONICAL = re.compile(SYMBOL_PREFIX + r"([0-9a-f]{20})(?:n\d+)?")


def symbol_taken(stem: str) -> bool:
    """Whether a live slot holds the symbol ``bind(stem)`` would choose."""
    return SYMBOL_PREFIX + stem in _taken


def symbols_in(object_code: bytes) -> frozenset[str]:
    """The counters symbols that object code names (in its symbol table)."""
    return frozenset(m.decode() for m in re.findall(rb"_nlp_ctr_[0-9A-Za-z_]+", object_code))


def may_keep(symbol: str) -> bool:
    """Whether code naming ``symbol`` may be cached: a key-derived name, which a later process
    gives the same twin (one-off names are given to whoever asks next)."""
    return _CANONICAL.fullmatch(symbol) is not None


def resolves_as_meant(symbol: str, *, reached_by_name: bool) -> bool:
    """Whether cached code naming ``symbol`` would reach the counters it was compiled for.

    A live twin must hold the name (else loading the code aborts the process:
    LLVM cannot resolve it). Code that reached the twin by name was keyed by that
    twin; code that reached it otherwise (a jitclass member, an overload) is only
    sure to mean this one when no other live twin has the same key.
    """
    match = _CANONICAL.fullmatch(symbol)
    if match is None or symbol not in _taken:
        return False
    if reached_by_name:
        return True
    stem = SYMBOL_PREFIX + match.group(1)
    return sum(1 for name in list(_taken.keys()) if name.startswith(stem)) == 1


class CounterSlot:
    """The symbol through which one twin's probes reach its counters.

    ``bind(stem)`` names it ``_nlp_ctr_<stem>`` (the twin's cache key, so the same
    twin compiled in another process names the same symbol and its cached code
    fits) and registers the counters' address under that name. A name stays taken
    while its slot lives (the twin's globals and intrinsics hold it): binding a
    taken name (or none) gives a serial suffix instead, and ``canonical`` says the
    code must not be cached (``twin_identity.name_twin`` picks free names). Code
    loaded later resolves the name to the address registered then, so a name is
    only reused once the code using it is gone.
    """

    def __init__(self, address: int, config: str = ""):
        self.address = address
        self.config = config  # ProbeConfig.token(): what the probes compile to
        self.symbol: str | None = None
        self.canonical = False

    def bind(self, stem: str | None) -> str:
        """Name and register the symbol (once; later calls return the first name)."""
        if self.symbol is not None:
            return self.symbol
        name = SYMBOL_PREFIX + stem if stem else None
        self.canonical = name is not None and name not in _taken
        if not self.canonical:
            name = f"{SYMBOL_PREFIX}{stem or 'anon'}_{next(_serial)}"
        register_symbol(name, self.address)
        _taken[name] = self
        self.symbol = name
        return name

    @property
    def name(self) -> str:
        """The symbol, bound to a one-off name if nobody bound it before the code generation."""
        return self.symbol if self.symbol is not None else self.bind(None)
