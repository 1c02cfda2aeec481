"""The parent's side: profile the processes the user's run starts, and collect their parts.

``Launches.watching`` wraps ``multiprocessing.process.BaseProcess.start`` for the
user's run only (and puts it back, on success, error or Ctrl-C): each process
started meanwhile is given a ``ChildTarget`` for as long as ``start`` takes (a
forked child has copied it by then, a spawned one has unpickled it), and then its
own target again, so the process object the program holds is unchanged. When the
run ends, ``collect`` reads the parts written, names each started process that
wrote none (still running, killed by a signal, or a ``Process`` subclass whose
own ``run`` never calls a target) and removes the run's directory.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from multiprocessing.process import BaseProcess

from ..internals import process_target, set_process_target
from ..interrupts import ctrl_c_deferred
from ..run.measurements import COUNTING
from ..stats import ProcessPart, ProfileStats
from .child import PART_PREFIX, STARTED, ChildTarget
from .late_imports import after_import
from .spec import ChildSpec, named, sources_of


@dataclass
class Launches:
    """The processes one user's run started, and where they write their parts."""

    #: the profiled functions as of now (a forked child uses them as they are); asked at each
    #: start, since a script may define them as it runs (``Runner.adopt``) and then start a pool
    functions: Callable[[], list[object]]
    timing: bool  # the twins read the clock (not with --hits)
    twin: str = COUNTING  # the kind of twin the user's run is on (set once the run is planned)
    sampled: bool = False  # whether it is sampled
    rate_hz: float = 2000.0
    processes: list[BaseProcess] = field(default_factory=list)
    directory: str | None = None
    dask: object | None = None  # the Dask workers that already existed (``dask_workers``), if any
    ray: object | None = None  # Ray's workers, reached through ray.init (``ray_workers``), if Ray is used
    existing: list[BaseProcess] = field(default_factory=list)  # started before the run (a pool kept)
    forked: list[int] = field(default_factory=list)  # the processes the run forked itself (os.fork)
    forked_child: bool = False  # this process is one of them (its copy of the parent's Launches)
    on_fork: Callable[[], None] | None = None  # such a child's first step: its counters start at 0
    fork_part: Callable[[], None] | None = None  # such a child's counts written as its part

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Processes started inside the block are profiled (``ChildTarget``), and the workers of
        every Dask client in use or made meanwhile (``dask_workers``)."""
        original, original_kill = BaseProcess.start, BaseProcess.kill
        original_fork, original_exit = os.fork, os._exit
        starting: list[BaseProcess] = []  # multiprocessing forking a process whose target is profiled

        def start(process: BaseProcess) -> None:
            target = process_target(process)
            if target is None or not _runs_its_target(process):
                self.processes.append(process)  # its own run(): no target to wrap (said when collected)
                return original(process)
            if self.directory is None:
                self.directory = tempfile.mkdtemp(prefix="nlprun-parts-")
            functions = self.functions()
            spec = self._spec(self.directory, functions)
            set_process_target(process, ChildTarget(target, spec, process.name, functions))
            starting.append(process)
            try:
                original(process)
            finally:
                starting.remove(process)
                set_process_target(process, target)
            self.processes.append(process)

        def fork() -> int:
            """``os.fork`` by the program itself: the child goes on with the run, its counters from
            zero, and sends them as a part when it exits (``fork_part``), as a started process does."""
            if starting:
                return original_fork()
            if self.directory is None:
                self.directory = tempfile.mkdtemp(prefix="nlprun-parts-")
            pid = original_fork()
            if pid == 0:
                self.forked_child = True
                if self.on_fork is not None:
                    self.on_fork()
            else:
                self.forked.append(pid)
            return pid

        def _exit(status: int) -> None:
            """``os._exit`` in a forked child skips the run's end: the part is sent first."""
            if self.forked_child and self.fork_part is not None:
                with contextlib.suppress(Exception):
                    self.fork_part()
            original_exit(status)

        def kill(process: BaseProcess) -> None:
            self._part_before_kill(process)
            original_kill(process)

        self.existing = multiprocessing.active_children()  # their work cannot be counted: said at the end
        with contextlib.ExitStack() as stack:
            # a Dask client in use reaches workers started before the run; one made in it, too; and
            # Ray's workers, through the jobs ray.init starts meanwhile
            here = os.getpid()
            engines = {"distributed": self._reach_dask, "ray": self._reach_ray}
            later = {}
            for module, reach in engines.items():
                if module in sys.modules:
                    reach(sys.modules[module])
                else:
                    # (not in a forked worker, which inherits the finder)
                    later[module] = functools.partial(_in_process, here, reach)
            stack.enter_context(after_import(later))
            stack.callback(lambda: self.dask is not None and self.dask.detach())
            stack.callback(lambda: self.ray is not None and self.ray.detach())
            with ctrl_c_deferred():
                BaseProcess.start, BaseProcess.kill = start, kill
                os.fork, os._exit = fork, _exit
            try:
                yield
            finally:
                with ctrl_c_deferred():
                    BaseProcess.start, BaseProcess.kill = original, original_kill
                    os.fork, os._exit = original_fork, original_exit

    def _carried_spec(self) -> ChildSpec:
        """The spec a worker that does not run the script gets: the script's functions pickled too."""
        functions = self.functions()
        return replace(self._spec("", functions), functions=named(functions, pickled=True))

    def _reach_dask(self, _: object = None) -> None:
        from .dask_workers import DaskWorkers

        self.dask = DaskWorkers(self._carried_spec, lambda: {p.pid for p in self.processes})
        self.dask.attach()

    def _reach_ray(self, ray: object) -> None:
        from .ray_workers import RayWorkers

        if not hasattr(ray, "remote"):  # not Ray's package
            return
        self.ray = RayWorkers(self._carried_spec)
        try:
            self.ray.attach(ray)
        except Exception as exc:  # never break the program's Ray: say its work is not counted
            self.ray.detach()
            why = f"{type(exc).__name__}: {exc}"
            self.ray.missing.append(f"Ray's workers could not be reached ({why}): their work is not counted")

    def _part_before_kill(self, process: BaseProcess) -> None:
        """A process of the run about to be killed outright (SIGKILL) sends its part first, if it
        answers within ``FLUSH_WAIT``: a Dask nanny kills a worker that takes more than 4 s to close
        (a loaded machine), and its part, written once its target returns, was lost."""
        directory = self.directory
        ours = any(p is process for p in self.processes)
        if directory is None or not ours or _exit_code(process) is not None:
            return
        pid = process.pid
        if os.path.exists(os.path.join(directory, f"{PART_PREFIX}{pid}.json")):
            return
        if not os.path.exists(os.path.join(directory, f"{STARTED}{pid}")):
            return  # its target never began: it did no work
        asked = os.path.join(directory, f"flush-{pid}")
        with contextlib.suppress(OSError), open(asked, "w"):
            pass
        deadline = time.monotonic() + FLUSH_WAIT
        while os.path.exists(asked) and _exit_code(process) is None and time.monotonic() < deadline:
            time.sleep(0.01)

    def _spec(self, directory: str, functions: list[object]) -> ChildSpec:
        """How a child is to profile: the same functions, twins and sampling as this run."""
        return ChildSpec(
            directory,
            named(functions),
            self.timing,
            self.twin,
            self.sampled,
            self.rate_hz,
            sources_of(functions),
        )

    def elsewhere(self) -> str | None:
        """What the run did in other processes, in words (None: nothing): processes it started,
        or tasks it sent to the workers of a Dask client that existed before it."""
        if self.processes or self.forked:
            n = len(self.processes) + len(self.forked)
            return f"your run started {n} process{'es' if n > 1 else ''}"
        tasks = self.dask.tasks() if self.dask is not None else 0
        if tasks:
            return f"your run sent {tasks} task{'s' if tasks > 1 else ''} to Dask workers"
        return None

    def collect(self) -> tuple[list[ProcessPart], list[str]]:
        """The parts the started processes wrote, and a sentence for each that wrote none."""
        parts: dict[int, ProcessPart] = {}
        names: list[str] = []
        unread: dict[int, str] = {}  # pid -> why its part could not be read
        if self.directory is not None:
            self._ask_running(self.directory)
        # each process's state before the parts are read: one that had exited wrote its part first,
        # so the reading sees it. (Read after, a process that exited while the parts were read, its
        # part just written, was said to have "exited with status 0 without sending its counts".)
        codes = {p: _exit_code(p) for p in self.processes}
        if self.directory is not None:
            names, parts, unread = _read_parts(self.directory)
            shutil.rmtree(self.directory, ignore_errors=True)
        began = {int(n[len(STARTED) :]) for n in names if n.startswith(STARTED)}
        # a worker stopped before its target began (a pool's spawned worker still importing when
        # the pool was terminated) did no work: nothing of it is missing
        missing = _why_missing(
            [
                p
                for p in self.processes
                if p.pid not in parts
                and p.pid not in unread
                and (p.pid in began or not _stopped_before_starting(p, codes[p]))
            ],
            codes,
        )
        for pid, why in unread.items():
            who = _names([p for p in self.processes if p.pid == pid]) or f"pid {pid}"
            missing.append(_unreadable(f"process {who}", why))
        for pid in self.forked:
            if pid not in parts and pid not in unread:
                missing.append(
                    f"process {pid}, which your run forked (os.fork), sent no counts (still running "
                    "when the run ended, or killed): its work is not counted"
                )
        self.processes, self.directory, self.forked = [], None, []
        found = list(parts.values())
        refused: list[tuple[str, str]] = []
        reached = {part.pid for part in found}
        if self.dask is not None:
            reached |= self.dask.pids
            self.dask.collect()
            _read_sent_parts(self.dask.texts, "a Dask worker", found, missing)
            refused += self.dask.refused
            missing += self.dask.missing
            self.dask = None
        if self.ray is not None:
            self.ray.finish()
            self.ray.detach()
            _read_sent_parts(self.ray.texts, "a Ray worker", found, missing)
            missing += self.ray.missing
            self.ray = None
        refused += [(part.label, why) for part in found for why in part.profile.missing]
        missing += _refusals(refused)
        reached |= {part.pid for part in found}
        kept = [p for p in self.existing if p.pid not in reached and _exit_code(p) is None]
        if kept:
            missing.append(_started_before(kept))
        self.existing = []
        return found, missing

    def _ask_running(self, directory: str) -> None:
        """Ask the started processes still running (a pool kept for later: joblib's) for their
        counts so far, and wait for them (``FLUSH_WAIT`` at most)."""
        running = [p for p in self.processes if _exit_code(p) is None]
        asked = [os.path.join(directory, f"flush-{p.pid}") for p in running]
        for path in asked:
            with contextlib.suppress(OSError), open(path, "w"):
                pass
        deadline = time.monotonic() + FLUSH_WAIT
        while any(map(os.path.exists, asked)) and time.monotonic() < deadline:
            time.sleep(0.01)


#: Seconds a running worker is given to send its counts so far when the user's run ends.
FLUSH_WAIT = 5.0


def _read_parts(directory: str) -> tuple[list[str], dict[int, ProcessPart], dict[int, str]]:
    """The files in ``directory``, the parts there by pid, and why each part that could not be
    read could not (pid -> reason: its work is lost, and the profile says so)."""
    names = sorted(os.listdir(directory))
    parts: dict[int, ProcessPart] = {}
    unread: dict[int, str] = {}
    for name in names:
        if not (name.startswith(PART_PREFIX) and name.endswith(".json")):
            continue  # a part still being written (a process still running) is not read
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                part = _read_part(handle.read())
        except (OSError, ValueError, TypeError, KeyError) as exc:
            pid = name[len(PART_PREFIX) : -len(".json")]
            unread[int(pid) if pid.isdigit() else -1] = f"{type(exc).__name__}: {exc}"
            continue
        parts[part.pid] = part
    return names, parts, unread


def _stopped_before_starting(process: BaseProcess, code: int | None) -> bool:
    """Whether ``process``, its exit status ``code``, was given a profiled target and ended by a
    signal (it then wrote ``started-<pid>`` if it ever began the target)."""
    return code is not None and code < 0 and _runs_its_target(process)


def _runs_its_target(process: BaseProcess) -> bool:
    """Whether ``process.run()`` is multiprocessing's, which calls the target (not a subclass's own)."""
    return type(process).run is BaseProcess.run


def _exit_code(process: BaseProcess) -> int | None:
    try:
        return process.exitcode
    except ValueError:  # closed by the program
        return None


def _read_part(text: str) -> ProcessPart:
    """A part file: its first line "label<TAB>pid", then the profile's JSON."""
    head, _, body = text.partition("\n")
    label, _, pid = head.rpartition("\t")
    return ProcessPart(label, int(pid), ProfileStats.from_json(body))


def _read_sent_parts(texts: list[str], who: str, found: list[ProcessPart], missing: list[str]) -> None:
    """Read the part texts an engine's workers sent (``who``: "a Dask worker"), each into
    ``found``, or into ``missing`` where it cannot be read: never silently dropped."""
    for text in texts:
        try:
            found.append(_read_part(text))
        except (ValueError, TypeError, KeyError) as exc:
            missing.append(_unreadable(who, f"{type(exc).__name__}: {exc}"))


_NOT_COUNTED = "its work is not counted"


def _unreadable(who: str, why: str) -> str:
    """The sentence for a part that came back but could not be read, a process's or a Dask
    worker's alike: its work is named as missing, never dropped."""
    return f"{who} sent counts that could not be read ({why}): {_NOT_COUNTED}"


#: Why a process sent no part: (what one did, what several did), by the reason's key.
_WHY = {
    "own run": (
        "runs its own run() method, which numba_lprun cannot profile: its work is not counted",
        "run their own run() methods, which numba_lprun cannot profile: their work is not counted",
    ),
    "running": (
        "was still running when your run ended and did not answer: its work is not counted",
        "were still running when your run ended and did not answer: their work is not counted",
    ),
    "killed": (
        "was killed by {} before it could send its counts: its work is not counted",
        "were killed by {} before they could send their counts: their work is not counted",
    ),
    "exited": (
        "exited with status {} without sending its counts: its work is not counted",
        "exited with status {} without sending their counts: their work is not counted",
    ),
}


def _reason(process: BaseProcess, code: int | None) -> tuple[str, str]:
    """Why ``process``, its exit status ``code``, sent no part: a key of ``_WHY``, and the signal
    or status it names."""
    if not _runs_its_target(process):
        return "own run", ""
    if code is None:
        return "running", ""
    if code < 0:
        try:
            return "killed", signal.Signals(-code).name
        except ValueError:
            return "killed", f"signal {-code}"
    return "exited", str(code)


def _why_missing(processes: list[BaseProcess], codes: dict[BaseProcess, int | None]) -> list[str]:
    """Why the ``processes`` (their exit statuses in ``codes``) sent no part, in words: one
    warning per reason, naming each process (a pool of 16 workers killed is one warning, not 16)."""
    groups: dict[tuple[str, str], list[BaseProcess]] = {}
    for process in processes:
        groups.setdefault(_reason(process, codes[process]), []).append(process)
    said = []
    for (key, detail), group in groups.items():
        one, several = _WHY[key]
        names = _names(group)
        who = f"process {names}" if len(group) == 1 else f"{len(group)} processes ({names})"
        said.append(f"{who} {(one if len(group) == 1 else several).format(detail)}")
    return said


def _refusals(refused: list[tuple[str, str]]) -> list[str]:
    """One warning per reason a function could not be profiled in a worker, naming the workers."""
    groups: dict[str, list[str]] = {}
    for label, why in refused:
        if label not in groups.setdefault(why, []):
            groups[why].append(label)
    said = []
    for why, labels in groups.items():
        where = labels[0] if len(labels) == 1 else f"{len(labels)} worker processes ({_folded(labels)})"
        said.append(f"{why}, in {where}: its work there is not counted")
    return said


def _folded(labels: list[str]) -> str:
    return ", ".join(labels[:4]) + (" ..." if len(labels) > 4 else "")


def _names(processes: list[BaseProcess]) -> str:
    """The processes as a warning names them: the first four, by name and pid."""
    return ", ".join(f"{p.name} (pid {p.pid})" for p in processes[:4]) + (
        " ..." if len(processes) > 4 else ""
    )


def _started_before(processes: list[BaseProcess]) -> str:
    """The warning for processes already running when the run began (a pool made in an earlier
    cell, joblib's workers kept from an earlier call): what they did for the run is unseen."""
    n = len(processes)
    names = _names(processes)
    were = "was" if n == 1 else "were"
    return (
        f"{n} worker process{'es' if n > 1 else ''} started before this profile {were} running, "
        f"which numba_lprun cannot reach: {names}; if they ran the profiled functions, that work is "
        "not counted (make the pool inside the profiled code; joblib keeps its workers between "
        "calls: joblib.externals.loky.get_reusable_executor().shutdown() before profiling)"
    )


def _in_process(pid: int, reach: Callable[[object], None], module: object) -> None:
    """``reach(module)``, in the process the run began in only."""
    if os.getpid() == pid:
        reach(module)
