"""line_profiler's hits for a package's own test suite, run with Numba's JIT disabled (so every
jitted function runs as the Python function it was written as): the reference that
``nlprun --source PKG -m pytest`` is compared with. Run as ``python -m tests.package_reference
PKG OUT.json PYTEST_ARGS...`` with ``NUMBA_DISABLE_JIT=1``; writes {"passed": ..., "hits":
{"file:function": {line: hits}}} and exits with pytest's status."""

import importlib
import json
import os
import pkgutil
import sys
import types

import line_profiler
import pytest


def functions_of(package: str) -> list[types.FunctionType]:
    """Every Python function the package's modules define (jitted ones are plain functions here)."""
    root = importlib.import_module(package)
    modules = [root] + [
        importlib.import_module(info.name) for info in pkgutil.walk_packages(root.__path__, package + ".")
    ]
    found = []
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
                found.append(value)
    return found


def main() -> int:
    assert os.environ.get("NUMBA_DISABLE_JIT") == "1", "run with NUMBA_DISABLE_JIT=1"
    package, out, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    prof = line_profiler.LineProfiler(*functions_of(package))
    prof.enable_by_count()
    try:
        status = pytest.main(args)
    finally:
        prof.disable_by_count()
    hits = {}
    for (filename, _, name), rows in prof.get_stats().timings.items():
        counted = {line: n for line, n, _ in rows if n}
        if counted:
            hits[f"{os.path.basename(filename)}:{name.rsplit('.', 1)[-1]}"] = counted
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"hits": hits}, handle)
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
