"""Numba's runtime: its allocator and its random states.

The allocation count hooks the allocator Numba's runtime (NRT) uses, which only
``_nrt_python`` can switch; a snapshot saves and puts back Numba's thread-local
random states, whose addresses ``_helperlib`` hands out and which a worker can only
find from inside jitted code.
"""

from __future__ import annotations

import functools

from .registry import touches


@touches(
    "numba.core.runtime._nrt_python",
    "memsys_stats_enabled",
    "machine/allocations.py: switching allocators with NRT statistics on is fatal",
)
def allocation_statistics_on() -> bool:
    """Whether Numba's runtime keeps allocation statistics (``NUMBA_NRT_STATS``)."""
    from numba.core.runtime import _nrt_python

    return bool(_nrt_python.memsys_stats_enabled())


@touches(
    "numba.core.runtime._nrt_python",
    "memsys_use_cpython_allocator",
    "machine/allocations.py: NRT allocates through PyMem_RawMalloc, which can then be hooked",
)
def use_python_allocator() -> None:
    """Make Numba's runtime allocate through ``PyMem_RawMalloc`` (for good: it cannot switch back)."""
    from numba.core.runtime import _nrt_python

    _nrt_python.memsys_use_cpython_allocator()


@touches(
    "numba._helperlib",
    "rnd_get_np_state_ptr",
    "run/snapshot.py: Numba's np.random state of the calling thread, saved and put back",
)
@touches(
    "numba._helperlib",
    "rnd_get_py_state_ptr",
    "run/snapshot.py: Numba's random state of the calling thread, saved and put back",
)
def numba_random_state_addresses() -> list[tuple[str, int]]:
    """Addresses of Numba's ``np.random`` and ``random`` states of the calling thread.

    The states are thread-local C structs (numba/_random.c ``rnd_state_t``);
    ``numba._helperlib`` hands out their addresses.
    """
    from numba import _helperlib

    return [
        ("np.random", _helperlib.rnd_get_np_state_ptr()),
        ("random", _helperlib.rnd_get_py_state_ptr()),
    ]


@functools.cache
def _worker_state_reader():
    """A ``parallel=True`` function that writes each worker thread's random-state addresses.

    The states are thread-local, so only code running on a worker can find its
    own; prange hands every thread a share of the iterations. Compiled once per
    process (about a second), and only when a parallel function is profiled.
    """
    from llvmlite import ir
    from numba import get_thread_id, njit, prange, types
    from numba.cpython.randomimpl import get_state_ptr
    from numba.extending import intrinsic

    def reader(kind: str):
        @intrinsic
        def address(typingctx):
            def codegen(context, builder, sig, args):
                return builder.ptrtoint(get_state_ptr(context, builder, kind), ir.IntType(64))

            return types.int64(), codegen

        return address

    np_state, py_state = reader("np"), reader("py")

    @njit(parallel=True)
    def read(np_out, py_out):
        for _ in prange(np_out.size * 64):
            thread = get_thread_id()
            np_out[thread] = np_state()
            py_out[thread] = py_state()

    return read


@touches(
    "numba.cpython.randomimpl",
    "get_state_ptr",
    "run/snapshot.py: the random states of parallel worker threads (read on each worker)",
    params=("context", "builder", "name"),
)
def worker_random_state_addresses() -> list[tuple[str, int]]:
    """Addresses of Numba's random states in its parallel worker threads (not the caller's).

    Reading an address initializes a state that was never used (from entropy,
    as Numba would on first use), which changes nothing a program can observe.
    """
    import numpy as np
    from numba import config, get_num_threads

    n = max(get_num_threads(), config.NUMBA_NUM_THREADS)
    np_out, py_out = np.zeros(n, np.int64), np.zeros(n, np.int64)
    _worker_state_reader()(np_out, py_out)
    mine = {address for _, address in numba_random_state_addresses()}
    found = []
    for thread in range(n):
        for label, address in (("np.random", int(np_out[thread])), ("random", int(py_out[thread]))):
            if address and address not in mine:
                found.append((f"{label} (worker thread {thread})", address))
    return found
