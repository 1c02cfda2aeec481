"""The line-event model (``numba_lprun.instrument.line_events``) against the running interpreter,
without compiling anything with Numba.

Each check compares the model with what this Python and line_profiler's core
really do (``sys.settrace`` traces, line_profiler's hits), so the same tests hold
on every supported version; the few version-specific facts are asserted where
the model documents them (marked VERSION there). The rewritten functions are
executed as plain Python, with the probes replaced by Python counters.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from collections import Counter

import line_profiler
import pytest

from numba_lprun.instrument import line_events as E
from numba_lprun.instrument.rewrite import instrument


def load(src: str, name: str = "f"):
    """(function, its ast.FunctionDef) from the source text of one def."""
    src = textwrap.dedent(src)
    ns: dict = {}
    exec(compile(src, "<line-events-test>", "exec"), ns)
    return ns[name], ast.parse(src).body[0]


def traced_lines(func, *args) -> list[int]:
    """The line events ``sys.settrace`` reports in ``func``'s own frame, in order."""
    seen: list[int] = []

    def tracer(frame, event, arg):
        if frame.f_code is not func.__code__:
            return None
        if event == "line":
            seen.append(frame.f_lineno)
        return tracer

    sys.settrace(tracer)
    try:
        func(*args)
    finally:
        sys.settrace(None)
    return seen


def profiled_hits(func, *args) -> dict[int, int]:
    """line_profiler's hits per line for ``func(*args)``, with the core it uses here."""
    prof = line_profiler.LineProfiler(func)
    prof.runcall(func, *args)
    (rows,) = prof.get_stats().timings.values()
    return {line: hits for line, hits, _ in rows if hits}


def rewritten_hits(fdef: ast.FunctionDef, *args) -> dict[int, int]:
    """Run the instrumented rewrite of ``fdef`` as plain Python, counting its line probes."""
    rewritten = instrument(fdef)
    counts: Counter = Counter()

    def line(row: int) -> None:
        counts[rewritten.rows[row]] += 1

    def nothing() -> None:
        return None

    ns = {"_nlp_enter": nothing, "_nlp_leave": nothing, "_nlp_flush": nothing}
    ns.update(_nlp_line=line, _nlp_pyhit=line)
    module = ast.Module(body=[rewritten.tree], type_ignores=[])
    exec(compile(module, "<rewritten>", "exec"), ns)
    ns[fdef.name](*args)
    return dict(counts)


def test_backward_jumps_fire_follows_line_profilers_core():
    from line_profiler import _line_profiler

    # line_profiler 4 has one core, settrace-style, on every Python (and no such flag)
    assert E.backward_jumps_fire() == bool(getattr(_line_profiler, "USE_LEGACY_TRACE", True))


def test_for_header_events_are_what_the_interpreter_fires():
    func, fdef = load(
        """
        def f(b):
            s = 0
            for v in (
                    b):
                s += v
            return s
        """
    )
    ev = E.for_events(fdef.body[1])
    # VERSION: FOR_ITER is on the iterable's line from 3.13, on the for line before
    assert ev.test == (5 if sys.version_info >= (3, 13) else 4)
    seen = traced_lines(func, [1, 2, 3])
    entry = [3] + ev.entry  # s = 0, then the header
    assert seen[: len(entry)] == entry
    body_at = [i for i, line in enumerate(seen) if line == 6]
    assert len(body_at) == 3
    for i in body_at:  # under settrace every back edge fires FOR_ITER's line first
        assert seen[i + 1] == ev.test
    assert seen[body_at[0] - len(ev.bind) : body_at[0]] == ev.bind


def test_statement_over_lines_fires_its_bytecode_order():
    func, fdef = load(
        """
        def f(x, y):
            z = max(x,
                    y)
            return z
        """
    )
    seen = traced_lines(func, 1, 2)
    assert E.line_sequence(fdef.body[0]) == seen[:-1]
    assert len(seen) > 2  # the call returns to its first line after the arguments


def test_while_test_over_lines_is_planned_on_every_python():
    _, fdef = load(
        """
        def f(k1, b):
            while (k1 < 3 and
                   0 <= len(b) < 0):
                k1 += 1
            return k1
        """
    )
    plan = E.plan_test(fdef.body[0])
    assert plan is not None  # 3.12 puts a copy of the exit block before the body
    assert plan.top == [[3], [4]]
    assert plan.bottom == [[3], [4]]
    assert plan.targets == [(1, E.EXIT), (E.BODY, E.EXIT)]


CASES = {
    "one-line for": ("def f(n):\n    s = 0\n    for i in range(n): s += i\n    return s\n", [(0,), (5,)]),
    "one-line while": ("def f(n):\n    k = 0\n    while k < n: k += 1\n    return k\n", [(0,), (1,), (4,)]),
    "while and continue on its line": (
        "def f(n):\n    j = 0\n    while j < n: j += 1; continue\n    return j\n",
        [(0,), (3,)],
    ),
    "for over lines": (
        "def f(b):\n    s = 0\n    for v in (\n            b):\n        s += v\n"
        "    for i in range(\n            len(b)): s += i\n    return s\n",
        [([],), ([1, 2, 3],)],
    ),
    "while test over lines": (
        "def f(k1, b):\n    while (k1 < 3 and\n           0 <= len(b) < 0):\n        k1 += 1\n"
        "    while (k1 < 6 or\n           len(b) > 9): k1 += 1\n    return k1\n",
        [(0, [1]), (5, [])],
    ),
    "nested loops, continue and break": (
        "def f(n):\n    s = 0\n    for i in range(n):\n        for j in range(i): s += j\n"
        "        if i == 2: continue\n        while s > 10:\n            s -= 3\n"
        "            if s == 11: break\n"
        "    return s\n",
        [(0,), (6,)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_rewritten_hits_equal_line_profilers(name):
    src, arg_sets = CASES[name]
    func, fdef = load(src)
    for args in arg_sets:
        assert rewritten_hits(fdef, *args) == profiled_hits(func, *args), args
