"""A Ray worker's side of a profile: begun by Ray's worker setup hook, ended when the run asks.

Ray starts its workers itself (its raylet), so there is no process start to wrap; the run
adds a setup hook to the job's runtime environment (``ray_workers``), which Ray runs in each
worker of the job as the worker starts. The hook reads the run's folder from the worker's
environment (``FOLDER_VARIABLE``), profiles the functions as any worker that outlives the
run does (``kept_worker``), and a thread waits for the run's end (``FINISH`` in the folder)
or the worker's exit, whichever comes first: then the part is written (``part-<pid>.json``)
and everything put back. A worker started after the run ended, or whose folder is not on
its host, runs as itself.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import threading

from .. import settings
from .child import PART_PREFIX, STARTED
from .kept_worker import KeptWorker

#: The worker's environment variable that names the run's folder (set in the job's runtime environment).
FOLDER_VARIABLE = settings.RAY_FOLDER
SPEC = "spec.pickle"  # the run's ``ChildSpec``, in the folder
FINISH = "finish"  # written by the run when it ends: every worker writes its part then
UNREACHED = "unreached-"  # unreached-<pid>: a worker where the hook could not profile (why, inside)
POLL_S = 0.1


def begin() -> None:
    """Ray's setup hook, in a worker of the profiled job: profile until the run's end."""
    folder = settings.text(FOLDER_VARIABLE)
    if not folder or not os.path.isdir(folder) or os.path.exists(os.path.join(folder, FINISH)):
        return  # a worker of the job started after the run, or on a host the folder is not on
    started = os.path.join(folder, f"{STARTED}{os.getpid()}")
    try:
        with open(os.path.join(folder, SPEC), "rb") as handle:
            spec = pickle.load(handle)
        worker = KeptWorker(spec, label=f"ray worker (pid {os.getpid()})")
        with open(started, "w"):
            pass
        worker.begin(within=folder)  # the run removes its folder, even if Ray kills this worker
    except Exception as exc:  # never break the user's worker: the run says why it was not reached
        _unreached(folder, f"{type(exc).__name__}: {exc}")
        with contextlib.suppress(OSError):
            os.remove(started)
        return
    done = threading.Lock()

    def end() -> None:
        if not done.acquire(blocking=False):
            return
        part = worker.finish()
        if part is None:  # no function of the run found here: nothing counted, and why, if known
            if worker.refused:
                _unreached(folder, "; ".join(sorted(set(worker.refused.values()))))
            with contextlib.suppress(OSError):
                os.remove(started)
            return
        path = os.path.join(folder, f"{PART_PREFIX}{os.getpid()}.json")
        with contextlib.suppress(OSError):
            with open(path + ".tmp", "w", encoding="utf-8") as handle:
                handle.write(part)
            os.replace(path + ".tmp", path)

    def wait() -> None:
        finish = os.path.join(folder, FINISH)
        while os.path.isdir(folder) and not os.path.exists(finish):
            threading.Event().wait(POLL_S)
        end()

    atexit.register(end)  # a worker the program's ray.shutdown() ends first
    threading.Thread(target=wait, name="numba_lprun-ray", daemon=True).start()


def _unreached(folder: str, why: str) -> None:
    """Tell the run why this worker's calls are not counted."""
    path = os.path.join(folder, f"{UNREACHED}{os.getpid()}")
    with contextlib.suppress(OSError), open(path, "w") as out:
        out.write(why)
