"""What is known of each profiled function without running it, read from its twins."""

from __future__ import annotations

import re

from ..instrument.twins import uncached_reason
from ..vectorized import callees_faster_in_copies, vectorized_lines
from .measurements import PLAIN, FunctionFacts, Key
from .naming import titles
from .targets import Target, unsampled_lines


def target_facts(
    targets: dict[Key, Target],
    compile_seconds: dict,  # twin -> seconds this runner compiled it for
    used: set[str],
    labels: list[str | None],
    user_kind: str,
) -> tuple[FunctionFacts, ...]:
    """Each target's facts, titled (see ``naming``).

    Compile seconds are this runner's (0.0: the twin was reused), with why a twin
    compiled is not kept on disk for the next process, if it is not; the vectorized
    loops of the plain and the user's twins are read from their optimized LLVM IR
    (both carry line tables). ``labels``: each target's name, where known.
    """
    entries = [
        (t.original, t.source.py_func, label, t.source.key)
        for t, label in zip(targets.values(), labels, strict=True)
    ]
    out = []
    for (key, target), heading in zip(targets.items(), titles(entries), strict=True):
        src = target.source
        compiled = {
            kind: compile_seconds.get(twin, 0.0)
            for kind, twin in target.twins.items()
            if twin.has_code and kind in used
        }
        uncached = {
            kind: why
            for kind, twin in target.twins.items()
            if compiled.get(kind, 0.0) > 0 and (why := uncached_reason(twin)) is not None
        }
        user = target.twins.get(user_kind)
        signatures = []
        if user is not None:
            for sig in user.code.overloads:  # argument tuples (a ufunc kernel's, a stencil's: .args)
                signatures.append(without_addresses(", ".join(str(t) for t in getattr(sig, "args", sig))))
            signatures = list(dict.fromkeys(signatures))  # a stencil compiles at each call from Python
        # its own lines only: a profiled helper inlined into it vectorizes at the helper's lines, and
        # a parallel function's loop bodies carry generated code's (a note named a blank line 4)
        own = frozenset(range(src.first_lineno, src.first_lineno + len(src.lines)))
        vectorized = {
            kind: frozenset(vectorized_lines(twin.code, twin.vectorized)) & own
            for kind, twin in target.twins.items()
            if twin.has_code and kind in (PLAIN, user_kind)
        }
        out.append(
            FunctionFacts(
                filename=key[0],
                first_lineno=key[1],
                name=key[2],
                qualname=src.py_func.__qualname__,
                source_lines=tuple(src.lines),
                objmode_lines=frozenset(target.rewrite(user_kind).objmode_lines),
                signatures=tuple(signatures),
                compile_seconds=compiled,
                uncached=uncached,
                vectorized=vectorized,
                faster_callees=_faster_callees(target, user_kind),
                unsampled=unsampled_lines(target, user_kind),
                title=heading,
                calls_timed=all(target.clocks[k][1] for k in (user_kind, PLAIN) if k in target.clocks),
            )
        )
    return tuple(out)


def _faster_callees(target: Target, user_kind: str) -> frozenset[str]:
    """What the original's code calls as a slower build than the twins' copies (``vectorized``);
    a ufunc's or stencil's original has no such calls of its own. An original never compiled
    (a script's function, first called in the run) is read in its stead from the user's twin,
    whose callees were compiled as the original's would be; one with ``cache=True`` would have
    loaded its own copies from Numba's cache."""
    original = target.original
    if not hasattr(original, "overloads") or not hasattr(original, "py_func"):
        return frozenset()
    if original.overloads:
        return callees_faster_in_copies(original, target.builds_read)
    twin = target.twins.get(user_kind)
    if original.targetoptions.get("cache") or twin is None or not twin.has_code:
        return frozenset()
    return callees_faster_in_copies(twin.code, twin.builds_read, copies="internal")


#: Addresses in Numba's type names: a function passed as an argument
#: (``type(CPUDispatcher(<function g at 0x7f...>))``), a jitclass instance's class
#: (``instance.jitclass.Particle#5581c7d0<x:float64>``).
_ADDRESS = re.compile(r"<function (\S+) at 0x[0-9a-fA-F]+>|(instance\.jitclass\.[\w.]+)#[0-9a-fA-F]+(?=<)")


def without_addresses(text: str) -> str:
    """A signature's text without the addresses in its type names: they are noise to a reader,
    and they differ in every process, so a worker's signature would not merge with the
    parent's (one signature shown as two)."""
    return _ADDRESS.sub(lambda found: found.group(1) or found.group(2), text)
