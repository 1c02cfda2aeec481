"""Make every function a twin's code runs through unwindable.

Why: the sampler charges a sample to a profiled line by walking the interrupted
thread's stack (glibc ``backtrace``, i.e. libgcc's unwinder over the ``.eh_frame``
tables the JIT registers). LLVM emits no unwind table for a function it proved
``nounwind`` unless asked (``uwtable``), and two things kept the walk from
reaching the profiled line:

* Jitted callees. Numba links a callee's module into its caller's library, but as
  ``linkonce_odr`` copies: the JIT resolves those weak symbols to the first
  definition it saw, the callee's own library, compiled as the user wrote it
  (without unwind tables when it is a leaf loop or only calls libm). The copy in
  the twin's library was dead code. Here the copies become ``internal`` *after*
  LLVM optimized the module (inlining decisions and code are unchanged), so the
  twin calls its own copies, which are compiled with the twin's options.
* Unwind tables: every function defined in the twin's final module (its own code,
  the callee copies, parfor gufunc kernels and wrappers of ``parallel=True``) gets
  the ``uwtable`` attribute, so LLVM writes an ``.eh_frame`` entry for each.

This changes no instruction of the optimized code: unwind tables are data. The
alternative, keeping frame pointers (``"frame-pointer"="all"``) and walking the
frame chain in the signal handler, costs a register in every function and, on
the benchmark kernels, speed (``benchmarks/unwinding.py`` measures both); it is
kept here only for that measurement.

The hook runs when the library is finalized, between LLVM's optimization and
machine-code generation (``internals.rewrite_final_module``).
"""

from __future__ import annotations

import functools
import re

from ..internals import (
    internalize_linked_copies,
    library_pass,
    mark_unplaced_code,
    reparsed,
    rewrite_final_module,
)
from .parfor_code import PARFOR_GUFUNC

_GROUP_RE = re.compile(r"^attributes #(\d+) = \{ (.*) \}$", re.MULTILINE)
_DEFINE_GROUP_RE = re.compile(r"#(\d+)")
_PREFIX_RE = re.compile(r"^((?:\s+(?:local_unnamed_addr|unnamed_addr|addrspace\(\d+\)))*)")

UWTABLE = "uwtable"
FRAME_POINTERS = '"frame-pointer"="all"'


def unwindable_ir(text: str, extra: tuple[str, ...] = (UWTABLE,)) -> str:
    """``text`` (an LLVM module) with ``extra`` attributes on every defined function.

    Attribute groups shared with call sites and declarations are left alone: each
    group a definition uses is copied with the attributes added.
    """
    groups = {int(m.group(1)): m.group(2) for m in _GROUP_RE.finditer(text)}
    next_id = max(groups, default=-1) + 1
    added: dict[int | None, int] = {}

    def group_for(old: int | None) -> int:
        nonlocal next_id
        if old not in added:
            attrs = groups.get(old, "") if old is not None else ""
            kept = [a for a in _split_attributes(attrs) if not _replaced_by(a, extra)]
            new_attrs[next_id] = " ".join(kept + list(extra))
            added[old] = next_id
            next_id += 1
        return added[old]

    new_attrs: dict[int, str] = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("define "):
            lines[i] = _with_group(line, group_for)
    out = "\n".join(lines)
    if new_attrs:
        out += "\n" + "\n".join(f"attributes #{k} = {{ {v} }}" for k, v in sorted(new_attrs.items())) + "\n"
    return out


def _split_attributes(attrs: str) -> list[str]:
    """Attributes of a group, keeping ``"key"="value"`` and ``memory(...)`` whole."""
    return re.findall(r'"[^"]*"(?:="[^"]*")?|[\w.]+(?:\([^)]*\))?', attrs)


def _replaced_by(attribute: str, extra: tuple[str, ...]) -> bool:
    """Whether one of ``extra`` sets the same attribute as ``attribute``."""
    key = attribute.split("=")[0].split("(")[0]
    return any(key == e.split("=")[0].split("(")[0] for e in extra)


def _with_group(line: str, group_for) -> str:
    """A ``define`` line pointing at its attributes group plus the extra attributes."""
    found = _DEFINE_GROUP_RE.search(line[line.rindex(")") :]) if ")" in line else None
    if found is not None:
        at = line.rindex(")") + found.start()
        return f"{line[:at]}#{group_for(int(found.group(1)))}{line[at + len(found.group(0)) :]}"
    close = line.rindex(")")  # the parameter list (or addrspace(N)): attributes follow it
    tail = line[close + 1 :]
    prefix = _PREFIX_RE.match(tail).group(1)
    head = line[: close + 1] + prefix
    return f"{head} #{group_for(None)}{tail[len(prefix) :]}"


def internalize_copies(module: object) -> int:
    """Make the function copies linked in from other libraries this module's own (an llvmlite
    ``ModuleRef``). Returns how many were changed."""
    return internalize_linked_copies(module)


def unwindable_module(module: object, frame_pointers: bool = False) -> object:
    """A copy of an optimized module (an llvmlite ``ModuleRef``) whose every function runs
    from it and can be unwound.

    Should the attributes not parse back (a ``define`` line of a shape Numba does not
    write), the module keeps its internalized copies without them: a twin's module
    has line tables, and LLVM then writes unwind tables for its functions anyway
    (checked: internalizing alone was enough on Numba 0.68; ``uwtable`` alone was not).
    """
    extra = (UWTABLE, FRAME_POINTERS) if frame_pointers else (UWTABLE,)
    internalize_copies(module)
    result = reparsed(module, unwindable_ir(str(module), extra))
    return module if result is None else result


#: The rewrites, made once each, so that a library given one twice rewrites once
_REWRITES = {flag: functools.partial(unwindable_module, frame_pointers=flag) for flag in (False, True)}


def make_unwindable(library: object, frame_pointers: bool = False) -> None:
    """Rewrite ``library``'s final module when it is finalized (see the module docstring)."""
    rewrite_final_module(library, _REWRITES[frame_pointers])
    mark_unplaced_code(library)  # its line tables then say where LLVM lost a line


#: The pass that creates the library a twin's function is lowered into, and makes it
#: unwindable; it runs just before lowering (which would create the library itself).
UnwindableLibrary = library_pass(
    "nlp_unwindable_library", make_unwindable, "make the library's code unwindable"
)


def keep_loop_body_apart(function: object) -> None:
    """Keep a ``prange`` body's function from being inlined into its gufunc wrapper.

    The wrapper is compiled without line tables, and LLVM drops the line rows of
    code inlined into a call that has no location: a small body inlined there left
    its workers' samples on no line at all. Not inlined, the body keeps its rows; it
    costs one call per chunk of the loop each thread runs.
    ``function`` is the llvmlite ``ir.Function`` being lowered.
    """
    if PARFOR_GUFUNC in function.name and "alwaysinline" not in function.attributes:
        function.attributes.add("noinline")
