"""CUDA kernels in a module of their own, for ``nlprun -f gpu_kernels:spread gpu_launch.py``."""

from numba import cuda


@cuda.jit(device=True)
def bump(x, k):
    if x > k:
        return x - k
    return x + 1.0


@cuda.jit
def spread(a, out):
    i = cuda.grid(1)
    if i < a.size:
        x = a[i]
        for k in range(i % 4):
            x = bump(x, k)
        out[i] = x
