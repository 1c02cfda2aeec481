"""Loops left every way a loop can be left, for tests/test_loop_exits.py: the hits a counting
twin holds in registers while a loop runs must all reach the counters, whichever way out."""

from numba import njit

from tests.raising_kernels import checked_sum  # noqa: F401  (a loop that raises on its k-th iteration)


@njit
def break_when_over(a, limit):
    total = 0.0
    for i in range(a.size):
        if a[i] > limit:
            break
        total += a[i]
    return total


@njit
def return_from_inside(a, limit):
    total = 0.0
    for i in range(a.size):
        total += a[i]
        if total > limit:
            return i
    return -1


@njit
def continue_and_break(grid):
    found = 0
    for i in range(grid.shape[0]):
        if grid[i, 0] < 0:
            continue
        for j in range(grid.shape[1]):
            if grid[i, j] > 5:
                break
            found += 1
    return found


@njit
def squares(n):
    for i in range(n):
        yield i * i


@njit
def compact(u):
    if abs(u) >= 1.0:
        return 0.0
    return 0.75 * (1.0 - u * u)


@njit
def density(xs, at):
    total = 0.0
    for i in range(xs.size):
        total += compact(xs[i] - at)
    return total / xs.size
