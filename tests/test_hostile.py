"""Hostile input for the magics: whatever is typed, the session is left exactly as it was.

Each case ends in a one-line UsageError or the statement's own exception, and the
user namespace, the Numba dispatchers, the signal handlers and the trace hooks are
compared with a snapshot taken before.
"""

import os
import shutil
import signal
import sys
import tempfile
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError

from numba_lprun.internals import can_compile

SETUP = """
import numpy as np
from numba import njit

@njit
def hostile_conv(x, k):
    n = x.size - k.size + 1
    out = np.empty(n)
    for i in range(n):
        out[i] = np.sum(x[i : i + k.size] * k)
    return out

class Plain:
    def method(self):
        return 1

plain = Plain()
hx = np.arange(50.0)
hk = np.ones(3)
"""

#: where an option that writes a file may write it: made by the ``ip`` fixture and removed after
#: this module's tests (a folder made at import was left in /tmp by every process that collected them)
OUT = os.path.join(tempfile.gettempdir(), f"nlprun-hostile-{os.getpid()}")
STATEMENT_ERRORS = (ValueError, ZeroDivisionError, NameError, TypeError, AttributeError)


@pytest.fixture(scope="module")
def ip(ipshell):
    shell = ipshell
    assert shell.run_cell(SETUP).success
    shell.run_cell("hostile_conv(hx, hk)")
    os.makedirs(OUT, exist_ok=True)
    yield shell
    shutil.rmtree(OUT, ignore_errors=True)


def snapshot(ip):
    """Everything a profiler run could disturb."""
    ns = {k: id(v) for k, v in ip.user_ns.items() if not k.startswith("_")}
    jitted = {
        k: (tuple(v.signatures), can_compile(v), id(v.py_func), id(v.py_func.__globals__.get(k)))
        for k, v in ip.user_ns.items()
        if hasattr(v, "signatures") and hasattr(v, "py_func")
    }
    handlers = {}
    for sig in signal.valid_signals():
        try:
            handlers[sig] = signal.getsignal(sig)
        except (ValueError, OSError):
            pass
    return ns, jitted, handlers, sys.gettrace(), sys.getprofile(), threading.gettrace()


def run_hostile(ip, line):
    """Run the magic; return what ended it ('ok', 'usage' or the statement's exception)."""
    try:
        ip.run_line_magic("nlprun", line)
    except UsageError as exc:
        assert "\n" not in str(exc).strip(), str(exc)
        return "usage"
    except STATEMENT_ERRORS as exc:
        return type(exc).__name__
    return "ok"


OPTIONS = [
    "-f",
    "-m",
    "-u",
    "-z",
    "-r",
    "-D",
    "-T",
    "--once",
    "--hits",
    "--raw",
    "--threshold",
    "--html",
    "--rate",
    "--no-sample",
    "--sample-time",
    "--snapshot-limit",
    "--asm",
    "--bogus",
    "-q",
    "--",
    "-",
    "-fhostile_conv",
]
VALUES = [
    "hostile_conv",
    "hx",
    "plain.method",
    "np.sum",
    "1/0",
    "nope",
    "'unclosed",
    '"',
    "0",
    "-1",
    "1e-6",
    "abc",
    "os",
    "no_such_module_q",
    os.path.join(OUT, "out.txt"),
    "hostile_conv.py_func",
]
STATEMENTS = [
    "hostile_conv(hx, hk)",
    "hostile_conv(hx,",
    "raise ValueError('boom')",
    "1/0",
    "",
    "hostile_conv(hx, hk); undefined_name",
    "hostile_conv(hx, 'k')",
]


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    tokens=st.lists(
        st.one_of(st.sampled_from(OPTIONS), st.sampled_from(VALUES), st.text(max_size=6)), max_size=6
    ),
    statement=st.sampled_from(STATEMENTS),
)
def test_random_option_strings(ip, tokens, statement):
    before = snapshot(ip)
    outcome = run_hostile(ip, " ".join(tokens + [statement]))
    assert outcome in {"ok", "usage"} | {e.__name__ for e in STATEMENT_ERRORS}
    assert snapshot(ip) == before


@pytest.mark.parametrize(
    "line, message",
    [
        ("-f hx hostile_conv(hx, hk)", "-f hx: ndarray is not a Numba jitted function"),
        ("-f plain.method plain.method()", "not a Numba jitted function"),
        ("-f Plain Plain()", "not a Numba jitted function"),
        ("-f 'hostile_conv' -u abc hostile_conv(hx, hk)", "argument -u: invalid float value"),
        ("--threshold", "needs a value"),
        ("-f", "needs a value"),
        ("-f hostile_conv --rate", "needs a value"),
    ],
)
def test_targeted_bad_input(ip, line, message):
    before = snapshot(ip)
    with pytest.raises(UsageError, match=message) as info:
        ip.run_line_magic("nlprun", line)
    assert "\n" not in str(info.value).strip()
    assert snapshot(ip) == before


def test_real_ctrl_c_mid_run(ip, capsys, python_sigint):
    """A real SIGINT, sent once the user's run is under way (the statement says so through an
    event, so the twins are in and the sampler is armed), is reported as interrupting the run:
    the profile so far is shown and the namespace is as it was.

    SIGINT's handler is Python's own for the test (``python_sigint``): a process that a shell
    without job control starts in the background (CI's runner, a tool's) inherits SIGINT
    ignored, and Python then installs no handler, so no SIGINT is ever delivered. That was the
    README's "SIGINT never reported in whole-suite runs": those runs were started in the
    background."""
    started = threading.Event()

    def until_interrupted():
        started.set()
        deadline = time.monotonic() + 30.0  # the SIGINT comes milliseconds after the event
        while time.monotonic() < deadline:
            ip.user_ns["hostile_conv"](ip.user_ns["hx"], ip.user_ns["hk"])

    def interrupt():
        if started.wait(30.0):
            os.kill(os.getpid(), signal.SIGINT)

    before = snapshot(ip)
    ip.user_ns["_until_interrupted"] = until_interrupted
    sender = threading.Thread(target=interrupt)
    try:
        sender.start()
        ip.run_line_magic("nlprun", "-f hostile_conv _until_interrupted()")
    finally:
        sender.join()
        del ip.user_ns["_until_interrupted"]
    out = capsys.readouterr().out
    assert started.is_set()
    assert "interrupted by KeyboardInterrupt" in out and "showing the profile gathered so far" in out, out
    assert "out[i] = np.sum(x[i : i + k.size] * k)" in out and "Traceback" not in out
    assert snapshot(ip) == before


def test_ctrl_c_at_any_moment_leaves_no_sampler_armed(python_sigint):
    """SIGINTs landing all through a sampled profile (arming, repeats, disarming, reading the
    samples): each leaves the one sampler slot free and SIGPROF's handler as it was."""
    import numpy as np

    import numba_lprun
    from numba_lprun.sampling import sampler_running
    from tests import kernels as k

    before = signal.getsignal(signal.SIGPROF)
    a = np.arange(20_000.0)
    for delay in (0.0, 0.001, 0.003, 0.01, 0.02, 0.04, 0.08, 0.15, 0.25, 0.4):
        timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
        try:
            try:
                timer.start()
                numba_lprun.LineProfiler(k.busy, sample_time=0.3).runcall(k.busy, 200)
                numba_lprun.LineProfiler(k.loops, sample_time=0.1).runcall(k.loops, a, 3)
            finally:
                timer.join()
                time.sleep(0.01)  # a signal sent at the very end is raised here, not later
        except KeyboardInterrupt:
            pass
        assert not sampler_running(), f"a SIGINT after {delay} s left the sampler armed"
        assert signal.getsignal(signal.SIGPROF) is before


def test_ctrl_c_during_a_twin_compile_is_held_until_the_compile_is_done(python_sigint):
    """A SIGINT that lands while Numba compiles a twin (here: as its type inference starts)
    is raised once the compile is done, never inside it: an intrinsic's typing caches its
    signature before it registers its lowering, and an interrupt between the two left a
    twin that no later profile could lower ("No definition for lowering", seen in CI)."""
    import numpy as np
    from numba import njit
    from numba.core import event

    import numba_lprun
    from numba_lprun.instrument.clock import current_clock
    from numba_lprun.run.targets import cached_target

    @njit
    def compiled_in_the_run(a):
        s = 0.0
        for i in range(a.size):
            s += a[i]
        return s

    sent = []

    class InterruptTyping(event.Listener):
        def on_start(self, ev):
            if not sent and ev.data["name"].startswith("nopython_type_inference"):
                sent.append(ev.data["name"])
                os.kill(os.getpid(), signal.SIGINT)

        def on_end(self, ev):
            pass

    a = np.ones(100)
    prof = numba_lprun.LineProfiler(compiled_in_the_run, repeat=False)
    with event.install_listener("numba:run_pass", InterruptTyping()):
        with pytest.raises(KeyboardInterrupt):
            prof.runcall(compiled_in_the_run, a)
    assert sent
    twin = cached_target(compiled_in_the_run, current_clock().kind).twins["counting"]
    assert twin.dispatcher.overloads  # the compile completed before the interrupt was raised
    again = numba_lprun.LineProfiler(compiled_in_the_run, repeat=False)
    assert again.runcall(compiled_in_the_run, a) == 100.0
    first = compiled_in_the_run.py_func.__code__.co_firstlineno
    assert again.profile.functions[0].counts.hits[first + 4] == 100
