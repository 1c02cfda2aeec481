"""The plain twin's machine code by line: instructions, samples, call names, hints, inlining."""

import inspect
import io
import json
import os
import re
import subprocess
import sys

import line_profiler
import numpy as np
import pytest

import numba_lprun
from numba_lprun.machine import CodeFacts, line_hints
from numba_lprun.sampling import Sampler, line_map
from tests import machine_kernels as K


def sampling_works() -> bool:
    with Sampler(rate_hz=100) as probe:
        pass
    return probe.unavailable is None


SAMPLING = sampling_works()
needs_samples = pytest.mark.skipif(not SAMPLING, reason="native sampling unavailable here")


def line_of(func, marker):
    source, first = inspect.getsourcelines(func.py_func)
    (line,) = [first + i for i, text in enumerate(source) if text.rstrip().endswith("# " + marker)]
    return line


def profiled(*funcs, args, **options):
    funcs[0](*args)
    prof = numba_lprun.LineProfiler(*funcs, sample_time=0.3, asm=True, **options)
    prof.runcall(funcs[0], *args)
    return prof, {s.source.name: s for s in prof.profile.functions}


def plain_where(prof):
    """(plain twin, file, first line, last line) of each profiled function, from the public API."""
    out = []
    for twin in prof.twins():
        if twin.kind == "plain":
            lines, first = inspect.getsourcelines(twin.original.py_func)
            out.append(
                (twin.dispatcher, twin.original.py_func.__code__.co_filename, first, first + len(lines) - 1)
            )
    return out


@pytest.fixture(scope="module")
def conv():
    x, k = np.random.default_rng(0).random(3000), np.random.default_rng(1).random(31)
    prof, stats = profiled(K.conv, args=(x, k))
    return stats["conv"], x.size - k.size + 1, prof


@pytest.fixture(scope="module")
def inlined():
    prof, stats = profiled(K.three_lines, K.spin, args=(4000, 1, 2, 3))
    where = plain_where(prof)
    hosts = [w[0] for w in where]
    spin_map = [line_map(*w, hosts=hosts) for w in where if w[0].py_func.__name__ == "spin"][0]
    stats["inlined into"] = {f.library for f in spin_map.functions}
    return stats


def test_hot_line_allocates_on_every_iteration_with_the_exact_count(conv):
    stats, n, _ = conv
    hot = line_of(K.conv, "HOT")
    code = stats.machine.lines[hot]
    assert code.allocations == n and code.executions == n
    assert any(c.startswith("NRT_MemInfo_alloc") for c in code.calls)
    said = [h.text for h in stats.machine.hints if h.kind == "alloc" and h.line == hot]
    assert said and f"allocates on each of its {n:,} executions" in said[0]
    assert stats.machine.lines[line_of(K.conv, "HOT") - 3].allocations == 1  # out = np.empty(n), once


@needs_samples
def test_instruction_samples_add_up_to_the_line(conv, inlined):
    for stats in (conv[0], inlined["three_lines"], inlined["spin"]):
        assert stats.samples.total > 0 and stats.machine.twin == "plain"
        for line, count in stats.machine.sample_counts.items():  # the samples of the plain twin's runs
            assert stats.machine.lines[line].samples == count, (stats.name, line)
        code = stats.machine
        assert sum(c.samples for c in code.lines.values()) == sum(code.sample_counts.values())


def test_packed_instructions_on_a_vectorized_loop_not_on_a_scalar_one():
    _, vec = profiled(K.sum_squares, args=(np.random.default_rng(2).random(50_000),))
    _, scalar = profiled(K.scalar_chain, args=(50_000,))
    body = line_of(K.sum_squares, "BODY")
    packed = {line for line, code in vec["sum_squares"].machine.lines.items() if code.packed}
    assert body in packed, {line: c.packed for line, c in vec["sum_squares"].machine.lines.items()}
    chain = scalar["scalar_chain"]
    assert not any(code.packed for code in chain.machine.lines.values())
    # the hint as said of the loop's line (which lines are hinted, the hottest by samples, is
    # the sampler's business: a loaded machine may leave this 50 us call a handful of samples)
    facts = CodeFacts(chain.machine.lines, chain.counts.hits, chain.counts.calls)
    said = line_hints(facts, line_of(K.scalar_chain, "BODY"))
    assert any(h.kind == "simd" and "scalar arithmetic only" in h.text for h in said), said


def test_a_line_calling_math_sin_names_the_libm_call():
    _, got = profiled(K.sines, args=(np.random.default_rng(3).random(20_000),))
    stats = got["sines"]
    code = stats.machine.lines[line_of(K.sines, "SIN")]
    assert "sin" in code.calls and "libm" in code.call_origins["sin"]
    assert (
        any(h.kind == "call" and "sin (libm" in h.text for h in stats.machine.hints)
        or not stats.machine.hints
    )


@needs_samples
def test_inlined_callee_gets_its_own_samples_and_the_caller_keeps_them(inlined):
    caller, callee = inlined["three_lines"], inlined["spin"]
    assert "three_lines" in inlined["inlined into"]  # LLVM did inline spin into the caller
    calling = {line_of(K.three_lines, m) for m in ("ONE", "TWO", "THREE")}
    loop = line_of(K.spin, "LOOP")
    assert callee.samples.total > 0.5 * caller.samples.total, (callee.samples.counts, caller.samples.counts)
    in_loop = callee.samples.counts.get(loop, 0) + callee.samples.counts.get(loop - 1, 0)  # body or header
    assert in_loop > 0.5 * callee.samples.total
    in_calls = sum(caller.samples.counts.get(line, 0) for line in calling)
    assert in_calls >= callee.samples.total  # every callee sample also counts on a calling line


@needs_samples
def test_a_helper_profiled_alone_is_sampled_inside_the_unprofiled_caller_that_inlined_it():
    """``-f spin`` alone, called from ``three_lines``, which is not profiled and into whose loop
    LLVM inlines it: the helper runs inside the caller's code (relinked to call its twins), so
    that code's line tables place its samples. Its relinked copy had none, and the profile read
    "none of the run's 1,875 samples landed in this function" beside exact hits. Failure odds:
    spin's loop is nearly all of the caller's time, so about 500 samples land there where it
    works; 0 where it does not."""
    args = (4000, 1, 2, 3)
    K.three_lines(*args)
    called = [line for llvm in K.three_lines.inspect_llvm().values() for line in llvm.splitlines()]
    assert not any(" call " in line and "spin" in line for line in called)  # LLVM inlined spin
    prof = numba_lprun.LineProfiler(K.spin, sample_time=0.3)
    assert prof.runcall(K.three_lines, *args) == K.three_lines(*args)
    (stats,) = prof.profile.functions
    loop = line_of(K.spin, "LOOP")
    assert stats.counts.hits[loop] == 4000 * 6 * 200
    in_loop = stats.samples.counts.get(loop, 0) + stats.samples.counts.get(loop - 1, 0)  # body or header
    assert stats.samples.total > 50 and in_loop > 0.5 * stats.samples.total
    assert not stats.counts.calls_timed and stats.counts.ticks > 0
    assert not any("none of the run's" in note.text for note in stats.diagnosis.notes)


@needs_samples
@pytest.mark.parametrize("with_caller", [True, False], ids=["with its caller", "alone"])
def test_a_helper_inlined_into_its_caller_keeps_the_samples_of_its_libm_calls(with_caller):
    """``wave`` calls libm's ``sin`` and ``cos`` in a loop; LLVM inlines it into ``waves`` and
    gives those calls no line (line 0) inside the inlined copy. The caller's map charged them
    to its calling line, the helper's to nothing: ``wave`` read 22 samples where ``waves``' call
    line had 384. They now take the helper's line before them, as in the helper's own code.
    Failure odds: the calls are nearly all of the time (about 600 samples where it works, a
    few percent of them where it does not)."""
    a = np.random.default_rng(0).random(20000)
    K.waves(a)
    called = [line for llvm in K.waves.inspect_llvm().values() for line in llvm.splitlines()]
    assert not any(" call " in line and "4wave" in line for line in called)  # LLVM inlined wave
    prof = numba_lprun.LineProfiler(K.wave, *([K.waves] if with_caller else []), sample_time=0.3)
    assert prof.runcall(K.waves, a) == K.waves(a)
    wave = prof.profile.functions[0]
    libm = line_of(K.wave, "LIBM")
    assert wave.samples.total > 100, wave.samples
    assert wave.samples.counts.get(libm, 0) > 0.7 * wave.samples.total, wave.samples.counts
    if with_caller:
        caller = prof.profile.functions[1]
        calling = caller.samples.counts.get(line_of(K.waves, "CALL"), 0)
        assert wave.samples.total > 0.9 * calling, (wave.samples.counts, caller.samples.counts)


INLINED_HELPER = """
import json
import numpy as np
from numba import njit
import numba_lprun


@njit(cache=True)
def helper(x):
    s = 0.0
    for k in range(40):
        s += np.sqrt(x + k)  # HOT
    return s


@njit(cache=True)
def caller(a):
    t = 0.0
    for i in range(a.size):
        t += helper(a[i])
    return t


a = np.random.default_rng(0).random(300_000)
caller(a)
seen = {}
for profiled in ((helper,), (helper, caller)):  # alone, then with its caller (its twin inlines it)
    prof = numba_lprun.LineProfiler(*profiled, sample_time=0.3, asm=True)
    prof.runcall(caller, a)
    stats = prof.profile.functions[0]
    seen[len(profiled)] = {"samples": stats.samples.total, "hits": sorted(stats.counts.hits.items()),
                           "code": sorted(stats.machine.lines), "why": stats.machine.unavailable}
print(json.dumps(seen))
"""


@needs_samples
def test_a_helper_inlined_into_a_relinked_caller_from_a_warm_cache_keeps_its_samples(tmp_path):
    """``helper`` profiled alone runs inlined in its unprofiled caller's relinked copy. Loaded
    from a warm twin cache, that copy brings the helper's code inside it, and the helper's own
    twin never compiles (both are ``cache=True``: a function that is not compiles its counting
    twin in every process, as its own plain run would): its line map stopped at "nothing
    compiled yet" before reading the caller's code, and the profile read "none of the run's
    samples landed in this function". So did the helper profiled with its caller, whose twin,
    loaded from the cache, inlines the helper's.
    Failure odds: the helper's loop is nearly all of the caller's time (hundreds of samples
    where it works; 0 where it does not)."""
    path = tmp_path / "inlined.py"
    path.write_text(INLINED_HELPER)
    env = dict(
        os.environ, NUMBA_LPRUN_CACHE_DIR=str(tmp_path / "cache"), NUMBA_CACHE_DIR=str(tmp_path / "own")
    )
    env.pop("NUMBA_LPRUN_CACHE", None)
    runs = []
    for _ in range(2):
        command = [sys.executable, str(path)]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    for profiled in ("1", "2"):  # the helper alone, then with its caller
        cold, warm = (run[profiled] for run in runs)
        assert warm["hits"] == cold["hits"]
        for run in (cold, warm):
            assert run["samples"] > 50, (profiled, run)
            assert run["why"] is None and run["code"], (profiled, runs)  # the machine code view, by line


def test_no_code_is_charged_to_the_def_line(conv):
    """LLVM puts a function's prologue on the ``def`` line, which never holds a hit: that code,
    and the samples landing in it, go to the body's lines (a gufunc's prologue, run per chunk,
    put a sample on a parallel function's ``def`` line)."""
    stats, _, _ = conv
    lines, first = inspect.getsourcelines(K.conv.py_func)
    body = first + next(i for i, text in enumerate(lines) if text.lstrip().startswith("def ")) + 1
    assert stats.machine.lines and min(stats.machine.lines) >= body, sorted(stats.machine.lines)


def test_a_line_without_code_says_so(conv):
    stats, _, _ = conv
    from numba_lprun.machine import line_hints

    lines = [line for line in stats.counts.hits if line not in stats.machine.lines]
    for line in lines:
        assert line_hints(stats, line)[0].kind == "no-code"


def test_text_and_rich_show_hints_and_the_hot_lines_instructions(conv):
    from numba_lprun.renderers import print_profile, profile_text

    stats, n, prof = conv
    hot = line_of(K.conv, "HOT")
    # the hot line is among the hottest three (the loop's header may outrank it on a loaded machine)
    text = profile_text(prof.profile, asm_lines=3, width=0)
    assert f"hint: line {hot} allocates on each of its {n:,} executions" in text
    assert f"line {hot} (" in text and "-> NRT_MemInfo_alloc_aligned (Numba's runtime)" in text
    assert "hint:" not in profile_text(numba_lprun.LineProfiler(K.conv, sample=False).profile)
    out = io.StringIO()
    print_profile(prof.profile, file=out, width=100, asm_lines=3)
    assert "hint: line" in out.getvalue() and "NRT_MemInfo_alloc_aligned" in out.getvalue()
    assert all(len(line) <= 100 for line in out.getvalue().splitlines())


def test_html_expands_every_line_with_code_to_its_instructions(conv):
    from numba_lprun.renderers import profile_html

    stats, _, prof = conv
    page = profile_html(prof.profile, page=True)
    listed = [c for c in stats.machine.lines.values() if c.instructions]
    assert page.count('<details class="asm">') == len(listed)
    assert "NRT_MemInfo_alloc_aligned" in page and "allocates on each of its" in page
    assert "<script" not in page


def test_prange_body_code_is_attributed_to_its_line():
    _, got = profiled(K.par_roots, args=(np.random.default_rng(4).random(200_000), 20))
    stats = got["par_roots"]
    body = line_of(K.par_roots, "BODY")
    assert stats.machine.unavailable is None
    code = stats.machine.lines[body]
    assert "sin" in code.calls  # the gufunc's call of libm, on the body's own line
    assert any(c.calls and "numba_parallel_for" in c.calls for c in stats.machine.lines.values())
    for line, count in stats.machine.sample_counts.items():
        assert stats.machine.lines[line].samples == count


def test_off_by_default_and_on_demand():
    a = np.random.default_rng(5).random(1000)
    K.sum_squares(a)
    prof = numba_lprun.LineProfiler(K.sum_squares, sample=False)
    prof.runcall(K.sum_squares, a)
    (stats,) = prof.profile.functions
    assert not stats.machine.lines and not stats.machine.hints
    assert all(twin.kind != "plain" or twin.compiled for twin in prof.twins())
    assert not any("allocations" in said for said in prof.profile.runs.extra)  # no counted run


def test_asm_option_in_the_magic_and_the_command_line(ipshell, capsys):
    """--asm N, parsed by the shared options: hints and the N hottest lines' instructions."""
    x, k = np.random.default_rng(0).random(3000), np.random.default_rng(1).random(31)
    ipshell.user_ns.update(conv=K.conv, x=x, k=k)
    try:
        capsys.readouterr()
        ipshell.run_line_magic("nlprun", "--asm 1 --sample-time 0.2 -f conv y = conv(x, k)")
        out = capsys.readouterr().out
    finally:
        for name in ("conv", "x", "k", "y"):
            ipshell.user_ns.pop(name, None)
    assert "allocates on each of its 2,970 executions" in out
    assert out.count("instructions,") == 1  # one listed line, with its instruction count
    from numba_lprun.options import CLI, optional_value_flags

    assert "--asm" in optional_value_flags(CLI)


def test_a_hits_only_profile_reads_no_clock():
    """``--hits`` shows no times, so its twins read no clock, not even at each call's entry and
    exit: a helper LLVM inlines into a hot loop would pay two clock reads and an atomic update
    per call (Black-Scholes' normal-CDF helper cost 1.44x for that, benchmarks/counting_cost.py).
    Calls are counted with the hits instead, exactly."""
    from numba_lprun.instrument.clock import current_clock
    from numba_lprun.run.targets import cached_target
    from tests import kernels

    a = np.arange(1.0, 9.0)
    prof = numba_lprun.LineProfiler(kernels.uses_helpers, kernels.helper, timing=False)
    assert prof.runcall(kernels.uses_helpers, a) == kernels.uses_helpers(a)
    calls = {f.source.name: f.counts.calls for f in prof.profile.functions}
    assert calls == {"uses_helpers": 1, "helper": a.size}
    clock = current_clock().kind
    for func in (kernels.uses_helpers, kernels.helper):
        twin = cached_target(func, clock).twins["counting"]
        code = "\n".join(twin.dispatcher.inspect_asm().values())
        assert "rdtsc" not in code and "clock_gettime" not in code, func.__name__


def test_a_helper_called_from_jitted_code_reads_no_clock_when_sampled():
    """A sampled profile times the caller's calls (its Total time) but not a helper's that other
    jitted code calls: its twins (counting and plain) read no clock, its calls are counted
    exactly with its hits, its time is its samples', and it has no overhead figure of its own,
    with the reason given (its caller's figure includes it)."""
    from numba_lprun.instrument.clock import current_clock
    from numba_lprun.instrument.counter_slots import SYMBOL_PREFIX
    from numba_lprun.run.targets import cached_target
    from tests import kernels

    a = np.arange(1.0, 9.0)
    prof = numba_lprun.LineProfiler(kernels.uses_helpers, kernels.helper, sample_time=0.05)
    assert prof.runcall(kernels.uses_helpers, a) == kernels.uses_helpers(a)
    stats = {f.source.name: f for f in prof.profile.functions}
    assert stats["helper"].counts.calls == a.size and stats["uses_helpers"].counts.calls == 1
    assert not stats["helper"].counts.calls_timed and stats["uses_helpers"].counts.calls_timed
    assert (
        stats["helper"].distortion.overhead is None and "not timed" in stats["helper"].distortion.unmeasured
    )
    assert stats["uses_helpers"].counts.ticks > 0
    clock = current_clock().kind
    for kind in ("counting", "plain"):
        twin = cached_target(kernels.helper, clock).twins[kind]
        code = "\n".join(twin.dispatcher.inspect_asm().values())
        assert "rdtsc" not in code and "clock_gettime" not in code, kind
        # the plain twin of a helper is its original's code: its calls were counted for nothing, a
        # count in every loop it is inlined into, and a flush with the inline hint it takes
        llvm = "\n".join(twin.dispatcher.inspect_llvm().values())
        assert (SYMBOL_PREFIX in llvm, "inlinehint" in llvm) == (
            (True, True) if kind == "counting" else (False, False)
        )
    text = io.StringIO()
    prof.print_stats(stream=text)
    assert "(its samples' CPU time; calls are not timed)" in text.getvalue()


def test_a_recursive_functions_time_is_its_samples_not_its_nested_calls_added():
    """Each call of ``fib`` timed from entry to exit counted every inner call's time again in each
    call around it: ``fib(18)``, a 20 us call, read 2.2 ms, spread over its lines by their samples
    (150 ns a hit on ``if n < 2``). A function that calls itself is timed as a helper is: its
    twins read no clock, its time is its samples' CPU time."""
    import timeit

    from numba_lprun.instrument.clock import current_clock
    from numba_lprun.run.targets import cached_target
    from tests import kernels

    assert kernels.fib(18) == 2584
    plain = min(timeit.repeat(lambda: kernels.fib(18), number=20, repeat=5)) / 20
    prof = numba_lprun.LineProfiler(kernels.fib, sample_time=0.3)
    assert prof.runcall(kernels.fib, 18) == 2584
    (stats,) = prof.profile.functions
    assert stats.counts.calls == 8361 and not stats.counts.calls_timed
    assert "recursive function" in stats.distortion.unmeasured
    for kind in ("counting", "plain"):
        twin = cached_target(kernels.fib, current_clock().kind).twins[kind]
        code = "\n".join(twin.dispatcher.inspect_asm().values())
        assert "rdtsc" not in code and "clock_gettime" not in code, kind
    # the nested calls added made it about 100x; samples' CPU time (not wall time, so a busy
    # machine does not inflate it) of a 0.3 s sampled run lands within a few percent of the
    # call: 10x the plain call's best of 5 is far outside what chance can reach
    assert 0 < stats.total_ticks() * prof.profile.unit < 10 * plain


def test_a_counting_twin_folds_a_two_armed_if_where_the_plain_code_does():
    """Each arm of the Collatz step counts its line in the counting twin; the plain code turns
    the ``if``/``else`` into a conditional move, and so must the twin (``instrument.
    branch_budget``), or it branches on the parity, mispredicted about every other step (it ran
    1.7-2.2x the plain loop). The hits stay line_profiler's."""
    import platform

    from llvmlite import binding as ll

    from numba_lprun.instrument.clock import current_clock
    from numba_lprun.run.targets import cached_target
    from tests.conftest import hits_of, own_machine_code, reference_hits

    prof = numba_lprun.LineProfiler(K.collatz_steps, timing=False)
    assert prof.runcall(K.collatz_steps, 60) == K.collatz_steps(60) == K.collatz_steps.py_func(60)
    assert hits_of(prof.get_stats(), "collatz_steps") == reference_hits(K.collatz_steps, 60)
    if ll.llvm_version_info < (20,) or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("checked where LLVM 20 or newer writes x86 code (LLVM 15 folds neither)")
    twin = cached_target(K.collatz_steps, current_clock().kind).twins["counting"]
    # the step's select on the parity, unrolled on some CPUs (Intel's: 2 of them, AMD's Zen 2: 1), is
    # a move on (not) equal; range()'s clamp of its trip count, a move on greater, is left out: it is
    # there or not whatever the if became, so the twin's could stand in for a select it lost
    selects = re.compile(r"\tcmovn?e")
    plain_moves = len(selects.findall(own_machine_code(K.collatz_steps)))
    assert plain_moves >= 1 and len(selects.findall(own_machine_code(twin.dispatcher))) >= plain_moves


def test_a_counting_twin_tests_the_collatz_parity_bit_as_the_plain_code_does():
    """The odd arm's count is the parity bit itself (``k & 1``, the ``and`` the select's compare
    tests): sharing it, the twin computed the bit into a register and tested that, a step more
    per iteration on the loop's critical path than the plain code's ``test $1, k`` (1.28x the
    plain loop on a Zen 2 CPU). The count now takes a bit of its own
    (``instrument.select_compares``), and the twin tests the bit as the plain code does."""
    import platform

    from numba_lprun.instrument.clock import current_clock
    from numba_lprun.run.targets import cached_target
    from tests.conftest import hits_of, own_machine_code, reference_hits

    prof = numba_lprun.LineProfiler(K.collatz_steps, timing=False)
    assert prof.runcall(K.collatz_steps, 70) == K.collatz_steps(70) == K.collatz_steps.py_func(70)
    assert hits_of(prof.get_stats(), "collatz_steps") == reference_hits(K.collatz_steps, 70)
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the bit tests counted are x86 instructions")
    twin = cached_target(K.collatz_steps, current_clock().kind).twins["counting"]
    bit_tests = re.compile(r"\ttest[bwlq]\s+\$1,")
    plain_tests = len(bit_tests.findall(own_machine_code(K.collatz_steps)))
    assert plain_tests >= 1 and len(bit_tests.findall(own_machine_code(twin.dispatcher))) >= plain_tests


def _unit_adds_beside_selects(ir: str) -> int:
    """The ``add ..., 1`` instructions in the blocks of ``ir`` (LLVM IR) that hold a select."""
    blocks = re.split(r"\n(?=[-\w$.]+:)", ir)
    return sum(len(re.findall(r"= add [a-z ]*i\d+ %[-\w$.]+, 1\b", b)) for b in blocks if " = select " in b)


def test_a_count_the_program_keeps_itself_is_read_from_the_programs_value():
    """The Collatz loop's iteration count is the program's own ``total += 1``: the twin reads it
    (``instrument.congruent_counts``) instead of adding 1 to a count of its own beside it on
    every step. Hits stay line_profiler's where the program's counts start elsewhere, count
    one arm, break, or raise part-way."""
    import llvmlite.binding as ll

    from numba_lprun.instrument.clock import current_clock
    from numba_lprun.run.targets import cached_target
    from tests.conftest import hits_of, reference_hits

    prof = numba_lprun.LineProfiler(K.collatz_steps, timing=False)
    assert prof.runcall(K.collatz_steps, 50) == K.collatz_steps.py_func(50)
    assert hits_of(prof.get_stats(), "collatz_steps") == reference_hits(K.collatz_steps, 50)
    K.collatz_steps(50)
    twin = cached_target(K.collatz_steps, current_clock().kind).twins["counting"]
    plain_adds = _unit_adds_beside_selects("\n".join(K.collatz_steps.inspect_llvm().values()))
    assert plain_adds >= 1 or ll.llvm_version_info < (20,)  # the step a select (LLVM 15 keeps a branch)
    if plain_adds:
        assert _unit_adds_beside_selects("\n".join(twin.dispatcher.inspect_llvm().values())) == plain_adds

    # on LLVM 22 the odd arm's count is read from ``odd`` (five values; read by hand); no count
    # equals ``taken`` (the lines after the break's test miss the iteration that breaks): the exits
    # are where a merged count could go wrong
    values = np.array([7, 12, 27, 1, 5])
    for stop in (0, 16):  # runs through; breaks on the first value
        prof = numba_lprun.LineProfiler(K.kept_counts, timing=False)
        assert prof.runcall(K.kept_counts, values, stop) == K.kept_counts.py_func(values, stop)
        assert hits_of(prof.get_stats(), "kept_counts") == reference_hits(K.kept_counts, values, stop)
    bad = np.array([6, -5, 3])  # the second value's first step raises
    with pytest.raises(ValueError, match="a negative step"):
        K.kept_counts.py_func(bad, 0)
    prof = numba_lprun.LineProfiler(K.kept_counts, timing=False)
    with pytest.raises(ValueError, match="a negative step"):
        prof.runcall(K.kept_counts, bad, 0)
    expected = line_profiler.LineProfiler(K.kept_counts.py_func)
    with pytest.raises(ValueError, match="a negative step"):
        expected.runcall(K.kept_counts.py_func, bad, 0)
    assert hits_of(prof.get_stats(), "kept_counts") == hits_of(expected.get_stats(), "kept_counts")


_KEPT_COUNT = """define i64 @f(i64 %n) {
entry:
  br label %loop

loop:
  %total = phi i64 [ 0, %entry ], [ %total.next, %loop ]
  %nlp.fields.sroa.1 = phi i64 [ 0, %entry ], [ %count.next, %loop ]
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %total.next = add nsw i64 %total, 1
  %count.next = add i64 %nlp.fields.sroa.1, 1
  %i.next = add i64 %i, 3
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %nlp.fields.sroa.1.lcssa = phi i64 [ %count.next, %loop ]
  %total.lcssa = phi i64 [ %total.next, %loop ]
  store i64 %nlp.fields.sroa.1.lcssa, ptr getelementptr (i8, ptr @_nlp_ctr_t, i64 16)
  ret i64 %total.lcssa
}"""


def test_a_count_is_merged_only_with_a_value_equal_on_every_path():
    """The merge itself: a count of the loop's iterations read from the program's own count; not
    where the two start apart, step apart, or start from an undefined value."""
    from numba_lprun.instrument.congruent_counts import merge_congruent_counts

    text, merged = merge_congruent_counts(_KEPT_COUNT)
    assert merged == 3  # the loop's phi, its add, the exit's phi
    assert "nlp.fields" not in text and "%count.next" not in text
    assert "  store i64 %total.lcssa, ptr getelementptr (i8, ptr @_nlp_ctr_t, i64 16)" in text
    assert "  %total.next = add nsw i64 %total, 1" in text and "  %i.next = add i64 %i, 3" in text
    # the count's add before the program's in their block: merged, unless it is read between
    count_first = _KEPT_COUNT.replace(
        "  %total.next = add nsw i64 %total, 1\n  %count.next = add i64 %nlp.fields.sroa.1, 1",
        "  %count.next = add i64 %nlp.fields.sroa.1, 1\n  %total.next = add nsw i64 %total, 1",
    )
    assert count_first != _KEPT_COUNT and merge_congruent_counts(count_first)[1] == 3
    read_between = count_first.replace(
        "  %total.next = add",
        "  %twice = mul i64 %count.next, 2\n  store i64 %twice, ptr @_nlp_ctr_t\n  %total.next = add",
    )
    assert merge_congruent_counts(read_between) == (read_between, 0)
    both_undefined = [("[ 0, %entry ], [ %total", "[ undef, %entry ], [ %total")]
    both_undefined.append(("[ 0, %entry ], [ %count", "[ undef, %entry ], [ %count"))
    for apart in (
        [("[ 0, %entry ], [ %count.next", "[ 1, %entry ], [ %count.next")],  # starts at 1
        [("add i64 %nlp.fields.sroa.1, 1", "add i64 %nlp.fields.sroa.1, 2")],  # steps by 2
        both_undefined,
    ):
        other = _KEPT_COUNT
        for old, new in apart:
            assert old in other
            other = other.replace(old, new)
        assert merge_congruent_counts(other) == (other, 0)
    # a count the program reads, or one a value the program reads is computed from, keeps its
    # own instructions (were the congruence wrong, only counts could be): its loop's exit test,
    # a store to the user's memory, a call; a flush to the counters through an address made of
    # the symbol, or an atomic add there, is not a read
    for read in (
        ("  %done = icmp eq i64 %i.next, %n", "  %done = icmp eq i64 %count.next, %n"),
        (
            "  store i64 %nlp.fields.sroa.1.lcssa, ptr getelementptr",
            "  store i64 %nlp.fields.sroa.1.lcssa, ptr %n.p\n  store i64 0, ptr getelementptr",
        ),
        ("  ret i64 %total.lcssa", "  call void @g(i64 %nlp.fields.sroa.1.lcssa)\n  ret i64 %total.lcssa"),
        (
            "  ret i64 %total.lcssa",
            "  %twice = shl i64 %count.next, 1\n  call void @g(i64 %twice)\n  ret i64 %total.lcssa",
        ),
    ):
        other = _KEPT_COUNT.replace(*read).replace("i64 %n)", "i64 %n, ptr %n.p)")
        text = merge_congruent_counts(other)[0]
        assert other != _KEPT_COUNT and read[1] in text  # the read, as it was
        assert "  %count.next = add i64 %nlp.fields.sroa.1, 1" in text
        assert "  %nlp.fields.sroa.1 = phi i64 [ 0, %entry ], [ %count.next, %loop ]" in text
    for flush in (
        "  %cell = getelementptr inbounds i64, ptr @_nlp_ctr_t, i64 %stripe\n"
        "  store i64 %nlp.fields.sroa.1.lcssa, ptr %cell",
        "  %old = atomicrmw add ptr @_nlp_ctr_t, i64 %nlp.fields.sroa.1.lcssa monotonic, align 8",
        "  store i64 %nlp.fields.sroa.1.lcssa, ptr %nlp.spill\n  call void @nlp.flush(ptr %nlp.spill)",
    ):
        other = _KEPT_COUNT.replace(
            "  store i64 %nlp.fields.sroa.1.lcssa, ptr getelementptr (i8, ptr @_nlp_ctr_t, i64 16)", flush
        )
        assert other != _KEPT_COUNT and merge_congruent_counts(other)[1] == 3, flush


def _packed_ops_of(asm: str, symbol: str) -> int | None:
    """Packed arithmetic instructions in ``symbol``'s code in ``asm`` (None: not defined there)."""
    start = asm.find(f"\n{symbol}:")
    if start < 0:
        return None
    section = asm[start : asm.find(".Lfunc_end", start)]
    return len(re.findall(r"\tv?(?:add|sub|mul|div)p[sd]\t", section))


def test_a_callee_the_program_runs_as_a_slower_build_than_the_twins_copy_is_a_warning():
    """A ``@stencil``'s loop nest, called from a jitted function: Numba compiles it on its own
    (scalar, here), links it into the caller, where LLVM optimizes the copy again (vectorized,
    here), and the program's call reaches the first compile; the twins run their copy. The
    profile warns exactly when the two builds' machine code differs so."""
    from numba_lprun.internals import linked_libraries
    from tests.conftest import hits_of, reference_hits

    grid = np.random.default_rng(3).random((64, 64))
    assert np.array_equal(K.relax(grid, 3), K.relax.py_func(grid, 3))
    (cres,) = K.relax.overloads.values()
    own = cres.library.get_asm_str()
    (symbol,) = set(re.findall(r"^(_ZN5numba8stencils\S*):$", own, re.MULTILINE))
    builds = [_packed_ops_of(lib.get_asm_str(), symbol) for lib in linked_libraries(cres.library)]
    (first_build,) = [n for n in builds if n is not None]
    slower = first_build == 0 and _packed_ops_of(own, symbol) > 0

    prof = numba_lprun.LineProfiler(K.relax, timing=False)  # a fact of the code: said with hits only too
    assert np.array_equal(prof.runcall(K.relax, grid, 3), K.relax.py_func(grid, 3))
    (stats,) = prof.profile.functions
    assert hits_of(prof.get_stats(), "relax") == reference_hits(K.relax, grid, 3)
    assert stats.distortion.faster_callees == ({"a @stencil's loop nest"} if slower else set())
    text = io.StringIO()
    prof.print_stats(stream=text)
    assert ("runs a @stencil's loop nest as Numba compiled it on its own" in text.getvalue()) == slower

    # a function first called in the profile (a script's): its original never compiled, so its
    # user's twin is read instead, whose callees compiled as the original's would
    assert not K.relax_first.overloads
    prof = numba_lprun.LineProfiler(K.relax_first, timing=False)
    assert np.array_equal(prof.runcall(K.relax_first, grid, 3), K.relax.py_func(grid, 3))
    assert not K.relax_first.overloads
    assert prof.profile.functions[0].distortion.faster_callees == stats.distortion.faster_callees


def test_a_numba_symbol_reads_as_its_dotted_name():
    from numba_lprun.vectorized import readable_symbol

    assert readable_symbol("_ZN8__main__6helperB2v1B38c8tJTIeFIjxB2IKSgI4E5ArrayIdLi2E") == "__main__.helper"
    assert readable_symbol("_ZN13_3cdynamic_3e5relaxB3v24E5ArrayIdLi2E") == "<dynamic>.relax"
    stencil = "_ZN5numba8stencils7stencil32__numba_stencil_0x7f8177d43690_0B2v3E5ArrayIdLi2E1C"
    assert readable_symbol(stencil) == "a @stencil's loop nest"
    assert readable_symbol("NRT_decref") == "NRT_decref"


_SHARED_BIT = """define i64 @f(i64 %k, i64 %n) {
entry:
  br label %loop
loop:
  %nlp.fields.sroa.21.1 = phi i64 [ 0, %entry ], [ %nlp.fields.sroa.21.3, %loop ]
  %0 = and i64 %k, 1, !dbg !13
  %c = icmp eq i64 %0, 0, !dbg !13
  %h = ashr i64 %k, 1
  %v = select i1 %c, i64 %h, i64 %n, !dbg !13
  %nlp.fields.sroa.21.3 = add i64 %0, %nlp.fields.sroa.21.1, !dbg !13
  br i1 %c, label %loop, label %out
out:
  ret i64 %nlp.fields.sroa.21.3
}"""


def test_a_count_gets_its_own_bit_only_where_the_others_are_selects_tests():
    """The rewrite itself: a count's ``and`` becomes one of an opaque copy of the same value,
    the select's compare keeping the first to itself; an ``and`` that anything but counts and
    the zero tests of selects use is left as it is."""
    from numba_lprun.instrument.select_compares import own_select_compares

    selects_only = _SHARED_BIT.replace("  br i1 %c, label %loop, label %out", "  br label %loop")
    text, copied = own_select_compares(selects_only)
    assert copied == 1
    lines = text.split("\n")
    at = lines.index("  %0 = and i64 %k, 1, !dbg !13")
    assert lines[at + 1] == '  %nlp.own.bit.0.of = call i64 asm "", "=r,0"(i64 %k), !dbg !13'
    assert lines[at + 2] == "  %nlp.own.bit.0 = and i64 %nlp.own.bit.0.of, 1, !dbg !13"
    assert "  %nlp.fields.sroa.21.3 = add i64 %nlp.own.bit.0, %nlp.fields.sroa.21.1, !dbg !13" in lines
    assert "  %c = icmp eq i64 %0, 0, !dbg !13" in lines
    # the zero test a branch uses too, an and the program adds, an and no select tests: unchanged
    program_add = selects_only.replace("%nlp.fields.sroa.21.3 = add", "%sum = add")
    untested = selects_only.replace("select i1 %c,", "select i1 true,")
    wide = selects_only.replace("i64", "i128")  # no register holds it: asm's "r" cannot take it
    for unchanged in (_SHARED_BIT, program_add, untested, wide):
        assert own_select_compares(unchanged) == (unchanged, 0)


def _selects_in(code: str) -> int:
    """x86 selects of floating-point values: AVX-512 masked moves and blends."""
    return code.count("{%k") + code.count("\tvblendv") + code.count("\tblendv")


def test_a_counting_twin_branches_around_a_division_where_the_plain_code_does():
    """A helper that returns early outside its support, then divides, called in a loop: the
    plain code branches around the division (LLVM's code generation turns the select back into
    a branch), and so must the twin, whose arms count their lines on the select's compare
    (``instrument.select_compares``); it divided for every point and kept the result with a
    masked move (1.4x the plain loop). The hits stay line_profiler's."""
    import platform

    from numba_lprun.instrument.clock import current_clock
    from numba_lprun.run.targets import cached_target
    from tests.conftest import hits_of, own_machine_code, reference_hits

    points = np.random.default_rng(7).random(400)
    prof = numba_lprun.LineProfiler(K.density_at, K.epanechnikov, timing=False)
    assert prof.runcall(K.density_at, 0.5, points, 0.1) == K.density_at.py_func(0.5, points, 0.1)
    stats = prof.get_stats()
    assert hits_of(stats, "density_at") == reference_hits(K.density_at, 0.5, points, 0.1)
    source, first = inspect.getsourcelines(K.epanechnikov.py_func)
    outside, inside = (first + i for i, text in enumerate(source) if text.lstrip().startswith("return"))
    helper = hits_of(stats, "epanechnikov")
    assert helper[outside] == np.sum(np.abs((0.5 - points) / 0.1) >= 1.0)
    assert helper[inside] + helper[outside] == points.size
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the selects counted are x86 instructions")
    K.density_at(0.5, points, 0.1)
    twin = cached_target(K.density_at, current_clock().kind).twins["counting"]
    assert _selects_in(own_machine_code(twin.dispatcher)) <= _selects_in(own_machine_code(K.density_at))


_SHARED = """define double @f(double %x, i64 %n) {
entry:
  %c = fcmp ult double %x, 1.000000e+00, !dbg !7
  %d = fdiv double %x, 3.000000e+00
  %v = select nnan i1 %c, double %d, double 0.000000e+00, !dbg !7
  %k = zext i1 %c to i64
  %not = xor i1 %c, true
  %k2 = zext i1 %not to i64
  %s = add i64 %k, %k2
  ret double %v
}"""


def test_a_select_gets_its_own_compare_only_where_the_others_are_counts():
    """The rewrite itself: the select's condition becomes a copy of the compare, placed after it;
    a compare that a branch, an ``and`` or a negation used otherwise keeps its one use list."""
    from numba_lprun.instrument.select_compares import own_select_compares

    text, copied = own_select_compares(_SHARED)
    assert copied == 1
    lines = text.split("\n")
    at = lines.index("  %c = fcmp ult double %x, 1.000000e+00, !dbg !7")
    assert lines[at + 1] == "  %nlp.own.cmp.0 = fcmp ult double %x, 1.000000e+00, !dbg !7"
    assert "  %v = select nnan i1 %nlp.own.cmp.0, double %d, double 0.000000e+00, !dbg !7" in lines
    assert "  %k = zext i1 %c to i64" in lines and "  %not = xor i1 %c, true" in lines
    for other_use in ("  br i1 %c, label %a, label %b", "  %o = and i1 %c, %c", "  %q = xor i1 %c, true"):
        unchanged = _SHARED.replace("  ret double %v", f"{other_use}\n  ret double %v")
        assert own_select_compares(unchanged) == (unchanged, 0)
    counts = ("zext", "xor", "add")
    alone = "\n".join(line for line in _SHARED.split("\n") if not any(op in line for op in counts))
    assert own_select_compares(alone) == (alone, 0)
