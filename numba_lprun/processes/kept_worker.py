"""A worker process's side of a profile, whatever reached it: Dask's plugin, Ray's setup hook.

A worker outlives the user's run (a Dask worker, a Ray worker kept by its raylet), so its
profile starts when the run reaches it and ends when the run asks (``finish``), and its
part goes back to the run; nothing of it stays after.

Why every copy: a worker holds one profiled function in several places. Its own
imported module has it (what a module-level task function calls, and a notebook's
task function that names the module); the tasks carry it pickled, and unpickling
makes a copy (Numba keys the copies by the id the client pickled it under), which
a worker that ran the tasks before the profile already made. So on each worker the
function is found by its module and qualified name (imported as a spawned worker
imports it) and that dispatcher is profiled; the id the tasks carry is made to
unpickle as it, and a copy unpickled earlier is sent to the same twins. A function
the notebook or script defines has no module there: the worker unpickles the copy
the run carries, and builds its twins from the source text the run took
(``spec.sources``). A module that cannot be imported when the profile starts is
watched (``late_imports``), and profiled once a task imports it. Every Python-level
call of each of those dispatchers goes to the twin (``run.reach.Swap.redirect``), and
the jitted functions of the worker's modules that call one are relinked, as in the
main process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace

from ..internals import CPUDispatcher, forget_compiled, unpickle_as, unpickled_dispatchers, unpickled_under
from ..run.phase_run import PhaseRun
from ..run.reach import module_namespaces, reaches
from .child import PART_PREFIX, profiled_target
from .late_imports import after_import
from .spec import ChildSpec, Named, found_in, locate

#: Seconds a worker may take to put its twins in place (it then profiles what comes after).
READY_WAIT = 60.0


class KeptWorker:
    """In a worker process: the profiled functions' calls counted (and sampled) until ``finish``."""

    def __init__(self, spec: ChildSpec, label: str = "worker") -> None:
        self.spec, self.label = spec, label
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
        self._compiled: dict[int, tuple[object, frozenset]] = {}  # jitted functions' signatures at the start

    def begin(self, within: str | None = None) -> None:
        """Find the functions and put the twins in place (the calling thread waits for that).

        The worker's own files go in a new folder ``within`` the given one (the system's temporary
        folder by default): a worker whose engine may kill it before ``finish`` (Ray ends a job's
        workers as the job ends) keeps them in the run's folder, which the run removes."""
        self._directory = tempfile.mkdtemp(prefix="nlprun-worker-", dir=within)
        self._start()

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
        label = self.label

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
            self._thread = threading.Thread(target=profile, name="numba_lprun-worker", daemon=True)
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
