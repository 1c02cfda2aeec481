"""Notice threads started, or woken, while the sampler runs.

Why: the sampler arms one timer per thread it lists at start, and threads started
later (a ``ThreadPoolExecutor`` calling a ``nogil`` function, a pool made per
call) would never be sampled. A watcher thread lists ``/proc/self/task`` again
every ``WATCH_PERIOD`` and hands each new thread id to a callback (which arms its
timer), so every thread that runs for longer than that is sampled. Each look
also calls ``tick`` (the sampler wakes the idle threads it left unarmed that
have used CPU since: see ``Sampler``). The watcher's own thread is never handed
over: it only sleeps and looks.

Why not more often: the watcher is a Python thread, so each look needs the GIL,
which jitted code called from Python holds. It gets it when that code runs Python
(an ``objmode`` block), and the hand-over costs the profiled thread CPU time in
system calls, charged to that line: looking every millisecond made an ``objmode``
block look 2-5 points heavier than it was at 10 kHz; every 20 ms, about half a point.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from . import _native as N

WATCH_PERIOD = 0.02  # seconds between two looks


class NewThreads:
    """Calls ``found(tids)`` with threads not in ``known()`` until ``stop``."""

    def __init__(
        self,
        known: Callable[[], list[int]],
        found: Callable[[list[int]], None],
        tick: Callable[[], None] | None = None,
    ):
        self._known, self._found, self._tick = known, found, tick
        self._running = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stopping.clear()
        self._running.set()
        self._thread = threading.Thread(target=self._watch, name="numba_lprun-threads", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        me = threading.get_native_id()
        while self._running.is_set():
            known = set(self._known())
            new = [tid for tid in N.list_threads() if tid not in known and tid != me]
            if new:
                self._found(new)
            if self._tick is not None:
                self._tick()
            self._stopping.wait(WATCH_PERIOD)  # returns at once when stop() is called

    def stop(self) -> None:
        """Stop looking; returns once the watcher will call ``found`` no more."""
        self._running.clear()
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()
