# ruff: noqa: E701, E702
# fmt: off
"""Minimised programs from the differential fuzzer (tests/test_fuzz.py), one per mismatch.

Each function is the smallest form found of a program where numba_lprun's hits or
result differed from line_profiler's or CPython's; tests/test_fuzz_regressions.py
runs them. The layout (one-line bodies, conditions over several lines) is what
they test, so the formatter is off for this file.
"""

from numba import njit


@njit
def ihelp(p, q):
    return (p * 7 + q) % 101


# 1. A returned tuple holding a variable Numba types as a literal: the original's
#    return type is Tuple(int64, Literal[int](0)) and the twins are compiled with
#    that signature, so they must return exactly that type too.
@njit
def literal_in_returned_tuple(m):
    x = m
    y = 0
    return x, y


# 2. ``and``/``or`` over several lines: which lines fire depends on the data.
@njit
def and_over_lines(x, y):
    z = 0
    if (x > 3 and
            y < 2):
        z = 1
    return z


@njit
def or_over_lines_body_on_last_line(x, y):
    z = 0
    if (x > 3 or
            y < 2): z = 1
    return z


@njit
def names_over_lines(a, b):
    z = 0
    if (a and
        b): z = 5
    return z


@njit
def mixed_over_lines(x, y, n):
    z = 0
    if ((x > 0 and
         y > 0) or
            not (n % 2 == 0 or
                 x == y)):
        z = 1
    elif (x < -2 or
          y < -2): z = 2
    return z


# 3. A test that starts on the line after ``if (``/``while (``: the header line
#    itself fires nothing.
@njit
def test_on_next_line(x):
    z = 0
    if (
            x > 3):
        z = 1
    k = 0
    while (
            k < x):
        k += 1
    return z + k


# 4. A while loop whose body sits on its header line: CPython fires the header
#    once per iteration (not iterations + 1), at least once.
@njit
def while_body_on_header(n):
    k = 0
    while k < n: k += 1
    j = 0
    while j < n: j += 1; continue
    i = 0
    while i < n: i += 1; j += i
    return k + j


@njit
def while_test_over_lines(n, x):
    k = 0
    while (k < n and
           x > 0):
        k += 1
        x -= 1
    return k, x


@njit
def while_or_body_on_last_line(n, x):
    k = 0
    while (k < n or
           x > 10): k += 1; x -= 1
    return k, x


@njit
def while_continue_test_over_lines(n, x):
    k = 0
    s = 0
    while (k < n and
           x != 99):
        k += 1
        if k % 2 == 0:
            continue
        s += k
    else:
        s -= 1
    return s


# 5. A condition whose second operand holds a conditional expression and a call
#    over two lines: the branches inside it stay on one line, so its own events
#    do not depend on the data.
@njit
def branchy_operand_over_lines(y, n):
    x = 0
    if not (y >= 0 and (y if n % 2 == 1 else 1) >=
            ihelp(n, y)):
        x = 1
    return x


# 6. A ``for`` whose iterable starts on the line after ``for``: the iterable's
#    line fires first, then the ``for`` line (GET_ITER and FOR_ITER). The hits
#    were right before; the order (which line each interval is charged to) was not.
@njit
def for_iterable_on_next_line(b, n):
    s = 0.0
    for v in (
            b):
        s += v
    for i in range(
            n): s += i
    return s


# 7. A statement over two lines holding a one-line conditional expression: the
#    branch stays on its line, so the statement's events are fixed (1, 2, 1).
@njit
def one_line_branch_in_statement_over_lines(x, y):
    z = ihelp(x if y > 0 else y,
              y)
    return z


# 8. ``assert`` over lines (written by the generator once it had asserts): the
#    jump over the code that raises is a branch over lines; an assert that holds
#    fires the lines of its test only.
@njit
def assert_over_lines(b, x):
    assert (len(b) >
            0)
    assert (x ==
            x), "never"
    return x + len(b)


# 9. A test whose first operand is a compile-time constant (a global): Numba
#    prunes the dead branch in the original, so ``x`` is the literal 0 at the
#    return and the signature the twins are compiled with returns
#    Tuple(Literal[int](0), int64). Probes on the constant operand's jumps kept
#    the instrumented twin from pruning it, so it could not return that type.
K = 3


@njit
def pruned_constant_test_over_lines(m):
    x = m
    y = 0
    if (K <= 5 or
            x < 6):
        x, y = y, x
    return x, y


# 10. A while test over two lines whose last operand is a chained comparison (found on
#     3.12, which puts a copy of the loop's exit block between the test and the body:
#     the continuation line was not counted there).
@njit
def while_chained_test_over_lines(k1, b):
    while (k1 < 3 and
           0 <= len(b) < 0):
        k1 += 1
    while (k1 < 6 or
           len(b) > k1 + 5):
        k1 += 1
    return k1
