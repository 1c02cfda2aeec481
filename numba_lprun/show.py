"""Showing a profile as both front ends do, and a saved one again.

``report`` prints the table (or has a notebook display it) and writes the files the
options ask for (``-T``, ``--html``, ``-D``). ``python -m numba_lprun show FILE``
(``nlprun --load FILE``, ``%nlprun --load FILE``) reads a profile that ``-D`` saved (the
``.lprof`` carries the whole profile after line_profiler's stats: ``renderers.lprof``) or
that ``ProfileStats.to_json`` wrote, and shows it through the same ``report``: the same
table and notes the run printed, as text, a rich table or HTML.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from collections.abc import Callable
from html import escape
from typing import TextIO

from .options import CLI, add_to_parser, run_options_given
from .renderers import HTMLRenderer, LprofWriter, RichRenderer, TextRenderer, read_profile
from .renderers.columns import SAMPLE_COUNTS
from .stats import ProfileStats

USAGE_ERROR = 2


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
        if f.source.compile_error and not (f.calls or f.hits)  # it never ran (a later call may have)
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


def main(argv: list[str]) -> int:
    """``python -m numba_lprun show FILE [options]``."""
    parser = argparse.ArgumentParser(
        prog="python -m numba_lprun show",
        description="Show a profile saved by -D (or ProfileStats.to_json) again, with its notes: the "
        "table as the run printed it, or line_profiler's text layout (-T -), or an HTML report (--html).",
    )
    parser.add_argument("load", metavar="FILE", help="the .lprof file that -D wrote, or a profile's JSON")
    add_to_parser(parser, CLI, on_load=True)
    return show_saved(parser.parse_args(argv))
