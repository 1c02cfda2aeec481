"""Calls each stateful kernel once and prints what a user would check afterwards.

Kernels are called through their module's names, as scripts do: numba_lprun swaps
names in namespaces, so a dispatcher kept inside another object (``case.func``)
would still reach the original.
"""

import tests.stateful as kernels
from tests.stateful import CASES, numba_random_state, numba_seed, plain

numba_seed(0)  # Numba seeds its state from entropy at start-up: fix it, so two processes compare
for case in CASES:
    args = case.make()
    result = getattr(kernels, case.func.py_func.__name__)(*args)
    print(case.name, "->", result, plain(args), numba_random_state()[1][:4])
