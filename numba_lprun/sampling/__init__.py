"""Probe-free line sampling of Numba-compiled code.

Instrumenting lines changes what LLVM may do with a loop; sampling does not. The
function runs as built with line tables only (``debug=True`` plus the two options
that ``debug=True`` would otherwise switch on), a native SIGPROF handler records where
each thread is at the asked rate (faster for a start boost in a run that is the only one,
lowered where stack walks grow dear: both said in the header), and afterwards the DWARF
line tables of the code Numba generated turn addresses into source lines.

API::

    with Sampler(rate_hz=1000.0, depth=64, max_samples=1_000_000, numba_threads=False) as s:
        result = dispatcher(*args)
    s.unavailable            # None, or why nothing was sampled (never raises on start)
    raw = s.samples          # RawSamples: addresses (n, depth) uint64, threads, tids,
                             # dropped, overruns, elapsed, achieved_hz, per_thread
    lmap = line_map(dispatcher, filename, first_line, last_line)   # LineMap
    lines = attribute(raw, {key: lmap, ...})                       # SampledLines
    lines.functions[key]     # LineSamples, the per-line record the profile keeps: counts
                             # {line: samples}, seconds {line: CPU seconds: samples weighed by
                             # their thread's CPU time}, addresses {address: samples}, threads
    lines.outside, lines.total, lines.outside_seconds, lines.total_seconds
    lines.stopped            # {cause: samples} whose walk stopped before any profiled frame
    lines.stopped_seconds, lines.inside   # two segments add up with run.measurements.fold

How to compile what is sampled: give the twin the original's target options plus
``debug=True, boundscheck=<original's, False if unset>, _dbg_extend_lifetimes=False``
(``debug=True`` alone turns bounds checking and lifetime extension on, which slows
the code), and the pipeline of ``instrument.twins`` (line tables only, unwind tables
on everything the twin runs). Compile every signature *before* entering the sampler,
and pass ``numba_threads=True`` for ``parallel=True`` functions, so that Numba's worker threads
are armed at once although they sleep when sampling starts (the sampler never launches
them: a process that forks after they were launched cannot run ``prange`` in its children).

Semantics: timers run on CLOCK_MONOTONIC (wall time) for every thread in
``/proc/self/task`` at start and every thread started while sampling (``sampler.NewThreads``),
so idle threads are sampled too and their samples count as ``outside``; each sample
also carries the CPU time its thread used since its previous sample (not counting the
handler itself; nothing when the signal found the thread blocked in a system call),
so ``seconds`` follows the work even on a loaded machine (prefer it for shares). A
sample counts, for each profiled function, at the innermost frame
inside that function, so a line's count includes its callees (libm, Numba's
runtime, helpers that are not profiled, other profiled functions). Threads started
while sampling get a timer within ``threads.WATCH_PERIOD`` (20 ms).

Callees without unwind tables: LLVM gives none to a jitted function it proved
``nounwind`` unless asked, and the native stack walk stops inside such code. Twins
are compiled so that every function they run has unwind tables, their callees'
copies included (``instrument.unwind``). A walk that still stops early (foreign code
without unwind tables, jitted code reached through a pointer) is not guessed at: its
sample is counted by cause in ``SampledLines.stopped``, apart from ``outside``
(``attribution.classify`` says how the cause is found). A walk cut at ``depth`` frames without
reaching a profiled one counts as ``outside`` and in ``truncated``.

Known approximation: parfor gufuncs (``prange`` bodies) are compiled from generated
source whose scaffolding (thread id, loop header, reduction set-up) has line numbers
1 to about 10; when the profiled function itself starts that near the top of its file
(a notebook cell), those rows cannot be told from the function's own lines, so the
loop-control part of a ``prange`` loop may be charged to a neighbouring line.

Set ``NUMBA_LPRUN_NO_SAMPLER=1`` to make every sampler unavailable (for tests and as
an escape hatch). Only Linux x86-64 with glibc is supported; ``_native`` documents
what other platforms would need.

Own walks: a sampler given ``own_code`` (the twins' dispatchers) walks the stacks it
interrupts in that code itself, with unwind rules read once from the code's
``.eh_frame`` and from the libraries jitted code calls (``unwind_tables``, ``_handler``),
and stops where Python calls in; libgcc walks the others. libgcc (GCC 12 and older)
searches every module the process compiled on every frame, so its walk grows dear in
a long session (23-36 us a sample after 1,200 compiles); the own walk costs well under
a microsecond whatever was compiled, and a sampler with own code does not lower its
rate for libgcc's cost. ``verify_walks=True`` walks every stack both ways and counts
the walks that differ (``RawSamples.walk_mismatches``; the tests).

Safety: the handler calls no Python and allocates nothing itself. glibc's
``backtrace`` is warmed up at start, which loads libgcc_s and sorts libgcc's tables of
the JIT code registered so far; it still takes libgcc's unwinder lock. The handler
skips unwinding when the interrupted instruction is inside libgcc itself, but a
thread interrupted while it registers new JIT code (a Numba compile) or throws a C++
exception could deadlock on that lock, and code registered after the warm-up makes
the unwinder allocate: hence, compile nothing inside the sampled block.
"""

from __future__ import annotations

from .attribution import LineSamples, RawSamples, SampledLines, attribute
from .dwarf import LineMap, line_map
from .object_code import FunctionCode
from .sample_cost import USERS_RUN_SIGNALS
from .sampler import DISABLE_ENV, Sampler, prepare_handler, sampler_running, sampler_unavailable

__all__ = [
    "DISABLE_ENV",
    "FunctionCode",
    "LineMap",
    "LineSamples",
    "RawSamples",
    "SampledLines",
    "Sampler",
    "USERS_RUN_SIGNALS",
    "attribute",
    "line_map",
    "prepare_handler",
    "sampler_running",
    "sampler_unavailable",
]
