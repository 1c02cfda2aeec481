"""Count the allocations each line makes, exactly, in one run of the plain twins.

Why a counted run: whether a line allocates on every execution cannot be read
for certain from its machine code (the allocator call may sit behind a branch),
but it can be counted. Numba's runtime allocates through a function pointer that
can be pointed at CPython's raw allocator (``memsys_use_cpython_allocator``, part
of Numba's API), and CPython lets that allocator be replaced (``PyMem_SetAllocator``).
While a run is counted, the raw ``malloc`` is a ``numba.cfunc`` that records a
native backtrace (glibc ``backtrace``) into a preallocated buffer and then calls
the previous ``malloc``; ``calloc``, ``realloc`` and ``free`` stay as they were. The
line maps then charge each recorded stack to the innermost frame inside each
profiled function, as samples are charged: a line's count includes what its
callees allocate.

Side effect, stated: after the first counted run Numba's runtime keeps allocating
through ``PyMem_RawMalloc`` (Numba offers no way back), which is plain ``malloc``
again once the previous allocator is restored. Raw allocations by Python itself
during the run are recorded too, and land in no profiled function.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Hashable, Iterator

import numpy as np
from llvmlite import ir
from numba import cfunc, types
from numba.extending import intrinsic

from ..internals import allocation_statistics_on, use_python_allocator
from ..sampling.attribution import innermost_lines
from ..sampling.dwarf import LineMap

DEPTH = 10  # frames per record: the hook, CPython's and Numba's allocator, the jitted caller...
CAPACITY = 400_000  # records (32 MB, allocated on first use); a run allocating more is not counted
PYMEM_DOMAIN_RAW = 0


class _Allocator(ctypes.Structure):  # PyMemAllocatorEx
    _fields_ = [(n, ctypes.c_void_p) for n in ("ctx", "malloc", "calloc", "realloc", "free")]


@intrinsic
def _next(typingctx, address):
    """Atomically add one to the int64 at ``address``; the value before."""

    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        return builder.atomic_rmw("add", ptr, ir.Constant(ir.IntType(64), 1), "monotonic")

    return types.int64(types.int64), codegen


@intrinsic
def _backtrace(typingctx, function, buffer, depth):
    """Call glibc ``backtrace(buffer, depth)`` through its address."""

    def codegen(context, builder, signature, args):
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.IntType(32), [i8p, ir.IntType(32)])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, [builder.inttoptr(args[1], i8p), builder.trunc(args[2], ir.IntType(32))])

    return types.int32(types.int64, types.int64, types.int64), codegen


@intrinsic
def _malloc(typingctx, function, ctx, size):
    """Call a ``void *malloc(void *ctx, size_t size)`` through its address."""

    def codegen(context, builder, signature, args):
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(i8p, [i8p, ir.IntType(64)])
        return builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [args[1], args[2]])

    return types.voidptr(types.int64, types.voidptr, types.uint64), codegen


_lock = threading.Lock()
_hook: tuple[np.ndarray, np.ndarray, object, _Allocator] | None = None


def _build() -> tuple[np.ndarray, np.ndarray, object, _Allocator]:
    """The buffer, its counter, the compiled hook and the allocator it wraps (once per process)."""
    global _hook
    with _lock:
        if _hook is not None:
            return _hook
        api = ctypes.pythonapi
        api.PyMem_GetAllocator.argtypes = [ctypes.c_int, ctypes.POINTER(_Allocator)]
        api.PyMem_SetAllocator.argtypes = [ctypes.c_int, ctypes.POINTER(_Allocator)]
        old = _Allocator()
        api.PyMem_GetAllocator(PYMEM_DOMAIN_RAW, ctypes.byref(old))
        libc = ctypes.CDLL(None)
        frames = (ctypes.c_void_p * 4)()
        libc.backtrace(frames, 4)  # loads the unwinder now, not inside a counted run
        buffer = np.zeros((CAPACITY, DEPTH), np.uint64)
        counter = np.zeros(1, np.int64)
        counter_at, buffer_at = int(counter.ctypes.data), int(buffer.ctypes.data)
        backtrace_at = ctypes.cast(libc.backtrace, ctypes.c_void_p).value
        malloc_at = int(old.malloc)

        @cfunc(types.voidptr(types.voidptr, types.uint64), nopython=True, error_model="numpy")
        def traced(ctx, size):
            slot = _next(counter_at)
            if slot < CAPACITY:
                _backtrace(backtrace_at, buffer_at + slot * DEPTH * 8, DEPTH)
            return _malloc(malloc_at, ctx, size)

        _hook = (buffer, counter, traced, old)
        return _hook


_switched = False  # Numba's runtime allocates through PyMem_RawMalloc (set once, for good)


def unavailable() -> str | None:
    """Why allocations cannot be counted in this process, or None."""
    if not _switched and allocation_statistics_on():
        # switching the allocator with statistics on and arrays alive is a fatal error in NRT
        return "Numba's allocation statistics are on (NUMBA_NRT_STATS), so its allocator cannot be switched"
    return None


@contextlib.contextmanager
def counting() -> Iterator[dict]:
    """Record every allocation Numba's runtime makes inside the block.

    Yields a dict that holds, after the block, ``stacks`` (n, DEPTH) return
    addresses and ``dropped`` (records that did not fit: then counts are not exact).
    Check ``unavailable()`` first.
    """
    global _switched
    buffer, counter, traced, old = _build()
    if not _switched:
        use_python_allocator()
        _switched = True
    hooked = _Allocator(old.ctx, traced.address, old.calloc, old.realloc, old.free)
    result: dict = {}
    counter[0] = 0
    ctypes.pythonapi.PyMem_SetAllocator(PYMEM_DOMAIN_RAW, ctypes.byref(hooked))
    try:
        yield result
    finally:
        ctypes.pythonapi.PyMem_SetAllocator(PYMEM_DOMAIN_RAW, ctypes.byref(old))
        n = int(counter[0])
        result["stacks"] = buffer[: min(n, CAPACITY)].copy()
        result["dropped"] = max(0, n - CAPACITY)


def allocations_per_line(stacks: np.ndarray, maps: dict[Hashable, LineMap]) -> dict[Hashable, dict[int, int]]:
    """Allocations charged to each line of each mapped function (innermost frame inside it)."""
    out: dict[Hashable, dict[int, int]] = {}
    if len(stacks) == 0:
        return {key: {} for key in maps}
    lookup = stacks.astype(np.uint64, copy=True)
    lookup[lookup != 0] -= np.uint64(1)  # return addresses: look inside the call instruction
    for key, lmap in maps.items():
        line, _ = innermost_lines(lmap.lookup(lookup), lookup)
        values, counts = np.unique(line[line >= 0], return_counts=True)
        out[key] = {int(v): int(c) for v, c in zip(values, counts, strict=True)}
    return out
