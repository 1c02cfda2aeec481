"""Line profiles of Numba CUDA kernels and device functions (``@cuda.jit``).

``profile_launch(kernel, grid, block, *args)`` runs one launch on a probed
twin and returns a :class:`CudaProfile`; ``profile_stats`` turns it into the common
profile value that the renderers show (``numba_lprun.renderers``);
``CudaLineProfiler`` keeps profiles of several launches and prints them in
line_profiler's layout; its ``.profile`` is a ``ProfileStats``, as the CPU profiler's.
``split_cuda`` decides whether a front end's ``-f`` names CUDA functions, and
``bound_kernels`` binds profiled stand-ins in place of kernels while a statement runs
(the front ends' ``-f kern``). Nothing here imports
numba.cuda until a kernel is profiled; numba-cuda is the optional extra
``numba_lprun[cuda]``. Under ``NUMBA_ENABLE_CUDASIM=1`` kernels run in numba-cuda's
simulator (hits, warp executions and lanes, no times).
"""

from __future__ import annotations

from .adapt import profile_stats
from .bind import bound_kernels, namespaces_of, split_cuda
from .kernels import in_simulator, is_cuda_function, is_device_function
from .launch import profile_launch
from .model import CudaFunctionProfile, CudaLaunch, CudaLine, CudaProfile, merge_profiles
from .profiler import CudaLineProfiler

__all__ = [
    "bound_kernels",
    "namespaces_of",
    "CudaFunctionProfile",
    "CudaLaunch",
    "CudaLine",
    "CudaLineProfiler",
    "CudaProfile",
    "in_simulator",
    "is_cuda_function",
    "is_device_function",
    "merge_profiles",
    "profile_launch",
    "profile_stats",
    "split_cuda",
]
