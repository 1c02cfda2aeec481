"""A long fuzz campaign that keeps going after a mismatch and saves each one.

    python -m tests.fuzz.campaign EXAMPLES [SEED] [OUT_DIR] [risky]
    python -m tests.fuzz.campaign replay FILE...

Checks EXAMPLES generated programs (random seed SEED, default 0) without
Hypothesis's shrinking, and writes every failing program with its arguments and
message to OUT_DIR (default ``fuzz-failures/``) as ``fail-<seed>-<n>.py``.
``risky`` also writes the constructs test_fuzz.py lists as known limitations
(failures of programs holding one are counted, not saved). Prints a summary:
programs checked, rejected by Numba, failed. ``replay`` checks saved failures
again (after a fix); minimise them by hand into tests/fuzz/cases.py.
"""

from __future__ import annotations

import os
import sys
import time
import traceback

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import UnsatisfiedAssumption

from tests.fuzz import harness
from tests.fuzz.gen import inputs, programs


def replay(paths: list[str]) -> int:
    """Check saved failures again; print those that still fail."""
    from numpy import array  # the saved ARGS are written with it

    still = 0
    for path in paths:
        with open(path) as fh:
            text = fh.read()
        source = text[: text.index("\nARGS = ")] + "\n"
        saved: dict = {"array": array}
        exec(text[text.index("ARGS = ") : text.index('\n"""')], saved)
        try:
            harness.check_program(source, saved["ARGS"], saved["TIMING"])
        except Exception as exc:
            still += 1
            print(f"{path}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    print(f"{len(paths) - still} of {len(paths)} pass now")
    return 1 if still else 0


def main(argv: list[str]) -> int:
    if argv and argv[0] == "replay":
        return replay(argv[1:])
    examples = int(argv[0]) if argv else 200
    rng_seed = int(argv[1]) if len(argv) > 1 else 0
    out_dir = argv[2] if len(argv) > 2 else "fuzz-failures"
    risky = len(argv) > 3 and argv[3] == "risky"
    os.makedirs(out_dir, exist_ok=True)
    failures: list[str] = []
    start = time.perf_counter()

    @seed(rng_seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(
        source=programs(risky=risky),
        arg_sets=st.lists(inputs(), min_size=1, max_size=3),
        timing=st.booleans(),
    )
    def run(source, arg_sets, timing):
        try:
            harness.check_program(source, arg_sets, timing)
        except UnsatisfiedAssumption:
            raise
        except Exception:
            known = harness.limitations(source)
            harness.STATS["failed, known limitation" if known else "failed"] += 1
            if known:
                return
            path = os.path.join(out_dir, f"fail-{rng_seed}-{len(failures)}.py")
            with open(path, "w") as fh:
                fh.write(source)
                fh.write(f"\nARGS = {arg_sets!r}\nTIMING = {timing!r}\n")
                fh.write('\n"""\n' + traceback.format_exc().replace('"""', "'''") + '"""\n')
            failures.append(path)
        done = harness.STATS["checked"] + harness.STATS["rejected by numba"]  # drawn so far
        if done % 50 == 0:
            print(f"  {done} drawn, {dict(harness.STATS)}, {time.perf_counter() - start:.0f}s", flush=True)

    run()
    print(f"seed {rng_seed}: {dict(harness.STATS)} in {time.perf_counter() - start:.0f}s")
    for path in failures:
        print("  ", path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
