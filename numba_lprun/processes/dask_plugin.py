"""A Dask worker's side of a profile: ``ProfiledWorker``, registered through the client.

Why every copy: a worker holds one profiled function in several places. Its own
imported module has it (what a module-level task function calls, and a notebook's
task function that names the module); the tasks carry it pickled, and unpickling
makes a copy (Numba keys the copies by the id the client pickled it under), which
a worker that ran the tasks before the profile already made. So on each worker the
function is found by its module and qualified name (imported as a spawned worker
imports it) and that dispatcher is profiled; the id the tasks carry is made to
unpickle as it, and a copy unpickled earlier is sent to the same twins. A function
the notebook or script defines has no module there: the worker unpickles the copy
the plugin carries, and builds its twins from the source text the client took
(``spec.sources``). A module that cannot be imported when the plugin is set up is
watched (``late_imports``), and profiled once a task imports it, or
``Client.upload_file`` ships it. Every Python-level call of each of those dispatchers
goes to the twin (``run.reach.Swap.redirect``), and the jitted functions of the worker's
modules that call one are relinked, as in the main process.

Why it ends itself: a profile whose client died, or whose registration failed part
way, must not leave a cluster instrumented. The plugin reads the registration's
state on the scheduler every ``CHECK_S`` (``KEY``/name/``"open"``, which the client
sets before registering and removes when it is done, and which the scheduler removes
when the client disconnects: ``dask_workers``); once it is gone, or the scheduler has
not answered for ``DEADLINE_S``, the plugin removes itself from the worker, which
puts the worker's functions back. It reports the tasks the worker has run under
``KEY``/name/``"workers"``, so a worker lost during the run can be named with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from distributed import WorkerPlugin

from ..internals import CPUDispatcher, forget_compiled, unpickle_as, unpickled_dispatchers, unpickled_under
from ..run.phase_run import PhaseRun
from ..run.reach import module_namespaces, reaches
from .child import PART_PREFIX, WHOLE_PROCESS, profiled_target
from .late_imports import after_import
from .spec import ChildSpec, Named, found_in, locate

PLUGIN_NAME = "numba_lprun-profile"  # each registration's name: this, then a unique suffix
KEY = "numba_lprun"  # the scheduler metadata every registration's state is kept under
#: Seconds a worker may take to put its twins in place (it then profiles what comes after).
READY_WAIT = 60.0
#: Seconds between two readings of the registration's state on the scheduler.
CHECK_S = 1.0
#: Seconds without an answer from the scheduler after which the plugin ends itself.
DEADLINE_S = 60.0


def tasks_run(worker: object) -> int:
    """Tasks a worker has run (``distributed`` 2022.x+ keeps the count in its ``state``)."""
    state = getattr(worker, "state", worker)
    return int(getattr(state, "executed_count", 0) or 0)


class ProfiledWorker(WorkerPlugin):
    """On each worker: the profiled functions' calls counted (and sampled) until ``finish``."""

    def __init__(self, spec: ChildSpec, name: str = PLUGIN_NAME) -> None:
        self.spec, self.name = spec, name
        self.worker: object | None = None
        self.whole_process = False  # the worker's process is profiled as a whole (``child``)
        self.refused: dict[int, str] = {}  # index of a function in ``spec.functions`` -> why not here
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._directory: str | None = None
        self._run: PhaseRun | None = None
        self._primary: dict[int, object] = {}  # index -> the dispatcher profiled (its twins)
        self._copies: list[tuple[int, object]] = []  # further copies, sent to the primary's twins
        self._pending: list[object] = []  # primaries found while the profile was starting
        self._earlier: list[tuple[str, object]] = []  # (pickle id, what it unpickled as before)
        self._imports = contextlib.ExitStack()
        self._tasks_before = 0
        self._compiled: dict[int, tuple[object, frozenset]] = {}  # jitted functions' signatures at the start
        self._watcher: asyncio.Future | None = None

    def __getstate__(self) -> dict:
        return {"spec": self.spec, "name": self.name}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["spec"], state["name"])

    async def setup(self, worker: object) -> None:
        """Put the twins in place (in a thread: the worker goes on answering meanwhile), then
        watch the registration."""
        self.worker = worker
        if WHOLE_PROCESS.is_set():  # a worker process the profiled code started: profiled already
            self.whole_process = True
            return
        self._tasks_before = tasks_run(worker)
        self._directory = tempfile.mkdtemp(prefix="nlprun-dask-")
        await asyncio.get_running_loop().run_in_executor(None, self._start)
        self._watcher = asyncio.ensure_future(self._watch(worker))

    def _start(self) -> None:
        with self._lock:
            if self._stop.is_set():  # removed while it was being set up
                return
            watched: dict[str, list[int]] = {}
            for index, named in enumerate(self.spec.functions):
                why = self._find(index, named)
                if why is not None:
                    self.refused[index] = f"{named[1]} could not be profiled ({why})"
                    if named[0] != "__main__" and named[0] not in sys.modules:  # it may come later
                        watched.setdefault(named[0], []).append(index)
            callbacks = {module: self._imported_callback(indices) for module, indices in watched.items()}
            self._imports.enter_context(after_import(callbacks))
            primaries = list(self._primary.values())
        if primaries:
            self._profile(primaries)

    def _find(self, index: int, named: Named) -> str | None:
        """The dispatchers this worker holds for ``named``; None, or why there is none yet."""
        found, why = locate(named, main=False)  # by pickle: the tasks' copy, if any; else a new one
        if found:
            self._take(index, found)
        return why

    def _take(self, index: int, found: list[object]) -> tuple[bool, list[tuple[int, object]]]:
        """Make ``found[0]`` the dispatcher profiled for function ``index`` unless it has one (then:
        True), the others copies sent to its twins, with the copy the tasks unpickled before; the
        tasks' copies from now on unpickle as it. Returns the copies new to the run too."""
        identity = self.spec.functions[index][2]
        earlier = unpickled_under(identity) if identity else None
        new = index not in self._primary
        primary = self._primary.setdefault(index, found[0])
        known = {id(primary), *(id(copy) for _, copy in self._copies)}
        copies = [(index, d) for d in {id(d): d for d in [*found, earlier] if d is not None}.values()]
        copies = [(i, d) for i, d in copies if id(d) not in known]
        self._copies += copies
        if new and identity is not None and earlier is not primary:
            self._earlier.append((identity, earlier))
            unpickle_as(identity, primary)
        return new, copies

    def _profile(self, functions: list[object]) -> None:
        """Profile ``functions`` in a thread of its own until ``finish``, once the twins are in place."""
        ready = threading.Event()
        spec = replace(self.spec, directory=self._directory)
        label = f"dask worker {getattr(self.worker, 'address', '?')}"

        def started(run: PhaseRun) -> None:
            with self._lock:
                self._compiled = _compiled_now()
                self._run = run
                pending, self._pending = self._pending, []
                if pending:
                    self._adopt(run, pending)
                self._send_copies(run, self._copies)

        def wait() -> None:  # the "target": runs once the twins are in place, until the run ends
            ready.set()
            self._stop.wait()

        def profile() -> None:
            # the jitted functions the tasks carried (a notebook's, in no module) that call a kernel
            # are relinked to its twins too, as the modules' are
            carried = {f"task function {i}": d for i, d in enumerate(unpickled_dispatchers())}
            try:
                profiled_target(spec, label, functions, wait, started, [carried])
            finally:  # a profile that failed to start must not hold the worker
                ready.set()

        with self._lock:
            if self._stop.is_set() or self._thread is not None:
                return
            self._thread = threading.Thread(target=profile, name="numba_lprun-dask", daemon=True)
            self._thread.start()
        ready.wait(READY_WAIT)

    def _adopt(self, run: PhaseRun, functions: list[object]) -> None:
        """Profile ``functions`` from now on in ``run`` (found after it started)."""
        try:
            run.adopt(*functions)
        except Exception as exc:  # its source unreadable here, say
            for index, primary in self._primary.items():
                if any(primary is f for f in functions):
                    self.refused[index] = f"{self.spec.functions[index][1]} could not be profiled ({exc})"

    def _send_copies(self, run: PhaseRun, copies: list[tuple[int, object]]) -> None:
        twins = {}
        for index, copy in copies:
            twin = run.replacements.get(id(self._primary.get(index)))
            if twin is not None:
                twins[id(copy)] = twin
        run.swap.redirect([copy for _, copy in copies], twins)

    def _imported_callback(self, indices: list[int]) -> Callable[[object], None]:
        def imported(module: object) -> None:
            """A watched module was imported (by a task, say): its functions are profiled from now on."""
            fresh = self._found_later(module, indices)
            if fresh:
                self._profile(fresh)  # (nothing, if a profile is under way: it took them)

        return imported

    def _found_later(self, module: object, indices: list[int]) -> list[object]:
        """Profile what ``module`` holds of the functions at ``indices``: a further copy goes to the
        twins of the one profiled, a first one is adopted by the run (or pending until it starts);
        returns those no profile has yet, to start one with."""
        with self._lock:
            if self._stop.is_set():
                return []
            fresh, copies = [], []
            for index in indices:
                found = found_in(module, self.spec.functions[index][:2])
                if not found:
                    continue
                self.refused.pop(index, None)
                new, more = self._take(index, found)
                copies += more
                if new:
                    fresh.append(self._primary[index])
            if self._run is not None:
                if fresh:
                    self._adopt(self._run, fresh)
                self._send_copies(self._run, copies)
                return []
            if fresh and self._thread is not None:
                self._pending += fresh  # the run starting adopts them
                return []
            return fresh

    async def _watch(self, worker: object) -> None:
        """End this plugin once its registration is over, or the scheduler has been silent too long."""
        heard, reported = time.monotonic(), None
        while not self._stop.is_set():
            await asyncio.sleep(CHECK_S)
            try:
                state = [KEY, self.name]
                still = await worker.scheduler.get_metadata(keys=[*state, "open"], default=None)
                tasks = self.tasks_since(worker)
                if still and tasks != reported:
                    where, value = [*state, "workers", worker.address], {"pid": os.getpid(), "tasks": tasks}
                    await worker.scheduler.set_metadata(keys=where, value=value)
                    reported = tasks
                heard = time.monotonic()
            except Exception:  # the scheduler unreachable: wait, up to the deadline
                still = time.monotonic() - heard < DEADLINE_S
            if not still:
                with contextlib.suppress(Exception):
                    if self.name in getattr(worker, "plugins", {}):
                        await worker.plugin_remove(self.name)  # calls teardown: the functions go back
                self.finish()
                return

    def finish(self) -> str | None:
        """Stop profiling here and put everything back; the part written (its file's text), or None."""
        with self._lock:
            self._stop.set()
            self._imports.close()
        if self._thread is not None:
            self._thread.join(READY_WAIT)
        self._compile_again()
        for identity, earlier in self._earlier:
            if earlier is not None:
                unpickle_as(identity, earlier)
        self._earlier = []
        directory, self._directory = self._directory, None
        if directory is None:
            return None
        path = os.path.join(directory, f"{PART_PREFIX}{os.getpid()}.json")
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except OSError:
            return None
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def _compile_again(self) -> None:
        """Make each jitted function that first compiled while the run lasted, and that calls a
        profiled one (directly or through others), compile again at its next call: it was compiled
        against the twin (a task's jitted function the worker had not run before, a module's imported
        meanwhile), and would go on counting after the run."""
        reached = {id(d): d for d in [*self._primary.values(), *(copy for _, copy in self._copies)]}
        before, self._compiled = self._compiled, {}
        if not before:
            return
        fresh = []
        for key, (dispatcher, signatures) in _compiled_now().items():
            old = before.get(key)
            if key not in reached and signatures - (old[1] if old and old[0] is dispatcher else frozenset()):
                fresh.append(dispatcher)
        changed = True
        while changed:  # a caller of a caller compiled meanwhile linked its callee's code
            changed = False
            for dispatcher in list(fresh):
                if reaches(dispatcher, reached):
                    with contextlib.suppress(Exception):
                        forget_compiled(dispatcher)
                    reached[id(dispatcher)] = dispatcher
                    fresh.remove(dispatcher)
                    changed = True

    async def teardown(self, worker: object) -> None:
        self._stop.set()
        if self._watcher is not None and self._watcher is not asyncio.current_task():
            self._watcher.cancel()
        await asyncio.get_running_loop().run_in_executor(None, self.finish)

    def tasks_since(self, worker: object) -> int:
        """Tasks the worker ran since the plugin was set up (the user's run's, if it sent any)."""
        return tasks_run(worker) - self._tasks_before

    def report(self, part: str | None) -> dict:
        """What ``finish`` leaves for the client: the part, why functions were not profiled here,
        whether the process was profiled as a whole, and the tasks run."""
        return {
            "part": part,
            "refused": sorted(set(self.refused.values())),
            "whole_process": self.whole_process,
            "tasks": self.tasks_since(self.worker) if self.worker is not None else 0,
        }


def _compiled_now() -> dict[int, tuple[object, frozenset]]:
    """Every jitted function this worker holds (its modules' and its tasks'), with the signatures
    it has compiled."""
    found = {}
    dispatchers = [*unpickled_dispatchers()]
    for namespace in module_namespaces():
        dispatchers += [v for v in list(namespace.values()) if isinstance(v, CPUDispatcher)]
    for dispatcher in dispatchers:
        with contextlib.suppress(Exception):
            found[id(dispatcher)] = (dispatcher, frozenset(dict(dispatcher.overloads)))
    return found


async def finish_on(name: str, dask_worker: object) -> dict | None:
    """On a worker (``Client.run``): end the registration ``name`` here, its report (None: none)."""
    plugin = getattr(dask_worker, "plugins", {}).get(name)
    if not isinstance(plugin, ProfiledWorker):
        return None
    part = await asyncio.get_running_loop().run_in_executor(None, plugin.finish)
    return plugin.report(part)


def tasks_on(name: str, dask_worker: object) -> int:
    """On a worker (``Client.run``): the tasks it ran since the registration ``name`` reached it."""
    plugin = getattr(dask_worker, "plugins", {}).get(name)
    return plugin.tasks_since(dask_worker) if isinstance(plugin, ProfiledWorker) else 0
