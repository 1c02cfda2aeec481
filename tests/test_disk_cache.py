"""The disk cache across processes: what a second run of unchanged code compiles, and when it
must compile again.

Each check runs a small program in a new process with its own cache directory
and counts Numba's ``numba:compile`` events for the twins (a cache hit fires
none: Numba loads the code instead), next to the hits the profile reports.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROGRAM = """
import json, sys
import numpy as np
from numba import njit
from numba.core import event

import numba_lprun


@njit
def helper(x):
    return x * 0.5


@njit
def total(a):
    s = 0.0
    for i in range(a.size):
        if a[i] > 0.5:
            s += helper(a[i])
        else:
            s -= 1.0
    return s


ORIGINALS = (total, helper)
twin_compiles = []
all_compiles = []


class Watch(event.Listener):
    def on_start(self, ev):
        disp = (ev.data or {}).get("dispatcher")
        all_compiles.append(getattr(getattr(disp, "py_func", None), "__qualname__", repr(disp)))
        if disp is not None and disp not in ORIGINALS and disp.py_func.__name__ in ("total", "helper"):
            twin_compiles.append(disp.py_func.__name__)

    def on_end(self, ev):
        pass


a = np.random.default_rng(0).random(20_000)
expected = total(a)
event.register("numba:compile", Watch())
prof = numba_lprun.LineProfiler(total, helper, sample=False)  # what is cached, not the sampler
got = prof.runcall(total, a)
hits = {f.name: sorted(f.hits.items()) for f in prof.profile.functions}
print(json.dumps({"same": got == expected, "compiles": twin_compiles, "all": all_compiles, "hits": hits}))
"""

CLI_SCRIPT = """
import atexit
import numpy as np
from numba import njit
from numba.core import event


@njit
def scale(a):
    out = np.empty_like(a)
    for i in range(a.size):
        out[i] = a[i] * 2.0
    return out


seen = []  # twin compiles: a twin's Python function has no module (instrument/twins.py)


class Watch(event.Listener):
    def on_start(self, ev):
        disp = (ev.data or {}).get("dispatcher")
        if disp is not None and disp.py_func.__module__ is None and disp.py_func.__name__ == "scale":
            seen.append(1)

    def on_end(self, ev):
        pass


event.register("numba:compile", Watch())
atexit.register(lambda: print(f"TWIN COMPILES {len(seen)}"))  # once per run of the script
print(scale(np.arange(1000.0)).sum())
"""


PARALLEL_PROGRAM = """
import json
import numpy as np
from numba import njit, prange
from numba.core import event

import numba_lprun


@njit(parallel=True)
def rows(a):
    out = np.empty(a.shape[0])
    for i in prange(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += np.sqrt(a[i, j]) * 1.5  # BODY
        out[i] = s
    return out


@njit
def caller(a):
    return rows(a).sum()  # holds copies of rows's gufuncs: never charged to caller


twin_compiles = []


class Watch(event.Listener):
    def on_start(self, ev):
        disp = (ev.data or {}).get("dispatcher")
        if disp is not None and getattr(disp.py_func, "__module__", "") is None:  # a twin
            twin_compiles.append(disp.py_func.__name__)

    def on_end(self, ev):
        pass


a = np.random.default_rng(0).random((200, 8000))
expected = caller(a)
event.register("numba:compile", Watch())
prof = numba_lprun.LineProfiler(caller, rows, repeat=False)  # one sampled run, as a script's
got = prof.runcall(lambda: [caller(a) for _ in range(40)][-1])
stats = {f.name: f for f in prof.profile.functions}
body = next(i for i, line in enumerate(stats["rows"].source_lines) if "# BODY" in line)
print(json.dumps({
    "same": got == expected,
    "compiles": twin_compiles,
    "hits": {name: sorted(f.hits.items()) for name, f in stats.items()},
    "samples": {name: sorted(f.samples.counts.items()) for name, f in stats.items()},
    "body": stats["rows"].first_lineno + body,
}))
"""


def run_program(path: Path, cache: str) -> dict:
    env = dict(os.environ, NUMBA_LPRUN_CACHE_DIR=cache)
    env.pop("NUMBA_LPRUN_CACHE", None)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    return path


def cache_files(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "twins").rglob("*") if p.is_file())


def test_second_process_compiles_no_twin_and_counts_the_same(program, tmp_path):
    cache = tmp_path / "cache"
    first = run_program(program, str(cache))
    assert first["same"] and sorted(set(first["compiles"])) == ["helper", "total"]
    assert any(p.suffix == ".nbc" for p in cache_files(cache))
    second = run_program(program, str(cache))
    assert second["same"]
    assert second["compiles"] == [] and second["all"] == []  # nor the clock's calibration
    assert second["hits"] == first["hits"]
    assert dict(first["hits"]["helper"]) != {}


def test_an_edit_of_the_source_compiles_again(program, tmp_path):
    cache = tmp_path / "cache"
    first = run_program(program, str(cache))
    program.write_text(PROGRAM.replace("return x * 0.5", "return x * 0.25"))
    edited = run_program(program, str(cache))
    assert "helper" in edited["compiles"] and "total" in edited["compiles"]  # total inlines helper
    assert edited["hits"] == first["hits"]
    assert run_program(program, str(cache))["compiles"] == []


def test_a_corrupt_cache_is_rebuilt(program, tmp_path):
    cache = tmp_path / "cache"
    first = run_program(program, str(cache))
    files = cache_files(cache)
    assert files
    for i, path in enumerate(files):  # every index and data file: truncated or flipped bytes
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2] if i % 2 else bytes(b ^ 0x5A for b in data))
    for path in (cache / "machine").glob("*.json"):
        path.write_text("{not json")
    rebuilt = run_program(program, str(cache))
    assert sorted(set(rebuilt["compiles"])) == ["helper", "total"]
    assert rebuilt["hits"] == first["hits"]
    assert run_program(program, str(cache))["compiles"] == []


def test_a_cache_directory_that_cannot_be_written_means_no_cache(program, tmp_path):
    if os.geteuid() == 0:
        readonly = "/sys"  # root writes anywhere chmod allows: sysfs refuses new files even to root
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o500)
        readonly = str(folder)
    first = run_program(program, readonly)
    second = run_program(program, readonly)
    assert first["same"] and second["same"]
    assert sorted(set(second["compiles"])) == ["helper", "total"]
    assert second["hits"] == first["hits"]


def test_second_nlprun_of_an_unchanged_script_compiles_no_twin(tmp_path):
    script = tmp_path / "scale_script.py"
    script.write_text(textwrap.dedent(CLI_SCRIPT))
    env = dict(os.environ, NUMBA_LPRUN_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_LPRUN_CACHE", None)
    outputs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "numba_lprun", str(script)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    first, second = (sum(int(n) for n in re.findall(r"TWIN COMPILES (\d+)", out)) for out in outputs)
    assert first > 0 and second == 0, outputs[1]
    assert "out[i] = a[i] * 2.0" in outputs[1]


def test_a_parallel_function_is_loaded_from_the_cache_and_sampled_as_fresh(tmp_path):
    """A ``prange`` loop body runs in gufunc copies inside the twin's own library; their names
    differ in every process, and a library loaded from the cache has no gufunc libraries linked
    in, so the names kept with the cached code are what lets the sampler charge them (here both
    in ``rows``'s own code and in ``caller``'s copies of it)."""
    path = tmp_path / "parallel.py"
    path.write_text(PARALLEL_PROGRAM)
    cache = str(tmp_path / "cache")
    first = run_program(path, cache)
    assert first["same"] and sorted(set(first["compiles"])) == ["caller", "rows"]
    second = run_program(path, cache)
    assert second["same"] and second["compiles"] == []
    assert second["hits"] == first["hits"]
    for run in (first, second):
        hit_lines = {line for line, _ in run["hits"]["rows"]}
        sampled = dict(run["samples"]["rows"])
        assert sampled.get(run["body"], 0) > 0, run["samples"]  # the loop body, run by the workers
        assert set(sampled) <= hit_lines, run["samples"]
