"""Run one generated program four ways and compare: CPython, plain Numba, and numba_lprun
(result and hits) against line_profiler on the Python function."""

from __future__ import annotations

import copy
import itertools
import linecache
from collections import Counter

import line_profiler
from hypothesis import reject

import numba_lprun
from tests.compare import same
from tests.conftest import hits_of

STATS: Counter = Counter()  # programs checked, rejected by Numba, ...
_serial = itertools.count()


def load(source: str, name: str = "target") -> tuple[object, str]:
    """Execute module ``source`` under a fake file name registered in linecache
    (as IPython does for cells), so ``inspect.getsource`` reads it; returns
    (``name`` from it, the file name)."""
    filename = f"<numba_lprun-fuzz-{next(_serial)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    ns: dict = {"__name__": filename}
    exec(compile(source, filename, "exec"), ns)
    return ns[name], filename


def forget(filename: str) -> None:
    linecache.cache.pop(filename, None)


def numbered(source: str) -> str:
    return "".join(f"{i:3d}  {line}" for i, line in enumerate(source.splitlines(True), 1))


def outcome(call) -> tuple[str, object]:
    """``("ok", result)`` of ``call()``, or ``("raised", the exception's type)``."""
    try:
        return "ok", call()
    except Exception as exc:  # the generated programs raise ZeroDivisionError and ValueError
        return "raised", type(exc)


def same_outcome(got: tuple[str, object], want: tuple[str, object]) -> bool:
    return got[0] == want[0] and (same(got[1], want[1]) if got[0] == "ok" else got[1] is want[1])


def reference(func, args: tuple) -> dict[int, int]:
    """line_profiler's hits for one call of the Python function, whether it returns or raises."""
    prof = line_profiler.LineProfiler(func.py_func)
    outcome(lambda: prof.runcall(func.py_func, *copy.deepcopy(args)))
    return hits_of(prof.get_stats(), "target")


def check_program(source: str, arg_sets: list[tuple], timing: bool = True) -> None:
    """CPython == plain Numba == instrumented result (or exception type), numba_lprun hits ==
    line_profiler's, call by call, calls that raise included."""
    import numba.core.errors

    func, filename = load(source)
    try:
        expected = [outcome(lambda a=args: func.py_func(*copy.deepcopy(a))) for args in arg_sets]
        try:
            plain = [outcome(lambda a=args: func(*copy.deepcopy(a))) for args in arg_sets]
            numba_error = numba.core.errors.NumbaError
            if any(kind == "raised" and issubclass(value, numba_error) for kind, value in plain):
                raise numba_error("rejected")
        except numba.core.errors.NumbaError:  # typing, unsupported construct, ...: not our property
            STATS["rejected by numba"] += 1
            reject()
        STATS["checked"] += 1
        STATS["raised"] += sum(kind == "raised" for kind, _ in expected)
        where = f"\n{numbered(source)}"
        for args, want, got in zip(arg_sets, expected, plain, strict=True):
            assert same_outcome(got, want), f"plain Numba {got} != CPython {want} for {args}{where}"
        prof = numba_lprun.LineProfiler(func, timing=timing, sample=False)
        before: dict[int, int] = {}
        for args, want in zip(arg_sets, expected, strict=True):
            got = outcome(lambda a=args: prof.runcall(func, *copy.deepcopy(a)))
            assert same_outcome(got, want), f"instrumented {got} != CPython {want} for {args}{where}"
            total = hits_of(prof.get_stats(), "target")
            hits = {line: h - before.get(line, 0) for line, h in total.items() if h != before.get(line, 0)}
            before = total
            ref = reference(func, args)
            assert hits == ref, f"hits differ for {args} (timing={timing}):\n{diff(hits, ref)}{where}"
    finally:
        forget(filename)


def limitations(source: str) -> set[str]:
    """The known limitations ``source`` runs into (see test_fuzz.py): expressions
    whose own line events depend on the data because they branch over lines."""
    import ast

    tree = ast.parse(source)
    in_tests: set[int] = set()

    def mark(e: ast.expr) -> None:
        in_tests.add(id(e))
        if isinstance(e, ast.BoolOp):
            for v in e.values:
                mark(v)
        elif isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            mark(e.operand)

    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.While)):
            mark(node.test)
    found = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) == getattr(node, "end_lineno", None):
            continue
        if isinstance(node, ast.IfExp):
            found.add("conditional expression over lines")
        elif isinstance(node, ast.Compare) and len(node.ops) > 1:
            found.add("chained comparison over lines")
        elif isinstance(node, ast.BoolOp) and id(node) not in in_tests:
            found.add("and/or as a value over lines")
    return found


def diff(got: dict, ref: dict) -> str:
    lines = sorted(set(got) | set(ref))
    return "".join(
        f"  line {line}: numba_lprun {got.get(line, 0)}, line_profiler {ref.get(line, 0)}\n"
        for line in lines
        if got.get(line, 0) != ref.get(line, 0)
    )
