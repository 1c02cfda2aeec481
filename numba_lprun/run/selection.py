"""Which of the things a cell or script makes are profiled: data from the front end, judged here.

A ``%%nlprun`` cell or an ``nlprun`` script defines the functions it profiles as it
runs, so what to adopt is decided after each statement (``statements``), for things
that did not exist when the front end parsed its options. The front end says what it
wants as a ``Selection`` (plain frozen data: the source's file, ``--source``'s
packages, ``-f``'s bare names, whether only ``@profile``-marked functions count);
the run stage judges each new object against it itself, so it never calls back into
the front end. What a run found that the front end asks about afterwards (the names
that matched, the script's namespace) is kept in a ``SourceRun``, filled even when
the program raises.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from importlib.machinery import ModuleSpec

from ..instrument.packages import in_packages, module_of
from ..instrument.profilable import is_marked, source_file


@dataclass(frozen=True)
class Selection:
    """What a run of module-like source adopts among the things it makes.

    ``filename``: the source's own file (what the cell or script defines itself);
    ``packages``: ``--source`` packages, whose functions always count; ``chosen``:
    functions or packages were named, so the source's own count only by ``names``;
    ``names``: bare ``-f`` names, matched by the name a function is bound to or its
    own; ``plain``: plain functions named, matched by the jitted function Numba makes of
    them; ``marked_only``: the script marks with ``@profile``, so only marked ones
    count; ``find_marked``: also adopt marked functions of modules imported meanwhile
    (kernprof's habit: ``@profile`` in a module the script imports).
    """

    filename: str
    packages: tuple[str, ...] = ()
    chosen: bool = False
    names: frozenset[str] = frozenset()
    marked_only: bool = False
    find_marked: bool = False
    #: Plain Python functions ``-f`` named: profiled as Numba compiles them during the run (a library
    #: that jit-compiles a function it is given: pandas' ``engine="numba"``, ``register_jitable``)
    plain: tuple[Callable, ...] = ()


@dataclass(frozen=True)
class MainModule:
    """A script's ``__main__``, made fresh for each run (so nothing in it needs putting back):
    its file, and the import spec of ``-m MODULE``. ``sys.modules["__main__"]`` is set to it
    while the script runs; the front end that asked for it puts its own back."""

    filename: str
    spec: ModuleSpec | None = None

    def make(self) -> dict:
        module = types.ModuleType("__main__")
        module.__file__ = self.filename
        module.__builtins__ = __builtins__
        module.__spec__ = self.spec
        if self.spec is not None:
            module.__package__ = self.spec.parent
        sys.modules["__main__"] = module
        return module.__dict__


def _same_file(found: str | None, wanted: str) -> bool:
    """Whether code compiled from ``found`` is the source's own file ``wanted``: a script a runner
    module runs (mpi4py's, by ``runpy``) is compiled under the relative path it was given."""
    if found is None or found == wanted:
        return found is not None
    return os.path.isabs(wanted) and not found.startswith("<") and os.path.abspath(found) == wanted


class SourceRun:
    """One ``runsource``'s judging of what its source makes, and what it found: the
    ``-f`` names that matched something and the namespace the source ran in last (the
    front end's hints read them after the run, whatever the program raised)."""

    def __init__(self, selection: Selection) -> None:
        self.selection = selection
        self.namespace: dict = {}
        self.names_found: set[str] = set()
        self.plain_found: list[Callable] = []  # ``selection.plain``'s functions Numba compiled
        self._modules_seen: set[str] = set()
        self._marked: list[object] = []  # marked functions of the namespace adopted already

    def accepts(self, value: object) -> bool:
        """Whether ``value`` (a new binding, or a function a decorator just made) is profiled."""
        chosen = self.selection
        if in_packages(module_of(value), chosen.packages):
            return True
        py_func = getattr(value, "py_func", None)
        plain = [f for f in chosen.plain if py_func is f or getattr(py_func, "__code__", None) is f.__code__]
        if plain:
            self.plain_found += [f for f in plain if not any(f is seen for seen in self.plain_found)]
            return True
        if not _same_file(source_file(value), chosen.filename):
            return False
        if chosen.names:  # by the name it is bound to (fast = njit(fastmath=True)(f)) or its own
            own = getattr(value, "__name__", None)
            hits = {n for n in chosen.names if self.namespace.get(n) is value or own == n}
            self.names_found |= hits
            return bool(hits)
        return not chosen.chosen and (not chosen.marked_only or is_marked(value))

    def members_named(self, value: object) -> dict[str, str] | None:
        """member -> the ``-f Class.member`` name naming it, for ``value``, a class of the
        source bound to ``Class`` (a jitclass a script defines: ``-f Kernel.weight``); None
        where no ``-f`` name is dotted after it, so ``accepts`` judges it whole. A member
        profiled is marked found (``found_member``)."""
        if not self.selection.names or not _same_file(source_file(value), self.selection.filename):
            return None
        bound = {n for n, v in self.namespace.items() if v is value} | {getattr(value, "__name__", None)}
        owner_of = {name: name.partition(".")[0] for name in self.selection.names if "." in name}
        dotted = {name.partition(".")[2]: name for name, owner in owner_of.items() if owner in bound}
        return dotted or None

    def found_member(self, name: str) -> None:
        """A ``-f Class.member`` name matched a member of a class the source made."""
        self.names_found.add(name)

    def marked_since(self) -> list[object]:
        """With ``find_marked``: functions marked ``@profile`` in modules imported since the last
        look, and in the source's namespace (``profile(f)`` after ``f`` was made)."""
        if not self.selection.find_marked:
            return []
        found = []
        for name, module in list(sys.modules.items()):
            if name in self._modules_seen or name == "__main__":
                continue
            self._modules_seen.add(name)
            found += [v for v in list(getattr(module, "__dict__", {}).values()) if is_marked(v)]
        for value in list(self.namespace.values()):
            if is_marked(value) and not any(value is seen for seen in self._marked):
                self._marked.append(value)
                found.append(value)
        return found

    @property
    def plain_unmatched(self) -> tuple[Callable, ...]:
        """The plain functions named that nothing compiled during the run."""
        return tuple(f for f in self.selection.plain if not any(f is seen for seen in self.plain_found))

    @property
    def names_unmatched(self) -> tuple[str, ...]:
        """The bare ``-f`` names that named nothing the source made (in the order given)."""
        return tuple(sorted(self.selection.names - self.names_found))
