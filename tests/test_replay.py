"""The user's statement runs once in every mode: extra runs replay the profiled functions' calls.

Each statement here has an effect no snapshot of the process can see (a line appended to
a file, a process started, a module's counter, printed output): it must happen exactly once
per profile, while the extra runs (the timed plain replay and the sampled replays) still
give the overhead figure and the samples.
"""

import subprocess
import sys

import numpy as np
from numba import njit

import numba_lprun
from tests.conftest import reference_hits

CALLS_MADE = [0]  # a module-level counter the statement's Python function increments


@njit
def kern(a):
    s = 0.0
    for v in a:
        s += v * v
    return s


@njit
def bump(a):
    for i in range(a.size):
        a[i] += 1.0
    return a.sum()


@njit
def pairs(n):
    for i in range(n):
        yield i * 2


def run_and_log(a, path):
    CALLS_MADE[0] += 1
    r = kern(a)
    with open(path, "a") as handle:
        handle.write(f"{r}\n")
    return r


def start_process(a, path):
    subprocess.run([sys.executable, "-c", f"open({str(path)!r}, 'a').write('started\\n')"], check=True)
    return kern(a)


# a replay follows a user's run of at most --extra-limit seconds: a process started on a busy
# machine (CI's two lanes on two cores) can take over the default 0.5 s, which is not under test
NO_LIMIT = float("inf")


def _lines(path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def _replayed(profile) -> bool:
    return profile.runs.once is None and profile.sampling is not None and profile.sampling.extra_runs >= 1


def test_runcall_and_runctx_append_once_and_replay_the_kernel(tmp_path):
    a = np.linspace(0.0, 1.0, 20_000)
    path = tmp_path / "log.txt"
    before = CALLS_MADE[0]
    prof = numba_lprun.LineProfiler(kern, sample_time=0.2, extra_limit=NO_LIMIT)
    assert prof.runcall(run_and_log, a, path) == kern.py_func(a)
    assert _lines(path) == 1 and CALLS_MADE[0] == before + 1
    assert _replayed(prof.profile), prof.profile.runs
    assert any("replay" in run for run in prof.profile.runs.extra)
    (stats,) = prof.profile.functions
    assert stats.counts.hits == reference_hits(kern, a)  # the replays' counts are not the user's
    assert stats.distortion.overhead is not None  # the plain replay made the same call: like with like

    prof = numba_lprun.LineProfiler(kern, sample_time=0.2, extra_limit=NO_LIMIT)
    prof.runctx("run_and_log(a, path)", {"run_and_log": run_and_log, "a": a, "path": path}, None)
    assert _lines(path) == 2 and CALLS_MADE[0] == before + 2
    assert _replayed(prof.profile), prof.profile.runs


def test_the_magics_append_once(ipshell, tmp_path):
    path = tmp_path / "log.txt"
    ipshell.user_ns.update(run_and_log=run_and_log, kern=kern, a=np.ones(5000), path=path)
    ipshell.run_line_magic("nlprun", "-f kern --sample-time 0.1 run_and_log(a, path)")
    assert _lines(path) == 1
    ipshell.run_cell_magic("nlprun", "-f kern --sample-time 0.1", "r = run_and_log(a, path)\nr2 = r + 1")
    assert _lines(path) == 2 and ipshell.user_ns["r2"] == ipshell.user_ns["r"] + 1


def test_a_statement_that_starts_a_process_or_prints_does_it_once(tmp_path, capsys):
    path = tmp_path / "log.txt"
    prof = numba_lprun.LineProfiler(kern, sample_time=0.1, extra_limit=NO_LIMIT)
    prof.runctx("print('hello once'); start_process(a, path)", {"start_process": start_process,
                "a": np.ones(1000), "path": path}, None)  # fmt: skip
    assert _lines(path) == 1
    assert capsys.readouterr().out.count("hello once") == 1
    assert _replayed(prof.profile), prof.profile.runs


def test_a_kernel_that_changes_its_argument_changes_it_once():
    a = np.zeros(1000)
    prof = numba_lprun.LineProfiler(bump, sample_time=0.1)
    assert prof.runcall(bump, a) == 1000.0
    assert (a == 1.0).all()  # the replays ran on copies
    assert _replayed(prof.profile), prof.profile.runs


def test_a_strided_view_is_replayed_as_the_same_type():
    """A replay's copy of a view keeps its layout: no new signature compiles for the replays."""
    a = np.arange(4000.0)[::2]
    kern(a)
    before = len(kern.signatures)
    prof = numba_lprun.LineProfiler(kern, sample_time=0.1)
    prof.runcall(kern, a)
    assert _replayed(prof.profile), prof.profile.runs
    assert len(kern.signatures) == before


def test_a_generator_is_not_replayed_and_the_profile_says_why():
    prof = numba_lprun.LineProfiler(pairs)
    assert prof.runctx("out = sum(pairs(10))", {"pairs": pairs}, None) is prof
    assert prof.profile.runs.once is not None and "generator" in prof.profile.runs.once


BIG = 1 << 18  # float64 values: 2 MiB, over snapshot.UNSAVED_BYTES


@njit
def smooth(x, out):
    for i in range(out.size):
        out[i] = 0.5 * (x[i] + x[i + 1])
    return out.sum()


@njit
def smooth_into_first(x, out):
    out[0] = -1.0  # writes: its first argument is saved
    return smooth(x, out)


def _recorded(recorder, func, *args):
    func(*args)  # compiled: what the call's code writes is known before the call
    return recorder(func, func, args, {})


def test_an_array_the_kernel_only_reads_is_fingerprinted_not_copied():
    from numba_lprun.run.replay import CallRecorder

    x, out = np.random.default_rng(1).random(BIG + 1), np.zeros(BIG)
    smooth(x, out)
    recorder = CallRecorder(budget=1 << 30)
    expected = recorder(smooth, smooth, (x, out), {})
    (call,) = recorder.calls
    assert [u.name for u in call.before.unsaved] == ["argument 1"]
    assert [item.name for item in call.before.items if item.kind == "array"] == ["argument 2"]
    out[:] = 7.0  # the statement goes on: a replay starts from the saved output, then puts this back
    recorder.keep_final()
    assert recorder.replay({}, compare=True) == {}  # nothing differs from the user's call
    recorder.put_back()
    assert expected == smooth(x, np.zeros(BIG)) and (out == 7.0).all()


@njit
def fill_half(x, out):
    for i in range(out.size // 2):
        out[i] = 2.0 * x[i]


def test_an_array_the_kernel_only_writes_is_not_saved_and_the_users_is_put_back():
    """``out`` is only written, half of it: no copy before the call (the call never reads it), a
    copy of the user's when the statement ends (where replays follow), written back after them."""
    from numba_lprun.run.replay import CallRecorder

    x, out = np.random.default_rng(5).random(BIG), np.full(BIG, 7.0)
    recorder = CallRecorder(budget=1 << 30)
    _recorded(recorder, fill_half, x, out)
    (call,) = recorder.calls
    (written,) = [i for i in call.before.items if i.kind == "array"]
    assert written.name == "argument 2" and written.written_only and written.saved is None
    assert [u.name for u in call.before.unsaved] == ["argument 1"]
    recorder.keep_final()
    assert [item.name for item, _ in call.after] == ["argument 2"]  # compared: nothing wrote it since
    out[: BIG // 2] = -1.0  # as if an earlier replay had left something else where the call writes
    assert recorder.replay({}, compare=True) == {}
    recorder.put_back()
    assert np.array_equal(out[: BIG // 2], 2.0 * x[: BIG // 2]) and (out[BIG // 2 :] == 7.0).all()


def test_an_only_written_array_the_statement_changes_after_the_call_is_put_back_as_it_left_it():
    x, out = np.ones(BIG), np.zeros(BIG)
    fill_half(x, out)
    prof = numba_lprun.LineProfiler(fill_half, sample_time=0.1)
    prof.runctx("fill_half(x, out); out += 1.0", {"fill_half": fill_half, "x": x, "out": out}, None)
    assert _replayed(prof.profile), prof.profile.runs
    assert (out[: BIG // 2] == 3.0).all() and (out[BIG // 2 :] == 1.0).all()


@njit
def halves(src, dst):
    for i in range(dst.size):
        dst[i] = src[i] + 1.0


def test_a_buffer_read_through_one_argument_and_written_through_another_is_saved():
    """``halves(x[:n], x[n:])``: LLVM finds the first argument only read and the second only
    written, but they share one buffer, which the call changes: it is saved, and replayed."""
    from numba_lprun.run.replay import CallRecorder

    x = np.arange(2.0 * BIG)
    recorder = CallRecorder(budget=1 << 30)
    _recorded(recorder, halves, x.copy()[:BIG], x.copy()[BIG:])
    _recorded(recorder, halves, x[:BIG], x[BIG:])
    call = recorder.calls[-1]
    assert call.before.unsaved == []
    assert [i.name for i in call.before.items if i.kind == "array"] == ["argument 1"]
    after = x.copy()
    recorder.keep_final()
    assert recorder.complete and recorder.replay({}, compare=True) == {}
    recorder.put_back()
    assert np.array_equal(x, after) and np.array_equal(x[BIG:], np.arange(BIG) + 1.0)


def test_numba_lprun_unsaved_off_copies_every_array(monkeypatch):
    from numba_lprun.run.replay import CallRecorder

    monkeypatch.setenv("NUMBA_LPRUN_UNSAVED", "0")
    recorder = CallRecorder(budget=1 << 30)
    _recorded(recorder, smooth, np.ones(BIG + 1), np.zeros(BIG))
    (call,) = recorder.calls
    assert call.before.unsaved == [] and len([i for i in call.before.items if i.kind == "array"]) == 2


def test_a_view_the_call_writes_saves_the_buffer_it_also_only_reads():
    """``f(x, x[1:])``: the read-only first argument shares its buffer with the written second:
    the buffer is saved, and every replay starts from it."""
    from numba_lprun.run.replay import CallRecorder

    x = np.random.default_rng(2).random(BIG + 2)
    before = x.copy()
    recorder = CallRecorder(budget=1 << 30)
    _recorded(recorder, smooth, x.copy(), x.copy()[1:])
    _recorded(recorder, smooth, x, x[1:])
    call = recorder.calls[-1]
    assert call.before.unsaved == [] and [i.name for i in call.before.items if i.kind == "array"] == [
        "argument 2"
    ]
    after = x.copy()
    recorder.keep_final()
    assert recorder.replay({}, compare=True) == {}
    recorder.put_back()
    assert np.array_equal(x, after) and not np.array_equal(x, before)


def test_an_array_changed_between_calls_is_copied_from_then_on():
    """A time-stepping loop: ``force(x, f); x += f``. The first call left ``x`` unsaved (it
    only reads it); the second finds it changed and copies it, and the first, which a replay
    can no longer start from what it read, is dropped when the statement ends."""
    from numba_lprun.run.replay import CallRecorder

    x, f = np.random.default_rng(3).random(BIG + 1), np.zeros(BIG)
    recorder = CallRecorder(budget=1 << 30)
    smooth(x, f)
    for _ in range(3):
        recorder(smooth, smooth, (x, f), {})
        x[:-1] += f
    first, *later = recorder.calls
    assert [u.name for u in first.before.unsaved] == ["argument 1"]
    assert all(not c.before.unsaved and len(c.before.items) >= 2 for c in later)
    final = x.copy()
    recorder.keep_final()
    assert [c.index for c in recorder.calls] == [1, 2] and not recorder.complete
    assert recorder.replay({}, compare=True) == {}  # each replay read what its call read
    recorder.put_back()
    assert np.array_equal(x, final)


def test_a_statement_that_changes_an_unsaved_array_after_the_call_gets_no_replay():
    x, out = np.ones(BIG + 1), np.zeros(BIG)
    smooth(x, out)
    prof = numba_lprun.LineProfiler(smooth, sample_time=0.1)
    prof.runctx("r = smooth(x, out); x += 1.0", {"smooth": smooth, "x": x, "out": out}, None)
    assert (x == 2.0).all() and (out == 1.0).all()
    once = prof.profile.runs.once
    assert once is not None and "changed argument 1 of smooth after the call" in once, once


def test_a_replay_that_writes_an_unsaved_array_is_reported(recwarn):
    """The guard behind the proof: were a replay ever to write what the call's code was found
    never to write, the profile says so (it could not put it back)."""
    from numba_lprun.run.replay import CallRecorder

    x, out = np.ones(BIG + 1), np.zeros(BIG)
    recorder = CallRecorder(budget=1 << 30)
    _recorded(recorder, smooth, x, out)
    recorder.keep_final()
    smooth_into_first(out, out[:-1])  # compiled before the replay
    recorder.replay({id(smooth): lambda a, b: smooth_into_first(a, a[:-1])})
    recorder.put_back()
    (warning,) = [w for w in recwarn if "could not be put back" in str(w.message)]
    assert "changed argument 1" in str(warning.message)


def test_a_profile_of_a_kernel_reading_a_large_array_replays_it():
    x, out = np.random.default_rng(4).random(BIG + 1), np.zeros(BIG)
    smooth(x, out)
    prof = numba_lprun.LineProfiler(smooth, sample_time=0.1)
    x0 = x.copy()
    prof.runcall(smooth, x, out)
    assert _replayed(prof.profile), prof.profile.runs
    assert np.array_equal(x, x0) and np.allclose(out, 0.5 * (x0[:-1] + x0[1:]))
    (stats,) = prof.profile.functions
    assert stats.counts.hits == reference_hits(smooth, x, np.zeros(BIG))


def test_a_large_array_calls_reach_unchanged_is_copied_once_and_again_when_it_changes(monkeypatch):
    """What LLVM proves nothing about (``NUMBA_LPRUN_UNSAVED=0`` here; a ``prange`` kernel's input
    in real code) is saved at each recorded call: where the array still holds exactly what an
    earlier call's copy holds, that copy is shared (a copy into fresh memory cost 70 ms per 32 MB
    on a virtual machine, a compare 3 ms). Changed between calls, it is copied again, and each
    replay still starts from what its call read; the final state is copied once for all calls, and
    an output one call leaves once (after the call, and before the next)."""
    from numba_lprun.run.replay import CallRecorder

    monkeypatch.setenv("NUMBA_LPRUN_UNSAVED", "0")
    x, out = np.random.default_rng(5).random(BIG + 1), np.zeros(BIG)
    smooth(x, out)
    out[:] = 0.0
    recorder = CallRecorder(budget=1 << 30)
    for step in range(3):
        recorder(smooth, smooth, (x, out), {})
        if step == 1:
            x[::2] += 1.0

    def saved_x(call):
        return next(item.saved for item in call.before.items if item.name == "argument 1")

    first, second, third = recorder.calls
    assert saved_x(first) is saved_x(second) and saved_x(third) is not saved_x(first)
    # ``out`` as the first call left it: what the second call starts from, and leaves again
    (after_first,) = [value for item, value in first.after if item.name == "argument 2"]
    saved_out = next(item.saved for item in second.before.items if item.name == "argument 2")
    assert saved_out is after_first
    assert np.array_equal(saved_x(third), x) and not np.array_equal(saved_x(first), x)
    final_x, final_out = x.copy(), out.copy()
    recorder.keep_final()
    finals = [value for call in recorder.calls for item, value in call.final if item.name == "argument 1"]
    assert len(finals) == 2 and finals[0] is finals[1]  # the first two calls' x changed since: one copy
    assert recorder.replay({}, compare=True) == {}  # each replay read what its call read
    recorder.put_back()
    assert np.array_equal(x, final_x) and np.array_equal(out, final_out)


@njit
def outer_sums(x):
    out = np.empty((x.size, 2))
    for i in range(x.size):
        out[i, 0] = x[i] + 1.0
        out[i, 1] = x[i] * 2.0
    return out


def test_a_large_result_is_held_not_copied_and_compared_only_as_the_call_returned_it():
    """A kernel that returns a new large array: each recorded call's result was copied, for a
    replay's to be compared with (90 ms per 32 MB here). The first recorded call's is held with its
    fingerprint: compared while the statement leaves it as returned, and not at all once the
    statement changed it (a copy would have said the same; comparing the changed array would
    report a false difference). A later call's is not held (memory the program's allocator could
    not hand out again: its next result faulted fresh pages), so not compared."""
    import weakref

    from numba_lprun.run.replay import _UNCOPIED, CallRecorder

    x = np.random.default_rng(6).random(BIG)
    recorder = CallRecorder(budget=1 << 30)
    kept = _recorded(recorder, outer_sums, x)
    later = weakref.ref(recorder(outer_sums, outer_sums, (x,), {}))
    first, second = recorder.calls
    assert first.result.value is kept and second.result is _UNCOPIED
    assert later() is None  # nothing held it
    recorder.keep_final()
    assert recorder.replay({}, compare=True) == {}

    def off(a):
        return outer_sums(a) + 1.0

    assert set(recorder.replay({id(outer_sums): off}, compare=True)) == {"the result of call 1"}
    kept[:, 0] = -1.0  # the statement goes on with the first result: nothing left to compare
    assert recorder.replay({id(outer_sums): off}, compare=True) == {}
    recorder.put_back()


def test_each_replay_of_a_call_that_changes_its_argument_starts_from_its_state_before_it():
    """A replay just after ``restore`` (the phases put the state back after each replay) does
    not check the one recorded call's state again; one after another without ``restore`` between
    does, and puts it back: each starts from the state before the call, so each result equals the
    user's run's (``bump`` adds one to its argument and returns its sum)."""
    from numba_lprun.run.replay import CallRecorder

    a = np.zeros(1000)
    recorder = CallRecorder(budget=1 << 30)
    assert _recorded(recorder, bump, a) == bump.py_func(np.zeros(1000) + 1)  # a compile call, then the run's
    recorder.keep_final()
    for _ in range(2):
        assert recorder.replay({}, compare=True) == {}  # no restore before it: it restores
    recorder.restore()
    for _ in range(2):
        assert recorder.replay({}, compare=True) == {}
        assert [item.name for item in recorder.restore()] == ["argument 1"]
    recorder.replay({})
    assert recorder.replay({}, compare=True) == {}  # the one before it changed the state: put back
    recorder.put_back()
    assert (a == 2).all()  # as the user's run left it: two calls (compile, then the recorded one)


@njit
def add_one(y):
    for i in range(y.size):
        y[i] += 1.0
    return y


def test_a_kernel_returning_its_argument_called_twice_is_compared_call_by_call():
    """The replay of call 1 returns the argument itself, which the replay of call 2 changes
    again: compared after both, call 1's result read one more than the user's and the profile
    said "your run's floating-point results differ from the plain run's by up to 3.3e-01 ...
    please report it". Each call is compared as its replay returns."""
    from numba_lprun.run.replay import CallRecorder

    y = np.ones(4)
    add_one(np.ones(4))  # compiled
    recorder = CallRecorder(budget=1 << 30)
    for _ in range(2):
        recorder(add_one, add_one, (y,), {})
    recorder.keep_final()
    assert len(recorder.calls) == 2
    assert recorder.replay({}, compare=True) == {}
    recorder.put_back()
    assert (y == 3.0).all()
    prof = numba_lprun.LineProfiler(add_one, sample_time=0.05)
    prof.runctx("add_one(y); add_one(y)", {"add_one": add_one, "y": y}, None)
    assert (y == 5.0).all()
    text = __import__("io").StringIO()
    prof.print_stats(stream=text)
    assert "differ" not in text.getvalue(), text.getvalue()


def test_pythons_global_random_state_is_compared_in_place_and_put_back():
    """A replay's state check reads Python's global generator's words in place (``getstate``
    builds 625 ints: a fifth of a short call's replay): a draw, and a second ``random.gauss``,
    which only takes the value the first kept (``gauss_next``), each read as a change, and the
    state written back is the one saved."""
    import random

    from numba_lprun.run.state_types import _python_global_state

    read, write, same = _python_global_state()
    assert same is not None  # CPython's layout, as checked against getstate
    random.seed(5)
    random.gauss()
    saved, expected = read(), random.getstate()
    assert same(saved)
    for draw in (random.random, random.gauss):  # the second: gauss_next only
        draw()
        assert not same(saved)
        write(saved)
        assert same(saved) and random.getstate() == expected


def test_a_quick_restore_leaves_unchecked_what_a_replay_of_the_one_call_left_as_saved():
    """Between sampled replays of one call, state the last replay left as saved is not compared
    again (a ``prange`` kernel's 32 MB input, which LLVM cannot prove it only reads, took 3 ms a
    replay beside its 2 ms call); state it changed is put back after each; a restore that is not
    quick compares all again."""
    from numba_lprun.run.snapshot import Snapshot
    from numba_lprun.run.state_types import Item

    checks = {"read": 0, "written": 0}
    state = {"read": 1, "written": 1}

    def item(name: str) -> Item:
        def same(saved: int) -> bool:
            checks[name] += 1
            return state[name] == saved

        found = Item(name, "test", 8, lambda: state[name], lambda v: state.__setitem__(name, v), same)
        found.saved = 1
        return found

    snapshot = Snapshot(items=[item("read"), item("written")])
    for _ in range(3):
        state["written"] = 2  # what each replay of the call does
        assert [i.name for i in snapshot.restore(quick=True)] == ["written"]
        assert state == {"read": 1, "written": 1}
    assert checks == {"read": 1, "written": 3}
    state["read"] = 5  # were a replay to change it after all: a full restore finds it
    assert {i.name for i in snapshot.restore()} == {"read"} and state["read"] == 1
    assert checks == {"read": 2, "written": 4}
