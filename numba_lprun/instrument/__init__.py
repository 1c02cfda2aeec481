"""Instrumentation: from a jitted function's source to its compiled twins.

Stages, each importing only from the ones before it:

- ``source``: read the function's source and AST, keyed as line_profiler keys functions;
- ``line_events``: which lines fire line events on this Python, under line_profiler's core
  (a model read from the running interpreter's bytecode; no probes, no Numba);
- ``rewrite`` (with ``rewrite_conditions`` and ``rewrite_parallel``): place one probe per
  line event in the AST;
- ``clock``, ``probes``, ``calibrate``: the probes themselves (Numba intrinsics reading
  the TSC or ``clock_gettime`` and updating counters), and what one costs;
- ``twins``: compile a plain and an instrumented twin like the original dispatcher.
"""
