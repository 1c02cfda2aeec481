"""The registry of every private API the door touches, and the Numba releases each was checked on.

Numba has no public way to do much of what a line profiler of its code needs, so
numba_lprun reads private attributes and ``numba.core`` internals. Each function
of this package declares, with :func:`touches`, what it reads and the Numba minor
releases it was checked on; ``USES`` is built from those declarations, so a new
private use cannot be made without an entry. ``tests/test_private_api.py`` checks
every entry relied on with the installed release, so a Numba that moves one fails
in CI instead of quietly profiling wrong.

A use that moved between releases gets one entry per place it lives, each with
the releases it is relied on (``checked``), and a version-keyed accessor that
picks the place by :func:`installed_numba` (see ``kernels.ufunc_dispatcher``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

#: The oldest and newest Numba minor releases CI tests (noxfile.py); pyproject.toml allows
#: exactly this range. Bumping it means running the ``numba`` nox sessions, then extending
#: the ``checked`` range of each use that still holds (a test fails until every door
#: function's uses cover the new range).
NUMBA_RANGE: tuple[str, str] = ("0.59", "0.68")

F = TypeVar("F", bound=Callable)


def minor(version: str) -> tuple[int, int]:
    """``"0.61.2"`` -> ``(0, 61)``: uses are checked per minor release (patches keep the API)."""
    major, minor_, *_ = version.split(".")
    return int(major), int(minor_)


@functools.cache
def installed(package: str) -> tuple[int, int] | None:
    """The installed minor release of ``package`` (a distribution name), or None if absent."""
    try:
        return minor(importlib.metadata.version(package))
    except importlib.metadata.PackageNotFoundError:
        return None


def installed_numba() -> tuple[int, int]:
    """The installed Numba's minor release, what version-keyed accessors choose by."""
    import numba

    return minor(numba.__version__)


@dataclass(frozen=True)
class PrivateUse:
    """One private attribute (or internal module member) a door function reads.

    ``checked`` are the first and last minor releases of ``package`` it was checked
    on. For Numba, whose range is capped in pyproject.toml, a use is relied on only
    there (a use that moved has one entry per place); numba-cuda and pyelftools are
    not capped, so their uses are relied on whenever the package is installed.
    """

    module: str
    path: str  # attribute path inside the module ("Class.attr"); "" for the module itself
    why: str
    function: str  # the door function that touches it ("kernels.ufunc_dispatcher")
    checked: tuple[str, str] = NUMBA_RANGE
    instance_attribute: str | None = None  # set on instances only: the module's source must assign it
    params: tuple[str, ...] | None = None  # a method we override or call by keyword: its parameters
    package: str = "numba"

    def applies(self, release: tuple[int, int] | None = None) -> bool:
        """Whether this use is relied on with ``release`` of its package (the installed one by default)."""
        if release is None:
            release = installed(self.package)
            if release is None:
                return False  # an optional package (numba-cuda) that is not installed
        if self.package != "numba":
            return True
        return minor(self.checked[0]) <= release <= minor(self.checked[1])

    def present(self) -> bool:
        """Whether the installed package still has it (by import, attribute lookup and source)."""
        try:
            obj = module = importlib.import_module(self.module)
            for part in filter(None, self.path.split(".")):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            return False
        if self.params is not None:
            try:
                if tuple(inspect.signature(obj).parameters) != self.params:
                    return False
            except (TypeError, ValueError):
                return False
        if self.instance_attribute is not None:
            source = inspect.getsource(module)  # assigned as self.x, cls.x, a class-dict key or keyword
            forms = ("self.{}", "cls.{}", "{}=", "'{}'", '"{}"')
            return any(form.format(self.instance_attribute) in source for form in forms)
        return True

    def reached(self) -> str:
        """The name door code spells to reach this use (the attribute, or the module member)."""
        parts = [p for p in f"{self.module}.{self.path}".split(".") if p and not p.startswith("__")]
        return self.instance_attribute or parts[-1]

    def __str__(self) -> str:
        where = ".".join(filter(None, [self.module, self.path, self.instance_attribute]))
        return f"{self.function} -> {where} (checked on {self.package} {'-'.join(self.checked)})"

    def private_names(self) -> set[str]:
        """The underscored names this use reaches (what no module outside the door may name)."""
        parts = [*self.module.split("."), *self.path.split("."), self.instance_attribute or ""]
        return {p for p in parts if p.startswith("_") and not p.startswith("__")}


USES: list[PrivateUse] = []


def touches(
    module: str,
    path: str,
    why: str,
    *,
    checked: tuple[str, str] = NUMBA_RANGE,
    instance_attribute: str | None = None,
    params: tuple[str, ...] | None = None,
    package: str = "numba",
    exported_as: str | None = None,
) -> Callable[[F], F]:
    """Declare that the decorated door function reads ``module.path``: one ``USES`` entry.

    A Numba class the door hands out as it is (``CPUDispatcher``) is declared with
    ``exported_as``, the name it has here.
    """

    def declare(func: F) -> F:
        where = exported_as or func.__module__.rsplit(".", 1)[-1] + "." + func.__qualname__
        USES.append(PrivateUse(module, path, why, where, checked, instance_attribute, params, package))
        return func

    return declare


def missing() -> list[PrivateUse]:
    """The uses relied on with the installed packages that they no longer have."""
    return [use for use in USES if use.applies() and not use.present()]


def private_names() -> set[str]:
    """Every underscored name the registry declares."""
    return set().union(*(use.private_names() for use in USES))
