"""Running a profiled call: swap the twins in, run, keep one call's effects, put everything back.

- ``reach``: make calls reach the twins (names in namespaces, jitted callers, any
  Python-level call) and undo it afterwards;
- ``jitclasses``: recompile a jitclass against the twins of its members for a run;
- ``overloads``: point ``@overload``/``@register_jitable`` templates at the twins for a run;
- ``runner``: targets, their twins and counters, and one phase (plain or instrumented);
- ``snapshot``: save the state a call can reach and put back what an extra run changed;
- ``quiet``: silence the extra runs' output;
- ``statements``: run a cell or script statement by statement, adopting the functions it defines;
- ``sampled_run``: sample the plain run's repeats and charge samples to lines;
- ``baseline``: the timed plain run and its sampled repeats, before the user's run;
- ``counted_run``: one more plain run that counts each line's allocations (``asm=True``).
"""
