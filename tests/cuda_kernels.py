"""CUDA kernels for the CUDA tests: divergence, varying trip counts, device functions,
shared memory with barriers, and the README's ``walk``. Importing this module imports
numba.cuda (simulated or not, as NUMBA_ENABLE_CUDASIM says when numba starts)."""

from numba import cuda, float64


@cuda.jit(device=True)
def clamp_scale(x, k):
    y = x * k
    if y > 10.0:
        y = 10.0
    return y


@cuda.jit
def divergent(a, out):
    i = cuda.grid(1)
    if i >= a.size:
        return
    if a[i] > 0:
        out[i] = clamp_scale(a[i], 2.0)
    else:
        out[i] = -a[i]


@cuda.jit
def varying_loop(out):
    i = cuda.grid(1)
    s = 0
    for j in range(i % 7):
        if (i + j) % 2 == 0:
            s += j
        else:
            s -= 1
    out[i] += s


@cuda.jit
def calls_in_loop(a, out):
    i = cuda.grid(1)
    acc = 0.0
    for j in range(i % 4 + 1):
        acc += clamp_scale(a[i], j)
    acc += clamp_scale(acc, 0.5)
    out[i] = acc


@cuda.jit
def block_sum(a, out):
    buf = cuda.shared.array(64, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = a[i] if i < a.size else 0.0
    cuda.syncthreads()
    stride = cuda.blockDim.x // 2
    while stride > 0:
        if t < stride:
            buf[t] += buf[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        out[cuda.blockIdx.x] += buf[0]


@cuda.jit(device=True)
def step(x, k):
    if k % 2 == 0:
        return x * 0.5
    return 3.0 * x + 1.0


@cuda.jit
def walk(a, out):
    i = cuda.grid(1)
    if i >= a.size:
        return
    x = a[i]
    for k in range(i % 8):
        x = step(x, k)
    out[i] = x
