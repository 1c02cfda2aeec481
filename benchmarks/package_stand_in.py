"""A stand-in for package code at full size: a matrix-profile routine (issue 31).

Written for the project with the shape of the real one the issue measured: a
``parallel=True, fastmath=True`` routine of a few hundred lines with a long
docstring, calling several jitted helpers, run on 10,000 points. It is the module
``benchmarks/package_code.py`` profiles (``-f package_stand_in:matrix_profile -f
package_stand_in:_refine``); it is not imported by the package or the tests.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

FAST = {"fastmath": True, "nogil": True}


@njit(**FAST)
def _moving_stats(series, window):
    """Means and inverse standard deviations of every window of ``series``.

    Computed from running sums, as STUMPY's ``_preprocess`` does, in one pass:
    each window adds the value entering it and drops the one leaving it. A
    constant window (zero deviation) gets an inverse deviation of 0, so the
    distances it takes part in come out as the largest possible.
    """
    count = series.shape[0] - window + 1
    means = np.empty(count)
    inverse = np.empty(count)
    total = 0.0
    squares = 0.0
    for i in range(window):
        total += series[i]
        squares += series[i] * series[i]
    for i in range(count):
        if i > 0:
            leaving = series[i - 1]
            entering = series[i + window - 1]
            total += entering - leaving
            squares += entering * entering - leaving * leaving
        mean = total / window
        variance = squares / window - mean * mean
        means[i] = mean
        inverse[i] = 1.0 / np.sqrt(variance) if variance > 1e-12 else 0.0
    return means, inverse


@njit(**FAST)
def _first_products(series, window, start, stop):
    """The dot products of window 0 with windows ``start`` to ``stop`` (the first row)."""
    out = np.empty(stop - start)
    for j in range(start, stop):
        acc = 0.0
        for k in range(window):
            acc += series[k] * series[j + k]
        out[j - start] = acc
    return out


@njit(**FAST)
def _distance(product, window, mean_a, inverse_a, mean_b, inverse_b):
    """The z-normalized Euclidean distance of two windows from their dot product."""
    if inverse_a == 0.0 or inverse_b == 0.0:
        return np.sqrt(2.0 * window)
    correlation = (product - window * mean_a * mean_b) * inverse_a * inverse_b / window
    if correlation > 1.0:
        correlation = 1.0
    elif correlation < -1.0:
        correlation = -1.0
    return np.sqrt(2.0 * window * (1.0 - correlation))


@njit(**FAST)
def _refine(series, window, profile, index, means, inverse, exclusion):
    """Recompute the best match of the worst-matched windows exactly.

    The diagonal sweep in ``matrix_profile`` accumulates dot products in floating
    point over thousands of steps; for the windows whose best distance came out
    largest (the discords a user looks for first), this recomputes every distance
    directly from the windows, which costs a full pass per window but carries no
    accumulated rounding. The number refined is a hundredth of the windows.

    Parameters
    ----------
    series : 1-d float array
    window : the subsequence length
    profile, index : the matrix profile and its indices, updated in place
    means, inverse : the windows' means and inverse deviations
    exclusion : the half-width of the trivial-match zone

    Returns
    -------
    The number of windows whose best match changed.
    """
    count = profile.shape[0]
    todo = max(1, count // 100)
    order = np.argsort(profile)[::-1][:todo]
    changed = 0
    for t in range(todo):
        i = order[t]
        best = np.inf
        where = -1
        for j in range(count):
            if abs(i - j) <= exclusion:
                continue
            acc = 0.0
            for k in range(window):
                acc += series[i + k] * series[j + k]
            d = _distance(acc, window, means[i], inverse[i], means[j], inverse[j])
            if d < best:
                best = d
                where = j
        if where != index[i]:
            changed += 1
        profile[i] = best
        index[i] = where
    return changed


@njit(parallel=True, **FAST)
def matrix_profile(series, window):
    """The matrix profile of ``series``: each window's distance to its nearest neighbour.

    For every subsequence of length ``window``, the z-normalized Euclidean distance
    to the most similar other subsequence (excluding trivial matches that overlap
    it by more than a quarter window), and where that subsequence starts. Low
    values mark motifs (patterns that repeat), high values discords (anomalies).

    The computation follows STOMP: the dot products along each diagonal of the
    distance matrix are updated in O(1) from the previous one, so the whole matrix
    costs O(n^2) instead of O(n^2 m). The diagonals are split into chunks that the
    threads of Numba's pool sweep independently; each thread keeps a private
    profile, and the private profiles are reduced at the end.

    This mirrors the structure of the routine the issue profiled (280 lines, a
    60-line docstring, a parallel sweep, helpers for the statistics and for the
    exact refinement of the worst windows) at a size the benchmark can compile and
    run in seconds.

    Parameters
    ----------
    series : 1-d float array
        The time series, at least ``2 * window`` long.
    window : int
        The subsequence length (at least 3).

    Returns
    -------
    profile : 1-d float array
        Each window's distance to its nearest non-trivial neighbour.
    index : 1-d int array
        Where that neighbour starts.

    Notes
    -----
    The distances are computed from Pearson correlations, clipped to [-1, 1]
    against rounding. A window of constant values has an undefined correlation;
    it is given the largest distance possible, sqrt(2 * window), as STUMPY does.

    The private profiles cost ``threads * n`` floats; with Numba's default thread
    count that is small beside the series itself.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> series = np.cumsum(rng.normal(size=10_000))
    >>> profile, index = matrix_profile(series, 50)
    >>> profile.shape
    (9951,)

    References
    ----------
    Zhu et al., "Matrix Profile II: Exploiting a Novel Algorithm and GPUs to Break
    the One Hundred Million Barrier for Time Series Motifs and Joins", ICDM 2016.
    Law, "STUMPY: A Powerful and Scalable Python Library for Time Series Data
    Mining", JOSS 2019.
    """
    n = series.shape[0]
    count = n - window + 1
    exclusion = max(1, window // 4)
    means, inverse = _moving_stats(series, window)
    first = _first_products(series, window, 0, count)
    chunks = 16
    profiles = np.full((chunks, count), np.inf)
    indices = np.full((chunks, count), -1, np.int64)
    diagonals = count - exclusion - 1
    per_chunk = (diagonals + chunks - 1) // chunks
    for c in prange(chunks):
        start = exclusion + 1 + c * per_chunk
        stop = min(start + per_chunk, count)
        for diagonal in range(start, stop):
            product = first[diagonal]
            for i in range(count - diagonal):
                j = i + diagonal
                if i > 0:
                    product += series[i + window - 1] * series[j + window - 1]
                    product -= series[i - 1] * series[j - 1]
                d = _distance(product, window, means[i], inverse[i], means[j], inverse[j])
                if d < profiles[c, i]:
                    profiles[c, i] = d
                    indices[c, i] = j
                if d < profiles[c, j]:
                    profiles[c, j] = d
                    indices[c, j] = i
    profile = np.full(count, np.inf)
    index = np.full(count, -1, np.int64)
    for c in range(chunks):
        for i in range(count):
            if profiles[c, i] < profile[i]:
                profile[i] = profiles[c, i]
                index[i] = indices[c, i]
    _refine(series, window, profile, index, means, inverse, exclusion)
    return profile, index
