"""Profile one pattern of recursive_types.py cold, in a process of its own, and print
what the test compares as one JSON line: an LLVM abort kills only this process, and
the test sees its return code.

``recursive_profile.py PATTERN N``: line_profiler's hits come first, from the
Python classes (nothing is compiled before the profile), then the profile of the
pattern's jitclasses, then the unprofiled jitted result.
"""

import json
import sys

import line_profiler
import recursive_types as rt

import numba_lprun
from numba_lprun.instrument.profilable import class_members

JITCLASSES = ("Node", "TreeNode", "StackNode", "Stack")
PROFILED = {"list": ("Node",), "tree": ("TreeNode",), "stack": ("Stack", "StackNode")}


def by_function(stats) -> dict:
    """{"name@first line": {line: hits}}: line_profiler 4 keys by name, 5 by qualified name."""
    found = {}
    for (_, first, name), rows in stats.timings.items():
        hits = {str(line): n for line, n, _ in rows if n}
        if hits:
            found[f"{name.rsplit('.', 1)[-1]}@{first}"] = hits
    return found


def reference(driver, classes, n):
    """line_profiler's hits for the driver run on the Python classes the jitclasses wrap."""
    prof = line_profiler.LineProfiler(*[d.py_func for cls in classes for _, d in class_members(cls)])
    namespace = vars(rt)
    jitted = {name: namespace[name] for name in JITCLASSES}
    namespace.update({name: cls.__bases__[0] for name, cls in jitted.items()})
    try:
        result = prof.runcall(driver.py_func, n)
    finally:
        namespace.update(jitted)
    return result, by_function(prof.get_stats())


def described_lines_only(prof) -> bool:
    """Whether every twin carries line tables (subprograms) and describes no type at all."""
    irs = [ir for twin in prof.twins() for ir in twin.dispatcher.inspect_llvm().values()]
    types = ("!DIBasicType(", "!DIDerivedType(", "!DICompositeType(")
    return bool(irs) and all("!DISubprogram(" in ir and not any(t in ir for t in types) for ir in irs)


def main(pattern: str, n: int) -> None:
    driver, _ = rt.PATTERNS[pattern]
    classes = [getattr(rt, name) for name in PROFILED[pattern]]
    python_result, python_hits = reference(driver, classes, n)
    prof = numba_lprun.LineProfiler(*classes, sample_time=0.2)
    result = prof.runcall(driver, n)
    report = {
        "python": python_result,
        "profiled": result,
        "unprofiled": driver(n),
        "reference_hits": python_hits,
        "hits": by_function(prof.get_stats()),
        "samples": sum(f.samples.total for f in prof.profile.functions),
        "line_tables_only": described_lines_only(prof),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
