"""Kernels run by worker processes (importable by spawned workers, which find them by name)."""

import glob
import os
import signal
import tempfile
import threading
import time

import numpy as np
from numba import njit, prange


@njit
def collatz_steps(n):
    total = 0
    for start in range(1, n + 1):
        x = start
        while x != 1:
            if x % 2 == 0:
                x //= 2
            else:
                x = 3 * x + 1
            total += 1
    return total


def exact_hits(n):
    """Line -> hits of ``collatz_steps(n)``, counted in Python (its lines, in order)."""
    first = collatz_steps.py_func.__code__.co_firstlineno
    hits = {first + 2: 1, first + 3: n + 1, first + 4: n, first + 5: 0, first + 11: 1}
    for start in range(1, n + 1):
        x = start
        while True:
            hits[first + 5] += 1
            if x == 1:
                break
            x = x // 2 if x % 2 == 0 else 3 * x + 1
    evens = odds = 0
    for start in range(1, n + 1):
        x = start
        while x != 1:
            if x % 2 == 0:
                evens += 1
                x //= 2
            else:
                odds += 1
                x = 3 * x + 1
    hits.update({first + 6: evens + odds, first + 7: evens, first + 9: odds, first + 10: evens + odds})
    return hits


def die_after(n):
    """A task that kills its own worker outright (SIGKILL) after counting."""
    collatz_steps(n)
    os.kill(os.getpid(), signal.SIGKILL)


@njit
def weight(u):
    return 1.0 / (1.0 + u * u)


@njit(parallel=True)
def spread(n):
    out = np.zeros(n)
    for j in prange(n):
        s = 0.0
        for i in range(n):
            s += weight(i - j)
        out[j] = s
    return out.sum()


def both(n):
    """A pool's task: the serial kernel, then the ``prange`` one and its helper."""
    return collatz_steps(n) + int(spread(n))


def worker_state(_):
    """(pid, whether SIGPROF has a handler in this process, whether this module's
    ``collatz_steps`` is its own dispatcher rather than a twin): a joblib task."""
    with open("/proc/self/status") as status:
        caught = next(int(line.split()[1], 16) for line in status if line.startswith("SigCgt:"))
    own = collatz_steps.py_func.__globals__ is globals()
    return os.getpid(), bool(caught >> (signal.SIGPROF - 1) & 1), own


def gather_collatz(n: int, tasks: int) -> list[int]:
    """``collatz_steps(n)`` as ``tasks`` tasks of the Dask client in use (a statement whose
    state can be saved: the client is found, not held)."""
    from distributed import default_client

    client = default_client()
    return client.gather(client.map(collatz_steps, [n] * tasks, pure=False))


def count_then_wait(n, tasks, done):
    """A process's target: ``tasks`` calls of the kernel, then ``done`` set, then it waits to be killed."""
    for _ in range(tasks):
        collatz_steps(n)
    done.set()
    time.sleep(600)


def count_then_spoil_own_part(n, tasks):
    """A process's target: ``tasks`` calls of the kernel, then a thread (which the process waits
    for at exit) that overwrites this process's part with text that is not a part, once written."""
    for _ in range(tasks):
        collatz_steps(n)

    def spoil():
        pattern = os.path.join(tempfile.gettempdir(), "nlprun-parts-*", f"part-{os.getpid()}.json")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for path in glob.glob(pattern):
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write("not a part")
                return
            time.sleep(0.005)

    threading.Thread(target=spoil).start()


def count_then_block_own_part(n, tasks):
    """A process's target: ``tasks`` calls of the kernel, with a folder where this process's
    part would be written first (its ``.tmp``), so writing the part fails as a full disk would."""
    for _ in range(tasks):
        collatz_steps(n)
    for folder in glob.glob(os.path.join(tempfile.gettempdir(), "nlprun-parts-*")):
        os.makedirs(os.path.join(folder, f"part-{os.getpid()}.json.tmp"), exist_ok=True)


def made_inside():
    """A kernel defined inside a function (as a test or a factory makes one): it has no module
    name to be imported by, and Numba pickles it by value."""

    @njit
    def triangle(n):
        total = 0
        for i in range(n):
            total += i
        return total

    return triangle


def count_then_sigterm_as_it_returns(n, tasks, delay):
    """A process's target: ``tasks`` calls of the kernel, then a thread that sends this process
    SIGTERM ``delay`` seconds later, as the run closes its counts: a pool worker that ends its task
    loop just as ``Pool.terminate`` sends SIGTERM."""
    for _ in range(tasks):
        collatz_steps(n)

    def terminate():
        time.sleep(delay)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate, daemon=True).start()
