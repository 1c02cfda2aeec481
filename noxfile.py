"""The test suite on every supported Python, each in a fresh virtual environment (``nox``).

Line events differ between Python versions and between line_profiler's two cores
(``sys.settrace``, the only one before 3.12; ``sys.monitoring``, its default from
3.12), and the hits must equal line_profiler's on each, so CI runs the whole suite
on every supported Python (session ``tests``) and again with
``LINE_PROFILER_CORE=legacy`` where both cores exist (``tests_legacy_core``).

Interpreters are found as ``python3.X`` on PATH. With pyenv, a shim answers only for
the versions in ``PYENV_VERSION``; when that is unset this file names the newest
installed patch release of each supported Python there. A missing interpreter is an
error, not a skip. The fuzzer checks ``NUMBA_LPRUN_FUZZ_EXAMPLES`` examples per run
(80 unless set), which keeps each Python's run to a few minutes.

    nox                      # everything
    nox -s tests-3.13        # one Python
    nox -s tests -- -k fuzz  # arguments after -- go to pytest
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import nox

PYTHONS = ["3.11", "3.12", "3.13"]
BOTH_CORES = ["3.12", "3.13"]  # sys.monitoring exists from 3.12

nox.options.error_on_missing_interpreters = True
nox.options.reuse_existing_virtualenvs = False


def _pyenv_versions() -> None:
    """Let pyenv's ``python3.X`` shims run every supported Python (see the docstring)."""
    if os.environ.get("PYENV_VERSION") or not shutil.which("pyenv"):
        return
    out = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True, check=False)
    chosen = []
    for python in PYTHONS:
        patches = [v for v in out.stdout.split() if re.fullmatch(re.escape(python) + r"\.\d+", v)]
        if patches:
            chosen.append(max(patches, key=lambda v: int(v.rsplit(".", 1)[1])))
    if chosen:
        os.environ["PYENV_VERSION"] = ":".join(chosen)


_pyenv_versions()


def _run_suite(session: nox.Session, core: str | None) -> None:
    session.install("-e", ".[test]")
    env = {"NUMBA_LPRUN_FUZZ_EXAMPLES": os.environ.get("NUMBA_LPRUN_FUZZ_EXAMPLES", "80")}
    if core is not None:
        env["LINE_PROFILER_CORE"] = core
    session.run("python", "-m", "pytest", "-q", *session.posargs, env=env)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """The whole suite, with line_profiler's default core on this Python."""
    _run_suite(session, None)


@nox.session(python=BOTH_CORES)
def tests_legacy_core(session: nox.Session) -> None:
    """The whole suite with line_profiler's settrace core, where sys.monitoring is the default."""
    _run_suite(session, "legacy")
