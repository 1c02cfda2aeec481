"""The C structures and libc calls the sampler needs, for Linux x86-64 glibc only.

Everything that depends on the ABI lives here, so that a port touches one file.
The sampler refuses to start (``Sampler.unavailable``) wherever :func:`check_platform`
returns a reason.

What a port would need
----------------------
* **Linux aarch64 (glibc)**: the same calls and the same ``struct sigaction``,
  ``struct sigevent``, ``struct itimerspec`` and ``siginfo_t`` timer fields (the
  generic kernel layouts). Only the interrupted program counter moves: ``ucontext_t``
  has ``uc_mcontext`` at offset 176 and ``mcontext_t`` is ``fault_address`` (8 bytes),
  ``regs[31]``, ``sp``, ``pc``, so the pc is at 176 + 8 + 248 + 8 = 440
  (:data:`UCONTEXT_PC_OFFSET`) and x0 at 184 (:data:`UCONTEXT_AX_OFFSET`: on aarch64 a
  system call's result is in x0 and the instruction is ``svc #0``, ``d4000001``).
  libgcc's unwinder handles the kernel's signal frame (``__kernel_rt_sigreturn`` in
  the vDSO) there as well.
* **Linux with musl**: ``struct sigaction`` differs (``sa_mask`` is 128 bytes but
  ``sa_flags`` precedes it) and ``backtrace`` does not exist (libunwind would replace it).
* **macOS**: there is no ``timer_create`` and no way to aim a signal at one thread
  by timer; a sampler would run a helper thread that suspends each thread
  (``thread_suspend``), reads its state (``thread_get_state``, ``__rip`` / ``__pc``)
  and walks frame pointers, which Numba's code does not keep by default.
* **Windows**: no signals; ``SuspendThread`` + ``GetThreadContext`` from a helper
  thread, and ``RtlVirtualUnwind`` over the unwind tables LLVM registers.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import platform
import signal
import sys

import numpy as np

# --- x86-64 Linux constants (asm-generic / glibc) ----------------------------------
SIGPROF = int(signal.SIGPROF) if hasattr(signal, "SIGPROF") else 27
SA_SIGINFO = 0x4
SA_RESTART = 0x10000000
CLOCK_MONOTONIC = 1
SIGEV_THREAD_ID = 4
SI_TIMER = -2
SYS_rt_sigaction = 13
KERNEL_SIGSET_SIZE = 8
#: ``offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP])``: 40 (uc_flags, uc_link,
#: uc_stack) + 16 * 8 (REG_RIP is register 16 of ``gregset_t``).
UCONTEXT_PC_OFFSET = 168
#: ``offsetof(ucontext_t, uc_mcontext.gregs[REG_RAX])``: 40 + 13 * 8.
UCONTEXT_AX_OFFSET = 144
#: The interrupted stack and frame pointers (gregs[REG_RSP], gregs[REG_RBP]), for ``_handler.own_walk``.
UCONTEXT_SP_OFFSET, UCONTEXT_BP_OFFSET = 160, 120
#: The ``syscall`` instruction (0f 05), read as a little-endian 16-bit word.
SYSCALL_OPCODE = 0x050F
#: ``-EINTR``: what an interrupted system call returns in rax when it is not restarted.
EINTR_RESULT = -4
#: ``siginfo_t`` for a POSIX timer: si_code at 8; the ``_timer`` member of the union
#: at 16 holds si_timerid (int), si_overrun (int) at 20 and si_value (8 bytes) at 24.
SIGINFO_CODE_OFFSET = 8
SIGINFO_OVERRUN_OFFSET = 20
SIGINFO_VALUE_OFFSET = 24


class sigaction_t(ctypes.Structure):
    """glibc's ``struct sigaction`` on x86-64 (152 bytes), not the kernel's."""

    _fields_ = [
        ("sa_handler", ctypes.c_void_p),  # union with sa_sigaction
        ("sa_mask", ctypes.c_uint64 * 16),  # __sigset_t: 1024 bits
        ("sa_flags", ctypes.c_int),
        ("sa_restorer", ctypes.c_void_p),
    ]


class kernel_sigaction_t(ctypes.Structure):
    """The kernel's ``struct sigaction`` on x86-64 (``rt_sigaction``): what is really
    installed. glibc's ``sigaction`` always adds SA_RESTORER and copies only part of the
    mask back, so saving and restoring *exactly* goes through the raw system call."""

    _fields_ = [
        ("handler", ctypes.c_void_p),
        ("flags", ctypes.c_ulong),
        ("restorer", ctypes.c_void_p),
        ("mask", ctypes.c_uint64),
    ]


class sigevent_t(ctypes.Structure):
    """``struct sigevent`` (64 bytes); ``tid`` is ``_sigev_un._tid`` (SIGEV_THREAD_ID)."""

    _fields_ = [
        ("sigev_value", ctypes.c_uint64),  # union sigval: we pass an integer
        ("sigev_signo", ctypes.c_int),
        ("sigev_notify", ctypes.c_int),
        ("tid", ctypes.c_int),
        ("_pad", ctypes.c_int * 11),
    ]


class timespec_t(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class itimerspec_t(ctypes.Structure):
    _fields_ = [("it_interval", timespec_t), ("it_value", timespec_t)]


assert ctypes.sizeof(sigaction_t) == 152 or sys.maxsize <= 2**32
assert ctypes.sizeof(sigevent_t) == 64 or sys.maxsize <= 2**32


@functools.cache
def check_platform() -> str | None:
    """Why sampling cannot work here, or None (read once: it reads the interpreter's binary)."""
    if not sys.platform.startswith("linux"):
        return f"sampling needs Linux (POSIX per-thread timers); this is {sys.platform}"
    machine = platform.machine()
    if machine not in ("x86_64", "AMD64"):
        return f"sampling knows the signal frame layout of x86-64 only; this is {machine}"
    libc_name, _ = platform.libc_ver()
    if libc_name != "glibc":
        return f"sampling needs glibc (struct sigaction layout, backtrace); found {libc_name or 'unknown'}"
    return None


@functools.cache
def libc() -> Libc:
    """The bound libc functions, made once: ``find_library`` runs ``ldconfig`` in a
    subprocess, which cost 2 ms per sampled repeat when done at every start."""
    return Libc()


class Libc:
    """The libc functions the sampler calls, bound through ctypes.

    Construction raises ``OSError``/``AttributeError`` when one is missing; the
    sampler turns that into ``unavailable``.
    """

    def __init__(self) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        try:
            timer_lib = libc
            timer_lib.timer_create  # noqa: B018  (glibc >= 2.34 has it in libc)
        except AttributeError:
            timer_lib = ctypes.CDLL(ctypes.util.find_library("rt") or "librt.so.1", use_errno=True)
        self.sigaction = libc.sigaction
        self.sigaction.argtypes = [ctypes.c_int, ctypes.POINTER(sigaction_t), ctypes.POINTER(sigaction_t)]
        self.sigaction.restype = ctypes.c_int
        self.timer_create = timer_lib.timer_create
        self.timer_create.argtypes = [
            ctypes.c_int,
            ctypes.POINTER(sigevent_t),
            ctypes.POINTER(ctypes.c_void_p),
        ]
        self.timer_create.restype = ctypes.c_int
        self.timer_settime = timer_lib.timer_settime
        self.timer_settime.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.POINTER(itimerspec_t),
            ctypes.POINTER(itimerspec_t),
        ]
        self.timer_settime.restype = ctypes.c_int
        self.timer_delete = timer_lib.timer_delete
        self.timer_delete.argtypes = [ctypes.c_void_p]
        self.timer_delete.restype = ctypes.c_int
        self.syscall = libc.syscall
        self.syscall.restype = ctypes.c_long
        self.backtrace = libc.backtrace
        self.backtrace.argtypes = [ctypes.c_void_p, ctypes.c_int]
        self.backtrace.restype = ctypes.c_int
        self.clock_gettime = libc.clock_gettime
        self.clock_gettime.argtypes = [ctypes.c_int, ctypes.POINTER(timespec_t)]
        self.clock_gettime.restype = ctypes.c_int
        self.errno_location = getattr(libc, "__errno_location")
        self.errno_location.restype = ctypes.c_void_p
        self.errno_location.argtypes = []

    def address_of(self, func: ctypes._CFuncPtr) -> int:
        """The C address of a bound libc function (baked into the handler)."""
        return ctypes.cast(func, ctypes.c_void_p).value or 0

    def get_action(self, signum: int = SIGPROF) -> kernel_sigaction_t:
        """What the kernel has installed for ``signum``, byte for byte."""
        return self._rt_sigaction(signum, None)

    def restore_action(self, action: kernel_sigaction_t, signum: int = SIGPROF) -> None:
        """Reinstall an action saved by :meth:`get_action` exactly."""
        self._rt_sigaction(signum, action)

    def _rt_sigaction(self, signum: int, action: kernel_sigaction_t | None) -> kernel_sigaction_t:
        old = kernel_sigaction_t()
        new = ctypes.byref(action) if action is not None else None
        rc = self.syscall(
            ctypes.c_long(SYS_rt_sigaction),
            ctypes.c_long(signum),
            new,
            ctypes.byref(old),
            ctypes.c_size_t(KERNEL_SIGSET_SIZE),
        )
        if rc != 0:
            raise OSError(ctypes.get_errno(), "rt_sigaction failed")
        return old

    def set_action(self, action: sigaction_t, signum: int = SIGPROF) -> None:
        """Install ``action`` through glibc (which supplies the signal trampoline)."""
        if self.sigaction(signum, ctypes.byref(action), None) != 0:
            raise OSError(ctypes.get_errno(), "sigaction failed")


def action_bytes(action: kernel_sigaction_t) -> bytes:
    """The raw bytes of an installed action (to compare before/after a run)."""
    return ctypes.string_at(ctypes.addressof(action), ctypes.sizeof(action))


def list_threads() -> list[int]:
    """Thread ids of this process (``/proc/self/task``), main thread first."""
    try:
        tids = sorted(int(name) for name in os.listdir("/proc/self/task"))
    except OSError:
        return [threading_native_id()]
    main = os.getpid()
    return sorted(tids, key=lambda t: (t != main, t))


def user_threads(tids: list[int]) -> list[int]:
    """The threads among ``tids`` that may run the program's code: Python's own threads, and
    native threads that kept the process's name (Numba's workers, OpenMP's and OpenBLAS's);
    not those an engine started and named for itself (Ray's ``ray::...`` and gRPC's threads,
    a web server's I/O threads), which never run jitted code: arming 25 of Ray's busy threads
    made a profiled map 3.5x slower."""
    import threading

    python = {t.native_id for t in threading.enumerate() if t.native_id is not None}
    default = thread_name(os.getpid())
    return [tid for tid in tids if tid in python or thread_name(tid) in (default, None)]


def thread_name(tid: int) -> str | None:
    """The name the kernel gives thread ``tid`` of this process (``comm``), None if unknown."""
    try:
        with open(f"/proc/self/task/{tid}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def threading_native_id() -> int:
    import threading

    return threading.get_native_id()


def thread_running(tid: int) -> bool:
    """Whether a thread is running or runnable now (state ``R`` in ``/proc/self/task/<tid>/stat``)."""
    try:
        with open(f"/proc/self/task/{tid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "R"
    except (OSError, IndexError):
        return False


def thread_cpu_ns(tid: int) -> int:
    """CPU time a thread has used, in ns (``/proc/self/task/<tid>/schedstat``, the same
    count as ``CLOCK_THREAD_CPUTIME_ID``); -1 when it cannot be read."""
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return -1


def mapped_range(name_part: str) -> tuple[int, int]:
    """The executable address range of the first mapping whose path contains ``name_part``.

    Used to keep the handler from unwinding while it interrupted libgcc's
    unwinder itself (it may hold the unwinder's lock). (0, 0) when not mapped.
    """
    lo = hi = 0
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split()
                if len(parts) >= 6 and name_part in parts[5] and "x" in parts[1]:
                    start, end = (int(x, 16) for x in parts[0].split("-"))
                    lo = start if lo == 0 else min(lo, start)
                    hi = max(hi, end)
    except OSError:
        pass
    return lo, hi


@functools.cache
def _lasting_range(name_part: str) -> tuple[int, int]:
    lo, hi = mapped_range(name_part)
    if lo == 0:
        raise LookupError(name_part)  # (not cached: it may be mapped later)
    return lo, hi


def library_range(name_part: str) -> tuple[int, int]:
    """``mapped_range`` of a library that stays mapped once loaded (libgcc_s: glibc never unloads
    it), read once per process: reading ``/proc/self/maps``, thousands of lines where Numba has
    compiled much, took a sampler's start 1.7 ms."""
    try:
        return _lasting_range(name_part)
    except LookupError:
        return 0, 0


def code_mappings() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted starts, ends and "has a name" flags of this process's executable mappings.

    Named ones are files (and ``[vdso]``), whose code has unwind tables the unwinder
    finds; anonymous ones hold JIT code, which may have none (see ``sampler``).
    """
    rows = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split()
                if len(parts) >= 5 and "x" in parts[1]:
                    start, end = (int(x, 16) for x in parts[0].split("-"))
                    rows.append((start, end, len(parts) >= 6))
    except OSError:
        pass
    rows.sort()
    return (
        np.array([r[0] for r in rows], np.uint64),
        np.array([r[1] for r in rows], np.uint64),
        np.array([r[2] for r in rows], bool),
    )


# -- dynamic linker and libgcc lookups ---------------------------------------------------


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
