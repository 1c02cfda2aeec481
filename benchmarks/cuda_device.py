"""CUDA line profiles on a real GPU: hits against the reference, overheads, cycle shares.

Run ``python benchmarks/cuda_device.py`` (one command, a few minutes) on a machine
with an NVIDIA GPU of compute capability 8.0 or later and ``pip install -e
".[cuda]"``. For three kernels (a divergent map calling a device function, a loop
whose trip count varies by thread, a shared-memory block reduction with barriers):

1. small launch: hits per line of the GPU twin (hits-only) against each thread's
   own Python line events in numba-cuda's simulator (a subprocess with
   NUMBA_ENABLE_CUDASIM=1, ``--reference``); must be equal. Warp executions against
   the simulator's model of the warp grouping: reported, not required (the GPU's
   reconvergence decides them);
2. the user's arrays after ``profile_launch`` (6 launches, arguments restored before
   each extra one) against one plain launch: must be equal;
3. large launch: probed / plain launch time (CUDA events, best of 5 each) of
   the hits-only twin (goal <= 1.2x) and the timed twin (goal <= 3x), and the timed
   twin's table (cycle shares per line).

Exit status 0: hits and arrays as required; 1: a check failed; 2: no usable GPU.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests.cuda_reference

try:
    from numba import cuda, int64
except ImportError as exc:  # numba-cuda missing
    sys.exit(f"cuda_device: numba-cuda is not installed ({exc}); pip install -e '.[cuda]'")

SMALL = (2, 256)  # blocks, threads per block: also what the simulator runs
LARGE_N = 1 << 25
THREADS = 256
REPEAT = 5


@cuda.jit(device=True)
def smooth(x):
    if x > 0.5:
        return x * 0.5
    return x * x


@cuda.jit
def branchy_map(a, out):
    i = cuda.grid(1)
    if i < a.size:
        v = a[i]
        if v > 0.0:
            out[i] = smooth(v)
        else:
            out[i] = -v


@cuda.jit
def varying_work(a, out):
    i = cuda.grid(1)
    if i < a.size:
        s = 0.0
        for j in range(i % 64):
            if (i + j) % 3 == 0:
                s += math.sqrt(abs(a[i]) + j)
            else:
                s -= 0.5
        out[i] = s


@cuda.jit
def block_reduce(a, out):
    buf = cuda.shared.array(256, int64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = a[i] if i < a.size else 0
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if t < stride:
            buf[t] += buf[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        cuda.atomic.add(out, 0, buf[0])


def inputs(name: str, n: int) -> tuple:
    rng = np.random.default_rng(0)
    if name == "block_reduce":
        return (rng.integers(-1000, 1000, n).astype(np.int64), np.zeros(1, np.int64))
    return (rng.uniform(-1.0, 1.0, n), np.zeros(n, np.float64))


KERNELS = {"branchy_map": branchy_map, "varying_work": varying_work, "block_reduce": block_reduce}


def reference() -> dict:
    """Under the simulator: per kernel, per function, line -> [reference hits, model warps]."""
    from numba_lprun.cuda import profile_launch
    from tests.cuda_reference import per_thread_lines, total_hits

    out = {}
    for name, kern in KERNELS.items():
        blocks, threads = SMALL
        args = inputs(name, blocks * threads)
        devices = [smooth] if kern is branchy_map else []
        ref = per_thread_lines(kern, blocks, threads, *[a.copy() for a in args], functions=devices)
        prof = profile_launch(kern, blocks, threads, *[a.copy() for a in args], device_functions=devices)
        out[name] = {
            f.name: {
                str(ln.lineno): [total_hits(ref[f.qualname]).get(ln.lineno, 0), ln.warps] for ln in f.lines
            }
            for f in prof.functions
        }
    return out


def simulator_reference() -> dict:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    run = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--reference"], env=env, capture_output=True, text=True
    )
    if run.returncode != 0:
        raise RuntimeError(f"simulator reference failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def check_small(name: str, kern, ref: dict) -> bool:
    from numba_lprun.cuda import profile_launch

    blocks, threads = SMALL
    devices = [smooth] if kern is branchy_map else []
    prof = profile_launch(
        kern,
        blocks,
        threads,
        *inputs(name, blocks * threads),
        device_functions=devices,
        timing=False,
        overhead=False,
    )
    ok = True
    for f in prof.functions:
        for ln in f.lines:
            want_hits, model_warps = ref[name][f.name][str(ln.lineno)]
            if ln.hits != want_hits:
                ok = False
                print(f"  HITS MISMATCH {f.name}:{ln.lineno}: GPU {ln.hits}, reference {want_hits}")
            if ln.warps != model_warps:
                print(
                    f"  warps differ from the simulator's model at {f.name}:{ln.lineno}: "
                    f"GPU {ln.warps}, model {model_warps}"
                )
    print(f"  hits (small launch) {'equal the reference' if ok else 'DIFFER'}")
    return ok


def check_effects(name: str, kern) -> bool:
    from numba_lprun.cuda import profile_launch

    args = inputs(name, LARGE_N)
    expected = [a.copy() for a in args]
    kern[(LARGE_N + THREADS - 1) // THREADS, THREADS](*expected)
    cuda.synchronize()
    prof = profile_launch(kern, (LARGE_N + THREADS - 1) // THREADS, THREADS, *args, timing=False, repeat=3)
    same = all(np.array_equal(a, e) for a, e in zip(args, expected, strict=True))
    print(
        f"  arrays after profile_launch ({prof.launch.launches} launches): "
        f"{'one launch' + chr(39) + 's result' if same else 'DIFFER from one launch'}"
    )
    return same


def overheads(name: str, kern) -> tuple[float | None, float | None]:
    from numba_lprun.cuda import profile_launch, profile_stats
    from numba_lprun.renderers import TextRenderer

    grid = (LARGE_N + THREADS - 1) // THREADS
    devices = [smooth] if kern is branchy_map else []
    hits = profile_launch(
        kern, grid, THREADS, *inputs(name, LARGE_N), device_functions=devices, timing=False, repeat=REPEAT
    )
    timed = profile_launch(
        kern, grid, THREADS, *inputs(name, LARGE_N), device_functions=devices, timing=True, repeat=REPEAT
    )
    print(TextRenderer(width=0).render(profile_stats(timed)))
    return hits.launch.overhead, timed.launch.overhead


def main() -> int:
    if "--reference" in sys.argv:
        print(json.dumps(reference()))
        return 0
    if not cuda.is_available():
        print(
            "cuda_device: no usable CUDA GPU here (numba.cuda.is_available() is False); run this on a "
            "machine with an NVIDIA GPU (compute capability 8.0+), after pip install -e '.[cuda]'"
        )
        return 2
    dev = cuda.get_current_device()
    print(f"device: {dev.name} (compute capability {dev.compute_capability})")
    ref = simulator_reference()
    ok, rows = True, []
    for name, kern in KERNELS.items():
        print(f"== {name}")
        try:
            ok &= check_small(name, kern, ref)
            ok &= check_effects(name, kern)
            rows.append((name, *overheads(name, kern)))
        except Exception as exc:  # report and go on with the next kernel
            ok = False
            print(f"  FAILED: {type(exc).__name__}: {exc}")
    print("\nkernel          hits-only  timed   (goals: <= 1.2x, <= 3x)")
    for name, h, t in rows:
        print(f"{name:15s} {h or float('nan'):8.2f}x {t or float('nan'):6.2f}x")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
