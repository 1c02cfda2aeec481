"""Instrumentation: from a jitted function's source to its compiled twins.

Stages, each importing only from the ones before it:

- ``ufuncs``: kernel objects (``@vectorize``/``@guvectorize`` on the CPU, ``@stencil``):
  how a twin of each is made;
- ``function_kinds``: one strategy per kind of function (CPU dispatcher, ufunc, stencil,
  jitclass, CUDA kernel): where its source is, how its twin is built, whether its calls run
  concurrently, whether samples reach its lines; every later stage asks it, none tests types;
- ``source``: read the function's source and AST, keyed as line_profiler keys functions;
- ``profilable``: what can be profiled: what the user names (a dispatcher, a jitclass or one
  of its members, a ufunc, a stencil, an overloaded function) -> the dispatchers or
  kernel objects to profile, or a one-line refusal;
- ``line_events``: which lines fire line events on this Python, under line_profiler's core
  (a model read from the running interpreter's bytecode; no probes, no Numba);
- ``rewrite`` (with ``rewrite_conditions`` and ``rewrite_parallel``): place one probe per
  line event in the AST;
- ``clock``, ``probes``, ``calibrate``: the probes themselves (Numba intrinsics reading
  the TSC or ``clock_gettime`` and updating counters), and what one costs;
- ``twins``: compile the plain, counting and probed twins like the original dispatcher.
"""
