"""A kernel module whose import takes seconds on a worker (as one that builds tables when it is
imported): a Dask worker imports it while the profile's plugin is being set up. It marks the
import under way with a file in the worker's temporary directory."""

import os
import tempfile
import time

from numba import njit

if os.environ.get("NLP_DASK_WORKER"):
    marker = os.path.join(tempfile.gettempdir(), f"importing-slow-{os.getpid()}")
    with open(marker, "w"):
        pass
    time.sleep(4)
    os.remove(marker)


@njit
def slow_work(n):
    s = 0
    for i in range(n):
        s += i
    return s
