"""The user's run comes first: extra runs follow only where they are cheap enough and can change
nothing the user sees, and what they measure is said honestly (an overhead figure only from
enough plain runs of calls long enough to time; results that fastmath let differ, by how much)."""

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import numba_lprun
from numba_lprun.diagnose import diagnose
from numba_lprun.stats import Counts, Distortion, Measured, Probes, Source
from tests import run_order_kernels as K

ROOT = Path(__file__).resolve().parent.parent


def test_a_run_over_the_extra_limit_is_the_only_run():
    K.millis(K.ROOTS, 1)
    # compare_code: the vectorization note below needs the plain twin, which a one-run profile
    # otherwise compiles only if its compile is expected to be cheap (a loaded machine's is not)
    prof = numba_lprun.LineProfiler(K.millis, extra_limit=0.0, compare_code=True)
    assert prof.runcall(K.millis, K.ROOTS, 3) == K.millis(K.ROOTS, 3)
    profile = prof.profile
    assert "your run took" in profile.runs.once and "--extra-limit 0 s" in profile.runs.once
    (stats,) = profile.functions
    assert stats.distortion.overhead is None and profile.sampling.extra_runs == 0
    assert (
        "vectorized as the plain twin's did" in " ".join(n.text for n in stats.diagnosis.notes)
        or stats.distortion.lost_vectorization
    )


def test_a_short_run_gets_its_overhead_from_three_plain_runs_or_more():
    K.millis(K.ROOTS, 1)
    prof = numba_lprun.LineProfiler(K.millis, sample_time=0.2)
    prof.runcall(K.millis, K.ROOTS, 5)
    (stats,) = prof.profile.functions
    assert prof.profile.runs.once is None
    assert stats.distortion.overhead is not None and stats.distortion.spread is not None
    assert prof.profile.sampling.extra_runs >= 3


def test_one_plain_run_is_no_figure():
    """``sample_time=0`` allows the timed plain run only: one run is too few for a figure."""
    prof = numba_lprun.LineProfiler(K.millis, sample_time=0.0)
    prof.runcall(K.millis, K.ROOTS, 5)
    (stats,) = prof.profile.functions
    assert stats.distortion.overhead is None
    assert "one plain run only" in stats.distortion.unmeasured


def test_microsecond_calls_get_no_ratio():
    K.tiny(1.0)
    prof = numba_lprun.LineProfiler(K.tiny, sample_time=0.2)
    assert prof.runcall(K.tiny, 3.0) == 7.0
    (stats,) = prof.profile.functions
    assert stats.distortion.overhead is None
    assert "too short for the clock to compare" in stats.distortion.unmeasured
    assert not any("x the plain run" in n.text for n in stats.diagnosis.notes)


def test_fastmath_reduction_result_is_compared_with_the_plain_run():
    """The counters change how LLVM splits a fastmath ``prange`` reduction (measured: the last
    bits differ); the profile says by how much, against the plain twin (the unprofiled code)."""
    unprofiled = K.fast_log_sum(K.LOGS)
    prof = numba_lprun.LineProfiler(K.fast_log_sum, sample_time=0.05)
    mine = prof.runcall(K.fast_log_sum, K.LOGS)
    said = prof.profile.runs.results
    assert said is not None and "fastmath (fast_log_sum)" in said
    if mine == unprofiled:
        assert "bit for bit" in said
    else:
        shown = float(said.split("by up to ")[1].split(" ")[0])
        actual = abs(mine - unprofiled) / abs(unprofiled)
        assert np.isclose(shown, actual, rtol=0.1)
    once = numba_lprun.LineProfiler(K.fast_log_sum, repeat=False)
    once.runcall(K.fast_log_sum, K.LOGS)
    assert "may differ from an unprofiled run's" in once.profile.runs.results


FIRST_TOUCH = """
import numba_lprun
from tests import run_order_kernels as K
prof = numba_lprun.LineProfiler(K.fresh_arrays, sample_time=1.0, extra_limit=float("inf"))
prof.runcall(K.fresh_arrays, 1_000_000, 20)
(stats,) = prof.profile.functions
print(*(stats.distortion.page_faults or ("no figure:", stats.distortion.unmeasured)))
"""


def test_the_first_run_in_a_process_counts_the_fresh_memory_it_touched():
    """In a fresh process the user's run is the first to allocate the kernel's 8 MB arrays: it
    faults on fresh pages (one array's worth, 1,953 pages of 4 kB, and a few more: the sampler's
    records, fewer where a loaded machine lowers its rate; a CI run read 1,985, under the
    2,000 once asserted), the plain runs after it reuse them.

    glibc's allocator keeps a freed block of that size for the next one by its own heuristics
    (a dynamic mmap threshold), which once failed in a loaded suite: every array of every run
    faulted afresh ((45925, 39093)), as where the heap cannot grow in place. The process pins
    them (blocks under 32 MB from the heap, which is never trimmed below 1 GB), so the reuse the
    test relies on no longer depends on the address layout."""
    pinned = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
    done = subprocess.run(
        [sys.executable, "-c", FIRST_TOUCH],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
        env={**os.environ, **pinned},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    mine, plain = map(int, done.stdout.split()[:2])
    one_array = 1_000_000 * 8 // os.sysconf("SC_PAGESIZE")
    assert mine > 0.9 * one_array and plain < mine / 4, (mine, plain)


def _stats_with(overhead: float, faults: tuple[int, int] | None, lost=frozenset()) -> Measured:
    return Measured(
        source=Source("k.py", 1, "k", "k", ("def k():",)),
        counts=Counts(hits={2: 1}, calls=1, ticks=round(overhead * 1e6)),
        distortion=Distortion(
            overhead, plain_ticks=1e6, spread=(0.95, 1.05), page_faults=faults, lost_vectorization=lost
        ),
    )


def test_an_overhead_figure_a_first_touch_explains_is_a_caution_not_a_warning():
    """1.8x over a 1 ms plain run is 0.8 ms more: 3,980 fresh pages (40 ms at the dearest fault)
    can explain it; 230 are under the 1 MiB worth saying, and 600 against 400 each is no first
    touch. 49 ms more is more than 40 ms of faults, and a loop that lost SIMD keeps the warning."""
    unit = 1e-9
    explained = diagnose(_stats_with(1.8, (4000, 20)), unit).notes
    (said,) = [n for n in explained if "x the plain run" in n.text]
    assert said.level == "caution" and "16 MB of fresh memory" in said.text
    assert "not the counters" in said.text
    for faults in (None, (250, 20), (600, 400)):
        notes = diagnose(_stats_with(1.8, faults), unit).notes
        assert [n.level for n in notes if "x the plain run" in n.text] == ["warning"], faults
        assert all("fresh memory" not in n.text for n in notes), faults
    big = diagnose(_stats_with(50.0, (4000, 20)), unit).notes  # 49 ms: more than 40 ms of faults
    (said,) = [n for n in big if "x the plain run" in n.text]
    assert said.level == "warning" and "fresh memory" in said.text and "not by that alone" in said.text
    lost = diagnose(_stats_with(1.8, (4000, 20), frozenset({3})), unit).notes
    assert "warning" in [n.level for n in lost if "x the plain run" in n.text]


def test_probe_times_without_a_probed_run_figure_say_why():
    """A probed run that could not be compared with the plain runs leaves a note with the
    reason (it was silent: a table with probe times and no word on their distortion)."""
    why = "one plain run only, too few to tell the counters' cost from the machine's noise"
    base = _stats_with(1.0, None)
    distortion = replace(base.distortion, probe_unmeasured=why)
    stats = replace(base, probes=Probes(ticks={2: 500}, hits={2: 1}), distortion=distortion)
    texts = [n.text for n in diagnose(stats, 1e-9).notes]
    assert f"probed run not compared with the plain run: {why}" in texts
    measured = replace(stats, distortion=replace(distortion, probe_overhead=3.0))  # a figure: given, not why
    texts = [n.text for n in diagnose(measured, 1e-9).notes]
    assert any(t.startswith("probed run 3.00x") for t in texts)
    assert not any("not compared" in t for t in texts)


def _overhead_note(measured: Measured) -> str:
    (said,) = [n.text for n in diagnose(measured, 1e-9).notes if "plain run" in n.text]
    return said


def test_a_figure_below_1_reads_no_measurable_cost_never_a_speed_up():
    """Counters add work: the issue's "counting run 0.46x the plain run (plain runs:
    0.49-1.36x their median)" and 0.67x inside 0.61-2.20x are noise; 0.32x below a tight
    spread is a difference between the runs (here: fresh memory the plain runs touched); far
    below every plain run with nothing to explain it, the counting twin compiled to faster code."""
    cases = [(0.46, (0.49, 1.36), None), (0.67, (0.61, 2.20), None), (0.32, (0.95, 1.05), (20, 4000))]
    for ratio, spread, faults in cases:
        base = _stats_with(ratio, faults)
        said = _overhead_note(replace(base, distortion=replace(base.distortion, spread=spread)))
        assert said.startswith("counting run: no measurable cost"), said
        assert f"({ratio:.2f}x the plain runs' median, " in said, said
    assert "inside their own spread, 0.61-2.20x)" in _overhead_note(
        replace(_stats_with(0.67, None), distortion=Distortion(0.67, plain_ticks=1e6, spread=(0.61, 2.2)))
    )
    below = _overhead_note(
        replace(
            _stats_with(0.32, None), distortion=Distortion(0.32, 1e6, (0.95, 1.05), page_faults=(20, 4000))
        )
    )
    assert "below even the fastest of them, 0.95x: the runs differed" in below
    assert "4,000 page faults, yours 20" in below
    # far below every plain run, with no fresh memory to explain it: the twin ran other code (a
    # stencil's counting twin vectorized the loop nest its plain twin kept scalar: 0.23x)
    faster = _overhead_note(
        replace(_stats_with(0.23, None), distortion=Distortion(0.23, 1e6, (0.87, 1.2), page_faults=(20, 25)))
    )
    assert faster.startswith("counting run 0.23x the plain runs' median, far below even the fastest")
    assert "compiled to faster code than yours" in faster
    base = _stats_with(1.0, None)
    probed = replace(base, probes=Probes(ticks={2: 500}, hits={2: 1}))
    probed = replace(probed, distortion=replace(base.distortion, probe_overhead=0.8))
    texts = [n.text for n in diagnose(probed, 1e-9).notes]
    assert "probed run: no measurable cost (0.80x the plain run)" in texts


def test_plain_runs_that_paid_a_compile_or_fresh_memory_are_left_out_of_the_figure():
    """The timed plain run compiled (or faulted 5,000 fresh pages) and took 3x the repeats
    after it: the median is the repeats', and the note says one run was left out. With too
    few others left, every run stays (the spread shows it)."""
    from numba_lprun.run.measurements import COUNTING, PLAIN, Counted, FunctionCounts, compared

    key = ("k.py", 1, "k")
    user = Counted(COUNTING, True, {key: FunctionCounts(1, 110)}, faults=(10,))
    repeats = Counted(PLAIN, False, {key: FunctionCounts(3, 300, per_run=(100, 100, 100))}, 3, (5, 5, 5))
    for compiled, faults in ((True, 5), (False, 5000)):
        first = Counted(PLAIN, False, {key: FunctionCounts(1, 300, per_run=(300,))}, faults=(faults,))
        first = replace(first, compiled=compiled)
        got = compared([user, first, repeats], key, COUNTING, True)
        assert (got.baseline, got.left_out, got.highs) == (100, 1, (1.0,)), (compiled, got)
    two = Counted(PLAIN, False, {key: FunctionCounts(2, 200, per_run=(100, 100))}, 2, (5, 5))
    kept = compared([user, replace(first, compiled=True), two], key, COUNTING, True)
    assert (kept.baseline, kept.left_out) == (100, 0) and kept.highs == (3.0,)
    note = _overhead_note(
        replace(_stats_with(1.1, None), distortion=Distortion(1.1, 1e6, (1.0, 1.0), plain_left_out=1))
    )
    assert "one that paid a compile or fresh memory left out" in note


def test_a_helpers_time_is_its_samples_per_users_run_worth_of_calls_replays_included():
    """A helper whose calls are not timed gets its samples' CPU time: each sampled run's samples
    count for the user's runs' worth of calls it made (a replay of a quarter of the calls, a
    quarter), so a short user's run that none of the samples reached still reads the time its
    replays measured; two worker processes' runs read twice one's."""
    from numba_lprun.assemble import _sampled_seconds
    from numba_lprun.run.measurements import COUNTING, PLAIN, CallRecord, LineSamples, Sampled

    key = ("k.py", 1, "helper")
    sampled = LineSamples(counts={2: 40}, seconds={2: 0.02})
    user = Sampled(COUNTING, True, runs=1, worth=1.0)
    replays = Sampled(PLAIN, False, runs=40, worth=40 * 0.25, functions={key: sampled})
    assert _sampled_seconds(CallRecord((user, replays)), key) == pytest.approx(0.02 / 11)
    assert _sampled_seconds(CallRecord((replace(user, worth=2.0), replays)), key) == pytest.approx(0.04 / 12)
    alone = Sampled(COUNTING, True, runs=1, worth=0.0, functions={key: sampled})  # a profile saved before
    assert _sampled_seconds(CallRecord((alone,)), key) == pytest.approx(0.02)


def test_a_function_none_of_many_samples_reached_is_not_called_too_short_a_run():
    """A helper inlined into code without line tables (a ufunc's loops) counts its hits, but no
    sample lands on its lines however long the run: with a run's many samples elsewhere, the
    note says so and names the way out (profile the callers), and says "too short" only where
    the run itself got few samples."""
    from numba_lprun.stats_parts import SAMPLES

    base = _stats_with(1.0, None)
    stats = replace(base, counts=replace(base.counts, time_source=SAMPLES))
    (many,) = [n.text for n in diagnose(stats, 1e-9, run_samples=404).notes if "samples" in n.text]
    assert "none of the run's 404 samples" in many and "profile its callers too (-f)" in many
    (few,) = [n.text for n in diagnose(stats, 1e-9, run_samples=30).notes if "samples" in n.text]
    assert "the run was too short" in few


def test_vectorization_is_compared_on_a_functions_own_lines_only():
    """A parallel caller with its profiled helper inlined: a loop vectorized in the caller's code
    at a line of neither function (a blank line above both) was said to be vectorized in the
    counting build only. Each function's comparison keeps its own lines."""
    a = np.random.default_rng(1).random(10_001)
    prof = numba_lprun.LineProfiler(K.weighted_sum, K.weighted, compare_code=True, sample_time=0.05)
    assert prof.runcall(K.weighted_sum, a, 7) == pytest.approx(K.weighted_sum(a, 7))
    for stats in prof.profile.functions:
        own = range(stats.source.first_lineno, stats.source.first_lineno + len(stats.source.lines))
        said = stats.distortion.gained_vectorization | stats.distortion.lost_vectorization
        assert all(line in own for line in said), (stats.source.name, said)


def test_a_loop_the_counting_twin_vectorized_and_the_plain_one_did_not_is_a_warning():
    """The twins' machine code compared both ways: a stencil's counting twin vectorized its loop
    nest (code on line 0) where the plain code stayed scalar, and ran 2x faster than the
    program's; with no plain run to compare, the profile said "the counting twin's loops
    vectorized as the plain twin's did". Now it warns that the samples describe faster code,
    for a loop on a line and for one on none."""
    base = _stats_with(1.0, None)
    unmeasured = replace(base.distortion, overhead=None, plain_ticks=None, unmeasured="your run took 2 s")
    source = replace(base.source, compile_seconds={"plain": 0.1, "counting": 0.1})
    for gained, where in ((frozenset({3}), "the loop at line 3"), (frozenset({0}), "a stencil's loop nest")):
        stats = replace(base, source=source, distortion=replace(unmeasured, gained_vectorization=gained))
        notes = diagnose(stats, 1e-9).notes
        (warned,) = [n for n in notes if "faster code than yours" in n.text]
        assert warned.level == "warning" and where in warned.text
        assert not any("vectorized as the plain twin's did" in n.text for n in notes)
    plain = replace(base, source=source, distortion=unmeasured)
    assert any("vectorized as the plain twin's did" in n.text for n in diagnose(plain, 1e-9).notes)
