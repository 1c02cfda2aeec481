"""Where ``nlprun``'s start-up goes, part by part, with an empty cache and with a filled one.

Run ``python benchmarks/startup_parts.py [--repeats N]``. Each repeat runs two new
processes on one new cache directory (the first fills it, the second reads it);
each process times, in the order a profile meets them: ``import numba``; the
imports of the command line (``numba_lprun.cli``, which pulls in the profiler and
the renderers); Numba's one-time set-up of its target context (``refresh``, paid by
the first compile or cache load of any process); the clock's calibration
(``current_clock``) and the probe cost (``probe_cost_ticks``), both kept per
machine and boot; the sampler's handler (compiled in every process); one small
``@njit`` function compiled as a script would; and its two twins (counting and
clock-probed), compiled or loaded from the cache. Medians over the repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PARTS = [
    "import numba",
    "import numba_lprun.cli",
    "target context refresh",
    "current_clock",
    "probe_cost_ticks",
    "sampler handler",
    "the original (compiled)",
    "2 twins of it",
]


def measure() -> dict[str, float]:
    """Run in the child process: the time of each part, in seconds."""
    out = {}
    t = time.perf_counter()

    def lap(name):
        nonlocal t
        now = time.perf_counter()
        out[name] = now - t
        t = now

    import numba  # noqa: F401

    lap("import numba")
    import numba_lprun.cli  # noqa: F401

    lap("import numba_lprun.cli")
    from numba.core.registry import cpu_target

    cpu_target.target_context.refresh()
    lap("target context refresh")
    from numba_lprun.instrument.calibrate import probe_cost_ticks
    from numba_lprun.instrument.clock import current_clock

    clock = current_clock()
    lap("current_clock")
    probe_cost_ticks(clock.kind)
    lap("probe_cost_ticks")
    from numba_lprun.sampling import _handler, _native

    _handler.get_handler(_native.libc())
    lap("sampler handler")
    import numpy as np

    from .startup_kernel import kernel  # a file of its own: the twins' cache is keyed by its source

    kernel(np.arange(10.0))
    lap("the original (compiled)")
    _twins(kernel, clock.kind)
    lap("2 twins of it")
    return out


def _twins(kernel, clock: str) -> None:
    from numba_lprun.instrument import probes as P
    from numba_lprun.instrument.rewrite import instrument
    from numba_lprun.instrument.source import read_source
    from numba_lprun.instrument.twins import compile_like_original, make_twin, objmode_names

    src = read_source(kernel)
    for timing, kind in ((False, "plain"), (True, "instrumented")):
        rewritten = instrument(src.tree, lines=True, objmode_names=objmode_names(src.py_func))
        counters = P.new_counters(len(rewritten.rows))
        cfg = P.ProbeConfig(counters.address, len(rewritten.rows), clock, timing=timing)
        twin = make_twin(kernel, src, rewritten.tree, P.make_probes(cfg), kind, line_tables=True)
        compile_like_original(twin, src)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(measure()))
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    results: dict[str, dict[str, list[float]]] = {"empty cache": {}, "filled cache": {}}
    for _ in range(options.repeats):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_LPRUN_CACHE_DIR=cache, PYTHONPATH=root)
            env.pop("NUMBA_LPRUN_CACHE", None)
            for state in results:
                argv = [sys.executable, "-m", "benchmarks.startup_parts", "--child"]
                done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, check=True)
                for part, seconds in json.loads(done.stdout.strip().splitlines()[-1]).items():
                    results[state].setdefault(part, []).append(seconds)
    print(f"median of {options.repeats} processes each")
    print(f"{'part':<28}" + "".join(f"{state:>15}" for state in results))
    for part in PARTS:
        cells = "".join(f"{statistics.median(results[state][part]):>14.3f}s" for state in results)
        print(f"{part:<28}{cells}")
    totals = "".join(f"{sum(statistics.median(v) for v in results[s].values()):>14.3f}s" for s in results)
    print(f"{'total':<28}{totals}")


if __name__ == "__main__":
    main()
