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
hits = {f.source.name: sorted(f.counts.hits.items()) for f in prof.profile.functions}
print(json.dumps({"same": got == expected, "compiles": twin_compiles, "all": all_compiles, "hits": hits}))
"""

COUNT_TWIN_COMPILES = """
seen = []  # twin compiles: a twin's Python function has no module (instrument/twins.py)


class Watch(event.Listener):
    def on_start(self, ev):
        disp = (ev.data or {}).get("dispatcher")
        if disp is not None and disp.py_func.__module__ is None and disp.py_func.__name__ in WATCHED:
            seen.append(1)

    def on_end(self, ev):
        pass


event.register("numba:compile", Watch())
atexit.register(lambda: print(f"TWIN COMPILES {len(seen)}"))  # once per run of the script
"""

CLI_SCRIPT = (
    """
import atexit
import numpy as np
from numba import float64, njit, prange
from numba.core import event
from numba.experimental import jitclass


@njit
def scale(a):
    out = np.empty_like(a)
    for i in range(a.size):
        out[i] = a[i] * 2.0
    return out


@njit(parallel=True)
def pscale(a):
    out = np.empty_like(a)
    for i in prange(a.size):
        out[i] = a[i] * 3.0
    return out


@jitclass([("k", float64)])
class Box:
    def __init__(self, k):
        self.k = k


@njit
def boxed(b):
    return b.k * 2.0  # its signature names the class's address: cached under a description of Box


@njit
def rebox(b):
    return Box(b.k * 2.0)  # boxing it bakes the class's address in: compiled again, the header says why


WATCHED = ("scale", "pscale", "boxed")
"""
    + COUNT_TWIN_COMPILES
    + """
print(scale(np.arange(1000.0)).sum(), pscale(np.arange(1000.0)).sum(), boxed(Box(1.5)), rebox(Box(1.0)).k)
"""
)


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
stats = {f.source.name: f for f in prof.profile.functions}
body = next(i for i, line in enumerate(stats["rows"].source.lines) if "# BODY" in line)
print(json.dumps({
    "same": got == expected,
    "compiles": twin_compiles,
    "hits": {name: sorted(f.counts.hits.items()) for name, f in stats.items()},
    "samples": {name: sorted(f.samples.counts.items()) for name, f in stats.items()},
    "body": stats["rows"].source.first_lineno + body,
    "uncached": {name: f.source.uncached for name, f in stats.items()},  # twin kind -> why not on disk
}))
"""


SHAPES = """
from numba import float64
from numba.experimental import jitclass


@jitclass([("k", float64)])
class Inner:
    def __init__(self, k):
        self.k = k


@jitclass([("x", float64), ("y", float64[:]), ("inner", Inner.class_type.instance_type)])
class Shape:
    def __init__(self, x, y, inner):
        self.x = x
        self.y = y
        self.inner = inner

    def weight(self):
        return self.x * self.inner.k
"""

JITCLASS_PROGRAM = """
import json
import numpy as np
from numba import njit
from numba.core import event
from shapes import Inner, Shape  # another file: an edit there leaves this one's index fresh

import numba_lprun


@njit
def use(p):
    s = 0.0
    q = Inner(2.0)  # made here: its destructor is in the twin's code
    for v in p.y:
        if v > 0.5:
            s += v * p.weight() + q.k
    return s


twin_compiles = []


class Watch(event.Listener):
    def on_start(self, ev):
        disp = (ev.data or {}).get("dispatcher")
        if disp is not None and disp.py_func.__module__ is None and disp.py_func.__name__ == "use":
            twin_compiles.append("use")  # not Numba's own attribute accessors ("mutator")

    def on_end(self, ev):
        pass


p = Shape(1.5, np.random.default_rng(0).random(100), Inner(3.0))
expected = use(p)
event.register("numba:compile", Watch())
prof = numba_lprun.LineProfiler(use, sample=False)
got = [prof.runcall(use, p), prof.runcall(use, Shape(1.5, p.y.copy(), Inner(3.0)))]
(stats,) = prof.profile.functions
print(json.dumps({"got": got, "expected": expected, "compiles": twin_compiles,
                  "hits": sorted(stats.counts.hits.items()), "uncached": stats.source.uncached}))
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


def test_second_nlprun_of_an_unchanged_script_compiles_what_the_script_does(tmp_path):
    """The script's functions are not ``cache=True``: a plain run compiles each one it calls, and
    so does the profile's run, its counting twins (so that the compile does what the function's
    would: its warnings, its callees' compiles); the plain twins, compiled beside them, come
    from the cache."""
    script = tmp_path / "scale_script.py"
    script.write_text(textwrap.dedent(CLI_SCRIPT))
    env = dict(os.environ, NUMBA_LPRUN_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_LPRUN_CACHE", None)
    outputs = []
    for _ in range(2):
        done = subprocess.run(
            # --compare-code: the plain twins are compiled in both runs, whatever they cost; else
            # whether they are depends on the compile times so far (run.plain_build), which a
            # loaded machine stretches: left out of the first run, made in the second
            [sys.executable, "-m", "numba_lprun", "--compare-code", str(script)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    first, second = (sum(int(n) for n in re.findall(r"TWIN COMPILES (\d+)", out)) for out in outputs)
    assert first == 2 * len(("scale", "pscale", "boxed")), outputs[0]  # counting and plain twins
    assert second == len(("scale", "pscale", "boxed")), outputs[1]  # the counting twins only
    assert "out[i] = a[i] * 2.0" in outputs[1] and "out[i] = a[i] * 3.0" in outputs[1]
    why = "not cached: its code holds addresses of this process's objects (Numba's cache refuses them too)"
    for out in outputs:  # said once, in rebox's header (the others are cached)
        assert out.count("not cached") == 1 and why in " ".join(out.split()), out


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
    assert first["uncached"] == {"caller": {}, "rows": {}}
    for run in (first, second):
        hit_lines = {line for line, _ in run["hits"]["rows"]}
        sampled = dict(run["samples"]["rows"])
        assert sampled.get(run["body"], 0) > 0, run["samples"]  # the loop body, run by the workers
        # every sampled line has hits: not the def line, where LLVM puts the prologue of the
        # gufunc each worker calls per chunk (1 of 625 samples there once in CI)
        assert set(sampled) <= hit_lines, run["samples"]


def test_a_function_taking_jitclass_instances_is_cached_by_a_description_of_the_class(tmp_path):
    """A jitclass instance type's name carries its class's address, different in every process:
    the key describes the class instead (name, fields, members' code), and the code loaded is
    given this process's types (one overload, called twice). An edit of a method in another
    file compiles again."""
    (tmp_path / "shapes.py").write_text(SHAPES)
    path = tmp_path / "uses.py"
    path.write_text(JITCLASS_PROGRAM)
    cache = str(tmp_path / "cache")
    first = run_program(path, cache)
    assert first["got"] == [first["expected"]] * 2 and first["compiles"] and first["uncached"] == {}
    second = run_program(path, cache)
    assert second["compiles"] == [] and second["hits"] == first["hits"]
    assert second["got"] == first["got"]
    (tmp_path / "shapes.py").write_text(SHAPES.replace("self.x * self.inner.k", "self.x * self.inner.k * 2"))
    edited = run_program(path, cache)
    assert edited["compiles"] and edited["got"] == [edited["expected"]] * 2 != first["got"]


IMPORTED_SCRIPT = (
    """
import atexit
import numpy as np
from numba import njit, prange
from numba.core import event

print("BODY RAN")


@njit(parallel=True)
def rowsums(a):
    out = np.empty(a.shape[0])
    for i in prange(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j] * 2.0
        out[i] = s
    return out


WATCHED = ("rowsums",)
"""
    + COUNT_TWIN_COMPILES
    + """
if __name__ == "__main__":
    print(rowsums(np.ones((20, 30))).sum())
"""
)

IMPORTER = """
import numpy as np
import numba_lprun
from work import rowsums

numba_lprun.LineProfiler(rowsums, sample=False).runcall(rowsums, np.ones((20, 30)))
"""


def test_a_script_profiled_after_its_module_was_runs_its_body_once(tmp_path):
    """Numba's pickle of compiled code names the module to rebuild its environment from, and
    loading it imports that module by name. A twin cached where ``work.py`` was imported as
    ``work`` and found again by ``nlprun work.py`` (where it is ``__main__``) imported
    ``work``: the script's body ran twice and the table listed a second, never-called copy.
    A twin's key names its module, and loading never imports one."""
    (tmp_path / "work.py").write_text(IMPORTED_SCRIPT)
    (tmp_path / "importer.py").write_text(IMPORTER)
    env = dict(os.environ, NUMBA_LPRUN_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_LPRUN_CACHE", None)

    def run(*args):
        done = subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    imported = run("importer.py")  # caches rowsums's twins as compiled in module ``work``
    assert imported.count("BODY RAN") == 1 and "TWIN COMPILES 0" not in imported, imported
    outputs = [run("-m", "numba_lprun", "--compare-code", "work.py") for _ in range(2)]
    for out in outputs:
        assert out.count("BODY RAN") == 1, out
        assert out.count("Function:") == 1 and "1200.0" in out, out
    # the script's own plain twin is cached; its counting twin compiles, as rowsums does in a plain run
    assert "TWIN COMPILES 1" in outputs[1], outputs[1]
    # and the module's are still there: its plain twin loads (its counting twin compiles, as
    # rowsums itself would: it was not compiled before the profile)
    compiles = [
        int(n) for out in (imported, run("importer.py")) for n in re.findall(r"TWIN COMPILES (\d+)", out)
    ]
    assert compiles[1] < compiles[0], compiles


SIDE_EFFECTS = """
import warnings

import numpy as np
from numba import njit
from numba.typed import Dict


@njit
def plus_one(x):
    return x + 1


@njit
def lookup(k1, v1, k2):
    d = Dict()
    d[k1] = v1
    return d[k2] + plus_one(1)  # k2 is cast to k1's type unsafely: Numba warns as it compiles


with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    lookup((np.int8(1), np.int8(2)), np.intp(123), (np.int32(1), np.int32(2)))
unsafe = [w for w in seen if "unsafe cast" in str(w.message)]
print("WARNED", len(unsafe), "SIGNATURES", len(plus_one.signatures))
"""


def test_a_warm_twin_cache_leaves_a_compile_s_effects_to_the_program(tmp_path):
    """A function that is not ``cache=True`` compiles at its first call in every process: its
    warnings are the program's, and the functions it calls compile too (``f.signatures``, which
    a program and Numba's own tests read). Its counting twin, loaded from a warm twin cache, did
    neither (Numba's test_dictobject failed twice); it compiles now, as the function would."""
    script = tmp_path / "side_effects.py"
    script.write_text(SIDE_EFFECTS)
    env = dict(os.environ, NUMBA_LPRUN_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_LPRUN_CACHE", None)

    def said(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, *args, str(script)], capture_output=True, text=True, env=env, timeout=240
        )
        assert done.returncode == 0, done.stderr
        return next(line for line in done.stdout.splitlines() if line.startswith("WARNED"))

    plain = said()
    assert plain == "WARNED 1 SIGNATURES 1"
    for cache in ("empty", "warm"):
        assert said("-m", "numba_lprun", "--hits", "-f", "lookup", "-f", "plus_one") == plain, cache
