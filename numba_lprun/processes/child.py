"""The child's side: run the process's target as one profiled call, write its profile.

Why the target: it is what a worker process runs from start to end (a pool's
task loop, an executor's worker, a Dask worker's event loop), so profiling it is
profiling everything the process does for the user. It runs once, on the twins
the parent's run is on and sampled as it is, like a script (no plain run: it would
run every task again); a forked child finds the parent's twins on the dispatchers
and compiles nothing, a spawned one loads them from the disk cache or compiles them.

The part is written when the target returns or raises, and when SIGTERM stops the
process (``Pool.terminate`` and ``with Pool()`` end their workers so): the part
is written with the counters and samples as they are, and the process then dies of
SIGTERM as it would have (``_parts_on_request``). A process killed outright (SIGKILL) writes nothing,
and the parent says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from ..assemble import assemble, assembly_settings
from ..diagnose import DEFAULT_THRESHOLD
from ..instrument.clock import ClockInfo, current_clock
from ..run.measurements import CallRecord, Counted, Sampled, close_call
from ..run.phase_run import PhaseRun
from ..run.phases import CallContext, Plan, RunSettings, UserRun, run_phases
from ..run.runner import Runner
from ..run.sampled_run import measured, twins_line_maps
from ..stats import ProfileStats
from .spec import ChildSpec, find, named, shipped_sources

PART_PREFIX = "part-"  # part-<pid>.json in the run's directory
STARTED = "started-"  # started-<pid>: the process began its target


class ChildTarget:
    """A process's target, profiled in the process that runs it (pickled for a spawned one)."""

    def __init__(self, target: Callable, spec: ChildSpec, label: str, functions: list[object]) -> None:
        self.target, self.spec, self.label = target, spec, label
        self.functions: list[object] | None = functions  # a forked child's own; None once pickled

    def __getstate__(self) -> dict:
        """A spawned child finds the functions by name (``spec.functions``), or the script's own,
        which a worker that does not run the script cannot name (joblib's), by their pickles; a
        forked child pickles nothing."""
        spec = self.spec
        if self.functions is not None:
            spec = replace(spec, functions=named(self.functions, pickled=True))
        return {**self.__dict__, "spec": spec, "functions": None}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        WHOLE_PROCESS.set()
        found, refused = self.functions, []
        if found is None:  # spawned: each function found by name here, or why not (the parent says it)
            found = []
            for name in self.spec.functions:
                dispatchers, why = find(name)
                found += dispatchers
                if why is not None:
                    refused.append(f"{name[1]} could not be profiled ({why})")

        def target() -> Any:
            # from here on it does the user's work: if it sends no part, the parent says so (a
            # SIGTERM before this, while the twins load or the sampler starts, stopped no work)
            with (
                contextlib.suppress(OSError),
                open(os.path.join(self.spec.directory, f"{STARTED}{os.getpid()}"), "w"),
            ):
                pass
            return self.target(*args, **kwargs)

        return profiled_target(self.spec, self.label, found, target, refused=tuple(refused))


#: Seconds a worker's request for its part (SIGTERM, the parent's) waits, once the target has
#: returned, for the run to write the last part, before it writes what it can read itself. Why
#: wait: the run is then taking the counts (reading and zeroing them, one function after another),
#: and a read saw some zeroed and others not, and replaced the whole last part (a pool worker that
#: ended its task loop as ``Pool.terminate``'s SIGTERM came lost a kernel's hits, silently).
LAST_PART_WAIT = 10.0

#: Set in a process whose whole life is one profiled call (``ChildTarget``): a Dask worker that
#: is such a process (a ``LocalCluster`` started by the profiled code) is profiled once, not twice.
WHOLE_PROCESS = threading.Event()


def profiled_target(
    spec: ChildSpec,
    label: str,
    functions: list[object],
    call: Callable[[], Any],
    on_start: Callable[[PhaseRun], None] | None = None,
    namespaces: list[dict] | None = None,
    refused: tuple[str, ...] = (),
) -> Any:
    """``call()`` profiled on ``functions``, as ``spec`` says; its part written in ``spec.directory``.

    A function that cannot be profiled here (its source unreadable in this process, or, in
    ``refused``, not found here at all) is left out, and the part says why
    (``ProfileStats.missing``), so the parent's table does. ``on_start`` is
    given the run once the twins are in place, before ``call`` (a Dask worker sends the further
    copies of the functions it holds to the same twins). Jitted callers of the functions are
    looked for in every module, and in ``namespaces`` (a Dask worker's tasks' own jitted functions)."""
    with shipped_sources(spec.sources):
        return _profiled(spec, label, functions, call, on_start, namespaces or [], refused)


def _profiled(
    spec: ChildSpec,
    label: str,
    functions: list[object],
    call: Callable[[], Any],
    on_start: Callable[[PhaseRun], None] | None,
    namespaces: list[dict],
    refused: tuple[str, ...],
) -> Any:
    clock = current_clock()
    runner = Runner(clock.kind, shows_times=spec.timing)
    refused += tuple(_added(runner, functions))
    functions = [t.original for t in runner.targets.values()]
    if not functions:  # none of them exists here, or none can be profiled: nothing to count
        if refused:
            write_refusals(spec.directory, label, clock, refused)
        return call()
    settings = _settings(spec)
    once = f"a worker process ({label})"
    # the parent's kind of twin (a forked child's are the parent's own), sampled as the parent's run
    # is (faster at first, as a script's: its whole life is one run); no plain twins compiled after
    kind = spec.twin
    planned = Plan(UserRun(kind, spec.sampled, boost=spec.sampled))
    concurrent = runner.runs_on_threads()
    phases: list[PhaseRun] = []
    lock = threading.Lock()  # one writer at a time: each part written replaces the one before
    detached = threading.Event()  # the parent's run is over: nothing more is counted or written
    returned = threading.Event()  # the target returned: the run closes its counts and writes the last part
    finished = threading.Event()  # the last part is written: no other may replace it

    def execute(run: PhaseRun) -> Any:
        with lock:
            phases.append(run)
            if detached.is_set():  # asked before the work began: the plain code from the start
                _plain_again(ctx, phases)
        if on_start is not None:
            on_start(run)
        try:
            return call()
        finally:
            returned.set()

    ctx = CallContext(runner, execute, namespaces, None, settings, concurrent)

    def part(made: list, last: bool = False) -> None:
        with lock:
            if detached.is_set() or finished.is_set():
                return
            write_run_part(spec.directory, label, made, runner, kind, settings, clock, refused)
            if last:
                finished.set()

    began = time.perf_counter()

    def now() -> None:
        """The counters and samples so far, while the target runs (see ``LAST_PART_WAIT``)."""
        if returned.is_set() and finished.wait(LAST_PART_WAIT):
            return
        made = [*ctx.made, Counted(kind, True, runner.take_counts(kind, keep=True))]
        if ctx.last_sampling is not None and not any(isinstance(m, Sampled) for m in ctx.made):
            maps = twins_line_maps(runner, kind)
            seconds = time.perf_counter() - began
            made.append(measured(ctx.last_sampling.so_far(), maps, kind, True, 1, seconds))
        part(made)

    def last() -> None:
        """The parent's run ended while this process goes on (a pool kept for later: joblib's):
        send the part, then run the plain code unsampled, as if the profile had never reached here."""
        now()
        with lock:
            detached.set()
            _plain_again(ctx, phases)

    with _parts_on_request(spec.directory, now, last):
        try:
            return run_phases(ctx, planned, once)
        finally:
            part(ctx.made, last=True)


def _settings(spec: ChildSpec) -> RunSettings:
    """How a worker's run is made: as the parent's, once (no extra runs)."""
    return RunSettings(
        timing=spec.timing,
        sample=spec.sampled,
        repeat=False,
        rate_hz=spec.rate_hz,
        existing_threads=spec.existing_threads,
    )


def _added(runner: Runner, functions: list[object]) -> Iterator[str]:
    """Make each of ``functions`` a target of ``runner``; a sentence for each that cannot be."""
    for dispatcher in functions:
        try:
            runner.add(dispatcher)
        except Exception as exc:  # its source unreadable here, say: the others are still profiled
            yield f"{_name(dispatcher)} could not be profiled ({type(exc).__name__}: {exc})"


def _name(dispatcher: object) -> str:
    py_func = getattr(dispatcher, "py_func", dispatcher)
    return getattr(py_func, "__qualname__", None) or repr(dispatcher)


def write_run_part(
    directory: str,
    label: str,
    made: list,
    runner: Runner,
    kind: str,
    settings: RunSettings,
    clock: ClockInfo,
    missing: tuple[str, ...] = (),
) -> None:
    """The part of this process's run: what it ``made`` (measurements) on ``runner``'s ``kind``
    twins, assembled as the parent assembles its own, and why functions are ``missing`` here."""
    record = close_call(made, runner.facts(kind), kind)
    profile = assemble(record, assembly_settings(settings, clock, DEFAULT_THRESHOLD, True, record))
    write_part(directory, label, replace(profile, missing=missing))


def write_refusals(directory: str, label: str, clock: ClockInfo, refused: tuple[str, ...]) -> None:
    """A part with no function, saying why none of them could be profiled in this process."""
    settings = RunSettings(timing=False, sample=False, repeat=False)
    record = CallRecord()
    profile = assemble(record, assembly_settings(settings, clock, DEFAULT_THRESHOLD, True, record))
    write_part(directory, label, replace(profile, missing=refused))


def _plain_again(ctx: CallContext, phases: list[PhaseRun]) -> None:
    """Put the original functions back and stop sampling for good (from any thread)."""
    if ctx.last_sampling is not None:
        ctx.last_sampling.stop()
    for run in phases:
        run.swap.restore()


@contextlib.contextmanager
def _parts_on_request(directory: str, write: Callable[[], None], last: Callable[[], None]) -> Iterator[None]:
    """While the block runs, a thread calls ``last`` when the parent asks (a ``flush-<pid>``
    file: a worker a pool keeps for later, such as joblib's, is still running when the user's
    run ends; it is asked once) and ``write`` when SIGTERM comes (``Pool.terminate``), after
    which the process dies of SIGTERM as it would have.

    Why a thread for SIGTERM: a Python handler runs only when the main thread runs Python, and
    a pool worker waits for its next task in ``sem_wait``, which a signal landing just before
    it blocks does not wake (the worker hung for ever); and SIGTERM may land on any thread
    (OpenBLAS's, in a spawned worker). So the handler is a no-op whose C half writes the
    signal's number to a pipe (``signal.set_wakeup_fd``) that the thread reads. Where SIGTERM
    or the wake-up fd is the program's own (an asyncio loop's), or this is not the main
    thread, SIGTERM is left alone.
    """
    asked: str | None = os.path.join(directory, f"flush-{os.getpid()}")
    read = _sigterm_pipe()
    done = threading.Event()

    def die() -> None:
        write()
        ctypes.CDLL(None).signal(int(signal.SIGTERM), 0)  # SIG_DFL (signal.signal: main thread only)
        os.kill(os.getpid(), signal.SIGTERM)

    def wait() -> None:
        nonlocal asked
        while not done.is_set():
            if read is not None and select.select([read], [], [], 0.05)[0]:
                if signal.SIGTERM in os.read(read, 512):
                    die()
            elif read is None:
                done.wait(0.05)
            if asked is not None and os.path.exists(asked):
                last()
                with contextlib.suppress(OSError):
                    os.remove(asked)
                asked = None  # only SIGTERM is listened for now

    waiter = threading.Thread(target=wait, name="numba_lprun-parts", daemon=True)
    waiter.start()
    try:
        yield
    finally:
        done.set()
        waiter.join()
        if read is not None:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            wake = signal.set_wakeup_fd(-1)
            if select.select([read], [], [], 0)[0] and signal.SIGTERM in os.read(read, 512):
                write()
                os.kill(os.getpid(), signal.SIGTERM)
            os.close(read), os.close(wake)


def _sigterm_pipe() -> int | None:
    """The read end of a pipe that SIGTERM's handler writes to (None: SIGTERM is not ours to take)."""
    main = threading.current_thread() is threading.main_thread()
    if not main or signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        return None
    read, wake = os.pipe()
    os.set_blocking(wake, False)
    if signal.set_wakeup_fd(wake) != -1:  # the program's own: put it back
        signal.set_wakeup_fd(-1)
        os.close(read), os.close(wake)
        return None
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    return read


def _path(directory: str) -> str:
    return os.path.join(directory, f"{PART_PREFIX}{os.getpid()}.json")


def write_part(directory: str, label: str, profile: ProfileStats) -> None:
    """Write the part whole or not at all (the parent reads only finished files); a directory
    the parent already removed (it stopped waiting) is no error. Any other failure (a full
    disk) is said on this process's standard error: the parent can only say that no part came."""
    path = _path(directory)
    try:
        with open(path + ".tmp", "w", encoding="utf-8") as handle:
            handle.write(f"{label}\t{os.getpid()}\n{profile.to_json()}")
        os.replace(path + ".tmp", path)
    except OSError as error:
        if os.path.isdir(directory):
            said = f"numba_lprun: {label} (pid {os.getpid()}) could not save its counts: {error}\n"
            with contextlib.suppress(OSError):
                os.write(2, said.encode())  # fd 2 itself: a worker's sys.stderr may be replaced
