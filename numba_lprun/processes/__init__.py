"""Work done in other processes: pools, joblib and Dask workers, in one profile.

Why wrap the process's target: every common launcher (``multiprocessing``'s
``Pool`` and ``Process``, ``concurrent.futures``, joblib's loky, Dask's nanny)
starts its workers through ``multiprocessing``'s ``BaseProcess.start``, which
either forks (the child runs the target it was given) or pickles the process
object for a fresh interpreter (spawn, forkserver, loky's own ``popen``). While
the user's run goes on, ``launch`` gives each process started a picklable
``child.ChildTarget`` in place of its target, so no ``.pth`` file, environment
variable or interpreter start-up hook is needed, and nothing changes once the run
is over. In the child, the target runs as one profiled call on the parent's kind of
twin, sampled as the parent's run is (a forked child finds the parent's twins on the
dispatchers; a spawned one loads them from the disk cache; ``sampling.sampler.watch`` keeps a
fork from copying a stack walk in progress), and its frozen profile is written to the
run's directory as JSON when the target returns, raises, or is stopped by SIGTERM
(``Pool.terminate``), or when the parent asks a worker still running (joblib's).
The parent reads the parts when the user's run ends, says which started processes
sent none and why, removes the directory, and ``merge`` adds the parts to its own
profile.

- ``spec``: what a child needs to profile the same functions the same way;
- ``launch``: the parent's side (wrap targets while watching, collect the parts);
- ``child``: the child's side (profile the target, write the part);
- ``late_imports``: a call once a named module has been imported (``distributed`` by the
  profiled code, a kernel's module on a Dask worker);
- ``dask_plugin``: a Dask worker's side: the functions profiled wherever the worker holds them;
- ``dask_workers``: the client's side: the workers of every Dask client the run reaches
  (the one in use, and those the profiled code makes), and nothing left on them afterwards.
"""
