"""Packages named with ``--source``: every jitted function they define is profiled when it runs.

What users of coverage.py's ``--source`` expect for a package's own test suite or
programs (``nlprun --source PKG -m pytest --pyargs PKG``): a package is named once,
not one ``-f`` per kernel, and its submodules count, whether imported before the run
(found now, in ``sys.modules``) or during it (each ``@njit`` is seen as its decorator
makes it: ``run.statements.new_dispatchers`` hands it to ``run.selection``).
Jitclasses, ufuncs and stencils of modules imported during the run are made by Numba's
own code, which that hook does not report: those are found when imported before it.
"""

from __future__ import annotations

import sys

from ..errors import NotProfilableError
from .function_kinds import kind_of
from .profilable import resolve


def split_packages(specs: list[str]) -> tuple[str, ...]:
    """``["a,b", "c"]`` -> ``("a", "b", "c")``: ``--source`` takes commas and repeats."""
    names = [name.strip() for spec in specs for name in spec.split(",")]
    return tuple(name for name in names if name)


def module_of(value: object) -> str | None:
    """The module whose code defines ``value``: a jitted function, ufunc, stencil or jitclass."""
    kind = kind_of(value)
    return kind.module(value) if kind is not None else None


def in_packages(module: str | None, packages: tuple[str, ...]) -> bool:
    return module is not None and any(module == p or module.startswith(p + ".") for p in packages)


def imported_from(packages: tuple[str, ...]) -> list[object]:
    """The dispatchers of everything the packages' modules imported so far define (each
    once, where its module defines it, not where another module imports it)."""
    found: dict[int, object] = {}
    for name, module in list(sys.modules.items()) if packages else ():
        if not in_packages(name, packages):
            continue
        for value in list(getattr(module, "__dict__", {}).values()):
            if module_of(value) != name:
                continue
            try:
                dispatchers = resolve(value)
            except NotProfilableError:  # an object-mode function, a generator: not profiled
                continue
            for dispatcher in dispatchers:
                found[id(dispatcher)] = dispatcher
    return list(found.values())
