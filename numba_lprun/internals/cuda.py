"""numba-cuda's simulator: the options its kernels keep only in private attributes.

Under ``NUMBA_ENABLE_CUDASIM=1`` ``@cuda.jit`` makes a ``FakeCUDAKernel``, which
has no ``targetoptions``: ``device=`` and ``fastmath=`` are kept as ``_device`` and
``_fastmath``. Nothing here imports numba.cuda (the simulator must not be
imported before the environment variable is read). Checked against numba-cuda
releases, not Numba's; relied on when numba-cuda is installed.
"""

from __future__ import annotations

from .registry import touches


@touches(
    "numba.cuda.simulator.kernel",
    "FakeCUDAKernel",
    "cuda/kernels.py: a simulated CUDA function is a device function (device=True)",
    instance_attribute="_device",
    checked=("0.30", "0.30"),
    package="numba-cuda",
)
def simulated_device_flag(kernel: object) -> bool:
    """Whether the simulator's kernel was made with ``device=True``."""
    return bool(getattr(kernel, "_device", False))


@touches(
    "numba.cuda.simulator.kernel",
    "FakeCUDAKernel",
    "cuda/kernels.py: a simulated kernel's fastmath option, given to its twin",
    instance_attribute="_fastmath",
    checked=("0.30", "0.30"),
    package="numba-cuda",
)
def simulated_fastmath(kernel: object) -> bool:
    """Whether the simulator's kernel was made with ``fastmath=True``."""
    return bool(getattr(kernel, "_fastmath", False))
