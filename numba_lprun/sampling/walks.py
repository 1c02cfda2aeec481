"""Why each stack walk ended where it did.

A sample whose walk reaches no profiled function is either genuinely elsewhere
(an idle thread, the interpreter, code that is not profiled: its walk ran to the
thread's first frame) or lost: the walk stopped early, and where the time belongs
is unknown. The second kind must be reported by cause, never counted as time spent
elsewhere. ``backtrace`` returns the frames it walked and nothing else, so the
cause is read from the last frame afterwards:

* the walk filled its buffer: the stack is deeper than the sampler keeps. Where no
  frame walked is profiled, the sample is counted elsewhere but marked
  (``TRUNCATED``): a profiled frame could lie deeper only under code called from
  Python inside it (an ``objmode`` block more than ``depth`` frames deep), while the
  same walk comes from every sample of a thread running Python code under a deep
  stack (pytest, IPython), which is genuinely elsewhere;
* libgcc has no unwind table entry (FDE) for the last frame's code: the walk
  stopped there (``backtrace`` records the frame whose FDE is missing, then ends).
  A thread's first frame (``_start``, ``clone3``) *has* an FDE, which says the
  stack ends: a walk that ended there is complete;
* no walk at all: the signal interrupted the unwinder itself (``unwind_skipped``),
  or the walk never reached the interrupted frame.

The FDE lookup is libgcc's own ``_Unwind_Find_FDE`` (what ``backtrace`` asked), run
here after sampling, outside any signal handler, once per distinct address.
"""

from __future__ import annotations

import ctypes
import functools
import os
import time

import numpy as np

#: The walk ended at a frame with unwind information: the thread's first frame.
COMPLETE = -1
#: The walk filled the frames kept (see the module docstring).
TRUNCATED = -2


class _DwarfEhBases(ctypes.Structure):
    _fields_ = [("tbase", ctypes.c_void_p), ("dbase", ctypes.c_void_p), ("func", ctypes.c_void_p)]


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


@functools.cache
def _find_fde():
    """libgcc's ``_Unwind_Find_FDE`` (the library ``backtrace`` loaded), or None."""
    try:
        lib = ctypes.CDLL("libgcc_s.so.1")
        func = lib["_Unwind_Find_FDE"]  # a C symbol, looked up by name (no Python attribute)
    except (OSError, AttributeError):
        return None
    func.restype = ctypes.c_void_p
    func.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DwarfEhBases)]
    return func


@functools.cache
def _dladdr():
    try:
        func = ctypes.CDLL(None).dladdr
    except (OSError, AttributeError):
        return None
    func.restype = ctypes.c_int
    func.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    return func


def dl_info(address: int) -> tuple[str, str | None] | None:
    """(file name of the shared library, symbol or None) that ``dladdr`` finds for ``address``,
    or None; one ``Dl_info`` binding for the sampler's walks and ``machine.names``."""
    dladdr, info = _dladdr(), _DlInfo()
    if dladdr is None or not dladdr(ctypes.c_void_p(address), ctypes.byref(info)) or not info.dli_fname:
        return None
    symbol = info.dli_sname.decode(errors="replace") if info.dli_sname else None
    return os.path.basename(info.dli_fname.decode(errors="replace")), symbol


def has_unwind_info(address: int) -> bool | None:
    """Whether libgcc finds an FDE covering ``address`` (None: cannot be asked here)."""
    find = _find_fde()
    if find is None:
        return None
    bases = _DwarfEhBases()
    return bool(find(ctypes.c_void_p(address), ctypes.byref(bases)))


def code_name(address: int, code: tuple[np.ndarray, np.ndarray, np.ndarray]) -> str:
    """A reader's name for the code at ``address``: ``library: symbol``, or what kind of code.

    ``code`` is :func:`_native.code_mappings` (taken while the code was mapped).
    """
    starts, ends, named = code
    index = int(np.searchsorted(starts, np.uint64(address), side="right")) - 1
    if index < 0 or address >= int(ends[index]):
        return "an address outside any code (a corrupt stack?)"
    if not named[index]:
        return "jitted code that numba_lprun did not compile"
    found = dl_info(address)
    if found is None:
        return "a shared library"
    library, symbol = found
    return f"{library}: {symbol}" if symbol else library


def classify(
    found: np.ndarray,
    nframes: np.ndarray,
    last: np.ndarray,
    last_is_pc: np.ndarray,
    width: int,
    depth: int,
    code: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, list[str]]:
    """Per sample, an index into the returned causes, ``COMPLETE`` or ``TRUNCATED``.

    ``found``: the walk reached the interrupted frame; ``nframes``: frames it filled
    (of ``width``); ``last``: its last frame's address (a return address unless
    ``last_is_pc``); ``depth``: frames the sampler keeps.
    """
    n = len(found)
    stops = np.full(n, COMPLETE, np.int32)
    causes: list[str] = []
    index: dict[str, int] = {}

    def cause(text: str) -> int:
        if text not in index:
            index[text] = len(causes)
            causes.append(text)
        return index[text]

    not_walked = ~found
    if not_walked.any():
        stops[not_walked] = cause("not walked: the signal interrupted the unwinder itself")
    stops[found & (nframes >= width)] = TRUNCATED
    rest = np.flatnonzero(found & (nframes < width))
    lookup = last[rest] - np.where(last_is_pc[rest], 0, 1).astype(np.uint64)
    if _find_fde() is None or len(rest) == 0:
        return stops, causes
    values, inverse = np.unique(lookup, return_inverse=True)
    verdict = np.full(len(values), COMPLETE, np.int32)
    for i, address in enumerate(values.tolist()):
        if not has_unwind_info(address):
            verdict[i] = cause(f"stopped in code without unwind information: {code_name(address, code)}")
    stops[rest] = verdict[inverse.ravel()]
    return stops, causes


def walk_seconds(libc: object, nframes: int) -> float:
    """How long a stack walk of ``nframes`` takes from here: the quickest of 20 (the first
    walks are cold, a preempted one is slow), after one that warms up outside the handler
    (glibc loads libgcc_s on first use, and libgcc sorts the unwind tables Numba registered:
    both allocate, which a signal handler must not)."""
    scratch = (ctypes.c_void_p * nframes)()
    libc.backtrace(scratch, nframes)
    walk = float("inf")
    for _ in range(20):
        began = time.perf_counter()
        libc.backtrace(scratch, nframes)
        walk = min(walk, time.perf_counter() - began)
    return walk


def afford(
    asked_hz: float, boost: tuple[float, int] | None, budget: float, walk: float, walkers: int
) -> tuple[float, tuple[float, int] | None, str | None]:
    """(rate, boost, why lowered or None): the rate and the boost's lowered so that walks of
    ``walk`` seconds on ``walkers`` threads, taking turns under libgcc's lock, take at most
    ``budget`` of the CPU."""
    affordable = budget / (walk * walkers) if walk > 0 else float("inf")
    if boost is not None and boost[0] > affordable:
        boost = (affordable, boost[1])
    if affordable >= asked_hz:
        return asked_hz, boost, None
    threads = f", on each of {walkers} threads" if walkers > 1 else ""
    return (
        affordable,
        boost,
        (
            f"rate lowered from {asked_hz:.0f} Hz: a stack walk costs about {walk * 1e6:.0f} us "
            f"here{threads} (the unwinder searches every module compiled in this process)"
        ),
    )
