"""The sampled view through the profiler: where samples land, and what --no-sample leaves."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from numba import njit

import numba_lprun
from numba_lprun.sampling import Sampler


def sampling_works() -> bool:
    with Sampler(rate_hz=100) as probe:
        pass
    return probe.unavailable is None


pytestmark = pytest.mark.skipif(not sampling_works(), reason="native sampling unavailable here")


@njit
def libm_heavy(a):
    s = 0.0
    for i in range(a.size):
        s += a[i] * 0.5
    t = 0.0
    for i in range(a.size):
        t += np.exp(np.sin(a[i])) * np.cos(a[i])
    return s + t


def test_libm_line_gets_most_samples_and_disagreement_is_marked():
    a = np.random.default_rng(0).random(8_000_000)
    libm_heavy(a)
    prof = numba_lprun.LineProfiler(libm_heavy, sample_rate=2000)
    prof.runcall(libm_heavy, a)
    profile = prof.profile
    assert profile.sampling.unavailable is None and profile.sampling.total > 0
    (stats,) = profile.functions
    libm_line = libm_heavy.py_func.__code__.co_firstlineno + 7
    # the libm line is about 85% of the time (2,000 samples here): with 100 samples or more, a
    # share at or below 50% is 9.8 standard errors away (false failure below 1e-20)
    assert sum(stats.samples.counts.values()) >= 100
    assert stats.samples.share(libm_line) > 50.0
    assert max(stats.samples.seconds, key=stats.samples.seconds.get) == libm_line
    assert stats.counts.time_source == "samples" and stats.time_share(libm_line) == stats.samples.share(
        libm_line
    )


def test_no_sample_leaves_no_trace():
    before = signal.getsignal(signal.SIGPROF)
    a = np.random.default_rng(1).random(1000)
    libm_heavy(a)
    prof = numba_lprun.LineProfiler(libm_heavy, sample=False)
    prof.runcall(libm_heavy, a)
    profile = prof.profile
    assert profile.sampling is None
    (stats,) = profile.functions
    assert not stats.samples.counts and not stats.diagnosis.disagree and stats.counts.time_source == "probes"
    from numba_lprun.renderers import profile_html, profile_text

    assert "samples" not in profile_text(profile).lower() and "95% CI" not in profile_html(profile)
    assert signal.getsignal(signal.SIGPROF) is before


def test_once_samples_the_users_run_and_says_how_few():
    prof = numba_lprun.LineProfiler(libm_heavy, repeat=False)
    prof.runcall(libm_heavy, np.ones(10))
    profile = prof.profile
    assert profile.sampling.unavailable is None and profile.sampling.extra_runs == 0
    (stats,) = profile.functions
    # a 10-element call runs for microseconds: after a sample the next waits at least half a
    # period (62 us at the boosted 8 kHz) and as long as its handler took, so a handful at most.
    # Whole-suite runs once charged it 100 and 245: with periodic timers and walks dearer than
    # the period, signals queued behind each handler at the same pc (test_sampling, "outlast")
    assert stats.samples.total < 20 and any(n.level == "caution" for n in stats.diagnosis.notes)


def _printed_by(tmp_path, name: str, source: str, env: dict | None = None) -> list:
    """What the script ``source`` prints last, as JSON, run as ``name`` in a fresh interpreter
    with its own twin cache (``tmp_path``) and ``env``."""
    script = tmp_path / name
    script.write_text(source)
    env = {**os.environ, "NUMBA_LPRUN_CACHE_DIR": str(tmp_path), **(env or {})}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


FIRST_PROFILE = """
import json
import numpy as np, numba_lprun
from numba import njit
from numba_lprun.sampling import sampler

@njit
def kernel(n):
    acc = 0.0
    for i in range(n):
        acc += np.sqrt(i * 0.5)
    return acc

kernel(10)
assert not sampler.sampler_running()
prof = numba_lprun.LineProfiler(kernel, sample_rate=2000, repeat=False)
prof.runcall(kernel, 30_000_000)
s = prof.profile.sampling
print(json.dumps([s.unavailable, s.total, prof.profile.functions[0].samples.total]))
"""


def test_the_first_profile_with_a_cold_handler_cache_is_sampled(tmp_path):
    """The handler is compiled in the first sampler's start when Numba's cache lacks it (a new
    install, a new cache dir): that compile's end must not start a second sampler beside the
    first, whose refusal ('another Sampler is running') once dropped the run's samples."""
    cold = {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    unavailable, total, in_kernel = _printed_by(tmp_path, "first_profile.py", FIRST_PROFILE, cold)
    assert unavailable is None and in_kernel > 0, (unavailable, total, in_kernel)


TWIN_THAT_SORTS = """
import json, sys
import numpy as np
from numba import njit
import numba_lprun

parsed = []  # Numba's own source parsed whole (to find a subroutine's first line for its line table)
marker = "def array" + "_argsort("  # in numba/np/arrayobj.py (not spelled out: this file is parsed too)
sys.addaudithook(lambda event, args: event == "compile" and marker in str(args[0]) and parsed.append(args[1]))

@njit
def sorts(a, times):
    total = 0
    for _ in range(times):
        total += np.argsort(a)[0]
    return total

prof = numba_lprun.LineProfiler(sorts, repeat=False)
prof.runcall(sorts, np.random.default_rng(0).random(20_000), 300)
(stats,) = prof.profile.functions
line = sorts.py_func.__code__.co_firstlineno + 4
print(json.dumps([parsed, sum(stats.samples.counts.values()), stats.samples.share(line)]))
"""


def test_what_a_twin_compiles_as_numba_subroutines_carries_no_line_tables(tmp_path):
    """``np.argsort`` is compiled as a subroutine of Numba's own source with the caller's target
    context: a twin's gave it line tables, and Numba then parsed the whole of
    ``numba/np/arrayobj.py`` (7,000 lines, 0.17 s of a twin's compile) to find its first line.
    Its samples still charge the sorting line. (A fresh process: Numba keeps each subroutine once
    per process, whichever compile came first.)"""
    parsed, samples, share = _printed_by(tmp_path, "sorts.py", TWIN_THAT_SORTS)
    assert parsed == []
    # the sort is nearly all of the run (300 sorts of 20,000 numbers, about 0.6 s: some 1,200 samples
    # at 2,000 Hz); with 100 samples or more, a share at or below 50% is over 9 standard errors
    # away from 95% (false failure below 1e-19)
    assert samples >= 100 and share > 50.0, (samples, share)


FIRST_SHORT_RUN = """
import json
import numpy as np, numba_lprun
from numba import njit

@njit
def small(n):
    s = 0.0
    for i in range(n):
        s += i * 0.5
    return s

small(10)
prof = numba_lprun.LineProfiler(small, extra_limit=0.05)
prof.runcall(small, 100_000)
print(json.dumps([prof.profile.runs.once, prof.profile.sampling.total]))
"""


def test_a_runs_own_time_leaves_out_the_samplers_start(tmp_path):
    """The first sampler in a process reads the unwind tables of libc, libm and Numba's libraries
    (0.13 s from an empty cache, more on a busy machine) and loads its handler: that was counted
    as the user's run, so a 1 ms run "took" over ``extra_limit`` and got no plain run or sampled
    repeats (a CI run's corpus case had 38 samples of its 12,000). From an empty cache, the
    run's 0.1 ms or so stays far under a 0.05 s limit."""
    once, samples = _printed_by(tmp_path, "first_short_run.py", FIRST_SHORT_RUN)
    assert once is None or "your run took" not in once, once
    assert samples > 0


_MANY_IN_ONE_FILE = """
from numba import njit

@njit
def step(x):
    return x * 0.5 + 1.0

@njit
def first(n):
    s = 0.0
    for i in range(n):
        s += step(i)
    return s

@njit
def second(n):
    return first(n) + step(n)

@njit
def third(n):
    return second(n) - first(n)

@njit
def fourth(n):
    return third(n) * step(2.0)
"""


def test_each_librarys_object_code_is_parsed_once_for_all_the_functions_of_its_file(tmp_path, monkeypatch):
    """Where several profiled functions of one file call one another, each one's code may be
    inlined into every other's library, which is searched once per function: the library's
    ELF and DWARF are parsed once for them all. (Parsed once per function and library, 344
    functions of Numba's test_record_dtype took two minutes after the run; here five
    functions parsed 12 libraries 48 times.)"""
    from numba_lprun.sampling import dwarf

    path = tmp_path / "many_in_one_file.py"
    path.write_text(_MANY_IN_ONE_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import many_in_one_file as m

    parsed: list[bytes] = []
    parse = dwarf._host_code  # parses one library's ELF and DWARF for the inlined code it holds

    def counted(library, obj):
        parsed.append(obj)
        return parse(library, obj)

    monkeypatch.setattr(dwarf, "_host_code", counted)
    functions = [m.step, m.first, m.second, m.third, m.fourth]
    prof = numba_lprun.LineProfiler(*functions, sample_time=0.0)
    assert prof.runcall(m.fourth, 50) == m.fourth(50)
    assert {f.source.name: sum(f.counts.hits.values()) > 0 for f in prof.profile.functions} == dict.fromkeys(
        ["step", "first", "second", "third", "fourth"], True
    )
    assert parsed, "no library was searched for inlined code: the test premise is gone"
    parses, libraries = len(parsed), len(set(parsed))
    assert parses == libraries, f"{parses} parses of {libraries} libraries"
