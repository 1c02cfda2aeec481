"""PTX of both twins, compiled without a GPU (NVVM from the ``cuda`` extra's wheels): test code.

For checks that need no device: that both twins carry ``.loc`` line directives
(``lineinfo=True``), and where the probed twin's atomics are (in the flush
at return only, never in a line probe). Counter addresses are placeholders: this
code is never launched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from numba_lprun.cuda.gpu_probes import GpuProbeConfig, make_gpu_probes
from numba_lprun.cuda.twins import Planned, plan, probed_twin

_PLACEHOLDER = 0x7F00_0000_0000  # never dereferenced: the PTX is not launched
_LOC = re.compile(r"^\s*\.loc\s+\d+\s+(\d+)\s+\d+")
_ATOMIC = re.compile(r"^\s*(atom|red)\.")


@dataclass(frozen=True)
class TwinPtx:
    plain: str
    probed: str
    planned: Planned


def twin_ptx(func: object, argtypes: tuple, *, timing: bool = True, cc=(9, 0)) -> TwinPtx:
    """PTX of the plain and the probed twin of one kernel or device function.

    Without a GPU, numba-cuda compiles a call to a device function only with a
    CUDA context (it asks the current device for its compute capability), so a
    kernel that calls device functions needs a GPU here; each device function
    compiles on its own (``device=True``).
    """
    from numba import cuda

    planned = plan(func)
    cfg = GpuProbeConfig(_PLACEHOLDER, len(planned.rows), timing)
    twin = probed_twin(planned, make_gpu_probes(cfg), {})
    options = {
        "lineinfo": True,
        "cc": cc,
        "device": planned.device,
        "fastmath": bool(func.targetoptions.get("fastmath")),
    }
    probed, _ = cuda.compile_ptx(twin.py_func, argtypes, **options)
    plain, _ = cuda.compile_ptx(func.py_func, argtypes, **options)
    return TwinPtx(plain, probed, planned)


def loc_lines(ptx: str) -> set[int]:
    """Source lines named by the PTX's ``.loc`` directives."""
    return {int(m.group(1)) for line in ptx.splitlines() if (m := _LOC.match(line))}


def atomic_lines(ptx: str) -> list[int | None]:
    """For each global atomic (``atom.``/``red.``) in the PTX, the source line of the
    ``.loc`` directive before it (None if there is none)."""
    current: int | None = None
    found = []
    for line in ptx.splitlines():
        m = _LOC.match(line)
        if m:
            current = int(m.group(1))
        elif _ATOMIC.match(line):
            found.append(current)
    return found


def find_ptxas() -> str | None:
    """NVIDIA's PTX assembler: from the ``nvidia-cuda-nvcc`` wheel, else on PATH."""
    import importlib.util
    import os
    import shutil

    spec = importlib.util.find_spec("nvidia")
    for root in list(spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, "cuda_nvcc", "bin", "ptxas")
        if os.access(path, os.X_OK):
            return path
    return shutil.which("ptxas")


def assemble(ptx: str, cc=(9, 0)) -> int:
    """Assemble ``ptx`` to machine code for ``cc`` with ptxas (no GPU needed); the
    registers per thread of its entry or function. Raises CalledProcessError with
    ptxas's message when the PTX (inline assembly included) does not assemble."""
    import subprocess
    import tempfile

    ptxas = find_ptxas()
    if ptxas is None:
        raise FileNotFoundError("ptxas not found (pip install nvidia-cuda-nvcc-cu12)")
    with tempfile.TemporaryDirectory() as tmp:
        src = f"{tmp}/twin.ptx"
        with open(src, "w") as f:
            f.write(ptx)
        run = subprocess.run(
            [ptxas, f"-arch=sm_{cc[0]}{cc[1]}", "-v", src, "-o", f"{tmp}/twin.cubin"],
            capture_output=True,
            text=True,
            check=True,
        )
    found = re.findall(r"Used (\d+) registers", run.stderr + run.stdout)
    return max(map(int, found)) if found else 0
