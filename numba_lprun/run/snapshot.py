"""Put back what a baseline run changed, so every run starts from the user's state.

A profile runs the user's call more than once (a plain run for the overhead figure,
sampled repeats for the probe-free view, the instrumented run). Real kernels sort
in place, push onto heaps, advance random generators and step simulations, so
each run would otherwise start where the previous one stopped, and the table
would describe a call the user never made. Before the first run we take a
snapshot of the mutable state the call can reach; after each extra run we put
back, in place (same objects, same identity), whatever changed. The last run
(the instrumented one) is the user's: its effects stay.

What is reached: the call's arguments, or the names a statement reads and binds
(its namespaces' bindings are put back too), then, recursively, the contents of
arrays (whole buffers, so views are covered), lists, dicts, sets, bytearrays,
tuples, typed ``List``/``Dict``, jitclass instances (their fields), Python
objects' ``__dict__``, and the state of ``np.random.Generator``, BitGenerators,
``RandomState`` and ``random.Random``; and, always, Numba's own random states
(``np.random.*`` and ``random.*`` inside jitted code, calling thread). Functions,
classes, modules, dispatchers and immutable values are not state. Anything else
(an open file, an extension object) cannot be put back: the snapshot then says
which name reached it, and the profiler runs the call once instead of guessing.
"""

from __future__ import annotations

import ctypes
import os
import random
import types as pytypes
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ..private_api import numba_random_state_addresses, worker_random_state_addresses

_ATOMS = (int, float, complex, bool, str, bytes, type(None), range, slice, np.generic, np.dtype)
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


@dataclass
class _Item:
    """One piece of state: how to read it, compare it and put it back."""

    name: str  # where the user sees it: "x", "state[2]", "p.pos", "numba's np.random state"
    kind: str
    nbytes: int
    read: Callable[[], object]
    write: Callable[[object], None]
    same: Callable[[object], bool] | None = None  # live state equals a saved copy (default: read and compare)
    saved: object = None

    def changed(self) -> bool:
        if self.same is not None:
            return not self.same(self.saved)
        return not _same(self.read(), self.saved)


def _same(a: object, b: object) -> bool:
    """Exact equality of saved state (byte-wise for arrays, so NaNs compare equal)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.hasobject:
            return all(x is y for x, y in zip(a.ravel(), b.ravel(), strict=True))
        return np.array_equal(_bytes(a), _bytes(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, _ATOMS) and isinstance(b, _ATOMS):
        return type(a) is type(b) and (a == b or (a != a and b != b))
    return a is b


def _bytes(a: np.ndarray) -> np.ndarray:
    flat = np.ascontiguousarray(a).reshape(-1)
    return flat.view(np.uint8) if flat.size else np.zeros(0, np.uint8)


@dataclass
class Snapshot:
    """State a call can reach, saved so that each extra run can be undone."""

    items: list[_Item] = field(default_factory=list)
    unrestorable: str | None = None  # why the call cannot be isolated (names the object)
    nbytes: int = 0
    swapped: Mapping[int, object] = field(default_factory=dict)  # id(original) -> twin, while swapped in

    def restore(self, swapped: Mapping[int, object] | None = None) -> list[_Item]:
        """Put back every item the last run changed; return those items.

        ``swapped`` maps the originals that are swapped for twins right now (in a
        run's phase) to those twins: a binding is then put back to the twin, and
        the phase's own undo log puts the original back later.
        """
        self.swapped = swapped or {}
        try:
            changed = [item for item in self.items if item.changed()]
            for item in changed:
                item.write(item.saved)
        finally:
            self.swapped = {}
        return changed


class _Walker:
    """Finds the state reachable from named roots and saves it."""

    def __init__(self, budget: int):
        self.budget = budget
        self.snapshot = Snapshot()
        self.seen: set[int] = set()
        self.keep: list[object] = []  # objects whose ids are in ``seen`` stay alive while walking

    def add(self, item: _Item) -> None:
        self.snapshot.nbytes += item.nbytes
        if self.snapshot.nbytes > self.budget and self.snapshot.unrestorable is None:
            self.snapshot.unrestorable = (
                f"saving the state it can reach needs more than {_size(self.budget)} "
                f"(the snapshot budget), reached at {item.name}"
            )
        if self.snapshot.unrestorable is None:
            item.saved = item.read()
            self.snapshot.items.append(item)

    def refuse(self, name: str, obj: object) -> None:
        if self.snapshot.unrestorable is None:
            self.snapshot.unrestorable = (
                f"{name} is a {type(obj).__module__}.{type(obj).__qualname__}, which numba_lprun "
                "cannot save and put back"
            )

    def walk(self, name: str, obj: object, depth: int = 0) -> None:
        if self.snapshot.unrestorable is not None or isinstance(obj, _ATOMS) or isinstance(obj, _CODE):
            return
        if id(obj) in self.seen:
            return
        if depth > _MAX_DEPTH or len(self.seen) > _MAX_OBJECTS:
            self.refuse(name, obj)
            return
        self.seen.add(id(obj))
        self.keep.append(obj)
        for handles, handler in _HANDLERS:
            if handles(obj):
                handler(self, name, obj, depth + 1)
                return
        self.refuse(name, obj)


def _array(w: _Walker, name: str, a: np.ndarray, depth: int) -> None:
    owner = a
    while isinstance(owner.base, np.ndarray):  # save the whole buffer: views of it are covered
        owner = owner.base
    if owner is not a:
        if id(owner) in w.seen:
            return
        w.seen.add(id(owner))
        w.keep.append(owner)
    if not owner.flags.writeable:
        return

    def same(saved: np.ndarray) -> bool:
        if owner.dtype.hasobject:
            return all(x is y for x, y in zip(owner.ravel(), saved.ravel(), strict=True))
        return np.array_equal(_bytes(owner), _bytes(saved))

    w.add(_Item(name, "array", owner.nbytes, owner.copy, lambda s: np.copyto(owner, s), same))


def _list(w: _Walker, name: str, obj: list, depth: int) -> None:
    w.add(_Item(name, "list", 8 * len(obj), lambda: list(obj), lambda s: obj.__setitem__(slice(None), s)))
    for i, value in enumerate(list(obj)):
        w.walk(f"{name}[{i}]", value, depth)


def _replace_mapping(obj, saved: dict) -> None:
    obj.clear()
    for key, value in saved.items():
        obj[key] = value


def _dict(w: _Walker, name: str, obj: dict, depth: int) -> None:
    w.add(_Item(name, "dict", 16 * len(obj), lambda: dict(obj), lambda s: _replace_mapping(obj, s)))
    for key, value in list(obj.items()):
        w.walk(f"{name}[{key!r}]", value, depth)


def _set(w: _Walker, name: str, obj: set, depth: int) -> None:
    def write(saved: set) -> None:
        obj.clear()
        obj.update(saved)

    w.add(_Item(name, "set", 8 * len(obj), lambda: set(obj), write))


def _bytearray(w: _Walker, name: str, obj: bytearray, depth: int) -> None:
    w.add(_Item(name, "bytearray", len(obj), lambda: bytes(obj), lambda s: obj.__setitem__(slice(None), s)))


def _tuple(w: _Walker, name: str, obj: tuple, depth: int) -> None:
    fields = getattr(obj, "_fields", None)
    for i, value in enumerate(obj):
        label = f"{name}.{fields[i]}" if fields and i < len(fields) else f"{name}[{i}]"
        w.walk(label, value, depth)


def _typed_list(w: _Walker, name: str, obj, depth: int) -> None:
    """Saved as a typed copy: extending from a typed List needs no reflected-list compile."""

    def write(saved) -> None:
        obj.clear()
        obj.extend(saved)

    def same(saved) -> bool:
        return len(obj) == len(saved) and all(_same(x, y) for x, y in zip(obj, saved, strict=True))

    w.add(_Item(name, "typed List", 8 * len(obj), obj.copy, write, same))
    for i, value in enumerate(list(obj)):
        w.walk(f"{name}[{i}]", value, depth)


def _typed_dict(w: _Walker, name: str, obj, depth: int) -> None:
    w.add(
        _Item(
            name, "typed Dict", 16 * len(obj), lambda: dict(obj.items()), lambda s: _replace_mapping(obj, s)
        )
    )
    for key, value in list(obj.items()):
        w.walk(f"{name}[{key!r}]", value, depth)


def _jitclass(w: _Walker, name: str, obj, depth: int) -> None:
    fields = list(type(obj)._numba_type_.struct)

    def read() -> dict:
        return {f: getattr(obj, f) for f in fields}

    def write(saved: dict) -> None:
        for f, value in saved.items():
            setattr(obj, f, value)

    w.add(_Item(name, "jitclass instance", 8 * len(fields), read, write))
    for f, value in read().items():
        w.walk(f"{name}.{f}", value, depth)


def _bit_generator_state(w: _Walker, name: str, bitgen, kind: str) -> None:
    def write(saved: dict) -> None:
        bitgen.state = saved

    w.add(_Item(name, kind, 5000, lambda: bitgen.state, write))


def _generator(w: _Walker, name: str, obj: np.random.Generator, depth: int) -> None:
    _bit_generator_state(w, name, obj.bit_generator, "Generator state")


def _bitgen(w: _Walker, name: str, obj, depth: int) -> None:
    _bit_generator_state(w, name, obj, "BitGenerator state")


def _random_state(w: _Walker, name: str, obj: np.random.RandomState, depth: int) -> None:
    w.add(_Item(name, "RandomState state", 5000, lambda: obj.get_state(legacy=False), obj.set_state))


def _py_random(w: _Walker, name: str, obj: random.Random, depth: int) -> None:
    w.add(_Item(name, "random.Random state", 5000, obj.getstate, obj.setstate))


def _instance(w: _Walker, name: str, obj: object, depth: int) -> None:
    attrs = vars(obj)
    w.add(_Item(name, "object", 16 * len(attrs), lambda: dict(attrs), lambda s: _replace_mapping(attrs, s)))
    for key, value in list(attrs.items()):
        w.walk(f"{name}.{key}", value, depth)


def _method(w: _Walker, name: str, obj: pytypes.MethodType, depth: int) -> None:
    w.walk(f"{name}.__self__", obj.__self__, depth)


def _is_jitclass(obj: object) -> bool:
    return hasattr(type(obj), "_numba_type_") and type(obj).__mro__[-2].__name__ == "Box"


_PLAIN_SIZE = object.__basicsize__ + 2 * ctypes.sizeof(ctypes.c_void_p)  # object + dict and weakref slots


def _is_plain_instance(obj: object) -> bool:
    """A Python-level object whose whole state is its ``__dict__`` (a user's class).

    Every class of its MRO must have object's memory layout (plus the dict and
    weakref pointers some Pythons add): a C type (a file, a lock) keeps state that
    ``__dict__`` does not show, and ``__slots__`` keep it outside the dict.
    """
    if not isinstance(getattr(obj, "__dict__", None), dict):
        return False
    return all(c.__basicsize__ <= _PLAIN_SIZE and "__slots__" not in vars(c) for c in type(obj).__mro__[:-1])


def _is_dispatcher(obj: object) -> bool:
    from numba.core.dispatcher import Dispatcher

    return isinstance(obj, Dispatcher)


def _typed(name: str) -> Callable[[object], bool]:
    def check(obj: object) -> bool:
        cls = type(obj)
        return cls.__module__.startswith("numba.typed") and cls.__name__ == name

    return check


_HANDLERS: list[tuple[Callable[[object], bool], Callable]] = [
    (_is_dispatcher, lambda w, n, o, d: None),
    (lambda o: isinstance(o, np.ndarray), _array),
    (lambda o: type(o) is list, _list),
    (lambda o: type(o) is dict, _dict),
    (lambda o: type(o) is set, _set),
    (lambda o: isinstance(o, frozenset), lambda w, n, o, d: None),
    (lambda o: type(o) is bytearray, _bytearray),
    (lambda o: isinstance(o, tuple), _tuple),
    (_typed("List"), _typed_list),
    (_typed("Dict"), _typed_dict),
    (_is_jitclass, _jitclass),
    (lambda o: isinstance(o, np.random.Generator), _generator),
    (lambda o: isinstance(o, np.random.BitGenerator), _bitgen),
    (lambda o: isinstance(o, np.random.RandomState), _random_state),
    (lambda o: isinstance(o, random.Random), _py_random),
    (lambda o: isinstance(o, pytypes.MethodType), _method),
    (_is_plain_instance, _instance),
]


class _RandomStateStruct(ctypes.Structure):
    """Numba's ``rnd_state_t`` (numba/_random.c): Mersenne Twister plus Box-Muller cache."""

    _fields_ = [
        ("index", ctypes.c_int),
        ("mt", ctypes.c_uint * 624),
        ("has_gauss", ctypes.c_int),
        ("gauss", ctypes.c_double),
        ("is_initialized", ctypes.c_int),
    ]


def _numba_random_states(w: _Walker, workers: bool) -> None:
    """Numba's own random states of the calling thread (and of its parallel workers), byte for byte.

    ``rnd_get_state`` would drop the cached Gaussian, so the struct is copied whole.
    A worker's state lives as long as its thread, which Numba keeps for the process.
    """
    size = ctypes.sizeof(_RandomStateStruct)
    found = numba_random_state_addresses() + (worker_random_state_addresses() if workers else [])
    for label, address in found:

        def read(address: int = address) -> np.ndarray:
            return np.frombuffer(ctypes.string_at(address, size), np.uint8).copy()

        def write(saved: np.ndarray, address: int = address) -> None:
            ctypes.memmove(address, saved.ctypes.data, size)

        w.add(_Item(f"Numba's {label} state", "random state", size, read, write))


@dataclass
class Reach:
    """Where a call's state starts: named values, and namespace bindings to keep."""

    values: list[tuple[str, object]] = field(default_factory=list)
    bindings: list[tuple[dict, list[str]]] = field(default_factory=list)


def call_reach(args: tuple, kwargs: dict) -> Reach:
    """A direct call reaches its arguments."""
    values = [(f"argument {i + 1}", a) for i, a in enumerate(args)]
    values += [(f"argument {k}", v) for k, v in kwargs.items()]
    return Reach(values)


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
    snapshot = w.snapshot

    def expected(value: object) -> object:
        return snapshot.swapped.get(id(value), value)

    def read() -> dict:
        return {n: ns.get(n, _MISSING) for n in names}

    def write(saved: dict) -> None:
        for n, value in saved.items():
            if value is _MISSING:
                ns.pop(n, None)
            elif ns.get(n, _MISSING) is not expected(value):
                ns[n] = expected(value)

    def same(saved: dict) -> bool:
        return all(ns.get(n, _MISSING) is expected(value) for n, value in saved.items())

    w.add(_Item("names the statement binds", "bindings", 0, read, write, same))


def _global_random_states(w: _Walker) -> None:
    """NumPy's and Python's global random states: a statement may draw its data from them
    (``np.random.rand(n)``) through a module it names, which the walk does not enter."""
    w.add(
        _Item(
            "NumPy's global np.random state",
            "random state",
            5000,
            lambda: np.random.get_state(legacy=False),
            np.random.set_state,
        )
    )
    w.add(_Item("Python's global random state", "random state", 5000, random.getstate, random.setstate))


def take_snapshot(reach: Reach, budget: int | None = None, parallel: bool = False) -> Snapshot:
    """Save the state ``reach`` leads to (``unrestorable`` says why if it cannot be).

    With ``parallel`` (a ``parallel=True`` function is profiled) the random states
    of Numba's worker threads are saved too.
    """
    walker = _Walker(default_budget() if budget is None else budget)
    for ns, names in reach.bindings:
        _bindings(walker, ns, names)
    for name, value in reach.values:
        walker.walk(name, value)
    _numba_random_states(walker, parallel)
    _global_random_states(walker)
    return walker.snapshot


def _size(nbytes: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if nbytes < 1000 or unit == "GB":
            return f"{nbytes:.0f} {unit}" if unit == "bytes" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    return f"{nbytes:.1f} GB"


def describe(items: Iterable[_Item]) -> str:
    """``a (array, 1.6 MB), rng (Generator state)``: what was put back."""
    parts = []
    for item in items:
        size = f", {_size(item.nbytes)}" if item.kind == "array" else ""
        parts.append(f"{item.name} ({item.kind}{size})" if item.kind != "random state" else item.name)
    return ", ".join(parts)
