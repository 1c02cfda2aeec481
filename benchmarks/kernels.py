"""Benchmark kernels: eleven common numeric shapes and the ground-truth functions.

Each ``make_*`` returns (jitted function, arguments) sized for a run of roughly
50-300 ms on one core, so ratios are measured over enough work to be stable.
"""

import math

import numpy as np
from numba import njit, prange, stencil


@njit
def conv(x, k):
    n = x.size - k.size + 1
    out = np.empty(n)
    for i in range(n):
        window = x[i : i + k.size]
        out[i] = np.sum(np.multiply(window, k))
    return out


@njit(fastmath=True)
def sum_squares(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * a[i]
    return s


@njit
def matmul(a, b):
    n, m, p = a.shape[0], a.shape[1], b.shape[1]
    c = np.zeros((n, p))
    for i in range(n):
        for j in range(p):
            acc = 0.0
            for k in range(m):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc
    return c


@njit
def mandelbrot(width, height, max_iter):
    out = np.zeros((height, width), dtype=np.int32)
    for y in range(height):
        ci = -1.5 + 3.0 * y / height
        for x in range(width):
            cr = -2.0 + 3.0 * x / width
            zr = zi = 0.0
            n = 0
            while zr * zr + zi * zi < 4.0 and n < max_iter:
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                n += 1
            out[y, x] = n
    return out


@njit
def pairwise(points):
    n = points.shape[0]
    d = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            dx = points[i, 0] - points[j, 0]
            dy = points[i, 1] - points[j, 1]
            d[i, j] = math.sqrt(dx * dx + dy * dy)
    return d


@njit
def monte_carlo_pi(samples):
    np.random.seed(1)
    inside = 0
    for _ in range(samples):
        x = np.random.random()
        y = np.random.random()
        if x * x + y * y <= 1.0:
            inside += 1
    return 4.0 * inside / samples


@njit
def histogram(values, bins, lo, hi):
    counts = np.zeros(bins, dtype=np.int64)
    scale = bins / (hi - lo)
    for v in values:
        b = int((v - lo) * scale)
        if 0 <= b < bins:
            counts[b] += 1
    return counts


@njit(parallel=True)
def prange_norms(a):
    out = np.empty(a.shape[0])
    for i in prange(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j] * a[i, j]
        out[i] = math.sqrt(s)
    return out


@njit
def normal_cdf(d):
    k = 1.0 / (1.0 + 0.2316419 * math.fabs(d))
    poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
    value = 0.3989422804014327 * math.exp(-0.5 * d * d) * poly
    if d > 0:
        value = 1.0 - value
    return value


@njit
def black_scholes(stock, strike, years, rate, vol, call, put):
    for i in range(stock.size):
        sqrt_t = math.sqrt(years[i])
        d1 = (math.log(stock[i] / strike[i]) + (rate + 0.5 * vol * vol) * years[i]) / (vol * sqrt_t)
        d2 = d1 - vol * sqrt_t
        cnd1 = normal_cdf(d1)
        cnd2 = normal_cdf(d2)
        discount = math.exp(-rate * years[i])
        call[i] = stock[i] * cnd1 - strike[i] * discount * cnd2
        put[i] = strike[i] * discount * (1.0 - cnd2) - stock[i] * (1.0 - cnd1)


@stencil
def four_point(a):
    return 0.25 * (a[-1, 0] + a[1, 0] + a[0, -1] + a[0, 1])


@njit
def relax(grid, steps):
    for _ in range(steps):
        grid = four_point(grid)
    return grid


@njit
def gaussian(x, y, h):
    return math.exp(-0.5 * ((x - y) / h) ** 2) / (h * math.sqrt(2.0 * math.pi))


@njit(parallel=True)
def kde(points, grid, h):
    out = np.zeros(grid.size)
    for i in prange(grid.size):
        s = 0.0
        for j in range(points.size):
            s += gaussian(grid[i], points[j], h)
        out[i] = s / points.size
    return out


@njit
def epanechnikov(x, y, h):
    u = (x - y) / h
    if abs(u) >= 1.0:
        return 0.0
    return 0.75 * (1.0 - u * u) / h


@njit(parallel=True)
def kde_compact(points, grid, h):
    out = np.zeros(grid.size)
    for i in prange(grid.size):
        s = 0.0
        for j in range(points.size):
            s += epanechnikov(grid[i], points[j], h)
        out[i] = s / points.size
    return out


@njit
def collatz_steps(n):
    total = 0
    for start in range(1, n):
        k = start
        while k != 1:
            if k % 2 == 0:
                k //= 2
            else:
                k = 3 * k + 1
            total += 1
    return total


@njit
def scatter_add(out, idx, v):
    for i in range(idx.size):
        out[idx[i]] += v[i]
    return out


def scatter_args(rng, n=5_000_000):
    return np.zeros(1000), rng.integers(0, 1000, n), rng.random(n)


def option_args(n, rng):
    return (
        rng.uniform(5, 30, n),
        rng.uniform(1, 100, n),
        rng.uniform(0.25, 10, n),
        0.02,
        0.3,
        np.zeros(n),
        np.zeros(n),
    )


#: The kernels whose jitted helpers are profiled with them (the helper's counters cost too).
HELPERS = {
    "black-scholes": (normal_cdf,),
    "stencil": (four_point,),
    "kde (prange + helper)": (gaussian,),
    "kde, early-return helper": (epanechnikov,),
}


def make_kernels():
    rng = np.random.default_rng(0)
    return {
        "conv": (conv, (rng.random(400_000), rng.random(32))),
        "vectorizable reduction": (sum_squares, (rng.random(20_000_000),)),
        "triple-loop matmul": (matmul, (rng.random((250, 250)), rng.random((250, 250)))),
        "mandelbrot": (mandelbrot, (600, 400, 200)),
        "pairwise distances": (pairwise, (rng.random((2000, 2)),)),
        "monte carlo pi": (monte_carlo_pi, (3_000_000,)),
        "histogram": (histogram, (rng.random(10_000_000), 64, 0.0, 1.0)),
        "prange kernel": (prange_norms, (rng.random((4000, 1000)),)),
        "black-scholes": (black_scholes, option_args(2_000_000, rng)),
        "stencil": (relax, (rng.random((1000, 1000)), 20)),
        "kde (prange + helper)": (kde, (rng.random(4000), np.linspace(0.0, 1.0, 1000), 0.1)),
        "kde, early-return helper": (kde_compact, (rng.random(4000), np.linspace(0.0, 1.0, 1000), 0.1)),
        "branchy while (collatz)": (collatz_steps, (100_000,)),
        "scatter-add": (scatter_add, scatter_args(rng)),
    }


# -- ground truth: lines whose costs are known by construction ----------------------
UNIT = 2000  # dependent multiply-adds per unit of work: about a microsecond


@njit
def spin(units, seed):
    x = 1.0 + seed * 1e-9  # depends on the caller's loop, so no call can be hoisted
    for _ in range(units * UNIT):
        x = x * 0.9999999 + 1e-7
    return x


@njit
def coarse_lines(n):
    acc = 0.0
    for i in range(n):
        acc += spin(1, i)
        acc += spin(3, i)
        acc += spin(6, i)
    return acc


# the true shares of coarse_lines' three spin lines: 1 : 3 : 6
COARSE_TRUTH = {4: 10.0, 5: 30.0, 6: 60.0}


@njit
def tight_body(a, reps):
    s = 0.0
    for i in range(a.size):
        x = a[i]
        for _ in range(reps):
            s = s * 0.999 + x
        for _ in range(4 * reps):
            s = s * 0.999 + x
    return s


# in tight_body, the two inner loops (header + body lines) do 1 : 4 units per iteration.
# Both extend one dependency chain, so their costs add up. With a chain per loop the CPU
# runs the short loop in the shadow of the long one (out-of-order execution): the plain
# build then takes as long as the long loop alone, and no 1 : 4 truth exists to compare.
TIGHT_TRUTH = ((5, 6), 20.0), ((7, 8), 80.0)


@njit(fastmath=True)
def tight_vectorized(a, b):
    s = 0.0
    for i in range(a.size):
        s += a[i] * a[i]
    t = 0.0
    for i in range(b.size):
        t += b[i] * b[i]
    return s + t


# the two vectorized loops stream 1 : 4 times as many elements (b is 4x a)
TIGHT_VEC_TRUTH = ((3, 4), 20.0), ((6, 7), 80.0)
