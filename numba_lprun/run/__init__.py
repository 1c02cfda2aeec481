"""Running a profiled call: swap the twins in, run, keep one call's effects, put everything back.

- ``targets``: a profiled function's rewrites, counters and three twins (plain,
  counting, probed), kept on the dispatcher between profiles;
- ``reach``: make calls reach the twins (names in namespaces, jitted callers, any
  Python-level call) and undo it afterwards;
- ``holders``: reach functions that something of Numba's holds rather than a name, one
  strategy each (a jitclass's members: ``jitclasses`` recompiles the class; an
  ``@overload``'s implementations: its templates point at the twins);
- ``runner``: one phase on one kind of twin (``phase_run``: what the phase hands its run);
  ``compiles``: Numba's compile events meanwhile (and a function that did not compile in the
  user's run); ``page_faults``: the fresh memory a run touched;
- ``snapshot``, ``state_types``: save the state a call can reach, put back what an extra run changed;
- ``quiet``: silence the extra runs' output;
- ``statements``: run a cell or script statement by statement, adopting the functions it defines
  (``selection``: which ones, judged here from the front end's data);
- ``sampled_run``: sample a phase and charge the samples to lines;
- ``phases``: the runs of one call (the user's run first) over one call context
  (the user's run, the timed plain replay, sampled replays, the probed replay, the replay
  counting allocations; ``replay``: the user's run's calls recorded and made again);
- ``measurements``: what the phases return, and ``fold`` to add them up.
"""
