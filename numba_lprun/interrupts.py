"""Ctrl-C held back while work that must not stop half way finishes.

A KeyboardInterrupt can arrive between any two bytecodes. Swapping the user's
bindings, and arming or disarming the sampler (timers, a signal handler, a buffer
the handler writes into, the one sampler slot), must each complete or be undone,
so they run with SIGINT held and the interrupt is raised once they are done.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def ctrl_c_deferred() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) that arrives inside the block until the block is done.

    Swapping and restoring bindings must not stop half way, or the user's
    namespace would keep a twin. Only the main thread can handle signals; elsewhere
    (or if the handler cannot be set) the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held and callable(previous):
            previous(signal.SIGINT, None)
        elif held and previous == signal.SIG_DFL:
            raise KeyboardInterrupt
