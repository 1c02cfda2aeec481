"""Speed of the plain twin's build against the original, per benchmark kernel.

Run ``python benchmarks/line_tables.py [--rounds 40]``. Each kernel is compiled four ways:

* ``orig``: as the user wrote it;
* ``twin``: the plain twin's build as shipped: line tables (``LineTablesOnly``: rows
  plus inlining records), and every function it runs unwindable (its callees' copies
  made its own, ``uwtable`` on all: ``instrument.unwind``);
* ``fp``: the same with frame pointers kept in every function
  (``"frame-pointer"="all"``), the alternative way to walk the stack;
* ``tables only``: line tables without the unwinding changes (the build before them).

Calls alternate between the builds and the fastest of ``--rounds`` calls of each
counts, so a busy machine slows all alike. A call is timed in CPU time of the calling
thread (``time.thread_time``: a call that lost the CPU to another process is not
slower), except ``parallel=True`` kernels, whose work is on other threads (wall time).
Ratios are against ``orig``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernels
import numba

from numba_lprun.instrument import twins, unwind
from numba_lprun.internals import library_pass, pipeline_class

warnings.simplefilter("ignore", numba.NumbaWarning)  # parfor debug lines "may be inaccurate"

_WithFramePointers = library_pass(
    "bench_unwindable_with_frame_pointers",
    functools.partial(unwind.make_unwindable, frame_pointers=True),
    "make the library's code unwindable, with frame pointers",
)


def _swap_unwinding(pipeline: type, replacement: type | None) -> type:
    """``pipeline`` with its ``UnwindableLibrary`` pass replaced (or removed when None)."""

    def define_pipelines(self):
        pipelines = pipeline.define_pipelines(self)
        for pm in pipelines:
            assert any(cls is unwind.UnwindableLibrary for cls, _ in pm.passes)
            swapped = [(replacement if cls is unwind.UnwindableLibrary else cls, d) for cls, d in pm.passes]
            pm.passes = [(cls, d) for cls, d in swapped if cls is not None]
            pm.finalize()
        return pipelines

    return type(pipeline.__name__ + "Variant", (pipeline,), {"define_pipelines": define_pipelines})


def build(original, variant: str):
    """``original`` recompiled as the plain twin is (without its entry/exit probes)."""
    options = dict(original.targetoptions)
    options.update(twins.line_table_options(original))
    pipeline = twins.line_tables_pipeline(pipeline_class(original))
    if variant == "fp":
        pipeline = _swap_unwinding(pipeline, _WithFramePointers)
    elif variant == "tables only":
        pipeline = _swap_unwinding(pipeline, None)
    return type(original)(
        original.py_func, locals=dict(original.locals), targetoptions=options, pipeline_class=pipeline
    )


VARIANTS = ("twin", "fp", "tables only")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    rounds = parser.parse_args().rounds
    print(f"numba {numba.__version__}; fastest of {rounds} interleaved calls; ratios against orig")
    print(f"{'kernel':24} {'orig ms':>8} " + " ".join(f"{v + '/orig':>16}" for v in VARIANTS))
    worst = 0.0
    for name, (func, args) in kernels.make_kernels().items():
        builds = [func] + [build(func, v) for v in VARIANTS]
        for b in builds:
            b(*args)
        clock = time.perf_counter if func.targetoptions.get("parallel") else time.thread_time
        best = [float("inf")] * len(builds)
        for _ in range(rounds):
            for i, b in enumerate(builds):
                start = clock()
                b(*args)
                best[i] = min(best[i], clock() - start)
        ratios = [b / best[0] for b in best[1:]]
        worst = max(worst, ratios[0])
        print(f"{name:24} {best[0] * 1e3:8.2f} " + " ".join(f"{r:15.3f}x" for r in ratios))
    print(f"worst twin/orig: {worst:.3f}x")


if __name__ == "__main__":
    main()
