"""MPI jobs: every rank profiles its own run, and rank 0 shows one profile of the whole job.

``mpiexec -n 3 nlprun -f step sim.py`` starts three profilers, one per rank, each with
its own calls of ``step``. Each rank counts and samples its own run as any process does;
at the end, every rank but 0 sends its frozen profile to rank 0 (as a pool's worker
sends its part) and prints nothing, and rank 0 merges the parts (``merge``: exact sums,
a ``Ranks`` row, the imbalance between ranks by line) and prints the one table and writes
the one ``-D``/``--html`` file.

Which rank a process is comes from the launcher's environment (MPICH/Hydra and Intel
MPI's ``PMI_RANK``/``PMI_SIZE``, Open MPI's ``OMPI_COMM_WORLD_RANK``/``..._SIZE``,
Slurm's ``SLURM_PROCID``/``SLURM_NTASKS``), read in ``settings``. The parts travel by
mpi4py's point-to-point messages where the program initialized MPI (any hosts); else by
files in a folder on this host that every rank names alike (the launcher's job step, or
the ranks' common parent process). Nothing waits forever: rank 0 waits for the parts up
to ``settings.RANK_WAIT`` seconds (120 by default) and names the ranks that sent none; a
rank's send gives up after the same time. No MPI call is made that the program did not
make possible itself (mpi4py is never imported here: only used when the program did).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass

from .. import settings
from ..stats import ProcessPart, ProfileStats

_TAG = 0x6E6C70  # "nlp": the tag of a part's message, apart from any the program uses
_POLL = 0.02


@dataclass(frozen=True)
class JobRank:
    """This process's place in an MPI job: its rank, the job's size, and who launched it."""

    rank: int
    size: int
    launcher: str  # "MPICH", "Open MPI", "Slurm"
    job: str  # what names the job alike in every rank on a host (for the file route)


def job_rank() -> JobRank | None:
    """This process's rank in an MPI job of two ranks or more (None: not in one)."""
    found = settings.mpi_rank()
    if found is None:
        return None
    rank, size, launcher, job = found
    if size < 2 or not 0 <= rank < size:
        return None
    return JobRank(rank, size, launcher, job or f"ppid{os.getppid()}")


def gather_parts(profile: ProfileStats, job: JobRank) -> tuple[list[ProcessPart], list[str]] | None:
    """Rank 0: the other ranks' profiles (as parts labelled ``rank N``) and a sentence for each
    rank that sent none; any other rank: sends its own profile and returns None."""
    wait = settings.rank_wait()
    comm = _world()
    if job.rank != 0:
        message = json.dumps({"rank": job.rank, "pid": os.getpid(), "profile": profile.to_json()})
        if comm is not None:
            _send_by_mpi(comm, message, wait)
        else:
            _send_by_file(job, message)
        return None
    received = _receive_by_mpi(comm, job, wait) if comm is not None else _receive_by_file(job, wait)
    parts, missing = [], []
    for rank in range(1, job.size):
        message = received.get(rank)
        if message is None:
            missing.append(
                f"rank {rank} of {job.size} sent no profile within {wait:g} s of rank 0's end (it ended "
                "early, was killed, or is still running): its calls are not counted"
            )
            continue
        data = json.loads(message)
        parts.append(ProcessPart(f"rank {rank}", data["pid"], ProfileStats.from_json(data["profile"])))
    return parts, missing


def _world():
    """mpi4py's ``COMM_WORLD`` where the program imported mpi4py and MPI is running, else None."""
    module = sys.modules.get("mpi4py.MPI")
    if module is None:
        return None
    try:
        if module.Is_initialized() and not module.Is_finalized():
            return module.COMM_WORLD
    except Exception:  # an MPI that cannot say: the file route
        return None
    return None


def _send_by_mpi(comm, message: str, wait: float) -> None:
    request = comm.isend(message, dest=0, tag=_TAG)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        done, _ = request.test()
        if done:
            return
        time.sleep(_POLL)
    with contextlib.suppress(Exception):  # rank 0 is gone: the job's end is the launcher's
        request.Cancel()


def _receive_by_mpi(comm, job: JobRank, wait: float) -> dict[int, str]:
    from mpi4py import MPI  # imported by the program already (see _world)

    received: dict[int, str] = {}
    deadline = time.monotonic() + wait
    status = MPI.Status()
    while len(received) < job.size - 1 and time.monotonic() < deadline:
        if comm.iprobe(source=MPI.ANY_SOURCE, tag=_TAG, status=status):
            source = status.Get_source()
            received[source] = comm.recv(source=source, tag=_TAG)
        else:
            time.sleep(_POLL)
    return received


def _folder(job: JobRank) -> str:
    return os.path.join(tempfile.gettempdir(), f"numba-lprun-ranks-{job.job}-{job.size}")


def _send_by_file(job: JobRank, message: str) -> None:
    folder = _folder(job)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"rank-{job.rank}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(message)
    os.replace(path + ".tmp", path)  # rank 0 never reads half a part


def _receive_by_file(job: JobRank, wait: float) -> dict[int, str]:
    folder = _folder(job)
    received: dict[int, str] = {}
    deadline = time.monotonic() + wait
    try:
        while len(received) < job.size - 1 and time.monotonic() < deadline:
            for rank in range(1, job.size):
                path = os.path.join(folder, f"rank-{rank}.json")
                if rank not in received and os.path.exists(path):
                    with open(path, encoding="utf-8") as handle:
                        received[rank] = handle.read()
            if len(received) < job.size - 1:
                time.sleep(_POLL)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return received
