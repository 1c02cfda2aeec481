"""The target a ``multiprocessing`` process runs: swapped while ``start`` runs (``processes``).

Not Numba's, but private all the same (``BaseProcess._target``, set by
``__init__`` and read by ``run``): every launcher that starts workers through
``multiprocessing`` (pools, ``concurrent.futures``, loky, Dask's nanny) keeps
what the worker will run there, so it is the one place to hand a worker a
profiled target. Declared here like the Numba internals, so a Python release
that renames it fails the registry test, not a user's run.
"""

from __future__ import annotations

from .registry import touches

_WHY = "processes/launch.py: a started process runs a profiled target (processes.child.ChildTarget)"


@touches("multiprocessing.process", "BaseProcess", _WHY, instance_attribute="_target", package="python")
def process_target(process: object) -> object:
    """What ``process.run()`` will call (None: nothing, or a subclass's own ``run``)."""
    return getattr(process, "_target", None)


@touches("multiprocessing.process", "BaseProcess", _WHY, instance_attribute="_target", package="python")
def set_process_target(process: object, target: object) -> None:
    process._target = target
