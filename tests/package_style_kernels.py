"""Kernels shaped like package code, for the renderer tests: a long docstring, many signatures.

Package functions carry docstrings of dozens of lines and are compiled for many
argument types; the tables fold the one and summarize the other
(``renderers.view``). The renderer tests read their profile from a JSON fixture
(``tests/fixtures/package_style.json``, remade by ``python -m tests.fixtures.make
package_style``), so they compile nothing.
"""

import functools
from pathlib import Path

from numba import njit

from numba_lprun.stats import ProfileStats


@njit
def documented(a):
    """Sum of the positive values of ``a``, the long way round.

    Package functions carry docstrings this long and longer: what the
    arguments are, what comes back, the edge cases and an example. None of
    it runs, so the tables show it as one row.

    Parameters
    ----------
    a : 1d array of float64
        The values.

    Returns
    -------
    float
        The sum of the values above zero.
    """
    s = 0.0
    for v in a:
        if v > 0:
            s += v
    return s


@njit
def spread(a, k):
    """Scaled sum (a one-line docstring stays as it is)."""
    return a.sum() * k


#: the argument types ``spread`` is called with: one signature each
DTYPES = ("int8", "int16", "int32", "int64", "float32", "float64")


FIXTURE = Path(__file__).resolve().parent / "fixtures" / "package_style.json"


@functools.cache
def package_style_profile() -> ProfileStats:
    """The profile of ``documented`` (one call) and ``spread`` (one call per dtype in ``DTYPES``)."""
    return ProfileStats.from_json(FIXTURE.read_text(encoding="utf-8"))
