"""Kernels written the other ways Numba code is written: nogil threads, jitclass,
first-class functions, ufuncs, register_jitable/overload, generators, stencils."""

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import float64, guvectorize, njit, prange, stencil, types, vectorize
from numba.experimental import jitclass
from numba.extending import overload, overload_method, register_jitable


@njit(nogil=True)
def nogil_body(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * 0.5
    return s


def threaded_sum(chunks, threads=4):
    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(nogil_body, chunks))


@njit
def inner_counted(x):
    return x + 1.0


@njit(nogil=True)
def nogil_caller(a):
    s = 0.0
    for _ in range(a.size):
        s = inner_counted(s)
    return s


def threaded_caller(chunks):
    with ThreadPoolExecutor(len(chunks)) as pool:
        return sum(pool.map(nogil_caller, chunks))


@jitclass([("x", float64), ("v", float64), ("trail", float64[:])])
class Particle:
    def __init__(self, x, v):
        self.x = x
        self.v = v
        self.trail = np.zeros(4)

    def step(self, dt):
        self.x += self.v * dt
        if self.x > 10.0:
            self.v = -self.v
        return self.x

    def run(self, n, dt):
        for i in range(n):
            self.trail[i % 4] = self.step(dt)
        return self.x

    @property
    def energy(self):
        return 0.5 * self.v * self.v

    @energy.setter
    def energy(self, e):
        self.v = np.sqrt(2.0 * e)

    @staticmethod
    def scaled(x, k):
        return x * k


@njit
def simulate(p, n):
    s = 0.0
    for _ in range(n):
        s += p.step(0.5)
    return s + p.energy


@njit
def make_and_run(n):
    p = Particle(1.0, 3.0)
    return p.run(n, 0.25) + p.scaled(2.0, 3.0)


@njit
def clipped(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@jitclass([("lo", float64), ("hi", float64)])
class Clipper:
    """A jitclass whose members call a helper (``clipped``) that is profiled without them."""

    def __init__(self, lo, hi):
        self.lo = lo
        self.hi = hi

    def total(self, a):
        s = 0.0
        for x in a:
            s += clipped(x, self.lo, self.hi)
        return s

    @property
    def width(self):
        return clipped(self.hi - self.lo, 0.0, 1.0)


@njit
def clip_total(c, a):
    return c.total(a) + c.width


@njit(parallel=True)
def clip_rows(c, m):
    out = np.empty(m.shape[0])
    for i in prange(m.shape[0]):
        out[i] = c.total(m[i])
    return out


def particle_workload(cls, sim, make):
    """Python-level and jitted calls of every kind of member; ``cls`` may be the Python class."""
    p = cls(0.0, 2.0)
    a = p.run(6, 1.0)
    p.energy = 8.0
    b = p.energy + p.step(0.5) + cls.scaled(p.x, 2.0)
    return a, b, sim(p, 5), make(3), p.x, p.v


@njit
def integrand(x):
    y = x * x
    if y > 0.25:
        y -= 0.1
    return y + 1.0


@njit
def integrate(g, a, b, n):
    h = (b - a) / n
    s = 0.0
    for i in range(n):
        s += g(a + (i + 0.5) * h)
    return s * h


@njit
def integrate_both(n):
    return integrate(integrand, 0.0, 1.0, n) + integrate(inner_counted, 0.0, 1.0, n)


@vectorize(["float64(float64, float64)", "float32(float32, float32)"])
def clip_add(x, y):
    s = x + y
    if s > 1.0:
        s = 1.0
    return s


@vectorize
def lazy_double(x):
    return x * 2.0


@guvectorize(["void(float64[:], float64[:])"], "(n)->()")
def row_total(x, out):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
    out[0] = acc


@njit
def uses_ufuncs(a):
    out = np.empty(2)
    row_total(a.reshape(2, -1), out)
    return clip_add(a, a).sum() + out.sum()


@register_jitable
def jitable_helper(x):
    y = x * 2
    if y > 5:
        y -= 1
    return y + 1


def sum_squares(a):
    """Pure Python; jitted code uses the @overload below."""
    return float((a * a).sum())


@overload(sum_squares)
def _sum_squares_overload(a):
    if isinstance(a, types.Array):

        def impl(a):
            s = 0.0
            for v in a.flat:
                s += v * v
            return s

        return impl
    return None


@njit
def uses_overloads(a, n):
    t = 0.0
    for i in range(n):
        t += jitable_helper(i) + jitable_helper(i * 0.5)
    return t + sum_squares(a)


@njit
def halved(x):
    if x < 0.5:
        return x * 2.0
    return x - 0.5


@register_jitable
def halved_total(a):
    t = 0.0
    for x in a:
        t += halved(x)
    return t


def halved_sum(a):
    """Pure Python; jitted code uses the @overload below, whose body calls ``halved``."""
    return sum(halved.py_func(x) for x in a)


@overload(halved_sum)
def _halved_sum_overload(a):
    def impl(a):
        t = 0.0
        for x in a:
            t += halved(x)
        return t

    return impl


@overload_method(types.Array, "nlp_halved_max")
def _halved_max_method(a):
    def impl(a):
        m = -1.0
        for x in a:
            m = max(m, halved(x))
        return m

    return impl


@njit
def through_overloads(a):
    """``halved`` reached only through the bodies of an @overload, a @register_jitable and an
    @overload_method (the method named by no global: an array's ``nlp_halved_max``)."""
    return halved_sum(a) + halved_total(a) + a.nlp_halved_max()


@njit
def produce(a, reps):
    for i in range(a.size):
        t = 0.0
        for _ in range(reps):
            t += np.sin(a[i])
        if t > 0.5:
            yield t
        else:
            yield -t
    yield 0.0


@njit
def consume(a, reps, wait):
    total = 0.0
    for v in produce(a, reps):
        w = 0.0
        for _ in range(wait):
            w += np.cos(v)
        total += v + w
    return total


def consume_in_python(a, reps):
    return sum(produce(a, reps))


@stencil
def smooth(a):
    s = a[-1] + a[0]
    if s > 1.0:
        s = s + a[1]
    return s / 3.0


@njit
def smooth_twice(a):
    return smooth(a) * 2.0


@njit(parallel=True)
def smooth_parallel(a):
    return smooth(a) + 1.0


@stencil
def weigh(a):  # no parallel=True function calls it: its twins are sampled
    w = a[-1] + 2.0 * a[0]
    if w > 2.0:
        w = w + a[1]
    return w / 4.0


@njit
def weigh_twice(a):
    return weigh(a) * 2.0


@njit
def gauss_weight(d):
    w = math.exp(-0.5 * d * d)
    return w


@njit
def checked_weight(d):
    if d > 100.0:
        raise ValueError("a distance over 100")
    return math.exp(-0.5 * d * d)


@njit(parallel=True)
def parallel_checked_density(x, points):
    out = np.zeros(points.size)
    for j in prange(points.size):
        s = 0.0
        for i in range(x.size):
            s += checked_weight(points[j] - x[i])
        out[j] = s
    return out


@njit(parallel=True)
def parallel_density(x, points):
    out = np.zeros(points.size)
    for j in prange(points.size):
        s = 0.0
        for i in range(x.size):
            s += gauss_weight(points[j] - x[i])
        out[j] = s
    return out


@njit
def square_weight(d):
    return d * d


@njit
def serial_density(x, points):
    s = 0.0
    for j in range(points.size):
        s += square_weight(points[j] - x[j % x.size])
    return s
