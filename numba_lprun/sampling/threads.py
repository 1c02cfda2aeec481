"""Notice threads started while the sampler runs.

Why: the sampler arms one timer per thread it lists at start, and threads started
later (a ``ThreadPoolExecutor`` calling a ``nogil`` function, a pool made per
call) would never be sampled. A watcher thread lists ``/proc/self/task`` again
every millisecond and hands each new thread id to a callback (which arms its
timer), so every thread that runs for longer than that is sampled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from . import _native as N

WATCH_PERIOD = 0.001  # seconds between two looks


class NewThreads:
    """Calls ``found(tids)`` with threads not in ``known()`` until ``stop``."""

    def __init__(self, known: Callable[[], list[int]], found: Callable[[list[int]], None]):
        self._known, self._found = known, found
        self._running = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._running.set()
        self._thread = threading.Thread(target=self._watch, name="numba_lprun-threads", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while self._running.is_set():
            known = set(self._known())
            new = [tid for tid in N.list_threads() if tid not in known]
            if new:
                self._found(new)
            time.sleep(WATCH_PERIOD)

    def stop(self) -> None:
        """Stop looking; returns once the watcher will call ``found`` no more."""
        self._running.clear()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()
