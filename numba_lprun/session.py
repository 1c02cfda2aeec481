"""Between the front ends and the profiler: a request, its outcome, its presentation.

The magic and the command line parse their input and print; what they share is here,
written once. A request: what is profiled (``Selection``: data the run stage judges
itself, never a callback into the front end) and the CPU/CUDA split with its refusals
(``split_cpu_cuda``, ``RequestError`` naming the reason in one line). An outcome: why a
run was cut short (``cut_short``: the program's error, the profiler's own failure) and
what to say when no profiled function ran (``nothing_ran``, ``could_have_profiled``).
The presentation: ``report`` prints the table (or has a notebook display it) and writes
the files the options ask for (``-T``, ``--html``, ``-D``); ``show_saved`` shows a
profile that ``-D`` saved (the ``.lprof`` carries the whole profile after line_profiler's
stats: ``renderers.lprof``) or that ``ProfileStats.to_json`` wrote, through the same
``report`` (``python -m numba_lprun show FILE``, ``nlprun --load``, ``%nlprun --load``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import textwrap
from collections.abc import Callable
from html import escape
from typing import TextIO

from .cuda import split_cuda
from .errors import profiler_failed
from .options import CLI, cuda_refusals, run_options_given
from .renderers import HTMLRenderer, LprofWriter, RichRenderer, TextRenderer, read_profile
from .renderers.columns import SAMPLE_COUNTS
from .run.selection import MainModule, Selection
from .run.statements import bound_by
from .stats import ProfileStats

__all__ = [
    "MainModule",
    "RequestError",
    "Selection",
    "could_have_profiled",
    "cut_short",
    "load",
    "names_made_by",
    "nothing_ran",
    "report",
    "show_saved",
    "split_cpu_cuda",
    "version_text",
]

USAGE_ERROR = 2


class RequestError(Exception):
    """A request refused before anything runs, in one line (the magic raises it as IPython's
    ``UsageError``, the command line prints it and exits with 2)."""


def names_made_by(exprs: list[str], source: str) -> list[str]:
    """The ``-f`` names of what ``source`` (a cell) makes itself (``f``, ``Class.member``, bound
    by its own top-level statements): matched by name as it runs, as a script's are, not looked
    up before it runs."""
    bound = bound_by(source)
    return [e for e in exprs if re.fullmatch(r"\w+(\.\w+)?", e) and e.partition(".")[0] in bound]


def split_cpu_cuda(
    named: list[tuple[str, object]], opts: argparse.Namespace, front_end: str, modules: list[str] = ()
) -> tuple[list[tuple[str, object]], list[object]]:
    """``-f``'s (name, object) pairs split into CPU ones and CUDA kernels (``cuda.split_cuda``);
    ``RequestError`` where both are asked for at once (with ``-m`` modules too), or where an
    option means nothing for a CUDA launch."""
    cuda, others = split_cuda(named)
    if cuda and (others or modules):
        what = f"-f {others[0][0]}" if others else f"-m {modules[0]}"
        raise RequestError(
            f"{what}: CPU functions and CUDA kernels cannot be profiled together (a CUDA launch is "
            "profiled by its own launches, a CPU function by runs of the program): profile them in two runs"
        )
    refused = cuda_refusals(opts, front_end) if cuda else []
    if refused:
        raise RequestError(refused[0])
    return others, cuda


def cut_short(error: BaseException | None, interrupted: str | None, subject: str) -> str | None:
    """Why the profile shown is only part of a run (said above it): ``interrupted`` (Ctrl-C, an
    exit), the program's own error, or numba_lprun's own failure; ``subject``: "statement" or "script"."""
    if error is not None and profiler_failed(error):
        return f"numba_lprun itself failed ({type(error).__name__}): please report it"
    if error is not None:
        return f"the {subject} raised {type(error).__name__}"
    return interrupted


def nothing_ran(profile: ProfileStats) -> bool:
    """Whether no profiled function ran (then the front end says what could have been profiled);
    one that code the run could not reach calls (``Source.unreached``) may have run: its note says."""
    return not any(f.counts.calls or f.counts.hits or f.source.unreached for f in profile.functions)


def could_have_profiled(found: list[str], where: str, profiled: ProfileStats | None = None) -> str:
    """The hint after a profile where nothing profiled ran: the ``-f`` names ``where`` (the
    statement, the script) could have asked for, less those ``profiled`` already holds (never
    suggest what the user just did)."""
    have = {f.source.qualname for f in profiled.functions} if profiled is not None else set()
    have |= {f.source.name for f in profiled.functions} if profiled is not None else set()
    others = [f for f in found if f.rpartition(":")[2] not in have]
    if not others:
        return (
            "no profiled function ran in this process (calls made in processes that sent no part, or "
            "by code compiled before the profile that no Python object leads to, are not counted)"
        )
    names = "; ".join(f"-f {f}" for f in others)  # (that none ran, the profile above says)
    return f"what {where} could have profiled: {names}"


def version_text() -> str:
    """``--version``: numba_lprun's, and the releases of what a bug report needs beside it."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for package in ("numba_lprun", "numba", "llvmlite", "numpy", "line_profiler"):
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            found.append(f"{package} not installed")
    return f"{found[0]} ({', '.join(found[1:])}, Python {platform.python_version()})"


def asm_lines(opts: argparse.Namespace) -> int:
    """How many hottest lines to list instruction by instruction (0 without ``--asm``)."""
    return opts.asm or 0


def shown_columns(opts: argparse.Namespace) -> frozenset[str]:
    """The optional columns the options ask for (display only: the profile is the same)."""
    return frozenset({SAMPLE_COUNTS}) if opts.sample_counts else frozenset()


def write_files(profile: ProfileStats, opts: argparse.Namespace, text: str) -> list[str]:
    """Write the files ``-T``, ``--html`` and ``-D`` ask for; one sentence per file written."""
    said = []
    if opts.text and opts.text != "-":  # -: printed instead of the table (report)
        with open(opts.text, "w", encoding="utf-8") as handle:
            handle.write(text)
        said.append(f"*** Profile printout saved to text file {opts.text!r}.")
    if opts.html:
        HTMLRenderer(opts.unit, opts.stripzeros, page=True, columns=shown_columns(opts)).write(
            profile, opts.html
        )
        said.append(f"*** HTML report written to {opts.html!r}.")
    if opts.dump:
        LprofWriter(opts.dump).write(profile)
        said.append(
            f"*** Profile stats pickled to file {opts.dump!r}. To show this profile again, notes "
            f"included: python -m numba_lprun show {opts.dump} (line_profiler's columns only: "
            f"python -m line_profiler {opts.dump})."
        )
    return said


def report(
    profile: ProfileStats,
    opts: argparse.Namespace,
    interrupted: str | None = None,
    display: Callable[[str, str], None] | None = None,
    file: TextIO | None = None,
) -> None:
    """Show ``profile`` as both front ends do, and write the files the options ask for.

    ``display(html, text)`` shows it in a notebook (the magic passes IPython's);
    without it the rich table goes to ``file`` (stdout), or line_profiler's text layout
    with ``-T -``. ``interrupted`` says why the run was cut short, shown above the profile.
    """
    file = sys.stdout if file is None else file
    lines = asm_lines(opts)
    cols = shown_columns(opts)
    text = TextRenderer(opts.unit, opts.stripzeros, width=0, asm_lines=lines, columns=cols).render(profile)
    banner = f"numba_lprun: {interrupted}; showing the profile gathered so far" if interrupted else ""
    failed = [
        f"numba_lprun: {f.heading} did not compile: {f.source.compile_error}"
        for f in profile.functions
        if f.source.compile_error
        and not (f.counts.calls or f.counts.hits)  # it never ran (a later call may have)
    ]
    banner = "\n".join([*failed, banner] if banner else failed)  # what went wrong first
    said = write_files(profile, opts, f"{banner}\n\n{text}" if banner else text)
    if opts.text == "-":
        print(f"{banner}\n\n{text}" if banner else text, file=file, end="")
    elif display is not None:
        html = HTMLRenderer(opts.unit, opts.stripzeros, columns=cols).render(profile)
        if banner:
            html = "".join(f"<p><b>{escape(line)}</b></p>" for line in banner.splitlines()) + html
        display(html, f"{banner}\n\n{text}" if banner else text)
    else:
        for line in banner.splitlines() if banner else ():  # wrapped in a terminal, as the table is
            wrap = (
                getattr(file, "isatty", lambda: False)() and len(line) >= shutil.get_terminal_size().columns
            )
            print(textwrap.fill(line, shutil.get_terminal_size().columns - 1) if wrap else line, file=file)
        RichRenderer(opts.unit, opts.stripzeros, asm_lines=lines, columns=cols).print(profile, file)
    for sentence in said:
        print(sentence, file=file)


def load(filename: str) -> ProfileStats:
    """The profile saved in ``filename``; ``ValueError`` (one line) where there is none."""
    try:
        return read_profile(filename)
    except OSError as exc:
        raise ValueError(f"cannot read {filename}: {exc.strerror}") from None


def show_saved(opts: argparse.Namespace, front_end: str = CLI, program: str | None = None) -> int:
    """``--load FILE``: the saved profile shown again (exit status 0), or why not (2): a
    ``program`` to run, and options that shape a run, mean nothing for a profile already made."""
    given = run_options_given(opts, front_end) + ([program] if program else [])
    if given:
        print(
            f"nlprun: --load shows a saved profile: {given[0]} is for a run, and none is made",
            file=sys.stderr,
        )
        return USAGE_ERROR
    try:
        profile = load(opts.load)
    except ValueError as exc:
        print(f"nlprun: {exc}", file=sys.stderr)
        return USAGE_ERROR
    report(profile, opts)
    return 0
