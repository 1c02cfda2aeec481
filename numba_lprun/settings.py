"""Every environment variable numba_lprun reads, named once, read with one rule.

Why one place: the variables were read in seven modules, each with its own idea of "off"
(``NUMBA_LPRUN_CACHE=`` turned the sampler's handler cache off and the twins' cache on;
``NUMBA_LPRUN_NO_SAMPLER=false`` turned sampling off). Here a switch is on or off by one rule
(:func:`switch`): unset or empty means its default, ``0``/``no``/``off``/``false`` (any case)
mean off, anything else on. Each value is read when asked for, never cached: tests and long
sessions change the environment. ``tests/test_architecture.py`` checks that no other module
reads the environment.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

CACHE = "NUMBA_LPRUN_CACHE"  # switch: the twins' and the sampler handler's disk caches (on)
CACHE_DIR = "NUMBA_LPRUN_CACHE_DIR"  # path: where the caches live (the platform's cache folder)
CLOCK = "NUMBA_LPRUN_CLOCK"  # "tsc" or "monotonic": the probes' clock (the TSC where it is invariant)
NO_SAMPLER = "NUMBA_LPRUN_NO_SAMPLER"  # switch: no sampler at all (off)
OWN_WALK = "NUMBA_LPRUN_OWN_WALK"  # switch: the handler walks the twins' stacks itself (on)
WALK_BUDGET = "NUMBA_LPRUN_WALK_BUDGET"  # number: CPU share for the sampler's signals and walks (0.05)
# switch: an array a recorded call only reads or only writes is not copied for its replays (on)
UNSAVED = "NUMBA_LPRUN_UNSAVED"
RANK_WAIT = "NUMBA_LPRUN_RANK_WAIT"  # number: seconds rank 0 waits for the other ranks' parts (120)
# path: set by a profile in the Ray workers it reaches (their runtime environment): the run's folder
RAY_FOLDER = "NUMBA_LPRUN_RAY_FOLDER"

#: The variables MPI launchers set in each rank: (rank, size, job id where one is set), by launcher.
_RANK_VARIABLES = (
    ("MPICH", "PMI_RANK", "PMI_SIZE", ""),  # Hydra (MPICH, Intel MPI, the mpich wheel)
    ("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid"),
    ("Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID"),
)

_OFF = frozenset({"0", "no", "off", "false"})


def text(name: str) -> str:
    """The variable's value, stripped ("" when unset)."""
    return os.environ.get(name, "").strip()


def switch(name: str, default: bool) -> bool:
    """A switch: ``default`` when unset or empty, off for ``0``/``no``/``off``/``false``, else on."""
    value = text(name).lower()
    if not value:
        return default
    return value not in _OFF


def number(name: str, default: float) -> float:
    """A number: ``default`` when unset or empty; a value that is no number is an error that names it."""
    value = text(name)
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {value!r}") from None


def mpi_rank() -> tuple[int, int, str, str] | None:
    """(rank, size, launcher, job id or "") where an MPI launcher started this process, else None."""
    for launcher, rank, size, job in _RANK_VARIABLES:
        if text(rank).isdigit() and text(size).isdigit():
            step = text("SLURM_STEP_ID") if launcher == "Slurm" else ""
            return int(text(rank)), int(text(size)), launcher, ".".join(p for p in (text(job), step) if p)
    return None


def rank_wait() -> float:
    """Seconds rank 0 waits for the other ranks' profiles (and a rank's send for rank 0)."""
    return max(0.0, number(RANK_WAIT, 120.0))


def platform_folder(name: str) -> str:
    """A folder the platform names in the environment (``XDG_CACHE_HOME``, ``LOCALAPPDATA``), or ""."""
    return text(name)


@contextlib.contextmanager
def exported(variables: dict[str, str]) -> Iterator[None]:
    """``variables`` set in this process's environment while the block runs (the processes it starts
    meanwhile inherit them: a local Ray cluster's raylet, and so its workers), then put back."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def terminal_columns() -> int | None:
    """The width ``COLUMNS`` says the terminal has (None when unset or no positive number)."""
    columns = text("COLUMNS")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None
