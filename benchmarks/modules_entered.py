"""How many of numba_lprun's modules a warm ``nlprun --once`` of a small script enters.

Run ``python benchmarks/modules_entered.py [--list]`` (``PYTHONPATH=.`` first, to count the
checkout it runs in rather than the one installed).

Why: a reader following one profile through the code reads every module it enters, so the
count is how much of the package one answer depends on (84 of 135 modules before the sampler
was merged into modules by subject, 78 of 128 after). The script is
profiled twice in this process with ``--once`` (one run, no plain runs); the second, warm
(its twins come from the first), runs under ``sys.setprofile``, and every module of the
package whose code a Python call entered is counted. Nothing is timed: the count does not
depend on the machine or its load.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from pathlib import Path

SCRIPT = """\
import numpy as np
from numba import njit


@njit
def smooth(x):
    out = np.empty_like(x)
    total = 0.0
    for i in range(x.size):
        total += x[i]
        out[i] = total / (i + 1)
    return out


print(smooth(np.arange(1000.0))[-1])
"""


def entered_modules(script: Path) -> list[str]:
    """The package's modules whose code a warm ``--once`` profile of ``script`` entered."""
    import numba_lprun
    from numba_lprun import cli

    package = Path(numba_lprun.__file__).resolve().parent
    with contextlib.redirect_stdout(io.StringIO()):
        cli.main(["--once", str(script)])  # compiles the twins: the run below finds them
    files: set[str] = set()

    def seen(frame, event, arg):
        if event == "call":
            files.add(frame.f_code.co_filename)

    with contextlib.redirect_stdout(io.StringIO()):
        sys.setprofile(seen)
        try:
            cli.main(["--once", str(script)])
        finally:
            sys.setprofile(None)
    inside = []
    for name in files:
        path = Path(name).resolve()
        if path.is_relative_to(package):
            inside.append(str(path.relative_to(package)))
    return sorted(inside)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name the modules, one a line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "small_kernel.py"
        script.write_text(SCRIPT)
        modules = entered_modules(script)
    total = len(list(Path(__import__("numba_lprun").__file__).resolve().parent.rglob("*.py")))
    print(f"modules entered by a warm --once profile: {len(modules)} of the package's {total}")
    if args.list:
        print("\n".join(modules))


if __name__ == "__main__":
    main()
