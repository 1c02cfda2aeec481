"""The front ends on CUDA kernels, in numba-cuda's simulator: ``%nlprun`` in a real
IPython shell and ``nlprun`` on a script whose kernel lives in another module. Run by
tests/test_cuda.py in a subprocess with NUMBA_ENABLE_CUDASIM=1 (not collected alone).

Hits are checked against each simulated thread's own Python line events; the kernel's
name must be bound to the original afterwards, whatever the statement did.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from IPython.core.error import UsageError

from numba_lprun.cuda import in_simulator
from tests import cuda_kernels as K
from tests.cuda_reference import per_thread_lines, total_hits

pytestmark = pytest.mark.skipif(not in_simulator(), reason="needs NUMBA_ENABLE_CUDASIM=1")
ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "scripts"

SETUP = """
import numpy as np
from numba import cuda, njit
import tests.cuda_kernels as kernels
from tests.cuda_kernels import step, walk

a = np.linspace(1.0, 2.0, 100)
out = np.zeros(100)

@njit
def cpu_twice(x):
    return 2 * x

@cuda.jit(device=True)
def lonely(x):
    return x + 1.0
"""


@pytest.fixture
def ip(ipshell):
    assert ipshell.run_cell(SETUP).success
    yield ipshell
    assert ipshell.user_ns["walk"] is K.walk and vars(K)["walk"] is K.walk  # never left swapped
    assert type(K.walk).__module__.startswith("numba.cuda")


def row_pattern(line: int, *cells: str) -> re.Pattern:
    """A table row: the line number, then ``cells`` separated by blanks."""
    return re.compile(r"^\s*" + r"\s+".join(re.escape(c) for c in (str(line), *cells)) + r"\s", re.M)


def check_table(text: str, stats, reference: dict, launches: int = 1) -> None:
    """Each function's hits equal the per-thread reference (times ``launches``), and its
    rows show them with the warps and lanes."""
    for f in stats.functions:
        want = {line: n * launches for line, n in total_hits(reference[f.source.qualname]).items()}
        assert f.counts.hits == want, f.name
        warps, lanes = (column.cells for column in f.extras.columns)
        for line, hits in f.counts.hits.items():
            assert row_pattern(line, str(hits), warps[line], lanes[line]).search(text), (f.name, line, text)


def walk_reference() -> dict:
    return per_thread_lines(K.walk, 2, 64, np.linspace(1.0, 2.0, 100), np.zeros(100), functions=[K.step])


def one_walk(a: np.ndarray) -> np.ndarray:
    out = np.zeros(a.size)
    for i, x in enumerate(a):
        for k in range(i % 8):
            x = x * 0.5 if k % 2 == 0 else 3.0 * x + 1.0
        out[i] = x
    return out


def test_line_magic_on_a_kernel_and_its_device_function(ip, capsys):
    prof = ip.run_line_magic("nlprun", "-r -f walk -f step walk[2, 64](a, out)")
    text = capsys.readouterr().out
    assert [f.source.name for f in prof.profile.functions] == ["walk", "step"]
    check_table(text, prof.profile, walk_reference())
    assert "Launch:     walk[2, 64]: 128 threads; 1 launch (the user's)" in text
    assert re.search(r"Line #\s+Hits\s+Warps\s+Lanes\s+Line Contents", text)
    assert np.array_equal(ip.user_ns["out"], one_walk(ip.user_ns["a"]))


def test_device_function_alone_and_kernel_reached_through_its_module(ip, capsys):
    """-f names the device function; the statement launches ``kernels.walk`` (a module
    attribute): the kernel that calls it is bound there too, and put back."""
    prof = ip.run_line_magic("nlprun", "-r -f kernels.step kernels.walk[2, 64](a, out)")
    capsys.readouterr()
    assert [f.source.name for f in prof.profile.functions] == ["walk", "step"]
    check_table(prof.get_text(), prof.profile, walk_reference())


def test_cell_magic_adds_up_launches(ip, capsys):
    prof = ip.run_cell_magic("nlprun", "-r -f walk -f step", "for _ in range(2):\n    walk[2, 64](a, out)\n")
    text = capsys.readouterr().out
    check_table(text, prof.profile, walk_reference(), launches=2)
    assert "2 launches of the user's, added up" in " ".join(text.split())


def test_errors_are_one_line_and_the_kernel_is_put_back(ip, capsys):
    with pytest.raises(UsageError, match="CPU functions and CUDA kernels cannot be profiled together"):
        ip.run_line_magic("nlprun", "-f walk -f cpu_twice walk[2, 64](a, out)")
    for option in ("-u 1e-6", "--probes", "--asm 3", "-D x.lprof", "--no-sample", "--raw"):
        flag = option.split()[0]
        with pytest.raises(UsageError, match=f"^nlprun: {flag} does not apply to CUDA kernels: "):
            ip.run_line_magic("nlprun", f"{option} -f walk walk[2, 64](a, out)")
    with pytest.raises(UsageError, match="lonely is a device function.*name the kernel with -f"):
        ip.run_line_magic("nlprun", "-f lonely walk[2, 64](a, out)")
    assert "Line #" not in capsys.readouterr().out  # nothing ran


def test_statement_errors_and_ctrl_c_show_the_profile_and_put_the_kernel_back(ip, capsys):
    with pytest.raises(ZeroDivisionError):
        ip.run_line_magic("nlprun", "-f walk walk[2, 64](a, out); 1 / 0")
    text = capsys.readouterr().out
    assert "the statement raised ZeroDivisionError" in text and "Warps" in text
    ip.run_line_magic("nlprun", "-f walk walk[2, 64](a, out); raise KeyboardInterrupt")
    text = capsys.readouterr().out
    assert "interrupted by KeyboardInterrupt" in text and "Warps" in text


def nlprun(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SCRIPTS), str(ROOT)]))
    cmd = [sys.executable, "-m", "numba_lprun", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=SCRIPTS, env=env, timeout=240)


def test_command_line_on_a_script_whose_kernel_lives_in_a_module(tmp_path, monkeypatch):
    table = tmp_path / "table.txt"
    done = nlprun("-T", str(table), "-f", "gpu_kernels:spread", "-f", "gpu_kernels:bump", "gpu_launch.py")
    assert done.returncode == 0, done.stderr
    plain = subprocess.run(
        [sys.executable, "gpu_launch.py"], capture_output=True, text=True, cwd=SCRIPTS, timeout=120
    )
    assert plain.stdout.strip() and done.stdout.count(plain.stdout.strip()) == 1  # ran once
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import gpu_kernels

    a = np.arange(40, dtype=np.float64) / 8.0
    ref = per_thread_lines(gpu_kernels.spread, 2, 32, a, np.zeros(40), functions=[gpu_kernels.bump])
    text = table.read_text()
    assert "Line #      Hits         Time  Per Hit   % Time Warps Lanes  Line Contents" in text
    for name in ("spread", "bump"):
        for line, hits in total_hits(ref[name]).items():
            assert re.search(rf"^\s*{line}\s+{hits}\s+\d+\s+\d+\.\d\s", text, re.M), (name, line, text)


def test_command_line_refusals_exit_2_without_running_the_script():
    refused = nlprun("-u", "1e-6", "-f", "gpu_kernels:spread", "gpu_launch.py")
    assert refused.returncode == 2 and refused.stdout == ""
    said = "nlprun: -u does not apply to CUDA kernels: GPU times are in cycles, not seconds"
    assert refused.stderr.strip() == said
    mixed = nlprun("-f", "gpu_kernels:spread", "-f", "nlp_pkg.kernels:dot", "gpu_launch.py")
    assert mixed.returncode == 2 and "cannot be profiled together" in mixed.stderr
