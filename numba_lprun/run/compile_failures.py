"""A profiled function whose compile failed in the user's run: which one, and why.

The twins compile on a function's first call with new types, inside the user's run:
a function whose code does not compile (``np.int``, gone from NumPy) fails there,
and the user's statement raises Numba's error. Such a function was called and never
ran, so its table must say it did not compile, with Numba's reason, not that it was
not called. The twin compiled from the same source as the function, so the reason
is the function's own; to be sure it is not the rewrite's, the function itself is
compiled for the same types after the run: where it compiles, the twin's failure is
numba_lprun's, the call ran the original instead (``internals.redirect``), and the run
says that in its own note.
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
        failure = next((watcher.failed[d] for d in tried if d in watcher.failed), None)
        if failure is not None:
            reason, types = failure
            only_the_twin = twin is not None and target.original not in watcher.failed
            # (a function that failed itself is not compiled again: Numba raises the same exception
            # object again, and that would add frames to the one the user's statement raised)
            if only_the_twin and twin.dispatcher in watcher.failed and _compiles(target.original, types):
                continue  # the original ran instead, and the run says so (``PhaseRun.unprofiled``)
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
