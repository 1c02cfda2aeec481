"""Numba's compile events during a run: progress messages, pauses of the sampler, self times.

A compile can start inside a sampled run (a new argument type, a twin compiled on
first use): Numba must not compile while the native sampler is armed (its
unwinder lock), so the sampler is paused for the compile and resumed after. Not only
a dispatcher's compile: a ufunc's wrapper, a ``cfunc``, a twin built for a function a
statement defined, all generate code under Numba's compiler lock, and every hold of it
pauses the sampler too (a gufunc twin's wrapper built with the sampler armed aborted
the process in libgcc's unwinder). A thread announces the lock before it waits for it,
so compiles are followed per thread, and sampling resumes when no thread compiles.
A compile can trigger others (a caller compiles its callees), so each dispatcher
is charged its own time only.

A Ctrl-C is held while Numba compiles and raised when the compile is done: Numba
cannot be stopped half way. An intrinsic's typing caches its signature before it
registers its lowering, so a KeyboardInterrupt landing between the two left a twin
that could never be lowered again ("No definition for lowering" in every later
profile of that function); and one landing in Numba's object-cache callback (Python
called through ctypes) was dropped.

A forked child (a pool's worker) inherits the parent's listeners, whose sampler is
not there: a watcher hears only the process that installed it.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..internals import compile_events
from ..interrupts import ctrl_c_deferred
from .measurements import CompileFailed, Key
from .page_faults import faults_since, minor_faults

if TYPE_CHECKING:
    from .targets import Target

Progress = Callable[[str], None]


class CompileHooks(Protocol):
    def pause(self) -> None: ...
    def resume(self) -> None: ...


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_WHERE = re.compile(r'^File "[^"]*", line (\d+):?$', re.M)
REASON_CHARS = 200  # a reason longer than this keeps its first sentences (the traceback has all)


def failure_reason(error: BaseException) -> str:
    """Why a compile failed, in one line: Numba's own reason (its message's first paragraph after
    the pipeline's "Failed in ... mode pipeline" line, with the line it names), or the exception
    Numba let through (NumPy's ``AttributeError`` for ``np.int``: "module 'numpy' has no
    attribute 'int'. `np.int` was a deprecated alias for the builtin `int`. ...")."""
    text = _ANSI.sub("", str(error)).strip()
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("During: "))  # Numba's pass names
    where = _WHERE.search(text)
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    if paragraphs and paragraphs[0].startswith("Failed in "):  # the pipeline's step, then the reason
        head, _, rest = paragraphs[0].partition("\n")
        paragraphs[0] = rest or head
    if len(paragraphs) > 1 and paragraphs[0].rstrip().endswith(":"):  # "...found for signature:" + it
        paragraphs[:2] = [paragraphs[0] + " " + paragraphs[1]]
    said = " ".join((paragraphs[0] if paragraphs else type(error).__name__).split())
    if len(said) > REASON_CHARS:  # whole sentences while they fit
        sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z`'\"])", said)
        kept = [sentences[0]]
        for sentence in sentences[1:]:
            if len(" ".join([*kept, sentence])) > REASON_CHARS:
                break
            kept.append(sentence)
        said = " ".join(kept)
        said = said if len(said) <= REASON_CHARS else said[:REASON_CHARS] + "..."
    if where is not None and f"line {where.group(1)}" not in said:
        said += f" (line {where.group(1)})"
    name = type(error).__name__
    return said if name in ("TypingError", "NumbaError") else f"{name}: {said}"


@dataclass
class _ThreadCompiles:
    """One thread's compiles under way, innermost last (``[dispatcher, start, seconds spent in
    nested compiles]``), and the Ctrl-C held from the outermost's start to its end."""

    held: contextlib.AbstractContextManager
    frames: list[list] = field(default_factory=list)


class CompileWatcher:
    """Compile events of one phase: progress messages and self time per dispatcher."""

    def __init__(
        self,
        phase: str,
        progress: Progress | None,
        paused: CompileHooks | None = None,
        starting: Callable[[object, tuple], None] | None = None,
    ):
        self.phase = phase
        self.progress = progress
        self.paused = paused  # told when compiling starts and ends (the sampler pauses)
        self.starting = starting  # told of each dispatcher about to compile (and its types), before typing
        # Both keyed weakly: a dispatcher whose compile failed (an ``@overload`` implementation typing
        # tried and dropped) keeps the failure in its cache, and the failure's traceback the frames of
        # the call that compiled, with its arguments: held here, a typed dict passed in outlived its
        # program's last reference (Numba's own leak checks saw it)
        self.seconds: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # dispatcher -> self seconds
        self.spans: list[tuple[float, float]] = []  # (start, end) of each stretch in which a thread compiled
        self.span_faults: list[int] = []  # the page faults of each (-1: unknown)
        self._faults_at = -1
        self._span_start = 0.0
        # each thread's compiles under way (an entry only while it compiles). Per thread: a thread
        # announces the compiler lock before it waits for it (``compile_events``)
        self._compiling: dict[int, _ThreadCompiles] = {}
        self._guard = threading.RLock()  # (a sampler resumed here may compile its handler: events again)
        self._pid = os.getpid()
        # dispatcher -> (why, in one line; its types)
        self.failed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def on_start(self, data: dict) -> None:
        if os.getpid() != self._pid:  # a forked child's inherited listener
            return
        disp = data.get("dispatcher")
        if self.progress is not None and disp is not None:
            args = ", ".join(str(a) for a in data.get("args") or ())
            self.progress(f"compiling {disp.py_func.__qualname__}({args}) for the {self.phase} run")
        thread = threading.get_ident()
        with self._guard:
            first_anywhere = not self._compiling
            compiles = self._compiling.get(thread)
            if compiles is None:
                compiles = self._compiling[thread] = _ThreadCompiles(ctrl_c_deferred())
                compiles.held.__enter__()
            if first_anywhere:
                if self.paused is not None:
                    self.paused.pause()
                self._faults_at = minor_faults()
                self._span_start = time.perf_counter()
            compiles.frames.append([disp, time.perf_counter(), 0.0])
        if self.starting is not None and disp is not None:
            self.starting(disp, tuple(data.get("args") or ()))

    def on_end(self, data: dict, error: BaseException | None = None) -> None:
        if os.getpid() != self._pid:
            return
        disp = data.get("dispatcher")
        thread = threading.get_ident()
        with self._guard:
            compiles = self._compiling.get(thread)
            if compiles is None:
                return
            stack = compiles.frames
            with contextlib.suppress(TypeError):  # (a compiling object without weak references: not kept)
                if isinstance(error, Exception) and disp is not None:  # not a Ctrl-C: Numba's or the code's
                    self.failed[disp] = (failure_reason(error), tuple(data.get("args") or ()))
                elif error is None and disp is not None:  # compiled after all (retried with literal types)
                    self.failed.pop(disp, None)
            key, start, nested = stack.pop()
            now = time.perf_counter()
            spent = now - start
            with contextlib.suppress(TypeError):
                if key is not None:
                    self.seconds[key] = self.seconds.get(key, 0.0) + spent - nested
            if stack:
                # what the enclosing compile does not charge itself: a nested compile's time; a hold
                # of the compiler lock (no dispatcher) is the enclosing compile's own time, but for
                # the compiles inside it (charging the hold made every twin's self time about 0)
                stack[-1][2] += spent if key is not None else nested
                return
            del self._compiling[thread]  # (threads come and go: a pool's)
            if not self._compiling:  # no thread compiles now: sampling goes on
                self.spans.append((self._span_start, now))
                self.span_faults.append(faults_since(self._faults_at))
                if self.paused is not None:
                    self.paused.resume()
        compiles.held.__exit__(None, None, None)  # a Ctrl-C held during the compile is raised now

    def compiling_since(self, since: float) -> float:
        """Seconds of the stretches in which some thread compiled (or held Numba's compiler lock)
        that started at ``since`` or later: what a run's wall time leaves out to be the run's
        own (a ufunc compiles on its first call)."""
        return sum(end - start for start, end in self.spans if start >= since)

    def faults_since(self, since: float) -> int:
        """Page faults of the stretches of compiling (``spans``) that started at ``since`` or
        later (LLVM's memory: left out of a run's faults as its time is left out of the run's
        time)."""
        found = [n for (start, _), n in zip(self.spans, self.span_faults, strict=True) if start >= since]
        return -1 if any(n < 0 for n in found) else sum(found)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Listen to Numba's compile events while the block runs; a Ctrl-C still held when it
        ends (a compile cut short by an exception raised elsewhere) is raised then."""
        try:
            with compile_events(self):
                yield
        finally:
            with self._guard:
                mine = self._compiling.pop(threading.get_ident(), None)
                self._compiling.clear()  # (other threads' holds do nothing: only the main thread's holds)
            if mine is not None:
                mine.held.__exit__(None, None, None)


# -- a profiled function whose compile failed in the user's run -----------------------
# A profiled function whose compile failed in the user's run: which one, and why.
#
# The twins compile on a function's first call with new types, inside the user's run:
# a function whose code does not compile (``np.int``, gone from NumPy) fails there,
# and the user's statement raises Numba's error. Such a function was called and never
# ran, so its table must say it did not compile, with Numba's reason, not that it was
# not called. The twin compiled from the same source as the function, so the reason
# is the function's own; to be sure it is not the rewrite's, the function itself is
# compiled for the same types after the run: where it compiles, the twin's failure is
# numba_lprun's, the call ran the original instead (``internals.redirect``), and the run
# says that in its own note.


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
