"""Calls each stateful kernel once and prints what a user would check afterwards.

The kernels are called through ``case.func``, a dispatcher kept inside another
object (no namespace binds it under that name): the profiler must still reach it.
"""

from tests.stateful import CASES, numba_random_state, numba_seed, plain

numba_seed(0)  # Numba seeds its state from entropy at start-up: fix it, so two processes compare
for case in CASES:
    args = case.make()
    result = case.func(*args)
    print(case.name, "->", result, plain(args), numba_random_state()[1][:4])
