"""Minor page faults of this process: why a call's first run can be slower than the runs after it.

A kernel that allocates large arrays gets fresh pages from the operating system on
its first call in a process: each page faults once and is zeroed. Later calls reuse
the memory the allocator kept (glibc raises its mmap threshold once a large block is
freed), so they fault far less. The user's run comes first and the plain runs after
it, so comparing their times alone charges that first touch to the counters (a
stencil writing 20 arrays of 8 MB read 1.77x in a fresh process, about 1.0x warm).
Counting the faults of each run lets the overhead note say so instead of blaming the
counters.
"""

from __future__ import annotations

try:
    import resource
except ImportError:  # Windows: no getrusage
    resource = None  # type: ignore[assignment]

#: Bytes per page, for the note (4 KiB where unknown).
PAGE_BYTES = resource.getpagesize() if resource is not None else 4096
#: Page faults (1 MiB of 4 KiB pages) beyond the others' under which a run's first touch of
#: fresh memory is not worth saying, nor a reason to leave a plain run out of the figure.
FRESH_PAGES = 256


def minor_faults() -> int:
    """Minor page faults of this process so far (every thread's); -1 where unknown."""
    if resource is None:
        return -1
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def faults_since(start: int) -> int:
    """Faults since ``start`` (from :func:`minor_faults`); -1 where unknown."""
    return -1 if start < 0 else minor_faults() - start
