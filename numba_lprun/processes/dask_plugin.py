"""A Dask worker's side of a profile: ``ProfiledWorker``, registered through the client.

Why a plugin: Dask reaches every worker of the client, on this machine or others, and
any that joins meanwhile; the plugin holds a ``kept_worker.KeptWorker``, which finds the
functions wherever the worker holds them and profiles them until ``finish``.

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
import tempfile
import time

from distributed import WorkerPlugin

from .child import WHOLE_PROCESS
from .kept_worker import KeptWorker
from .spec import ChildSpec

PLUGIN_NAME = "numba_lprun-profile"  # each registration's name: this, then a unique suffix
KEY = "numba_lprun"  # the scheduler metadata every registration's state is kept under
#: Seconds between two readings of the registration's state on the scheduler.
CHECK_S = 1.0
#: Seconds without an answer from the scheduler after which the plugin ends itself.
DEADLINE_S = 60.0


def tasks_run(worker: object) -> int:
    """Tasks a worker has run (``distributed`` 2022.x+ keeps the count in its ``state``)."""
    state = getattr(worker, "state", worker)
    return int(getattr(state, "executed_count", 0) or 0)


class ProfiledWorker(WorkerPlugin, KeptWorker):
    """On each Dask worker: the profiled functions' calls counted (and sampled) until ``finish``."""

    def __init__(self, spec: ChildSpec, name: str = PLUGIN_NAME) -> None:
        KeptWorker.__init__(self, spec)
        self.name = name
        self.worker: object | None = None
        self.whole_process = False  # the worker's process is profiled as a whole (``child``)
        self._tasks_before = 0
        self._watcher: asyncio.Future | None = None

    def __getstate__(self) -> dict:
        return {"spec": self.spec, "name": self.name}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["spec"], state["name"])

    async def setup(self, worker: object) -> None:
        """Put the twins in place (in a thread: the worker goes on answering meanwhile), then
        watch the registration."""
        self.worker = worker
        self.label = f"dask worker {getattr(worker, 'address', '?')}"
        if WHOLE_PROCESS.is_set():  # a worker process the profiled code started: profiled already
            self.whole_process = True
            return
        self._tasks_before = tasks_run(worker)
        self._directory = tempfile.mkdtemp(prefix="nlprun-dask-")
        await asyncio.get_running_loop().run_in_executor(None, self._start)
        self._watcher = asyncio.ensure_future(self._watch(worker))

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
