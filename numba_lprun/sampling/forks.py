"""Keep a fork from copying a stack walk in progress, and the parent's sampler with it.

Why: ``os.fork`` copies only the forking thread, with every lock as it was at that
moment. A SIGPROF handler running on another thread may hold libgcc's unwinder lock
(GCC 12 searches the JIT-registered modules under one lock): the child's copy of it
never opens, and the child's first stack walk (the sampler of a pool worker) waits for
ever. So before a fork the armed sampler stops recording and waits until no handler
runs; after it the parent's timers are armed again (a handler that found recording off
did not re-arm its timer), and the child forgets the parent's sampler: POSIX timers are
not inherited, so nothing samples the child until it starts a sampler of its own.
"""

from __future__ import annotations

import os
from typing import Protocol


class Forkable(Protocol):
    def hold_for_fork(self) -> None: ...
    def resume_after_fork(self) -> None: ...
    def forked_away(self) -> None: ...


_armed: list[Forkable] = []  # the armed sampler (one at a time), process-wide as a fork is
_hooked: list[bool] = []


def watch(sampler: Forkable) -> None:
    """Hold ``sampler`` over every fork until :func:`unwatch`."""
    if not _hooked:
        os.register_at_fork(before=_before, after_in_parent=_after_in_parent, after_in_child=_after_in_child)
        _hooked.append(True)
    _armed.append(sampler)


def unwatch(sampler: Forkable) -> None:
    if sampler in _armed:
        _armed.remove(sampler)


def _before() -> None:
    for sampler in _armed:
        sampler.hold_for_fork()


def _after_in_parent() -> None:
    for sampler in _armed:
        sampler.resume_after_fork()


def _after_in_child() -> None:
    for sampler in _armed:
        sampler.forked_away()
    _armed.clear()
