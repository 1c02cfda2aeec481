"""Probe-free line sampling of Numba-compiled code.

Instrumenting lines changes what LLVM may do with a loop; sampling does not. The
function runs as built with line tables only (``debug=True`` plus the two options
that ``debug=True`` would otherwise switch on), a native SIGPROF handler records where
each thread is at a fixed rate, and afterwards the DWARF line tables of the code
Numba generated turn addresses into source lines.

API::

    with Sampler(rate_hz=1000.0, depth=16, max_samples=1_000_000, numba_threads=False) as s:
        result = dispatcher(*args)
    s.unavailable            # None, or why nothing was sampled (never raises on start)
    raw = s.samples          # RawSamples: addresses (n, depth) uint64, threads, tids,
                             # dropped, overruns, elapsed, achieved_hz, per_thread
    lmap = line_map(dispatcher, filename, first_line, last_line)   # LineMap
    lines = attribute(raw, {key: lmap, ...})                       # SampledLines
    lines.lines[key]         # {line: samples}; lines.threads[key] {tid: samples}
    lines.seconds[key]       # {line: CPU seconds}: samples weighed by their thread's CPU time
    lines.outside, lines.total, lines.outside_seconds, lines.total_seconds

How to compile what is sampled: give the twin the original's target options plus
``debug=True, boundscheck=<original's, False if unset>, _dbg_extend_lifetimes=False``
(``debug=True`` alone turns bounds checking and lifetime extension on, which slows
the code). Compile every signature *before* entering the sampler, and pass
``numba_threads=True`` for ``parallel=True`` functions, so that Numba's worker threads
exist (and get a timer) when sampling starts.

Semantics: timers run on CLOCK_MONOTONIC (wall time) for every thread in
``/proc/self/task`` at start and every thread started while sampling (``threads``),
so idle threads are sampled too and their samples
count as ``outside``; each sample also carries the CPU time its thread used since
its previous sample, so ``seconds`` follows the work even on a loaded machine (prefer
it for shares). A sample counts, for each profiled function, at the innermost frame
inside that function, so a line's count includes its callees (libm, Numba's
runtime, helpers that are not profiled, other profiled functions). Threads started
after the sampler (including a Numba pool launched late) are not sampled.

Callees without unwind tables: LLVM gives none to a jitted function it proved
``nounwind`` (a helper compiled without debug info that is a leaf loop or only calls
libm), and the native stack walk stops inside it. For such samples the handler also
copies a few words above the stack pointer, and the sampler takes the first one
that points into code (above the last frame walked) for the missing return address
(``RawSamples.recovered``): the calling line gets the sample. Only that one caller
is recovered, so a profiled function above another profiled function that calls
such a helper does not get those samples (the inner one does).

Known approximation: parfor gufuncs (``prange`` bodies) are compiled from generated
source whose scaffolding (thread id, loop header, reduction set-up) has line numbers
1 to about 10; when the profiled function itself starts that near the top of its file
(a notebook cell), those rows cannot be told from the function's own lines, so the
loop-control part of a ``prange`` loop may be charged to a neighbouring line.

Set ``NUMBA_LPRUN_NO_SAMPLER=1`` to make every sampler unavailable (for tests and as
an escape hatch). Only Linux x86-64 with glibc is supported; ``_native`` documents
what other platforms would need.

Safety: the handler calls no Python and allocates nothing itself; the stack words it
copies are its own thread's stack, mapped (``_handler`` says why). glibc's
``backtrace`` is warmed up at start, which loads libgcc_s and sorts libgcc's tables of
the JIT code registered so far; it still takes libgcc's unwinder lock. The handler
skips unwinding when the interrupted instruction is inside libgcc itself, but a
thread interrupted while it registers new JIT code (a Numba compile) or throws a C++
exception could deadlock on that lock, and code registered after the warm-up makes
the unwinder allocate: hence, compile nothing inside the sampled block.
"""

from __future__ import annotations

from .attribution import SampledLines, attribute
from .dwarf import FunctionCode, LineMap, line_map
from .sampler import DISABLE_ENV, RawSamples, Sampler

__all__ = [
    "DISABLE_ENV",
    "FunctionCode",
    "LineMap",
    "RawSamples",
    "SampledLines",
    "Sampler",
    "attribute",
    "line_map",
]
