"""Dask workers that already exist: a ``Client`` made before the profile (the usual notebook).

Why a worker plugin: those workers were started before the run, so no process start is
there to wrap (``launch``); Dask itself reaches them, on this machine or on others. For
the user's run a ``WorkerPlugin`` is registered through the client in use
(``distributed.default_client()``): on each worker, and on any that joins meanwhile, it
runs ``child.profiled_target`` in a thread of its own that waits until the run is over,
so the profiled functions' calls there go to counting twins and the worker is sampled,
exactly as in a process the run started. When the run ends each worker's part comes
back through the scheduler (``Client.run``) and the plugin is removed, which puts the
worker's dispatchers back.

Why the plugin carries the dispatchers themselves: a function defined in a notebook
lives in ``__main__``, which a worker cannot import by name; a pickled dispatcher
unpickles on the worker as the one object every task that names it unpickles to (Numba
keys them by the id it pickles them under), so the tasks call the profiled one.

Only a client whose workers are other processes is used (a ``LocalCluster(processes=
False)`` runs its tasks in this process, on the twins of the main run already).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from dataclasses import replace

from distributed import WorkerPlugin, default_client

from .child import PART_PREFIX, profiled_target
from .spec import ChildSpec

PLUGIN_NAME = "numba_lprun-profile"
#: Seconds a worker may take to put its twins in place, and to send its part.
READY_WAIT = 60.0


class ProfiledWorker(WorkerPlugin):
    """On each worker: the profiled functions' calls counted (and sampled) until ``finish``."""

    name = PLUGIN_NAME

    def __init__(self, spec: ChildSpec, functions: list[object]) -> None:
        self.spec, self.functions = spec, functions
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._directory: str | None = None
        self._tasks_before = 0  # the worker's tasks run when the plugin was set up

    def __getstate__(self) -> dict:
        return {"spec": self.spec, "functions": self.functions}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["spec"], state["functions"])

    def setup(self, worker: object) -> None:
        self._tasks_before = tasks_run(worker)
        self._directory = tempfile.mkdtemp(prefix="nlprun-dask-")
        spec = replace(self.spec, directory=self._directory)
        ready = threading.Event()

        def wait() -> None:  # the "target": runs once the twins are in place, until the run ends
            ready.set()
            self._stop.wait()

        label = f"dask worker {getattr(worker, 'address', '?')}"

        def profile() -> None:
            try:
                profiled_target(spec, label, list(self.functions), wait)
            finally:  # a profile that failed to start must not hold the worker's event loop
                ready.set()

        self._thread = threading.Thread(target=profile, name="numba_lprun-dask", daemon=True)
        self._thread.start()
        ready.wait(READY_WAIT)

    def finish(self) -> str | None:
        """Stop profiling here; the part written (its file's text), or None."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(READY_WAIT)
        directory, self._directory = self._directory, None
        if directory is None:
            return None
        try:
            path = os.path.join(directory, f"{PART_PREFIX}{os.getpid()}.json")
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except OSError:
            return None
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def teardown(self, worker: object) -> None:
        self.finish()

    def tasks_since(self, worker: object) -> int:
        """Tasks the worker ran since the plugin was set up (the user's run's, if it sent any)."""
        return tasks_run(worker) - self._tasks_before


def tasks_run(worker: object) -> int:
    """Tasks a worker has run (``distributed`` 2022.x+ keeps the count in its ``state``)."""
    state = getattr(worker, "state", worker)
    return int(getattr(state, "executed_count", 0) or 0)


def _tasks_on(dask_worker: object) -> int:
    plugin = getattr(dask_worker, "plugins", {}).get(PLUGIN_NAME)
    return plugin.tasks_since(dask_worker) if plugin is not None else 0


def _finish_on(dask_worker: object) -> str | None:
    plugin = getattr(dask_worker, "plugins", {}).get(PLUGIN_NAME)
    return plugin.finish() if plugin is not None else None


class ExistingWorkers:
    """The client in use when the run starts, and its workers profiled for the run."""

    def __init__(self, spec: ChildSpec, functions: list[object]) -> None:
        self.client = None
        self.missing: list[str] = []
        try:
            client = default_client()
        except ValueError:  # no client in use
            return
        try:
            pids = client.run(os.getpid)
            if pids and os.getpid() not in pids.values():
                client.register_plugin(ProfiledWorker(spec, functions), name=PLUGIN_NAME)
                self.client = client
        except Exception as exc:  # never let the profile break the user's run
            why = f"{type(exc).__name__}: {exc}"
            self.missing.append(f"the Dask client's workers could not be profiled ({why})")

    def tasks(self) -> int:
        """Tasks the workers ran since the profile began (0 where they cannot be asked)."""
        if self.client is None:
            return 0
        try:
            counts = self.client.run(_tasks_on, on_error="return").values()
            return sum(n for n in counts if isinstance(n, int))
        except Exception:  # never let the profile break the user's run
            return 0

    def parts(self) -> list[str]:
        """Each worker's part (its file's text), and the plugin removed."""
        if self.client is None:
            return []
        client, self.client = self.client, None
        try:
            texts = client.run(_finish_on, on_error="return")
        finally:
            with contextlib.suppress(Exception):
                client.unregister_worker_plugin(PLUGIN_NAME)
        found = []
        for address, text in texts.items():
            if isinstance(text, str):
                found.append(text)
            else:
                self.missing.append(f"dask worker {address} sent no counts: its work is not counted")
        return found
