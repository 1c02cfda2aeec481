"""How each kind of state is saved, compared and put back in place.

``snapshot`` walks from a call's arguments (or a statement's names) into what
they hold; for each object it meets, the first handler here that accepts it
records an ``Item``: how to read a copy, how to tell whether a run changed the
live object, and how to write the copy back without replacing the object
(arrays by ``copyto``, lists by slice assignment, jitclass fields by setattr,
generators by their ``state``). Random states that no name leads to (Numba's,
NumPy's and Python's global ones) are items too.
"""

from __future__ import annotations

import ctypes
import functools
import random
import sys
import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..instrument.function_kinds import is_compiled_code
from ..internals import (
    is_jitclass_instance,
    jitclass_fields,
    numba_random_state_addresses,
    worker_random_state_addresses,
)

#: Values that are not state: immutable, or compared by value.
ATOMS = (int, float, complex, bool, str, bytes, type(None), range, slice, np.generic, np.dtype)


@dataclass
class Item:
    """One piece of state: how to read it, compare it and put it back."""

    name: str  # where the user sees it: "x", "state[2]", "p.pos", "numba's np.random state"
    kind: str
    nbytes: int
    read: Callable[[], object]
    write: Callable[[object], None]
    same: Callable[[object], bool] | None = None  # live state equals a saved copy (default: read and compare)
    saved: object = None
    live: object = None  # an array's buffer itself (``read`` copies it)
    written_only: bool = False  # an array the call never reads: nothing saved (``snapshot``)
    quiet: bool = False  # found as saved after a replay: not checked by a quick restore (``Snapshot``)

    def changed(self) -> bool:
        if self.written_only:  # nothing saved to tell by
            return True
        if self.same is not None:
            return not self.same(self.saved)
        return not same_state(self.read(), self.saved)


class Walker(Protocol):
    """What a state handler is given: the snapshot's walker (``snapshot._Walker``)."""

    def add(self, item: Item) -> None: ...
    def walk(self, name: str, obj: object, depth: int = 0) -> None: ...
    def refuse(self, name: str, obj: object) -> None: ...
    def leave_unsaved(self, name: str, owner: np.ndarray) -> bool: ...


def same_state(a: object, b: object) -> bool:
    """Exact equality of saved state (byte-wise for arrays, so NaNs compare equal)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.hasobject:
            return all(x is y for x, y in zip(a.ravel(), b.ravel(), strict=True))
        return same_bytes(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_state(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return False
        try:  # C-level comparison first: a random state is a tuple of 625 ints
            if type(a) is type(b) and a == b and list(map(type, a)) == list(map(type, b)):
                return True
        except (ValueError, TypeError):  # an array inside: compared item by item below
            pass
        return all(same_state(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, ATOMS) and isinstance(b, ATOMS):
        return type(a) is type(b) and (a == b or (a != a and b != b))
    return a is b


@functools.cache
def _memcmp():
    memcmp = ctypes.CDLL(None).memcmp
    memcmp.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    memcmp.restype = ctypes.c_int
    return memcmp


def same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Byte-for-byte equality of two arrays of one shape and dtype (NaNs equal).

    ``memcmp`` on contiguous buffers: comparing a 160 MB array with
    ``np.array_equal`` on byte views took 67 ms per sampled repeat (it builds a
    160-million-element boolean array) and ate most of the repeats' time budget.
    """
    if a.nbytes != b.nbytes:
        return False
    if a.flags.c_contiguous and b.flags.c_contiguous:
        return a.nbytes == 0 or _memcmp()(a.ctypes.data, b.ctypes.data, a.nbytes) == 0
    return np.array_equal(_bytes(a), _bytes(b))


def _bytes(a: np.ndarray) -> np.ndarray:
    flat = np.ascontiguousarray(a).reshape(-1)
    return flat.view(np.uint8) if flat.size else np.zeros(0, np.uint8)


def buffer_of(a: np.ndarray) -> np.ndarray:
    """The array owning ``a``'s memory (``a`` itself, or the base its views go back to)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _array(w: Walker, name: str, a: np.ndarray, depth: int) -> None:
    owner = buffer_of(a)  # save the whole buffer: views of it are covered
    if owner is not a:
        if id(owner) in w.seen:
            return
        w.seen.add(id(owner))
        w.keep.append(owner)
    if not owner.flags.writeable or w.leave_unsaved(name, owner):
        return

    def same(saved: np.ndarray) -> bool:
        if owner.dtype.hasobject:
            return all(x is y for x, y in zip(owner.ravel(), saved.ravel(), strict=True))
        return same_bytes(owner, saved)

    w.add(Item(name, "array", owner.nbytes, owner.copy, lambda s: np.copyto(owner, s), same, live=owner))


def _list(w: Walker, name: str, obj: list, depth: int) -> None:
    w.add(Item(name, "list", 8 * len(obj), lambda: list(obj), lambda s: obj.__setitem__(slice(None), s)))
    for i, value in enumerate(list(obj)):
        if not isinstance(value, ATOMS):  # nothing to walk into: no name made for it
            w.walk(f"{name}[{i}]", value, depth)


def _replace_mapping(obj, saved: dict) -> None:
    obj.clear()
    for key, value in saved.items():
        obj[key] = value


def _dict(w: Walker, name: str, obj: dict, depth: int) -> None:
    w.add(Item(name, "dict", 16 * len(obj), lambda: dict(obj), lambda s: _replace_mapping(obj, s)))
    for key, value in list(obj.items()):
        w.walk(f"{name}[{key!r}]", value, depth)


def _set(w: Walker, name: str, obj: set, depth: int) -> None:
    def write(saved: set) -> None:
        obj.clear()
        obj.update(saved)

    w.add(Item(name, "set", 8 * len(obj), lambda: set(obj), write))


def _bytearray(w: Walker, name: str, obj: bytearray, depth: int) -> None:
    w.add(Item(name, "bytearray", len(obj), lambda: bytes(obj), lambda s: obj.__setitem__(slice(None), s)))


def _tuple(w: Walker, name: str, obj: tuple, depth: int) -> None:
    fields = getattr(obj, "_fields", None)
    for i, value in enumerate(obj):
        if isinstance(value, ATOMS):
            continue
        label = f"{name}.{fields[i]}" if fields and i < len(fields) else f"{name}[{i}]"
        w.walk(label, value, depth)


def _typed_list(w: Walker, name: str, obj, depth: int) -> None:
    """Saved as a typed copy: extending from a typed List needs no reflected-list compile."""

    def write(saved) -> None:
        obj.clear()
        obj.extend(saved)

    def same(saved) -> bool:
        return len(obj) == len(saved) and all(same_state(x, y) for x, y in zip(obj, saved, strict=True))

    w.add(Item(name, "typed List", 8 * len(obj), obj.copy, write, same))
    for i, value in enumerate(list(obj)):
        if not isinstance(value, ATOMS):  # nothing to walk into: no name made for it
            w.walk(f"{name}[{i}]", value, depth)


def _typed_dict(w: Walker, name: str, obj, depth: int) -> None:
    w.add(
        Item(name, "typed Dict", 16 * len(obj), lambda: dict(obj.items()), lambda s: _replace_mapping(obj, s))
    )
    for key, value in list(obj.items()):
        w.walk(f"{name}[{key!r}]", value, depth)


def _jitclass(w: Walker, name: str, obj, depth: int) -> None:
    fields = jitclass_fields(obj)

    def read() -> dict:
        return {f: getattr(obj, f) for f in fields}

    def write(saved: dict) -> None:
        for f, value in saved.items():
            setattr(obj, f, value)

    w.add(Item(name, "jitclass instance", 8 * len(fields), read, write))
    for f, value in read().items():
        w.walk(f"{name}.{f}", value, depth)


def _bit_generator_state(w: Walker, name: str, bitgen, kind: str) -> None:
    def write(saved: dict) -> None:
        bitgen.state = saved

    w.add(Item(name, kind, 5000, lambda: bitgen.state, write))


def _generator(w: Walker, name: str, obj: np.random.Generator, depth: int) -> None:
    _bit_generator_state(w, name, obj.bit_generator, "Generator state")


def _bitgen(w: Walker, name: str, obj, depth: int) -> None:
    _bit_generator_state(w, name, obj, "BitGenerator state")


def _random_state(w: Walker, name: str, obj: np.random.RandomState, depth: int) -> None:
    w.add(Item(name, "RandomState state", 5000, lambda: obj.get_state(legacy=False), obj.set_state))


def _py_random(w: Walker, name: str, obj: random.Random, depth: int) -> None:
    w.add(Item(name, "random.Random state", 5000, obj.getstate, obj.setstate))


def _instance(w: Walker, name: str, obj: object, depth: int) -> None:
    attrs = vars(obj)
    w.add(Item(name, "object", 16 * len(attrs), lambda: dict(attrs), lambda s: _replace_mapping(attrs, s)))
    for key, value in list(attrs.items()):
        w.walk(f"{name}.{key}", value, depth)


def _method(w: Walker, name: str, obj: pytypes.MethodType, depth: int) -> None:
    w.walk(f"{name}.__self__", obj.__self__, depth)


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


def _typed(name: str) -> Callable[[object], bool]:
    def check(obj: object) -> bool:
        cls = type(obj)
        return cls.__module__.startswith("numba.typed") and cls.__name__ == name

    return check


def is_code(obj: object) -> bool:
    """Numba's compiled code: a dispatcher, a ufunc or gufunc built for the cpu (DUFunc,
    GUFunc) or a stencil. Code, not state: what a profile swaps in for it is put back by
    the runner, and whatever it caches (compiled signatures) is no state the user sees."""
    return is_compiled_code(obj)


HANDLERS: list[tuple[Callable[[object], bool], Callable]] = [
    (is_code, lambda w, n, o, d: None),
    (lambda o: isinstance(o, np.ndarray), _array),
    (lambda o: type(o) is list, _list),
    (lambda o: type(o) is dict, _dict),
    (lambda o: type(o) is set, _set),
    (lambda o: isinstance(o, frozenset), lambda w, n, o, d: None),
    (lambda o: type(o) is bytearray, _bytearray),
    (lambda o: isinstance(o, tuple), _tuple),
    (_typed("List"), _typed_list),
    (_typed("Dict"), _typed_dict),
    (is_jitclass_instance, _jitclass),
    (lambda o: isinstance(o, np.random.Generator), _generator),
    (lambda o: isinstance(o, np.random.BitGenerator), _bitgen),
    (lambda o: isinstance(o, np.random.RandomState), _random_state),
    (lambda o: isinstance(o, random.Random), _py_random),
    (lambda o: isinstance(o, pytypes.MethodType), _method),
    (_is_plain_instance, _instance),
]


#: The handlers of the built-in containers by exact type, tried before HANDLERS' tests: the
#: same handler HANDLERS would pick, found without testing each object for being Numba's
#: code (a state of 200,000 small lists took 5 s to walk testing them in order).
BY_TYPE: dict[type, Callable] = {
    list: _list,
    dict: _dict,
    set: _set,
    frozenset: lambda w, n, o, d: None,
    bytearray: _bytearray,
    tuple: _tuple,
}


class _RandomStateStruct(ctypes.Structure):
    """Numba's ``rnd_state_t`` (numba/_random.c): Mersenne Twister plus Box-Muller cache."""

    _fields_ = [
        ("index", ctypes.c_int),
        ("mt", ctypes.c_uint * 624),
        ("has_gauss", ctypes.c_int),
        ("gauss", ctypes.c_double),
        ("is_initialized", ctypes.c_int),
    ]


def numba_random_states(w: Walker, workers: bool) -> None:
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

        def same(saved: np.ndarray, address: int = address) -> bool:  # no copy: checked every repeat
            return _memcmp()(address, saved.ctypes.data, size) == 0

        w.add(Item(f"Numba's {label} state", "random state", size, read, write, same))


def global_random_states(w: Walker) -> None:
    """NumPy's and Python's global random states: a statement may draw its data from them
    (``np.random.rand(n)``) through a module it names, which the walk does not enter."""
    w.add(Item("NumPy's global np.random state", "random state", 5000, *_numpy_global_state()))
    w.add(Item("Python's global random state", "random state", 5000, *_python_global_state()))


_MT19937_STATE_BYTES = 624 * 4 + 4  # numpy's mt19937_state: uint32 key[624], int pos


def _python_global_state() -> tuple[Callable, Callable, Callable | None]:
    """read, write and same for Python's global random state, checked cheaply after every replay.

    ``random.getstate`` builds a tuple of 625 ints: 14 us, a fifth of a short call's replay
    (the state is checked after each). CPython's generator keeps its index and 624 words right
    after the object's header (``_randommodule.c``: ``int index; uint32_t state[624]``), so they
    are compared in place, with ``gauss_next`` (which ``random.gauss`` keeps in Python), where
    ``_words_in_place`` found that layout; else the tuples are compared."""
    inst = getattr(random.getstate, "__self__", None)  # the generator behind the module's functions
    if type(inst) is not random.Random:  # the module's functions replaced: theirs, as they are
        return random.getstate, random.setstate, None
    if not _words_in_place():
        return inst.getstate, inst.setstate, None
    address = id(inst) + object.__basicsize__

    def raw() -> bytes:
        return ctypes.string_at(address, _GENERATOR_BYTES)

    def read() -> tuple[tuple, bytes]:
        return inst.getstate(), raw()

    def write(saved: tuple[tuple, bytes]) -> None:
        inst.setstate(saved[0])

    def same(saved: tuple[tuple, bytes]) -> bool:
        return raw() == saved[1] and same_state(inst.gauss_next, saved[0][2])

    return read, write, same


_GENERATOR_BYTES = 4 + 624 * 4  # CPython's random generator: int index; uint32_t state[624]


@functools.cache
def _words_in_place() -> bool:
    """Whether a ``random.Random``'s bytes right after its header read as ``getstate`` says (its
    index, then its 624 words): checked once per process, on a generator of its own, before any
    is read so (every recorded call's snapshot reads the global one's)."""
    probe = random.Random(1)
    probe.random()
    if type(probe).__basicsize__ < object.__basicsize__ + _GENERATOR_BYTES:  # the bytes would lie outside it
        return False
    version, words, _ = probe.getstate()
    data = ctypes.string_at(id(probe) + object.__basicsize__, _GENERATOR_BYTES)
    index = int.from_bytes(data[:4], sys.byteorder, signed=True)
    return version == 3 and len(words) == 625 and words[-1] == index and words[:-1] == _words(data[4:])


def _words(data: bytes) -> tuple[int, ...]:
    return tuple(np.frombuffer(data, np.uint32).tolist())


def _numpy_global_state() -> tuple[Callable, Callable, Callable]:
    """read, write and same for NumPy's global state, checked cheaply after every repeat.

    ``np.random.get_state`` builds a dict and costs about 0.1 ms, more than a quick
    kernel; the Mersenne Twister's state is compared in place instead (``memcmp``).
    Only a draw served from the cached Gaussian leaves it alone, and there is one
    to serve only when the saved state held one: then the whole state is compared.
    """
    bitgen = np.random.get_bit_generator()
    address = bitgen.ctypes.state_address

    def read() -> tuple[dict, bytes]:
        return np.random.get_state(legacy=False), ctypes.string_at(address, _MT19937_STATE_BYTES)

    def write(saved: tuple[dict, bytes]) -> None:
        np.random.set_state(saved[0])

    def same(saved: tuple[dict, bytes]) -> bool:
        state, raw = saved
        if state.get("has_gauss"):
            return same_state(np.random.get_state(legacy=False), state)
        return ctypes.string_at(address, _MT19937_STATE_BYTES) == raw

    return read, write, same
