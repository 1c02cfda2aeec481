"""Ray's workers reached through Ray itself: a setup hook in the job's runtime environment.

Why a hook: Ray's workers are started by its raylet, not by ``multiprocessing``, so no
process start is there to wrap (``launch``). Ray runs a job's ``worker_process_setup_hook``
in every worker it starts for the job, on a local cluster (``ray.init()``) and on one joined
(``ray.init(address="auto")``) alike. So while the run lasts, ``ray.init`` adds that hook to
the runtime environment the program asks for, with the run's folder in the workers'
environment; each worker profiles the functions until the run ends (``ray_worker``) and
writes its part in the folder. The run ends them all (``finish``): when it is over, or when
the program calls ``ray.shutdown()`` first (its workers are stopped then).

The hook travels by value: a worker where numba_lprun cannot be imported runs as itself and
leaves a line in the folder, so the run names it. The folder is on this host: workers on
other hosts find no folder and run as themselves, and the run says their work is not
counted. Ray started before the profile (an earlier cell) has workers no hook reaches:
said, never "not called". ``ray.init`` and ``ray.shutdown`` are put back when the run ends.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .. import settings
from .child import PART_PREFIX, STARTED
from .ray_worker import FINISH, FOLDER_VARIABLE, SPEC, UNREACHED
from .spec import ChildSpec

#: Seconds the workers are given to write their parts once the run ends.
FINISH_WAIT = 15.0
HOOK = "worker_process_setup_hook"
#: The hook, as Ray names one by its module (a worker of a cluster the run starts has numba_lprun)
HOOK_FUNCTION = "numba_lprun.processes.ray_worker.begin"
NOT_COUNTED = "its work is not counted"

_HOOK_SOURCE = f'''
def numba_lprun_ray_hook():
    try:
        from numba_lprun.processes.ray_worker import begin
    except Exception as exc:
        import os
        folder = os.environ.get("{FOLDER_VARIABLE}", "")
        if folder and os.path.isdir(folder):
            with open(os.path.join(folder, "{UNREACHED}%d" % os.getpid()), "w") as out:
                out.write("numba_lprun cannot be imported there (%s: %s)" % (type(exc).__name__, exc))
        return
    begin()
'''


def hook_by_value() -> Callable[[], None]:
    """The setup hook, made in a module that does not exist: Ray pickles it by value, so a worker
    without numba_lprun installed unpickles it, and only its import of numba_lprun fails."""
    namespace: dict = {"__name__": "numba_lprun_ray_hook"}
    exec(compile(_HOOK_SOURCE, "<numba_lprun ray hook>", "exec"), namespace)
    return namespace["numba_lprun_ray_hook"]


@dataclass
class RayWorkers:
    """The run's reach into Ray: ``ray.init`` and ``ray.shutdown`` while it lasts, and the parts."""

    spec: Callable[[], ChildSpec]  # the functions as of now (a script defines them before ray.init)
    folder: str | None = None
    texts: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    _put_back: list[tuple[object, str, object]] = field(default_factory=list)
    _ray: object | None = None

    def attach(self, ray: object) -> None:
        """Reach the workers of every job ``ray.init`` starts from now (Ray already started: said)."""
        is_initialized = getattr(ray, "is_initialized", None)
        if is_initialized is not None and is_initialized():
            self.missing.append(
                "Ray was started before this profile: its workers cannot be reached, so calls of the "
                "profiled functions made in its tasks and actors are not counted (start Ray, "
                "ray.init(), inside the profiled code)"
            )
            return
        self._ray = ray
        for name, wrap in (("init", self._init), ("shutdown", self._shutdown)):
            original = getattr(ray, name, None)
            if callable(original):
                self._put_back.append((ray, name, original))
                setattr(ray, name, functools.wraps(original)(wrap(original)))

    def detach(self) -> None:
        """``ray.init`` and ``ray.shutdown`` as they were."""
        for owner, name, original in reversed(self._put_back):
            setattr(owner, name, original)
        self._put_back.clear()

    def _init(self, original: Callable) -> Callable:
        def init(*args, **kwargs):
            runtime_env = kwargs.get("runtime_env")
            if runtime_env is not None and runtime_env.get(HOOK) is not None:
                self.missing.append(
                    "the program's ray.init sets a worker_process_setup_hook of its own: Ray's workers "
                    "were not profiled, so calls made in its tasks and actors are not counted"
                )
                return original(*args, **kwargs)
            starts = not runtime_env and _starts_a_cluster(args, kwargs)
            inherited = _inherited_hook_variable() if starts else None
            if inherited is None and not runtime_env and not _safe_for_runtime_env():
                self.missing.append(
                    "Ray's workers were not profiled: Ray starts a worker with a runtime environment "
                    "through a shell command that breaks on a space in Python's path "
                    f"({sys.executable!r}), so calls made in its tasks and actors are not counted"
                )
                return original(*args, **kwargs)
            folder = self.folder = self.folder or tempfile.mkdtemp(prefix="nlprun-ray-")
            with open(os.path.join(folder, SPEC), "wb") as handle:
                # a Ray worker's threads at its start are Ray's, but for the one that runs tasks
                pickle.dump(replace(self.spec(), existing_threads="main"), handle)
            if inherited is not None:
                # a cluster this call starts: its raylet, started now, hands its environment to
                # every worker, so the hook goes there and the program's call is left as it was
                with settings.exported({inherited: HOOK_FUNCTION, FOLDER_VARIABLE: folder}):
                    return original(*args, **kwargs)
            env = dict(runtime_env or {})
            env[HOOK] = hook_by_value()
            env["env_vars"] = {**(env.get("env_vars") or {}), FOLDER_VARIABLE: folder}
            return original(*args, **{**kwargs, "runtime_env": env})

        return init

    def _shutdown(self, original: Callable) -> Callable:
        def shutdown(*args, **kwargs):
            self.finish()  # its workers stop now: their parts first
            return original(*args, **kwargs)

        return shutdown

    def finish(self) -> None:
        """End the profile in every worker reached; their parts join ``texts``, and a sentence for
        each that sent none joins ``missing``."""
        folder, self.folder = self.folder, None
        if folder is None:
            return
        with contextlib.suppress(OSError), open(os.path.join(folder, FINISH), "w"):
            pass
        elsewhere = _other_hosts(self._ray)
        if elsewhere:
            self.missing.append(
                f"Ray's workers on other hosts ({', '.join(elsewhere)}) cannot send their counts to this "
                f"one: calls made there are not counted"
            )
        deadline = time.monotonic() + FINISH_WAIT
        while time.monotonic() < deadline and _waiting_for(folder):
            time.sleep(0.02)
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.startswith(PART_PREFIX) and name.endswith(".json"):
                with contextlib.suppress(OSError), open(path, encoding="utf-8") as handle:
                    self.texts.append(handle.read())
            elif name.startswith(UNREACHED):
                with contextlib.suppress(OSError), open(path, encoding="utf-8") as handle:
                    why = handle.read().strip()
                pid = name[len(UNREACHED) :]
                self.missing.append(f"a Ray worker (pid {pid}) was not profiled ({why}): {NOT_COUNTED}")
        for pid in sorted(_waiting_for(folder)):
            self.missing.append(
                f"a Ray worker (pid {pid}) sent no counts (it ended, or did not answer in "
                f"{FINISH_WAIT:.0f} s): {NOT_COUNTED}"
            )
        shutil.rmtree(folder, ignore_errors=True)


def _starts_a_cluster(args: tuple, kwargs: dict) -> bool:
    """Whether ``ray.init(*args, **kwargs)`` starts a cluster of its own on this machine (no address
    given, here or in ``RAY_ADDRESS``), rather than joining one."""
    address = args[0] if args else kwargs.get("address")
    return address in (None, "local") and not settings.text("RAY_ADDRESS")


def _inherited_hook_variable() -> str | None:
    """The variable a Ray worker reads its setup hook from (Ray's own name for it), if this Ray has one."""
    try:
        from ray._private import ray_constants
    except ImportError:
        return None
    name = getattr(ray_constants, "WORKER_PROCESS_SETUP_HOOK_ENV_VAR", None)
    return name if isinstance(name, str) and name else None


def _safe_for_runtime_env() -> bool:
    """Whether a runtime environment leaves Ray's workers able to start: Ray starts such a worker
    through a shell command that does not quote Python's path (a space in it, and no worker starts)."""
    return not any(c.isspace() or c in "'\"$`\\" for c in sys.executable)


def _waiting_for(folder: str) -> set[str]:
    """Pids of the workers that began and have not written their part yet."""
    try:
        names = set(os.listdir(folder))
    except OSError:
        return set()
    began = {n[len(STARTED) :] for n in names if n.startswith(STARTED)}
    return {pid for pid in began if f"{PART_PREFIX}{pid}.json" not in names}


def _other_hosts(ray: object) -> list[str]:
    """The addresses of the cluster's live nodes other than the one this process is attached to
    (where the run's folder is not); none where Ray cannot say."""
    try:
        here = ray.get_runtime_context().get_node_id()
        nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("NodeID") != here]
        return sorted({str(n.get("NodeManagerAddress")) for n in nodes})
    except Exception:
        return []
