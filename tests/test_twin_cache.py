"""Relocatable probes, twin keys and the cache directory, checked piece by piece.

``test_disk_cache.py`` checks whole profiles across processes; here: that probes
reach their counters through a symbol resolved at load (two live twins of one
function count apart), what a twin's key follows, that the sampler and the
vectorization check read a cached twin as they read a fresh one, and how the
cache directory behaves when it is corrupt, switched off or not writable.
"""

import json
import os
import subprocess
import sys

import numpy as np
from numba import njit

from numba_lprun.instrument import disk_cache
from numba_lprun.instrument import probes as P
from numba_lprun.instrument.fingerprint import dependencies
from numba_lprun.instrument.rewrite import instrument
from numba_lprun.instrument.source import read_source
from numba_lprun.instrument.twins import compile_like_original, make_twin, objmode_names


@njit
def _branchy(a):
    s = 0.0
    for i in range(a.size):
        if a[i] > 0.5:
            s += a[i]
    return s


def _counting_twin(original):
    src = read_source(original)
    rewritten = instrument(src.tree, lines=True, objmode_names=objmode_names(src.py_func))
    counters = P.new_counters(len(rewritten.rows))
    cfg = P.ProbeConfig(counters.address, len(rewritten.rows), "tsc", timing=False)
    twin = make_twin(original, src, rewritten.tree, P.make_probes(cfg), "instrumented", line_tables=True)
    compile_like_original(twin, src)
    return twin.dispatcher, counters.shared


def test_two_live_twins_of_one_function_count_into_their_own_counters():
    a = np.random.default_rng(1).random(1000)
    _branchy(a)
    first, c1 = _counting_twin(_branchy)
    second, c2 = _counting_twin(_branchy)
    first(a)
    second(a), second(a)
    assert c1[-1, 0] == 1 and c2[-1, 0] == 2  # calls, in the totals row
    expected = int((a > 0.5).sum())
    assert expected in c1[:, 0] and 2 * expected in c2[:, 0]


def test_dependencies_follow_callees_and_refuse_addresses():
    namespace = {"njit": njit}
    exec("@njit\ndef g(x):\n    return x + 1\n@njit\ndef f(x):\n    return g(x)\n", namespace)
    before = dependencies(namespace["f"].py_func)
    exec("@njit\ndef g(x):\n    return x + 2\n", namespace)
    after = dependencies(namespace["f"].py_func)
    assert before is not None and after is not None and before[0] != after[0]
    namespace["g"] = object()  # its repr carries an address: no stable description
    assert dependencies(namespace["f"].py_func) is None


def test_cache_directory_switch_and_corrupt_records(tmp_path, monkeypatch):
    monkeypatch.setenv(disk_cache.ENV_DIR, str(tmp_path / "c"))
    assert disk_cache.cache_root() == tmp_path / "c"
    assert disk_cache.update_record("machine", "k", x=1.5)
    (tmp_path / "c" / "machine" / "k.json").write_text("{truncated")
    assert disk_cache.load_record("machine", "k") == {}
    assert disk_cache.update_record("machine", "k", y=2.0)
    assert json.loads((tmp_path / "c" / "machine" / "k.json").read_text()) == {"y": 2.0}
    monkeypatch.setenv(disk_cache.ENV_SWITCH, "0")
    assert disk_cache.cache_root() is None
    monkeypatch.delenv(disk_cache.ENV_SWITCH)
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(disk_cache.ENV_DIR, str(blocker / "below"))  # under a file: never a directory
    assert disk_cache.cache_root() is None
    assert disk_cache.load_record("machine", "k") == {}
    assert not disk_cache.update_record("machine", "k", z=1.0)


SAMPLED = """
import json
import time
import numpy as np
from numba import njit, prange
from tests.test_twin_cache import _counting_twin
from numba_lprun.sampling import Sampler, attribute, line_map
from numba_lprun.instrument.source import read_source
from numba_lprun.instrument.twins import Twin, loaded_from_cache
from numba_lprun.sampling.object_code import gufunc_kernels
from numba_lprun.vectorized import vectorized_lines


@njit(fastmath=True)
def norm(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * a[i]
    return np.sqrt(s)


@njit(parallel=True)
def squares(a):
    s = 0.0
    for i in prange(a.size):
        s += a[i] * a[i]
    return s


def mapped(f):
    src = read_source(f)
    return line_map(twin_of[f], src.filename, src.first_lineno, src.first_lineno + len(src.lines) - 1)


a = np.random.default_rng(0).random(1_000_000)
norm(a), squares(a[:1000])
twin, counters = _counting_twin(norm)
parallel, _ = _counting_twin(squares)
parallel(a[:1000])
twin_of = {norm: twin, squares: parallel}
lmap = mapped(norm)
for _ in range(10):
    twin(a)
calls = int(counters[-1, 0])  # of ten calls; then calls for 0.3 s (ten, 3-10 ms, had about 5
with Sampler(rate_hz=1000.0) as sampler:  # samples, and none once in CI)
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:
        twin(a)
lines = attribute(sampler.samples, {"f": lmap}).functions["f"].counts
print(json.dumps({
    "hits": loaded_from_cache(Twin(norm, twin, "instrumented")),
    "vectorized": sorted(vectorized_lines(twin)),
    "map": sorted({int(x) for x in lmap.lines}),
    "sampled": sum(lines.values()),
    "calls": calls,
    "parallel": loaded_from_cache(Twin(squares, parallel, "instrumented")),
    "parallel map": sorted({int(x) for x in mapped(squares).lines}),
    "gufuncs": len(gufunc_kernels(parallel)),  # its prange body's, named as in the compiling process
}))
"""


def test_a_cached_twin_reads_as_a_fresh_one(tmp_path):
    """Line tables (the sampler's map), vectorized loops and counts of a twin loaded from the
    cache are those of the twin compiled fresh; a parallel twin's map has its prange body.

    The cached twin is sampled for 0.3 s of calls: at 1 kHz, or at the tenth of it the sampler's
    budget may leave where timer signals are dear, at least 30 samples are expected, and none
    comes with odds of about e^-30 (1e-13)."""
    script = tmp_path / "sampled.py"
    script.write_text(SAMPLED)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, NUMBA_LPRUN_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=root)
    runs = []
    for _ in range(2):
        argv = [sys.executable, str(script)]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=240)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    fresh, cached = runs
    assert fresh["hits"] == 0 and cached["hits"] == 1
    assert fresh["parallel"] == 0 and cached["parallel"] == 1
    assert fresh["gufuncs"] == 1 and len(fresh["parallel map"]) >= 3
    for field in ("vectorized", "map", "calls", "parallel map", "gufuncs"):
        assert fresh[field] == cached[field], field
    assert fresh["vectorized"] and fresh["map"]
    assert cached["sampled"] > 0


def test_a_code_digest_does_not_follow_reference_counts():
    """The same code, the same digest: marshal marks an object shared only while more than one
    reference holds it, so its bytes changed once something else held the code's constants (a
    parallel twin's key changed between its load and its save, and it was never found)."""
    from numba_lprun.instrument.fingerprint import code_digest

    def kernel(x):
        return x * 12345.678 + len("some text") + (x in {"alpha", "beta", "gamma"})

    before = code_digest(kernel.__code__)
    held = [*kernel.__code__.co_consts, *kernel.__code__.co_names]  # what a compile holds
    assert code_digest(kernel.__code__) == before
    assert held
    assert code_digest((lambda x: x * 2.0).__code__) != code_digest((lambda x: x * 3.0).__code__)
