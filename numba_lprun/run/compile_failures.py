"""A profiled function whose compile failed in the user's run: which one, and why.

The twins compile on a function's first call with new types, inside the user's run:
a function whose code does not compile (``np.int``, gone from NumPy) fails there,
and the user's statement raises Numba's error. Such a function was called and never
ran, so its table must say it did not compile, with Numba's reason, not that it was
not called. The twin compiled from the same source as the function, so the reason
is the function's own; to be sure it is not the rewrite's, the function itself is
compiled for the same types after the run: where it compiles, the twin's failure is
numba_lprun's, and the reason says so.
"""

from __future__ import annotations

from .compiles import CompileWatcher
from .measurements import CompileFailed, Key
from .targets import Target


def failed_compiles(
    targets: dict[Key, Target], watcher: CompileWatcher | None, kind: str
) -> CompileFailed | None:
    """The targets whose ``kind`` twin (or the function itself) failed to compile while
    ``watcher`` listened, with why; None where none did."""
    if watcher is None or not watcher.failed:
        return None
    found = {}
    for key, target in targets.items():
        twin = target.twins.get(kind)
        tried = [target.original] + ([twin.dispatcher] if twin is not None else [])
        failure = next((watcher.failed[id(d)] for d in tried if id(d) in watcher.failed), None)
        if failure is not None:
            reason, types = failure
            if (
                twin is not None
                and id(twin.dispatcher) in watcher.failed
                and _compiles(target.original, types)
            ):
                mine = f"its {kind} twin did not, though it compiles for these types (please report it)"
                reason = f"{mine}: {reason}"
            found[key] = reason
    return CompileFailed(found) if found else None


def _compiles(dispatcher: object, types: tuple) -> bool:
    """Whether ``dispatcher`` compiles for ``types`` (the twin's types; False when unknown)."""
    if not types:
        return False
    try:
        dispatcher.compile(types)
    except Exception:
        return False
    return True
