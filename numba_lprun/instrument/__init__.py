"""Instrumentation: from a jitted function's source to its compiled twins.

Stages, each importing only from the ones before it:

- ``source``: read the function's source and AST, keyed as line_profiler keys functions;
- ``rewrite`` (with ``rewrite_parallel``): place one probe per Python line event in the AST;
- ``clock``, ``probes``, ``calibrate``: the probes themselves (Numba intrinsics reading
  the TSC or ``clock_gettime`` and updating counters), and what one costs;
- ``twins``: compile a plain and an instrumented twin like the original dispatcher.
"""
