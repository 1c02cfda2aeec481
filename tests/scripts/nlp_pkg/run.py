"""Run with ``-m nlp_pkg.run``: calls a kernel from another module of the package."""

import sys

import numpy as np

from nlp_pkg.kernels import dot

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
print("dot", dot(np.ones(n), np.ones(n)))
