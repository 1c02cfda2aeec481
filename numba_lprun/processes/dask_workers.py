"""Dask workers reached through a client: one made before the profile, or one the profiled code makes.

Why a worker plugin: a cluster's workers were started outside the profiled code (by
``dask worker``, a job queue, or a ``LocalCluster`` made in an earlier cell), so no
process start is there to wrap (``launch``); Dask itself reaches them, on this machine
or on others. For the user's run a ``dask_plugin.ProfiledWorker`` is registered through
the client (on each worker, and on any that joins meanwhile): it profiles the functions
wherever the worker holds them until the run is over. Then each worker's part comes
back through the scheduler (``Client.run``) and the plugin is removed, which puts the
worker's functions back.

Which clients: the one in use when the run starts (``distributed.default_client()``: the
usual notebook), and every client the profiled code makes (a script that connects to
its scheduler): while the run lasts, this module is one of the client preloads Dask runs
when a client connects (``distributed.client.preload``, set back afterwards; set as
soon as ``distributed`` is imported, if the run imports it), and ``dask_setup`` registers
the plugin then, before the client is handed back; ``dask_teardown`` collects its parts
when the client closes during the run. One registration per scheduler. A client whose
workers are threads of this process (``LocalCluster(processes=False)``) runs its tasks
on the main run's twins already, and workers the profiled code started itself are
profiled as processes (``child``): neither gets the plugin.

Why nothing is left behind: the registration's state lives in the scheduler's metadata
(``dask_plugin.KEY``) from before the plugin is registered until it is removed; a
watcher run on the scheduler (a function sent by value: the scheduler needs no
numba_lprun) removes the plugin and that state once the client disconnects, and each
plugin removes itself once the state is gone (``dask_plugin``). A registration that
fails part way (a worker lost meanwhile; workers without numba_lprun) is undone at
once: removed on the scheduler and on every worker that has it, checked until none has.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import dask
from distributed import default_client

from .dask_plugin import CHECK_S, KEY, PLUGIN_NAME, ProfiledWorker, finish_on, tasks_on
from .spec import ChildSpec

#: This module, as Dask's client preloads name it.
PRELOAD = __name__
#: Seconds an undone registration is checked for, until no worker has the plugin any more.
UNDO_WAIT = 10.0
_ACTIVE: list[DaskWorkers] = []  # the runs going on in this process (their clients are reached)


async def dask_setup(client: object) -> None:
    """Dask's client preload hook: a client connected while a run goes on."""
    for active in list(_ACTIVE):
        await active.reached(client)


async def dask_teardown(client: object) -> None:
    """Dask's client preload hook: a client closes; its registration ends before it does."""
    for active in list(_ACTIVE):
        await active.closing(client)


@dataclass
class Registration:
    """The plugin registered on one scheduler's workers for one run."""

    client: object
    name: str
    pids: dict[str, int]  # address -> pid of each worker when it was registered


@dataclass
class DaskWorkers:
    """Every Dask client the run reaches, and what their workers sent."""

    spec: Callable[[], ChildSpec]  # the plugin's spec, as of now
    started: Callable[[], set[int]]  # pids of the processes the run started (profiled as such)
    registrations: dict[str, Registration | None] = field(default_factory=dict)  # by scheduler address
    texts: list[str] = field(default_factory=list)  # the parts of the registrations over
    refused: list[tuple[str, str]] = field(default_factory=list)  # (worker, why a function was not profiled)
    missing: list[str] = field(default_factory=list)
    tasks_done: int = 0
    pids: set[int] = field(default_factory=set)  # of the workers reached (their work is counted)
    lock: threading.Lock = field(default_factory=threading.Lock)
    config: object | None = None

    def attach(self) -> None:
        """From now until ``detach``: the client in use, and each client made, reach their workers."""
        preloads = list(dask.config.get("distributed.client.preload", None) or [])
        self.config = dask.config.set({"distributed.client.preload": [*preloads, PRELOAD]})
        _ACTIVE.append(self)
        try:
            client = default_client()
        except ValueError:  # no client in use
            return
        if getattr(client, "asynchronous", False):
            self.missing.append(
                "the Dask client in use is asynchronous and this run is inside its event loop: its workers "
                "were not profiled (profile a statement that awaits nothing, or make the client in it)"
            )
            return
        try:
            client.sync(self.reached, client)
        except Exception as exc:  # a client whose scheduler is gone, say: never break the user's run
            why = f"{type(exc).__name__}: {exc}"
            self.missing.append(f"the Dask client's workers could not be profiled ({why})")

    def detach(self) -> None:
        """No more clients are reached (those reached stay registered until ``collect``)."""
        with contextlib.suppress(ValueError):
            _ACTIVE.remove(self)
        if self.config is not None:
            self.config.__exit__(None, None, None)
            self.config = None

    async def reached(self, client: object) -> None:
        """Register the plugin on ``client``'s workers, unless its scheduler has it for this run."""
        address = str(getattr(client.scheduler, "address", id(client)))
        with self.lock:
            if address in self.registrations:
                return
            self.registrations[address] = None
        try:
            registration = await _register(client, self.spec(), self.started())
        except Exception as exc:  # never let the profile break the user's client
            why = f"{type(exc).__name__}: {exc}"
            registration = f"the Dask workers of {address} could not be profiled ({why})"
        if isinstance(registration, str):
            self.missing.append(registration)
        elif registration is not None:
            self.registrations[address] = registration
            self.pids |= set(registration.pids.values())

    async def closing(self, client: object) -> None:
        """``client`` closes during the run: its workers' parts now, while it can still ask."""
        for address, registration in list(self.registrations.items()):
            if registration is not None and registration.client is client:
                self.registrations[address] = None
                await self._finish(registration)

    async def _finish(self, registration: Registration) -> None:
        try:
            texts, refused, missing, tasks = await _collect(registration)
        except Exception as exc:  # the client lost its scheduler, say
            texts, refused, tasks = [], [], 0
            missing = [f"the Dask workers of {registration.name} sent nothing ({type(exc).__name__}: {exc})"]
        with self.lock:
            self.texts += texts
            self.refused += refused
            self.missing += missing
            self.tasks_done += tasks

    def tasks(self) -> int:
        """Tasks the workers ran since the profile reached them (0 where they cannot be asked)."""
        total = self.tasks_done
        for registration in list(self.registrations.values()):
            if registration is None:
                continue
            with contextlib.suppress(Exception):
                counts = registration.client.run(tasks_on, registration.name, on_error="return").values()
                total += sum(n for n in counts if isinstance(n, int))
        return total

    def collect(self) -> None:
        """End every registration still open; their parts join ``texts``."""
        for address, registration in list(self.registrations.items()):
            self.registrations[address] = None
            if registration is None:
                continue
            try:
                registration.client.sync(self._finish, registration)
            except Exception as exc:  # the client was closed without us, its loop gone
                why = f"{type(exc).__name__}: {exc}"
                self.missing.append(f"the Dask workers of {address} sent nothing ({why})")


async def _register(client: object, spec: ChildSpec, started: set[int]) -> Registration | str | None:
    """The plugin registered on ``client``'s workers (None: they need none; a sentence: it failed,
    and was undone)."""
    pids = await client.run(os.getpid)
    if not pids or os.getpid() in pids.values() or set(pids.values()) <= started:
        return None  # threads of this process (the main run's twins), or processes the run profiles
    name = f"{PLUGIN_NAME}-{uuid.uuid4().hex[:12]}"
    _, watch = _on_scheduler()
    await client.set_metadata([KEY, name, "open"], True)
    try:
        await client.run_on_scheduler(watch, name, client.id, KEY, CHECK_S, wait=False)
        await client.register_plugin(ProfiledWorker(spec, name), name=name)
    except Exception as exc:
        await _undo(client, name)
        who = ", ".join(sorted(pids)[:4]) + (" ..." if len(pids) > 4 else "")
        return (
            f"the Dask workers ({who}) could not be profiled ({type(exc).__name__}: {exc}); the plugin "
            "was removed from the scheduler and every worker, and their work is not counted"
        )
    return Registration(client, name, pids)


async def _collect(registration: Registration) -> tuple[list[str], list[tuple[str, str]], list[str], int]:
    """End ``registration``: its workers' parts, (worker, why) for each function one could not
    profile, a sentence for each worker that sent nothing, and the tasks they ran."""
    client, name = registration.client, registration.name
    try:
        reports = await client.run(finish_on, name, on_error="return")
        seen = await client.get_metadata([KEY, name, "workers"], default=None) or {}
    finally:
        await _undo(client, name)
    texts, refused, missing, tasks = [], [], [], 0
    for address, report in reports.items():
        label = f"dask worker {address}"
        if isinstance(report, dict):
            tasks += report["tasks"]
            refused += [(label, why) for why in report["refused"]]
            if report["part"] is not None:
                texts.append(report["part"])
        elif isinstance(report, BaseException):
            why = f"{type(report).__name__}: {report}"
            missing.append(f"{label} sent no counts ({why}): its work is not counted")
    lost = sorted((set(registration.pids) | set(seen)) - set(reports))
    missing += [_lost(address, registration.pids, seen) for address in lost]
    return texts, refused, missing, tasks


def _lost(address: str, pids: dict[str, int], seen: dict[str, dict]) -> str:
    """The note for a worker that left the cluster during the run, with what it had run."""
    report = seen.get(address) or {}
    pid = report.get("pid", pids.get(address))
    who = f"dask worker {address}" + (f" (pid {pid})" if pid else "")
    tasks = report.get("tasks")
    ran = f" ({tasks} task{'s' if tasks != 1 else ''} run, by its last report)" if tasks else ""
    return (
        f"{who} left the cluster during your run (killed, crashed or retired): its counts and samples{ran} "
        "are lost; the tasks whose results Dask ran again on other workers are counted there"
    )


async def _undo(client: object, name: str) -> None:
    """Remove the registration ``name`` from the scheduler and every worker; wait until none has it."""
    cleanup, _ = _on_scheduler()
    remove, holds = _on_workers()
    with contextlib.suppress(Exception):
        await client.run_on_scheduler(cleanup, name, KEY)
    deadline = time.monotonic() + UNDO_WAIT
    while True:
        with contextlib.suppress(Exception):
            await client.run(remove, name, on_error="return")
        try:
            held = await client.run(holds, name, on_error="return")
        except Exception:
            return  # no scheduler to ask: each plugin ends itself (``dask_plugin.DEADLINE_S``)
        if not any(value is True for value in held.values()) or time.monotonic() > deadline:
            return
        await asyncio.sleep(0.1)


def _on_scheduler() -> tuple[Callable, Callable]:
    """Two coroutine functions run on the scheduler, made here so that they are sent by value (the
    scheduler need not have numba_lprun): ``cleanup`` removes a registration's plugin and state,
    ``watch`` does so once the client has disconnected or the state is gone."""

    async def cleanup(name, key, dask_scheduler):
        if name in dask_scheduler.worker_plugins:
            try:
                await dask_scheduler.unregister_worker_plugin(None, name)
            except Exception:
                pass
        ours = dask_scheduler.task_metadata.get(key)
        if isinstance(ours, dict):
            ours.pop(name, None)
            if not ours:
                dask_scheduler.task_metadata.pop(key, None)

    async def watch(name, client, key, every, dask_scheduler):
        import asyncio

        def going_on():
            state = dask_scheduler.task_metadata.get(key, {})
            state = state.get(name) if isinstance(state, dict) else None
            return client in dask_scheduler.clients and isinstance(state, dict) and state.get("open")

        while going_on():
            await asyncio.sleep(every / 2)
        await cleanup(name, key, dask_scheduler)
        await asyncio.sleep(3 * every + 1)  # a worker's last report, sent as it ended: removed too
        await cleanup(name, key, dask_scheduler)

    return cleanup, watch


def _on_workers() -> tuple[Callable, Callable]:
    """Two functions run on the workers, sent by value (a worker without numba_lprun runs them):
    ``remove`` removes the plugin ``name`` where it is, ``holds`` says whether it is there."""

    async def remove(name, dask_worker):
        if name in dask_worker.plugins:
            await dask_worker.plugin_remove(name)

    def holds(name, dask_worker):
        return name in dask_worker.plugins

    return remove, holds
