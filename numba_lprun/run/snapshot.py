"""Put back what a baseline run changed, so every run starts from the user's state.

A profile runs the user's call more than once (a plain run for the overhead figure,
sampled repeats for the probe-free view, the user's run on counting twins). Real kernels sort
in place, push onto heaps, advance random generators and step simulations, so
each run would otherwise start where the previous one stopped, and the table
would describe a call the user never made. Before the first run (the user's) we
take a snapshot of the mutable state the call can reach; after it we keep a copy
of what it changed, put the saved state back before each extra run, and finally
write back the user's run's state, in place (same objects, same identity): the
user's effects stay, as if no extra run was made.

What is reached: the call's arguments, or the names a statement reads and binds
(its namespaces' bindings are put back too), then, recursively, the contents of
arrays (whole buffers, so views are covered), lists, dicts, sets, bytearrays,
tuples, typed ``List``/``Dict``, jitclass instances (their fields), Python
objects' ``__dict__``, and the state of ``np.random.Generator``, BitGenerators,
``RandomState`` and ``random.Random``; and, always, Numba's own random states
(``np.random.*`` and ``random.*`` inside jitted code, calling thread). Functions,
classes, modules, immutable values and Numba's code (dispatchers, ufuncs, gufuncs,
DUFuncs, stencils: the profiled objects among them) are not state. Anything else
(an open file, an extension object) cannot be put back: the snapshot then says
which name reached it, and the profiler runs the call once instead of guessing.

A call's arguments its compiled code cannot write (``Reach.only_read``) are walked last: a
large array only they reach is fingerprinted, not copied (``Unsaved``; ``replay`` checks it).
Then those it never reads (``Reach.only_written``): a large array only they reach is an item
with nothing saved (``Item.written_only``), put back from what ``keep`` copies at the end.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import threading
import types as pytypes
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from .fingerprints import Fingerprint, fingerprint
from .state_types import ATOMS, BY_TYPE, HANDLERS, Item, buffer_of, global_random_states, numba_random_states

_CODE = (
    pytypes.ModuleType,
    pytypes.FunctionType,
    pytypes.BuiltinFunctionType,
    pytypes.MethodWrapperType,
    pytypes.WrapperDescriptorType,
    type,
    np.ufunc,
)
_MAX_DEPTH = 12
_MAX_OBJECTS = 200_000
_MISSING = object()
#: An array the call only reads is fingerprinted instead of copied from this size on; a smaller
#: one is copied (as cheap, and exact).
UNSAVED_BYTES = 1 << 20


def default_budget() -> int:
    """Snapshot memory allowed by default: the smaller of 2 GiB and a quarter of free memory."""
    limit = 2 << 30
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return min(limit, int(line.split()[1]) * 1024 // 4)
    except OSError:
        pass
    try:
        return min(limit, os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4)
    except (ValueError, OSError, AttributeError):
        return limit


@dataclass(frozen=True)
class Unsaved:
    """An array the call only reads, left uncopied: its fingerprint before the call."""

    name: str
    array: np.ndarray
    before: Fingerprint


@dataclass
class Snapshot:
    """State a call can reach, saved so that each extra run can be undone."""

    items: list[Item] = field(default_factory=list)
    unrestorable: str | None = None  # why the call cannot be isolated (names the object)
    nbytes: int = 0
    unsaved: list[Unsaved] = field(default_factory=list)  # arrays the call only reads (``Reach.only_read``)

    def restore(self, quick: bool = False) -> list[Item]:
        """Put back every item the last run changed; return those items (an array the call only
        writes has nothing saved: the call never reads what it held).

        ``quick``: the last run was a replay of this one call from this state, as the run before
        it was: an item that replay left as saved is left unchecked from then on (``quiet``), for
        the same call from the same state leaves it so again. Why: a ``prange`` kernel's 32 MB
        input, which LLVM cannot prove it only reads, was compared after each sampled replay,
        3 ms beside its 2 ms call. A restore that is not quick checks every item again.

        A run swaps no binding the user sees (calls are redirected, see
        ``reach``), so a name is put back to the very object it held."""
        wanted = [item for item in self.items if not item.written_only and not (quick and item.quiet)]
        checked = [(item, item.changed()) for item in wanted]
        changed = [item for item, was in checked if was]
        for item in changed:
            item.write(item.saved)
        for item, was in checked:
            item.quiet = quick and not was
        return changed

    def keep(self, shared: SavedCopies | None = None) -> list[tuple[Item, object]]:
        """A copy of what the user's run changed, as it left it: extra runs start from the
        saved state, and ``put_back`` then leaves the user's state, as if they never ran (an
        array the call only writes is copied whatever it holds: nothing says what it held).
        A large array's copy comes from ``shared`` where an equal one was saved (an array
        several calls reached is copied once)."""
        return [(item, _copied(item, shared)) for item in self.items if item.changed()]

    def after_call(
        self, shared: SavedCopies | None = None
    ) -> tuple[list[tuple[Item, object]], list[tuple[Item, Fingerprint]]]:
        """Right after the call, for comparing a replay's with it: a copy of what the call
        changed, and a fingerprint of each array it only writes (``replay`` copies that one
        when the statement ends, where replays follow). A large array's copy comes from
        ``shared`` where an equal one was saved (a loop whose calls each leave one output alike)."""
        changed = [item for item in self.items if not item.written_only and item.changed()]
        copies = [(item, _copied(item, shared)) for item in changed]
        prints = [(item, fingerprint(item.live)) for item in self.items if item.written_only]
        return copies, [(item, taken) for item, taken in prints if taken is not None]

    def put_back(self, kept: list[tuple[Item, object]]) -> None:
        """Write back what ``keep`` copied (in place: same objects, same identity)."""
        for item, value in kept:
            item.write(value)


#: Told an array the call only reads and its fingerprint: whether it may stay uncopied (no: it
#: changed since an earlier call read it, so it changes between calls and is copied).
MayLeave = Callable[[np.ndarray, Fingerprint], bool]


class SavedCopies:
    """The copies of large arrays that a statement's snapshots saved, each array's latest, for
    the next snapshot of that array to share where it still holds exactly what was copied.

    Why: a loop calling a kernel on one large array it reads (a ``prange`` kernel's input, whose
    pointer LLVM sees passed to the threads' code, so ``argument_access`` proves nothing) saved a
    fresh copy at every recorded call; a compare reads two buffers and writes none, where a copy
    into fresh memory pays the kernel's page faults (a 32 MB copy took 70 ms on this project's
    virtual machine, its compare 3 ms). Exact: shared only where byte-equal. A copy is held
    weakly: dropped with the last call that saved it. At a statement's end (``Snapshot.keep``)
    each array's final state is copied once for all calls, or not at all where a copy holds it."""

    def __init__(self) -> None:
        self._kept: list[tuple[np.ndarray, weakref.ref]] = []
        self._lock = threading.Lock()

    def shared(self, item: Item) -> np.ndarray | None:
        """A copy saved earlier of ``item``'s array, where the array still equals it."""
        with self._lock:
            copy = next((ref() for live, ref in self._kept if live is item.live), None)
        return copy if copy is not None and item.same is not None and item.same(copy) else None

    def copy(self, item: Item) -> np.ndarray:
        """A copy of ``item``'s array as it is now: an equal one saved earlier, or a new one."""
        copy = self.shared(item)
        if copy is None:
            copy = item.read()
            self.add(item.live, copy)
        return copy

    def add(self, array: np.ndarray, copy: np.ndarray) -> None:
        with self._lock:
            kept = [(live, ref) for live, ref in self._kept if live is not array and ref() is not None]
            self._kept = [*kept, (array, weakref.ref(copy))]

    def takes(self, item: Item) -> bool:
        """Whether ``item`` is a large array, whose copies are shared."""
        return item.kind == "array" and item.live is not None and item.nbytes >= UNSAVED_BYTES


def _copied(item: Item, shared: SavedCopies | None) -> object:
    """A copy of ``item``'s state as it is now: for a large array, an equal one ``shared`` holds."""
    return shared.copy(item) if shared is not None and shared.takes(item) else item.read()


class _Walker:
    """Finds the state reachable from named roots and saves it."""

    def __init__(self, budget: int, may_leave: MayLeave | None = None, copies: SavedCopies | None = None):
        self.budget = budget
        self.copies = copies
        self.snapshot = Snapshot()
        self.seen: set[int] = set()
        self.keep: list[object] = []  # objects whose ids are in ``seen`` stay alive while walking
        self.only_reading = False  # walking the values the call cannot write (``Reach.only_read``)
        self.only_writing = False  # walking the values the call never reads (``Reach.only_written``)
        self.may_leave = may_leave
        self.written: list[np.ndarray] = []  # buffers of the arguments the call only writes

    def leave_unsaved(self, name: str, owner: np.ndarray) -> bool:
        """Whether ``owner`` (an array's whole buffer) is fingerprinted instead of saved: the call
        only reads it, no value walked before reaches it (one that may write it would have saved
        it), no argument the call only writes shares it, it is large, and the recorder lets it
        (``may_leave``)."""
        if not self.only_reading or owner.nbytes < UNSAVED_BYTES or self.snapshot.unrestorable is not None:
            return False
        if any(w is owner for w in self.written):  # ``f(x[:n], x[n:])``: read through one, written
            return False  # through the other
        before = fingerprint(owner)
        if before is None or (self.may_leave is not None and not self.may_leave(owner, before)):
            return False
        self.snapshot.unsaved.append(Unsaved(name, owner, before))
        return True

    def add(self, item: Item) -> None:
        shares = self.copies is not None and self.copies.takes(item)
        if shares and not self.only_writing and self.snapshot.unrestorable is None:
            earlier = self.copies.shared(item)
            if earlier is not None:  # a copy an earlier call saved: no memory taken
                item.saved = earlier
                self.snapshot.items.append(item)
                return
        self.snapshot.nbytes += item.nbytes
        if self.snapshot.nbytes > self.budget and self.snapshot.unrestorable is None:
            self.snapshot.unrestorable = (
                f"saving the state it can reach needs more than {_size(self.budget)} "
                f"(the snapshot budget), reached at {item.name}"
            )
        if self.snapshot.unrestorable is None:
            if self.only_writing and item.kind == "array" and item.nbytes >= UNSAVED_BYTES:
                item.written_only = True  # the call never reads it: nothing to put back before a replay
            else:
                item.saved = item.read()
                if shares:
                    self.copies.add(item.live, item.saved)
            self.snapshot.items.append(item)

    def refuse(self, name: str, obj: object) -> None:
        if self.snapshot.unrestorable is None:
            self.snapshot.unrestorable = (
                f"{name} is a {type(obj).__module__}.{type(obj).__qualname__}, which numba_lprun "
                "cannot save and put back"
            )

    def walk(self, name: str, obj: object, depth: int = 0) -> None:
        if self.snapshot.unrestorable is not None or isinstance(obj, ATOMS) or isinstance(obj, _CODE):
            return
        if id(obj) in self.seen:
            return
        if depth > _MAX_DEPTH or len(self.seen) > _MAX_OBJECTS:
            if self.snapshot.unrestorable is None:
                self.snapshot.unrestorable = (
                    f"the state reached through {name} is too large to save object by object "
                    f"(over {_MAX_OBJECTS:,} objects or {_MAX_DEPTH} levels deep)"
                )
            return
        self.seen.add(id(obj))
        self.keep.append(obj)
        exact = BY_TYPE.get(type(obj))
        if exact is not None:
            exact(self, name, obj, depth + 1)
            return
        for handles, handler in HANDLERS:
            if handles(obj):
                handler(self, name, obj, depth + 1)
                return
        self.refuse(name, obj)


@dataclass
class Reach:
    """Where a call's state starts: named values, and namespace bindings to keep."""

    values: list[tuple[str, object]] = field(default_factory=list)
    bindings: list[tuple[dict, list[str]]] = field(default_factory=list)
    # arrays the call cannot write, and arrays it never reads: walked last, so that an array
    # another value reaches is saved
    only_read: list[tuple[str, object]] = field(default_factory=list)
    only_written: list[tuple[str, object]] = field(default_factory=list)


def call_reach(
    func: object,
    args: tuple,
    kwargs: dict,
    only_read: frozenset[int] = frozenset(),
    only_written: frozenset[int] = frozenset(),
) -> Reach:
    """A direct call reaches its arguments and what the callable carries: a bound
    method's object, a closure's cells, a ``functools.partial``'s arguments. The positions in
    ``only_read`` and ``only_written`` are array arguments the call's code only reads or only
    writes (``internals.argument_access``)."""
    apart = only_read | only_written
    values = [(f"argument {i + 1}", a) for i, a in enumerate(args) if i not in apart]
    values += [(f"argument {k}", v) for k, v in kwargs.items()]
    read = [(f"argument {i + 1}", a) for i, a in enumerate(args) if i in only_read]
    written = [(f"argument {i + 1}", a) for i, a in enumerate(args) if i in only_written]
    return Reach(_carried(func, "the called function") + values, only_read=read, only_written=written)


def _carried(func: object, name: str, depth: int = 0) -> list[tuple[str, object]]:
    """State a callable brings along into its call (not its module's globals)."""
    if depth > 4:
        return []
    out: list[tuple[str, object]] = []
    owner = getattr(func, "__self__", None)
    if owner is not None and not isinstance(owner, pytypes.ModuleType):
        out.append((f"{name}'s object", owner))
    for i, cell in enumerate(getattr(func, "__closure__", None) or ()):
        try:
            out.append((f"{name}'s closure variable {i + 1}", cell.cell_contents))
        except ValueError:
            continue
    if isinstance(func, functools.partial):
        out += _carried(func.func, name, depth + 1)
        out += [(f"{name}'s bound argument {i + 1}", a) for i, a in enumerate(func.args)]
        out += [(f"{name}'s bound argument {k}", v) for k, v in func.keywords.items()]
    return out


def names_of(code: pytypes.CodeType) -> set[str]:
    """Names a compiled statement reads or binds, nested code objects included."""
    names = set(code.co_names) | set(code.co_varnames)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names |= names_of(const)
    return names


def statement_reach(codes: Iterable[pytypes.CodeType], namespaces: list[dict]) -> Reach:
    """A statement reaches the values of the names it uses, found in its namespaces."""
    names: set[str] = set()
    for code in codes:
        names |= names_of(code)
    ordered = sorted(names)
    values = []
    for name in ordered:
        for ns in namespaces:
            if name in ns:
                values.append((name, ns[name]))
                break
    unique = list({id(ns): ns for ns in namespaces}.values())
    return Reach(values, [(ns, ordered) for ns in unique])


def _bindings(w: _Walker, ns: dict, names: list[str]) -> None:
    def read() -> dict:
        return {n: ns.get(n, _MISSING) for n in names}

    def write(saved: dict) -> None:
        for n, value in saved.items():
            if value is _MISSING:
                ns.pop(n, None)
            elif ns.get(n, _MISSING) is not value:
                ns[n] = value

    def same(saved: dict) -> bool:
        return all(ns.get(n, _MISSING) is value for n, value in saved.items())

    w.add(Item("names the statement binds", "bindings", 0, read, write, same))


def take_snapshot(
    reach: Reach,
    budget: int | None = None,
    parallel: bool = False,
    numba_states: bool = True,
    may_leave: MayLeave | None = None,
    copies: SavedCopies | None = None,
) -> Snapshot:
    """Save the state ``reach`` leads to (``unrestorable`` says why if it cannot be).

    With ``parallel`` (a ``parallel=True`` function is profiled) the random states
    of Numba's worker threads are saved too; without ``numba_states``, none of Numba's
    (a snapshot taken on a thread that ends before it is put back: its state dies with it).
    A large array only ``reach.only_read`` leads to is fingerprinted, not saved (``Unsaved``);
    one that ``copies`` holds an equal copy of shares it.
    """
    walker = _Walker(default_budget() if budget is None else budget, may_leave, copies)
    with _collector_paused():
        for ns, names in reach.bindings:
            _bindings(walker, ns, names)
        for name, value in reach.values:
            walker.walk(name, value)
        walker.written = [buffer_of(v) for _, v in reach.only_written if isinstance(v, np.ndarray)]
        walker.only_reading = True
        for name, value in reach.only_read:
            walker.walk(name, value)
        walker.only_reading, walker.only_writing = False, True
        for name, value in reach.only_written:
            walker.walk(name, value)
        walker.only_writing = False
        if numba_states:
            numba_random_states(walker, parallel)
        global_random_states(walker)
    return walker.snapshot


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic collector off while the walk allocates an item (and closures) per object:
    each collection it triggers scans everything the walk keeps alive, and a state of 200,000
    small lists took 3.3 s to walk with it on, 1.3 s with it off. The walk makes no cycles."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _size(nbytes: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if nbytes < 1000 or unit == "GB":
            return f"{nbytes:.0f} {unit}" if unit == "bytes" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    return f"{nbytes:.1f} GB"


def describe(items: Iterable[Item]) -> str:
    """``a (array, 1.6 MB), rng (Generator state)``: what was put back."""
    parts = []
    for item in items:
        size = f", {_size(item.nbytes)}" if item.kind == "array" else ""
        parts.append(f"{item.name} ({item.kind}{size})" if item.kind != "random state" else item.name)
    return ", ".join(parts)
