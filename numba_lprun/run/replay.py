"""Extra runs replay the profiled functions' calls, never the user's statement.

The user's statement runs once. What it does besides calling jitted code (appending to a
file, writing to a database, starting a process, submitting jobs to a cluster) is outside
anything a snapshot of the process can see, so a second run of the statement would do it
again. The extra runs (the timed plain run for the overhead figure, sampled repeats, the
probed and allocation-counting runs) need only the jitted calls.

So during the user's run a :class:`CallRecorder` makes each Python-level call of a
redirected function (a profiled one, or a jitted caller of one): before the call it saves
the state the call can reach (``snapshot``: its arguments, followed into arrays, lists,
typed containers, jitclass instances..., and the random states), after it what the call
returned and changed. A replay puts each call's saved state back in place (the same
objects, so the same Numba types: no new signature compiles) and makes the call again on
the phase's twins; after the last replay every object is given the state the user's run
left it in (``keep_final``, ``put_back``), as if no replay ran. A nopython function's
effects are on what it is given (and ``print``, which an extra run silences), so a replay
touches nothing else. An array the call's compiled code never writes is not copied but
fingerprinted (``fingerprints``): a call that read one the statement changed later is dropped
when the statement ends. One it never reads is not copied before the call either (a replay
does not depend on it); its final state is, like any changed state, by ``keep_final``.

Not replayed (the run says why): a generator (the caller takes its values), code that
calls foreign functions (ctypes, cffi, MPI through numba-mpi or mpi4py: a replay would
communicate again) or Python (``objmode`` blocks), and a call whose state cannot be saved
(an open file, a lock) or exceeds the memory allowed. A statement that makes many calls
has a sample of them recorded, evenly spread (every k-th call, k doubling as the count, the
memory or the time spent saving (``SAVING_SHARE`` of the run) fills).
"""

from __future__ import annotations

import os
import threading
import time
import types as pytypes
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import settings
from ..internals import READ, argument_access
from .differences import differences
from .fingerprints import Fingerprint, fingerprint
from .reach import reached_values
from .snapshot import UNSAVED_BYTES, Reach, SavedCopies, Snapshot, call_reach, take_snapshot
from .state_types import Item

#: Calls recorded at most; past it, every other one is dropped and every 2k-th call kept.
MAX_CALLS = 256
#: Share of the user's run that saving calls' state may take, once a few calls are kept: past
#: it, every other call is dropped and every 2k-th one saved (each save copies what the call
#: reaches, about what a kernel reading its arrays once costs). A statement longer than the
#: extra runs' limit is never replayed, and pays it all the same (at 10%, and a fifth of the
#: limit for the first saves, a ``prange`` kernel's one-second statement read 1.20x against one
#: run's 1.08x in ``benchmarks/first_save.py``; at half of each, 1.18x against 1.11x).
SAVING_SHARE = 0.05
_FEW = 4
#: Share of ``stop_after``'s limit the first ``_FEW`` saves may take before ``SAVING_SHARE``
#: rules: a call on 80 MB arrays, 5 ms to run, took 250 ms to save, and four such saves made a
#: one-second statement 1.8x (the saves before the limit is reached are never used after it).
FEW_SHARE = 0.1

_FOREIGN_MODULES = ("numba_mpi", "mpi4py", "_cffi_backend", "ctypes", "cffi")


@dataclass
class _Call:
    """One recorded call: the function, the very arguments it was given, the state they (and
    the random states) were in before it, and what it returned and changed (for comparing)."""

    index: int
    function: object
    args: tuple
    kwargs: dict
    before: Snapshot
    result: Any = None
    after: list[tuple[Item, object]] = field(default_factory=list)
    written: list[tuple[Item, Fingerprint]] = field(default_factory=list)  # arrays it only writes, after it
    final: list[tuple[Item, object]] = field(default_factory=list)  # as the user's run left it

    @property
    def nbytes(self) -> int:
        return 2 * self.before.nbytes  # saved before, and (at most) as much kept after


@dataclass
class CallRecorder:
    """Records the Python-level calls of redirected functions in the user's run (see
    ``internals.record_calls``), and replays them in the extra runs."""

    budget: int  # bytes of saved state kept at most
    parallel: bool = False  # a profiled function runs on Numba's threads: their random states too
    calls: list[_Call] = field(default_factory=list)
    seen: int = 0  # top-level calls made
    stride: int = 1  # every stride-th call is recorded
    saving: float = 0.0  # seconds spent saving the kept calls' state (halved as the stride doubles)
    saved: float = 0.0  # seconds spent saving calls' state, all of it
    calling: float = 0.0  # seconds spent in the calls themselves
    refused: dict[str, str] = field(default_factory=dict)  # function -> why its calls are not replayed
    _why_not: dict[object, str | None] = field(default_factory=dict)  # function -> why (None: replayable)
    _copies: SavedCopies = field(default_factory=SavedCopies)  # large arrays' copies, shared by calls
    _attributes: dict = field(default_factory=dict)  # ``argument_access``'s memo, for this statement
    _holding: list = field(default_factory=list)  # the functions a large result is held for (``_may_hold``)
    _restored: bool = False  # the one recorded call's state was just put back (``restore``)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _local: threading.local = field(default_factory=threading.local)
    _owner: int = field(default_factory=threading.get_ident)  # the thread the replays run on
    _pid: int = field(default_factory=os.getpid)  # a forked worker inherits the recorder: it records nothing
    _own_states: Snapshot | None = None  # its random states as the user's run left them
    _limit: float | None = None  # run seconds past which nothing is recorded (``stop_after``)
    _elapsed: Callable[[], float] | None = None  # the run's own seconds so far
    stopped: bool = False  # the run outlasted ``_limit``: nothing kept, nothing more recorded
    # arrays a call only reads that changed between two recorded calls: copied from then on
    _moving: list[np.ndarray] = field(default_factory=list)
    dropped: str | None = None  # why calls were dropped when the statement ended (``keep_final``)

    def stop_after(self, seconds: float, elapsed: Callable[[], float]) -> None:
        """Record no more, and drop what was kept, once ``elapsed()`` (the run's own seconds so
        far) passes ``seconds``: the extra runs that replay calls are not made after a run that
        long. Why: a statement calling a kernel on 80 MB arrays for a second spent 2 s copying
        its arguments for replays that never came (the profile 3.4x the statement)."""
        self._limit, self._elapsed = seconds, elapsed

    def __call__(self, original: object, twin: object, args: tuple, kwargs: dict) -> Any:
        """Make one call of ``original`` on ``twin``, recorded if it is a top-level one whose turn it is."""
        __tracebackhide__ = True
        if getattr(self._local, "depth", 0) or os.getpid() != self._pid:  # nested (objmode), or a fork
            return twin(*args, **kwargs)
        with self._lock:
            index, self.seen = self.seen, self.seen + 1
            wanted = index % self.stride == 0 and not self._past_limit() and not self._too_dear()
        began = time.perf_counter()
        call = self._saved(original, twin, index, args, kwargs) if wanted else None
        started = time.perf_counter()
        self._local.depth = 1
        try:
            result = twin(*args, **kwargs)
        finally:
            self._local.depth = 0
            ended = time.perf_counter()
        if call is not None:
            self._keep(call, result)
        with self._lock:
            spent = started - began + time.perf_counter() - ended
            self.saving += spent
            self.saved += spent
            self.calling += ended - started
        return result

    def _past_limit(self) -> bool:
        """Whether the run has outlasted ``stop_after``'s limit (what was kept dropped then)."""
        if not self.stopped and self._limit is not None and self._elapsed() > self._limit:
            self.stopped = True
            self.calls.clear()
        return self.stopped

    def _too_dear(self) -> bool:
        """Whether saving this call would take the saves past ``SAVING_SHARE`` of the run so far
        (all of it: a dear first save is not forgotten when the stride doubles)."""
        return self._past_few() and self.saved > SAVING_SHARE * (self.saved + self.calling)

    def _past_few(self) -> bool:
        """Whether the saves are ruled by ``SAVING_SHARE``: once ``_FEW`` calls are kept, or once
        the saves took ``FEW_SHARE`` of the limit (``stop_after``)."""
        dear = self._limit is not None and self.saved > FEW_SHARE * self._limit
        return len(self.calls) >= _FEW or dear

    @property
    def complete(self) -> bool:
        """Whether every top-level call of the run was recorded (a replay makes the same calls)."""
        return bool(self.calls) and self.stride == 1 and not self.refused and len(self.calls) == self.seen

    def why_none(self) -> str:
        """Why nothing can be replayed (the extra runs are not made)."""
        if self.refused:
            reasons = "; ".join(self.refused.values())
            return f"no call of a profiled function could be replayed ({reasons})"
        if not self.seen:
            return "your run made no call of a profiled function from Python that a replay could make again"
        if self.dropped is not None:
            return f"no call of your run could be kept for a replay ({self.dropped})"
        return "no call of your run could be kept for a replay"

    @property
    def share(self) -> float:
        """The share of the user's run's top-level calls that one replay makes (an evenly spread
        sample of them: their share of its time, roughly)."""
        return len(self.calls) / self.seen if self.seen else 0.0

    def described(self) -> str:
        """What one replay makes, in words: "its 3 calls", "12 of its 4,096 calls"."""
        n = len(self.calls)
        word = "call" if self.seen == 1 else "calls"
        return f"its {n:,} {word}" if n == self.seen else f"{n:,} of its {self.seen:,} {word}"

    def keep_final(self) -> None:
        """Copy what the user's run left in each recorded call's state (after the statement
        ended): ``put_back`` writes it back once the replays are done. A call an array of
        which was left unsaved (it only reads it) and has changed since is dropped: a replay
        could not start from what it read."""
        now = _Fingerprints()
        for call in list(self.calls):
            changed = [u for u in call.before.unsaved if not now.of(u.array).same_as(u.before)]
            if changed:
                self.calls.remove(call)
                self.dropped = (
                    f"your statement changed {changed[0].name} of {_name(call.function)} after the "
                    "call, which only reads it and so did not save it"
                )
        for call in self.calls:
            call.final = call.before.keep(self._copies)  # a large array's final state copied once
            # an array the call only writes, as the statement left it: what the call left there, to
            # compare a replay's with, where nothing wrote it since
            for item, after in call.written:
                final = next((value for kept, value in call.final if kept is item), None)
                now = fingerprint(final) if isinstance(final, np.ndarray) else None
                if now is not None and now.same_as(after):
                    call.after.append((item, final))
        self._own_states = take_snapshot(Reach(), None, self.parallel)

    def restore(self, quick: bool = False) -> list[Item]:
        """Put each recorded call's state back as it was before the call (what the last replay
        changed); returns the items that had changed. ``quick`` (after each of a run of replays):
        with one recorded call, what its replays leave as it was is not checked again
        (``Snapshot.restore``)."""
        changed: dict[int, Item] = {}
        quick = quick and len(self.calls) == 1
        for call in self.calls:
            for item in call.before.restore(quick):
                changed.setdefault(id(item), item)
        # one call: its state is now as it was before it, which the next replay need not check
        self._restored = len(self.calls) == 1
        return list(changed.values())

    def put_back(self) -> None:
        """Leave every recorded call's state as the user's run left it; an array left unsaved
        (the calls only read it) is checked to be as the user's run left it."""
        self._restored = False
        for call in self.calls:
            call.before.restore()
            call.before.put_back(call.final)
        if self._own_states is not None:  # a replay of another thread's call drew from this one's
            self._own_states.restore()
        now = _Fingerprints()
        for call in self.calls:
            for unsaved in call.before.unsaved:
                if not now.of(unsaved.array).same_as(unsaved.before):
                    warnings.warn(
                        f"numba_lprun: a replay of {_name(call.function)} changed {unsaved.name}, which "
                        "its compiled code was found never to write, so it was not saved and could not be "
                        "put back: please report this",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                    return

    def replay(self, replacements: Mapping[int, object], compare: bool = False) -> dict[str, float] | None:
        """Make every recorded call again, each from its saved state, on what the phase swapped in
        for its function (``replacements``: id -> its twin); with ``compare``, how far each call's
        result and changed state lie from the user's run's (name -> relative difference)."""
        found: dict[str, float] = {}
        # just put back by ``restore``, one call's state is as before it: a short call's replays
        # checked it twice (after each replay, and before the next), a third of their cost
        restored, self._restored = self._restored, False
        for n, call in enumerate(list(self.calls)):
            if n or not restored:
                call.before.restore()
            result = replacements.get(id(call.function), call.function)(*call.args, **call.kwargs)
            if compare:  # at once: the next call may change what this one returned (its argument)
                where = f" of call {n + 1}" if len(self.calls) > 1 else ""
                mine = _as_kept(call.result)
                pairs = [(f"the result{where}", mine, result)] if mine is not _UNCOPIED else []
                pairs += [(f"{item.name}{where}", mine, item.read()) for item, mine in call.after]
                found.update(differences(pairs))
        return found if compare else None

    def _saved(self, original: object, twin: object, index: int, args: tuple, kwargs: dict) -> _Call | None:
        why = self._why_not.get(original, "")
        if why == "":
            why = self._why_not[original] = why_not_replayable(original)
        name = _name(original)
        if why is not None:
            self.refused[name] = f"{name}: {why}"
            return None
        left = self.budget - sum(c.nbytes for c in self.calls)
        # Numba's random state is per thread: one of a thread that ends before the replays (they
        # run on the profile's thread) must not be written to then
        own = threading.get_ident() == self._owner
        access = _access((twin, original), args, kwargs, self._attributes)
        only_read = frozenset(i for i, how in access.items() if how == READ)
        reach = call_reach(original, args, kwargs, only_read, frozenset(access) - only_read)
        before = take_snapshot(reach, max(0, left // 2), self.parallel, own, self._may_leave, self._copies)
        if before.unrestorable is not None:
            self.refused[name] = f"{name}: {before.unrestorable}"
            return None
        return _Call(index, original, args, kwargs, before)

    def _may_hold(self, function: object) -> bool:
        """Whether this call's large array results may be held for the comparison (``_Held``):
        only the first recorded call's of each function. Why: each result held is memory the
        program's allocator cannot hand out again, so its next result faults fresh pages (a
        kernel returning a new 32 MB array per call: 1.15x its own calls' time with eight held,
        on this project's virtual machine); one call compared says whether the twins agree."""
        with self._lock:
            if any(f is function for f in self._holding):
                return False
            self._holding.append(function)
            return True

    def _may_leave(self, array: np.ndarray, before: Fingerprint) -> bool:
        """Whether a call may leave ``array`` (which it only reads) unsaved: not where an earlier
        recorded call read it otherwise than it is now (the statement changes it between calls:
        from then on it is copied, and the earlier call is dropped when the statement ends)."""
        with self._lock:
            if any(m is array for m in self._moving):
                return False
            earlier = next(
                (u for c in reversed(self.calls) for u in c.before.unsaved if u.array is array), None
            )
            if earlier is not None and not earlier.before.same_as(before):
                self._moving.append(array)
                return False
        return True

    def _keep(self, call: _Call, result: Any) -> None:
        call.result = _copy_of(result, self._may_hold(call.function))
        call.after, call.written = call.before.after_call(self._copies)
        with self._lock:
            # the stride grew while it ran, or the run outlasted the limit
            if call.index % self.stride or self.stopped:
                return
            self.calls.append(call)
            self.calls.sort(key=lambda c: c.index)
            while (
                len(self.calls) > MAX_CALLS
                or sum(c.nbytes for c in self.calls) > self.budget
                or (self._past_few() and self.saving > SAVING_SHARE * (self.saving + self.calling))
            ):
                self.stride *= 2
                self.calls[:] = [c for c in self.calls if c.index % self.stride == 0]
                self.saving /= 2  # the saves kept: what the calls still recorded cost
                if not self.calls:
                    break


_UNCOPIED = object()


def _name(function: object) -> str:
    return getattr(function, "__qualname__", None) or repr(function)


def _access(functions: tuple[object, ...], args: tuple, kwargs: dict, memo: dict) -> dict[int, str]:
    """The large array arguments that the code compiled for them only reads or only writes
    (``internals.argument_access``): the twin's, or before the twin compiled for these types, the
    original's (the same source and flags; the original's code was often made by the user's own
    calls before the profile). Nothing with keyword arguments, or where neither has compiled for
    them yet: then all is saved."""
    if kwargs or not any(isinstance(a, np.ndarray) and a.nbytes >= UNSAVED_BYTES for a in args):
        return {}
    if not settings.switch(settings.UNSAVED, True):  # NUMBA_LPRUN_UNSAVED=0: every array copied
        return {}
    for function in functions:
        found = argument_access(function, args, memo)
        if found is not None:
            return found
    return {}


class _Fingerprints:
    """Arrays' fingerprints taken now, each array's once."""

    def __init__(self) -> None:
        self._taken: list[tuple[np.ndarray, Fingerprint]] = []

    def of(self, array: np.ndarray) -> Fingerprint:
        for seen, taken in self._taken:
            if seen is array:
                return taken
        taken = fingerprint(array)
        self._taken.append((array, taken))
        return taken


@dataclass(frozen=True)
class _Held:
    """A call's large array result, held with its fingerprint instead of copied: a kernel that
    returns a new 32 MB array at each call had each recorded call's result copied into fresh
    memory (90 ms each on this project's virtual machine, a one-second statement 1.45x where one
    run was 1.09x). Compared with a replay's only where the fingerprint says the statement left
    it as the call returned it (``_as_kept``)."""

    value: np.ndarray
    taken: Fingerprint


def _as_kept(value: Any) -> Any:
    """A call's kept result (``_copy_of``) as the call returned it, or ``_UNCOPIED`` where a held
    array has changed since."""
    if isinstance(value, _Held):
        now = fingerprint(value.value)
        return value.value if now is not None and now.same_as(value.taken) else _UNCOPIED
    if isinstance(value, (tuple, list)) and any(isinstance(v, (_Held, tuple, list)) for v in value):
        return _rebuilt(value, [_as_kept(v) for v in value])
    return value


def _copy_of(value: Any, hold: bool = True) -> Any:
    """A copy of a call's result, for comparing a replay's with it (the statement may change it):
    arrays, numbers and tuples or lists of them; anything else is not compared (copying an
    arbitrary object can change its class: ``copy`` caches ``__slotnames__`` on a jitclass's box).
    An array of ``UNSAVED_BYTES`` or more is held with its fingerprint (``_Held``) where ``hold``
    says it may be, else not compared."""
    if isinstance(value, np.ndarray):
        if value.nbytes < UNSAVED_BYTES:
            return value.copy()
        if not hold:
            return _UNCOPIED
        taken = fingerprint(value)
        return value.copy() if taken is None else _Held(value, taken)
    if isinstance(value, (int, float, complex, bool, str, bytes, type(None), np.generic)):
        return value
    if isinstance(value, (tuple, list)):
        return _rebuilt(value, [_copy_of(v, hold) for v in value])
    return _UNCOPIED


def _rebuilt(value: tuple | list, items: list) -> Any:
    """``value``'s tuple (a named one too) or list type made of ``items``, or ``_UNCOPIED`` where one is."""
    if any(v is _UNCOPIED for v in items):
        return _UNCOPIED
    return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)


def why_not_replayable(function: object) -> str | None:
    """Why calls of ``function`` (a dispatcher or ufunc) cannot be made again safely (None: they can)."""
    py_func = getattr(function, "py_func", None)
    if isinstance(py_func, pytypes.FunctionType) and py_func.__code__.co_flags & 0x20:  # CO_GENERATOR
        return "a generator (your code takes its values)"
    for value in reached_values(py_func) if isinstance(py_func, pytypes.FunctionType) else ():
        if isinstance(value, pytypes.ModuleType):
            module = value.__name__
        else:
            module = getattr(value, "__module__", None) or ""
            module = module if isinstance(module, str) else ""
        kind = type(value).__module__ or ""
        if module.split(".")[0] in _FOREIGN_MODULES or kind.split(".")[0] in _FOREIGN_MODULES:
            return f"it calls foreign code ({module or kind}), which a replay would run again"
        if kind == "numba.core.withcontexts":
            return "it calls back into Python (an objmode block), which a replay would run again"
    return None
