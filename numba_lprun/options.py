"""The options of both front ends, in one place: ``%nlprun`` and ``nlprun`` parse,
document and apply the same options the same way.

Each option is declared once, with its help text and default; the magic turns the
list into IPython ``@argument`` decorators, the command line into ``argparse``
arguments, and both map the parsed values to ``LineProfiler`` arguments and write
their report files through the same functions here. An option meant for one
front end only (``-r`` returns the profiler to IPython; ``--keep-going`` runs a
script unprofiled) says so; ``-m`` is the one flag whose meaning differs (a
module to profile in IPython, a module to run on the command line, as with
``python -m``), so each front end declares its own.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .diagnose import DEFAULT_THRESHOLD
from .profiler import DEFAULT_MIN_SAMPLES, DEFAULT_SAMPLE_RATE, DEFAULT_SAMPLE_TIME, LineProfiler
from .renderers import profile_html
from .stats import ProfileStats

MAGIC, CLI = "magic", "cli"
BOTH = frozenset({MAGIC, CLI})


@dataclass(frozen=True)
class Option:
    """One option: its flags, where it is parsed to, how it reads in help."""

    flags: tuple[str, ...]
    dest: str
    help: str
    action: str = "store"  # store, store_true, store_false or append
    type: Callable[[str], Any] | None = None
    default: Any = None
    metavar: str | None = None
    front_ends: frozenset[str] = BOTH
    optional_value: Any = None  # the value when the flag is given without one (nargs="?")

    def argparse_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"dest": self.dest, "help": self.help, "action": self.action}
        if self.action in ("store", "append"):
            kwargs["metavar"] = self.metavar
            if self.type is not None:
                kwargs["type"] = self.type
            if self.optional_value is not None:
                kwargs["nargs"], kwargs["const"] = "?", self.optional_value
        if self.action == "append":
            kwargs["default"] = []
        elif self.action == "store":
            kwargs["default"] = self.default
        return kwargs

    @property
    def takes_value(self) -> bool:
        """Whether the next token is always this option's value."""
        return self.action in ("store", "append") and self.optional_value is None


OPTIONS: list[Option] = [
    Option(
        ("-f",),
        "functions",
        "Profile FUNC: in IPython an expression giving a Numba jitted function, on the command line "
        "MODULE:FUNC (imported first) or FUNC defined by the script. Repeatable.",
        action="append",
        metavar="FUNC",
    ),
    Option(
        ("-m",),
        "modules",
        "Profile every jitted function defined in MODULE (imported if needed). Repeatable.",
        action="append",
        metavar="MODULE",
        front_ends=frozenset({MAGIC}),
    ),
    Option(
        ("-m",),
        "module",
        "Run MODULE as the script, like python -m.",
        metavar="MODULE",
        front_ends=frozenset({CLI}),
    ),
    Option(("-u",), "unit", "Output unit of times, in seconds (default 1e-9).", type=float, metavar="UNIT"),
    Option(("-z",), "stripzeros", "Hide functions with zero hits.", action="store_true"),
    Option(
        ("-r",),
        "return_profiler",
        "Return the LineProfiler (its get_stats() gives a line_profiler LineStats).",
        action="store_true",
        front_ends=frozenset({MAGIC}),
    ),
    Option(("-D",), "dump", "Write the stats to FILE (.lprof).", metavar="FILE"),
    Option(("-T",), "text", "Write the text table (line_profiler's layout) to FILE.", metavar="FILE"),
    Option(("--html",), "html", "Write a self-contained HTML report to FILE.", metavar="FILE"),
    Option(
        ("--once",),
        "once",
        "Run once, instrumented only: no plain baseline, so no overhead figure and no samples.",
        action="store_true",
    ),
    Option(
        ("--hits",),
        "hits",
        "Count hits only: no clock reads, so the optimizer is barely disturbed; no times are shown.",
        action="store_true",
    ),
    Option(
        ("--raw",),
        "raw",
        "Show raw times, without taking the probes' own cost out of each hit.",
        action="store_true",
    ),
    Option(
        ("--threshold",),
        "threshold",
        f"Overhead ratio above which the table is flagged as distorted (default {DEFAULT_THRESHOLD:g}).",
        type=float,
        default=DEFAULT_THRESHOLD,
        metavar="RATIO",
    ),
    Option(("--no-sample",), "sample", "Do not sample the plain run (no %% Samples column).", "store_false"),
    Option(
        ("--rate",),
        "rate",
        f"Sampling rate of the plain run's repeats, per thread (default {DEFAULT_SAMPLE_RATE:g}).",
        type=float,
        default=DEFAULT_SAMPLE_RATE,
        metavar="HZ",
    ),
    Option(
        ("--sample-time",),
        "sample_time",
        f"Seconds of sampled repeats of the plain run (default {DEFAULT_SAMPLE_TIME:g}); they stop "
        f"earlier once {DEFAULT_MIN_SAMPLES} samples landed in the profiled functions.",
        type=float,
        default=DEFAULT_SAMPLE_TIME,
        metavar="S",
    ),
    Option(
        ("--snapshot-limit",),
        "snapshot_mb",
        "Memory allowed for saving the state the run can reach, in MB (default: the smaller of 2 GiB "
        "and a quarter of free memory); over it, the statement runs once.",
        type=float,
        metavar="MB",
    ),
    Option(
        ("--asm",),
        "asm",
        "Read the plain twins' machine code: hints about the hot lines (allocations per execution, "
        "SIMD, calls that stayed calls) and the instructions of the N hottest lines (default 3) with "
        "samples per instruction; runs the statement once more to count allocations.",
        type=int,
        metavar="N",
        optional_value=3,
    ),
    Option(
        ("--keep-going",),
        "keep_going",
        "If profiling fails, say why and run the script unprofiled.",
        action="store_true",
        front_ends=frozenset({CLI}),
    ),
]


def options_for(front_end: str) -> list[Option]:
    return [opt for opt in OPTIONS if front_end in opt.front_ends]


def value_flags(front_end: str) -> set[str]:
    """Flags of ``front_end`` that take a value (the magic splits its line with these)."""
    return {flag for opt in options_for(front_end) if opt.takes_value for flag in opt.flags}


def optional_value_flags(front_end: str) -> set[str]:
    """Flags of ``front_end`` whose value may be left out (``--asm`` or ``--asm 5``)."""
    return {flag for opt in options_for(front_end) if opt.optional_value is not None for flag in opt.flags}


def asm_lines(opts: argparse.Namespace) -> int:
    """How many hottest lines to list instruction by instruction (0 without ``--asm``)."""
    return opts.asm or 0


def add_to_parser(parser: argparse.ArgumentParser, front_end: str) -> None:
    for opt in options_for(front_end):
        parser.add_argument(*opt.flags, **opt.argparse_kwargs())


def profiler_kwargs(opts: argparse.Namespace) -> dict[str, Any]:
    """``LineProfiler`` arguments for parsed options (the functions are added separately)."""
    return {
        "baseline": not opts.once,
        "timing": not opts.hits,
        "corrected": not opts.raw,
        "threshold": opts.threshold,
        "sample": opts.sample,
        "sample_rate": opts.rate,
        "sample_time": opts.sample_time,
        "snapshot_budget": None if opts.snapshot_mb is None else int(opts.snapshot_mb * 1e6),
        "asm": opts.asm is not None,
    }


def write_reports(
    prof: LineProfiler, profile: ProfileStats, opts: argparse.Namespace, text: str
) -> list[str]:
    """Write the files ``-T``, ``--html`` and ``-D`` ask for; one sentence per file written."""
    said = []
    if opts.text:
        with open(opts.text, "w", encoding="utf-8") as handle:
            handle.write(text)
        said.append(f"*** Profile printout saved to text file {opts.text!r}.")
    if opts.html:
        with open(opts.html, "w", encoding="utf-8") as handle:
            handle.write(profile_html(profile, opts.unit, opts.stripzeros, page=True))
        said.append(f"*** HTML report written to {opts.html!r}.")
    if opts.dump:
        prof.dump_stats(opts.dump)
        said.append(f"*** Profile stats pickled to file {opts.dump!r}.")
    return said
