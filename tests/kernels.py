"""Real jitted functions covering the engine's matrix; shared by the tests.

Kept in a module of their own so their source is on disk, and compiled once per
test session (Numba compiles are the slow part of the suite).
"""

import numba
import numpy as np
from numba import literal_unroll, njit, prange
from numba.typed import Dict, List

WEIGHTS = np.arange(5.0)


@njit
def loops(a, n):
    s = 0.0
    for i in range(n): s += i
    i = 0
    while True:
        i += 1
        if i > 3:
            break
    j = 0
    while j < 3:
        j += 1
        if j == 1:
            continue
        s += j
    else:
        s += 100
    for k in range(4):
        if k == 2:
            continue
        s += k
    else:
        s -= 1
    for k in range(4):
        if k == 2:
            break
    else:
        s += 1000
    return s + a[0]


@njit
def branches(x):
    if x > 100:
        y = 1
    elif x > 50:
        y = 2
    elif x > 10:
        y = 3
    else:
        y = 4
    if x % 2 == 0: y += 10
    return y


@njit
def find_first(a, value):
    for i in range(a.shape[0]):
        if a[i] == value:
            return i
    return -1


@njit
def sum2d(a):
    total = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            total += a[i, j] * (i + 1)
    return total


@njit
def multiline(a, n):
    x = (a[0] +
         a[1])
    y = np.sum(a *
               2.0)
    z = max(x,
            y,
            n)
    for i in range(0,
                   n):
        x += i
    if (x >
            y):
        z += 1
    return (x,
            z)


@njit
def oneline(n):
    s = 0; t = 1
    for i in range(n): s += i; t += 1
    if s > 3: s -= 1
    else: s += 1
    return s * t


@njit
def with_defaults(a, scale=2.0, offset=1):
    out = 0.0
    for v in a:
        out += v * scale + offset
    return out


@njit
def poly(x):
    y = x * x
    return y + 1


@njit("float64(float64[:])")
def eager_sum(a):
    s = 0.0
    for v in a:
        s += v
    return s


@njit(fastmath=True)
def fast_dot(a, b):
    s = 0.0
    for i in range(a.size):
        s += a[i] * b[i]
    return s


@njit(parallel=True)
def par_sum(a):
    total = 0.0
    for i in prange(a.shape[0]):
        x = a[i]
        total += x * x
    return total


@njit
def with_objmode(n):
    s = 0.0
    for i in range(n):
        s += i
    with numba.objmode(t="float64"):
        t = float(np.sqrt(s))
        t += 1.0
    return s + t


@njit
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def make_scaler(factor, shift):
    @njit
    def scaler(a):
        out = np.empty_like(a)
        for i in range(a.size):
            out[i] = a[i] * factor + shift
        return out

    return scaler


scale3 = make_scaler(3.0, 0.5)


@njit
def with_inner(a):
    sq = lambda v: v * v  # noqa: E731

    def cube(v):
        return v * v * v

    s = 0.0
    for v in a:
        s += sq(v) + cube(v)
    return s


@njit
def guarded(x):
    try:
        if x < 0:
            raise ValueError("negative")
        y = x * 2
    except Exception:
        y = -1
    return y


@njit
def unrolled(n):
    tup = (1, 2.5, 3)
    s = 0.0
    for item in literal_unroll(tup):
        s += item * n
    return s


@njit
def typed_containers(n):
    lst = List()
    d = Dict.empty(numba.types.int64, numba.types.float64)
    for i in range(n):
        lst.append(i * 2)
        d[i] = i / 2.0
    s = 0.0
    for v in lst:
        s += v + d[v // 2]
    return s


@njit
def count_vowels(text):
    n = 0
    for ch in text:
        if ch in "aeiouäö":
            n += 1
    return n


@njit
def weighted(n):
    s = 0.0
    for i in range(n):
        s += WEIGHTS[i % WEIGHTS.size]
    return s


@njit
def helper(x):
    return x * 2.0 + 1.0


@njit(inline="always")
def inlined_helper(x):
    return x - 1.0


@njit
def uses_helpers(a):
    s = 0.0
    for v in a:
        s += helper(v)
        s += inlined_helper(v)
    return s


@njit
def bump(a):
    for i in range(a.size):
        a[i] += 1.0


@numba.jit
def jit_plain(a):
    return a.sum() * 2


@njit
def caller(a):
    s = 0.0
    for i in range(a.size):
        s += poly(a[i])
    return s


@njit
def may_fail(x):
    if x < 0:
        raise ValueError("x must be >= 0")
    return x + 1


@njit
def busy(n):
    s = 0.0
    for i in range(n):
        s += np.sin(i) ** 2
    return s


@njit
def gen(n):
    for i in range(n):
        yield i


@numba.jit(forceobj=True)
def objmode_only(x):
    return x


@njit(cache=True)
def cached_kernel(a):
    return a.sum() + 1.0
