"""Speed of the plain twin's build against the original, per benchmark kernel.

Run ``python benchmarks/line_tables.py``. Each kernel is compiled three ways: as
the user wrote it (``orig``), with the line tables the plain twin carries now
(``LineTablesOnly``: line rows plus inlining records) and with directives-only
line tables (what twins carried before). Calls alternate between the builds and
the fastest of ``ROUNDS`` calls of each counts, so a busy machine slows all alike.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernels  # noqa: E402

from numba_lprun.instrument import twins  # noqa: E402

ROUNDS = 40


def build(original, line_tables_only: bool):
    """``original`` recompiled with line tables, as the plain twin is (without its probes)."""
    options = dict(original.targetoptions)
    options.update(twins.line_table_options(original))
    pipeline = twins._line_tables_only(original._compiler.pipeline_class)
    if not line_tables_only:  # the previous emission kind: DebugDirectivesOnly
        base = pipeline

        def __init__(self, typingctx, targetctx, library, args, return_type, flags, locals):
            flags.dbg_directives_only = True
            base.__mro__[1].__init__(self, typingctx, targetctx, library, args, return_type, flags, locals)

        pipeline = type("Directives" + base.__name__, (base,), {"__init__": __init__})
    return type(original)(
        original.py_func, locals=dict(original.locals), targetoptions=options, pipeline_class=pipeline
    )


def main() -> None:
    print(f"{'kernel':24} {'orig ms':>8} {'tables/orig':>11} {'directives/orig':>15}")
    for name, (func, args) in kernels.make_kernels().items():
        builds = [func, build(func, True), build(func, False)]
        for b in builds:
            b(*args)
        best = [float("inf")] * 3
        for _ in range(ROUNDS):
            for i, b in enumerate(builds):
                start = time.perf_counter()
                b(*args)
                best[i] = min(best[i], time.perf_counter() - start)
        print(f"{name:24} {best[0] * 1e3:8.2f} {best[1] / best[0]:10.3f}x {best[2] / best[0]:14.3f}x")


if __name__ == "__main__":
    main()
