"""``CudaLineProfiler``: line_profiler's shape for CUDA launches.

``runcall(kern[grid, block], *args)`` profiles one launch; ``wrap(kern)`` gives an
object that profiles every launch made through it (``w[grid, block](*args)``), so a
front end can bind it in place of the kernel while a statement runs (the magic's
``%nlprun -f kern kern[g, b](a)``). Profiles of several launches add up.

Its ``.profile`` is a ``ProfileStats``, as ``LineProfiler.profile`` is, so a front end
reads, renders and saves a CPU or a GPU profile the same way; what only a GPU profile has
(each launch, in the GPU's terms) is ``.launches`` and, added up, ``.cuda_profile``.
"""

from __future__ import annotations

import sys
from typing import TextIO

from ..renderers import TextRenderer
from ..stats import ProfileStats
from .adapt import DEFAULT_THRESHOLD, profile_stats
from .kernels import called_device_functions, is_cuda_function, is_device_function
from .launch import profile_launch
from .model import CudaProfile, merge_profiles


def configured_launch(configured: object) -> tuple[object, object, object, object, int]:
    """(kernel, grid, block, stream, shared memory) of ``kern[grid, block, ...]``.

    numba-cuda returns a launch configuration object; the simulator returns the
    kernel itself with the configuration stored on it.
    """
    if hasattr(configured, "dispatcher") and hasattr(configured, "griddim"):
        c = configured
        return c.dispatcher, c.griddim, c.blockdim, c.stream, c.sharedmem
    if is_cuda_function(configured) and getattr(configured, "grid_dim", None) is not None:
        c = configured
        return c, c.grid_dim, c.block_dim, c.stream, c.dynshared_size
    raise TypeError(f"expected a configured launch such as kern[grid, block], got {configured!r}")


class CudaLineProfiler:
    """Profiles launches of the given kernels, with the given device functions."""

    def __init__(
        self,
        *functions: object,
        timing: bool | None = None,
        overhead: bool | None = None,
        threshold: float = DEFAULT_THRESHOLD,
    ):
        for f in functions:
            if not is_cuda_function(f):
                raise TypeError(f"{f!r} is not a @cuda.jit kernel or device function")
        self.functions = list(functions)
        self.timing, self.overhead, self.threshold = timing, overhead, threshold
        self.launches: list[CudaProfile] = []  # each launch's profile, in the GPU's terms

    def add_function(self, func: object) -> None:
        if not is_cuda_function(func):
            raise TypeError(f"{func!r} is not a @cuda.jit kernel or device function")
        self.functions.append(func)

    def launch(self, kernel: object, grid, block, *args, stream=0, shared_mem: int = 0) -> CudaProfile:
        """Profile ``kernel[grid, block, stream, shared_mem](*args)``: one launch for the user."""
        reached = called_device_functions(kernel)  # each device function is shown with its callers
        devices = [f for f in self.functions if is_device_function(f) and any(f is r for r in reached)]
        profile = profile_launch(
            kernel,
            grid,
            block,
            *args,
            device_functions=devices,
            timing=self.timing,
            overhead=self.overhead,
            stream=stream,
            shared_mem=shared_mem,
        )
        self.launches.append(profile)
        return profile

    def runcall(self, configured: object, *args: object) -> None:
        """Like ``configured(*args)`` for ``configured = kern[grid, block]``, profiled."""
        kernel, grid, block, stream, shared = configured_launch(configured)
        self.launch(kernel, grid, block, *args, stream=stream, shared_mem=shared)

    def wrap(self, kernel: object) -> _ProfiledKernel:
        """An object to bind in place of ``kernel``: its launches are profiled."""
        return _ProfiledKernel(self, kernel)

    @property
    def profile(self) -> ProfileStats:
        """All launches so far as the common profile value (``LineProfiler.profile``'s type),
        which every renderer and front end reads: one interface for CPU and GPU profiles."""
        return profile_stats(self.launches, self.threshold)

    @property
    def cuda_profile(self) -> CudaProfile | None:
        """All launches so far, added up, in the GPU's terms (None before the first): what only
        CUDA has (warp executions per launch, the launch geometry), for callers that want it."""
        return merge_profiles(self.launches) if self.launches else None

    def get_text(self) -> str:
        """line_profiler's text layout (the common text renderer), notes unwrapped."""
        return TextRenderer(width=0).render(self.profile)

    def print_stats(self, stream: TextIO | None = None) -> None:
        (stream or sys.stdout).write(self.get_text())


class _ProfiledKernel:
    def __init__(self, profiler: CudaLineProfiler, kernel: object):
        self._profiler, self._kernel = profiler, kernel

    def __getitem__(self, config):
        config = config if isinstance(config, tuple) else (config,)
        grid, block = config[0], config[1]
        stream = config[2] if len(config) > 2 else 0
        shared = config[3] if len(config) > 3 else 0

        def launch(*args):
            self._profiler.launch(self._kernel, grid, block, *args, stream=stream, shared_mem=shared)

        return launch

    def __getattr__(self, name):
        return getattr(self._kernel, name)
