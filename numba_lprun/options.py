"""The options of both front ends, in one place: ``%nlprun`` and ``nlprun`` parse,
document and apply the same options the same way.

Each option is declared once, with its help text and default; the magic turns the
list into IPython ``@argument`` decorators, the command line into ``argparse``
arguments, and both map the parsed values to ``LineProfiler`` arguments here (and
show the profile and write its files through ``show.report``). An option meant for one
front end only (``-r`` returns the profiler to IPython; ``--keep-going`` runs a
script unprofiled) says so; ``-m`` is the one flag whose meaning differs (a
module to profile in IPython, a module to run on the command line, as with
``python -m``), so each front end declares its own.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .diagnose import DEFAULT_THRESHOLD
from .profiler import DEFAULT_EXTRA_LIMIT, DEFAULT_MIN_SAMPLES, DEFAULT_SAMPLE_RATE, DEFAULT_SAMPLE_TIME

MAGIC, CLI = "magic", "cli"


def output_file(value: str) -> str:
    """A file to write, as an absolute path, fixed when the options are read: the program may
    change its working folder before the profile is written (the file landed there, and the
    message named it as given). ``-`` (standard output) stays."""
    return value if value == "-" else os.path.abspath(value)


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
    not_for_cuda: str | None = None  # why the option means nothing for a CUDA launch
    on_load: bool = False  # it applies to a saved profile shown again (--load, show): display only
    brief: str = ""  # one short line for %nlprun?, which must fit a screen ("": the help)

    @property
    def default_value(self) -> Any:
        """What argparse stores when the flag is not given."""
        return {"store_true": False, "store_false": True, "append": []}.get(self.action, self.default)

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
        "Profile FUNC: in IPython an expression giving a Numba jitted function (or the name of one "
        "the profiled cell defines), on the command line MODULE:FUNC (imported first) or FUNC defined "
        "by the script (Class.method: a member of a jitclass it defines). Repeatable. A @cuda.jit "
        "kernel or device function (MODULE:FUNC on the command line) has its launches profiled.",
        action="append",
        metavar="FUNC",
        brief="a jitted function to profile (repeatable)",
    ),
    Option(
        ("-m",),
        "modules",
        "Profile every jitted function defined in MODULE (imported if needed). Repeatable.",
        action="append",
        metavar="MODULE",
        front_ends=frozenset({MAGIC}),
        not_for_cuda="it profiles the CPU jitted functions of a module",
        brief="profile every jitted function MODULE defines",
    ),
    Option(
        ("-m",),
        "module",
        "Run MODULE as the script, like python -m.",
        metavar="MODULE",
        front_ends=frozenset({CLI}),
    ),
    Option(
        ("-c",),
        "code",
        "Run CODE as the script, like python -c (the arguments after it are its sys.argv[1:]).",
        metavar="CODE",
        front_ends=frozenset({CLI}),
    ),
    Option(
        ("--source",),
        "source",
        "Profile every jitted function that the package or module PKG (submodules included) defines, "
        "imported before the run or during it (PKG[,PKG2], repeatable); -z hides those that never ran.",
        action="append",
        metavar="PKG",
        not_for_cuda="it profiles the CPU jitted functions of a package",
        brief="profile every jitted function package PKG defines",
    ),
    Option(
        ("-u",),
        "unit",
        "Output unit of times, in seconds (default 1e-9).",
        type=float,
        metavar="UNIT",
        not_for_cuda="GPU times are in cycles, not seconds",
        on_load=True,
        brief="unit of the Time column, in s (default 1e-9)",
    ),
    Option(
        ("-z",),
        "stripzeros",
        "Hide functions with zero hits.",
        action="store_true",
        on_load=True,
        brief="hide functions with zero hits",
    ),
    Option(
        ("--sample-counts",),
        "sample_counts",
        "Show a Samples column: how many samples landed on each line.",
        action="store_true",
        not_for_cuda="nothing samples a GPU",
        on_load=True,
        brief="add a Samples column: samples per line",
    ),
    Option(
        ("-r",),
        "return_profiler",
        "Return the LineProfiler (its get_stats() gives a line_profiler LineStats).",
        action="store_true",
        front_ends=frozenset({MAGIC}),
        brief="return the LineProfiler",
    ),
    Option(
        ("-D",),
        "dump",
        "Write the stats to FILE (.lprof): python -m line_profiler FILE shows line_profiler's columns, "
        "python -m numba_lprun show FILE (nlprun --load FILE) the whole profile again, notes included.",
        metavar="FILE",
        type=output_file,
        not_for_cuda="line_profiler's .lprof files hold times in seconds, and GPU times are cycles",
        on_load=True,
        brief="save the profile to FILE (.lprof; reopen: --load)",
    ),
    Option(
        ("-T",),
        "text",
        "Write the text table (line_profiler's layout) to FILE; -T - prints it instead of the table.",
        metavar="FILE",
        type=output_file,
        on_load=True,
        brief="write line_profiler's layout to FILE (-: print it)",
    ),
    Option(
        ("--html",),
        "html",
        "Write a self-contained HTML report to FILE.",
        metavar="FILE",
        type=output_file,
        on_load=True,
        brief="write a self-contained HTML report to FILE",
    ),
    Option(
        ("--load",),
        "load",
        "Show the profile saved in FILE again (by -D, or ProfileStats.to_json), with its notes, instead "
        "of running anything; -T, --html and -D write it as they would have. Also: python -m "
        "numba_lprun show FILE.",
        metavar="FILE",
        brief="show a profile saved with -D again",
    ),
    Option(
        ("--once",),
        "once",
        "Run once, even where the statement could be repeated: no overhead figure, and only "
        "the samples of your own run.",
        action="store_true",
        brief="run once: no plain runs, no overhead figure",
    ),
    Option(
        ("--probes",),
        "probes",
        "Also time every line with clock probes (a run of its own where the statement can be repeated): "
        "probe times beside the sampled ones, ! where they disagree.",
        action="store_true",
        not_for_cuda="the GPU twin's probes read the clock already (--hits turns them off)",
        brief="also time every line with clock probes",
    ),
    Option(
        ("--hits",),
        "hits",
        "Count hits only: no sampler and no clock probes, so no times.",
        action="store_true",
        brief="count hits only: no times",
    ),
    Option(
        ("--raw",),
        "raw",
        "Show raw probe times, without taking the probes' own cost out of each hit.",
        action="store_true",
        not_for_cuda="a GPU probe's own cycles are charged to no line: there is nothing to take out",
        brief="probe times with the probes' own cost left in",
    ),
    Option(
        ("--threshold",),
        "threshold",
        f"Overhead ratio above which a run is flagged as distorted (default {DEFAULT_THRESHOLD:g}).",
        type=float,
        default=DEFAULT_THRESHOLD,
        metavar="RATIO",
        brief=f"warn above this overhead (default {DEFAULT_THRESHOLD:g})",
    ),
    Option(
        ("--no-sample",),
        "sample",
        "Do not sample: times come from clock probes on every line.",
        "store_false",
        not_for_cuda="nothing samples a GPU",
        brief="no sampler: times from clock probes",
    ),
    Option(
        ("--rate",),
        "rate",
        f"Sampling rate per thread, in Hz (default {DEFAULT_SAMPLE_RATE:g}).",
        type=float,
        default=DEFAULT_SAMPLE_RATE,
        metavar="HZ",
        not_for_cuda="nothing samples a GPU",
        brief=f"samples per second per thread (default {DEFAULT_SAMPLE_RATE:g})",
    ),
    Option(
        ("--sample-time",),
        "sample_time",
        f"Seconds of sampled replays of your run's calls on the plain twins allowed (default "
        f"{DEFAULT_SAMPLE_TIME:g}); they stop once {DEFAULT_MIN_SAMPLES} samples landed in the profiled "
        "functions. Your statement itself runs once.",
        type=float,
        default=DEFAULT_SAMPLE_TIME,
        metavar="S",
        not_for_cuda="nothing samples a GPU",
        brief=f"seconds of sampled replays (default {DEFAULT_SAMPLE_TIME:g})",
    ),
    Option(
        ("--extra-limit",),
        "extra_limit",
        "Make the timed plain replay of your run's calls (the overhead figure) and the sampled replays "
        f"only when your run took at most S seconds (default {DEFAULT_EXTRA_LIMIT:g}; inf: always): a "
        "replay costs about as long as yours. Longer runs get the machine code's evidence instead.",
        type=float,
        default=DEFAULT_EXTRA_LIMIT,
        metavar="S",
        not_for_cuda="a launch's plain twin is timed on the device",
        brief=f"plain runs only after a run this short ({DEFAULT_EXTRA_LIMIT:g})",
    ),
    Option(
        ("--compare-code",),
        "compare_code",
        "After a run that is the only one (a script, --once, a long run), compile the plain twins to "
        "compare which loops each twin vectorized, however long that takes (by default only where it "
        "costs at most a tenth of the profile so far, or 1 s; the note says when it was left out).",
        action="store_true",
        not_for_cuda="a launch's plain twin is compiled for its timed launch",
        brief="compare the twins' SIMD loops however long it takes",
    ),
    Option(
        ("--snapshot-limit",),
        "snapshot_mb",
        "Memory allowed for the copies of the arguments of your run's calls that the extra runs replay, "
        "in MB (default: the smaller of 2 GiB and a quarter of free memory); past it, an evenly spread "
        "sample of the calls is kept, and a call whose arguments alone exceed it is not replayed.",
        type=float,
        metavar="MB",
        not_for_cuda="a launch's arguments are saved on the device",
        brief="memory for copies of the replayed calls' arguments",
    ),
    Option(
        ("--asm",),
        "asm",
        "Read the plain twins' machine code: hints about the hot lines (allocations per execution, "
        "SIMD, calls that stayed calls) and the instructions of the N hottest lines (default 3) with "
        "samples per instruction; where the statement can be repeated, one more run counts allocations.",
        type=int,
        metavar="N",
        optional_value=3,
        not_for_cuda="the GPU's machine code is not read",
        on_load=True,
        brief="read the machine code: hints, N hottest lines",
    ),
    Option(
        ("--keep-going",),
        "keep_going",
        "If profiling fails, say why and run the script unprofiled (where the script ran already, "
        "say why and keep its own exit status).",
        action="store_true",
        front_ends=frozenset({CLI}),
    ),
    Option(
        ("--version",),
        "version",
        "Print numba_lprun's version and those of the packages it works with, and exit.",
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


def add_to_parser(parser: argparse.ArgumentParser, front_end: str, on_load: bool = False) -> None:
    """``front_end``'s options (``on_load``: only those that apply to a saved profile)."""
    for opt in options_for(front_end):
        if opt.on_load or not on_load:
            parser.add_argument(*opt.flags, **opt.argparse_kwargs())


def run_options_given(opts: argparse.Namespace, front_end: str) -> list[str]:
    """The options given that shape a run (not ``on_load``): meaningless for a saved profile."""
    return [
        opt.flags[0]
        for opt in options_for(front_end)
        if not opt.on_load
        and opt.dest != "load"
        and getattr(opts, opt.dest, opt.default_value) != opt.default_value
    ]


def profiler_kwargs(opts: argparse.Namespace) -> dict[str, Any]:
    """``LineProfiler`` arguments for parsed options (the functions are added separately)."""
    return {
        "repeat": not opts.once,
        "probes": opts.probes,
        "timing": not opts.hits,
        "corrected": not opts.raw,
        "threshold": opts.threshold,
        "sample": opts.sample,
        "sample_rate": opts.rate,
        "sample_time": opts.sample_time,
        "snapshot_budget": None if opts.snapshot_mb is None else int(opts.snapshot_mb * 1e6),
        "asm": opts.asm is not None,
        "extra_limit": opts.extra_limit,
        "compare_code": opts.compare_code,
    }


def cuda_refusals(opts: argparse.Namespace, front_end: str) -> list[str]:
    """One sentence per option given that means nothing for CUDA kernels."""
    return [
        f"{opt.flags[0]} does not apply to CUDA kernels: {opt.not_for_cuda}"
        for opt in options_for(front_end)
        if opt.not_for_cuda and getattr(opts, opt.dest) != opt.default_value
    ]


def cuda_profiler_kwargs(opts: argparse.Namespace) -> dict[str, Any]:
    """``CudaLineProfiler`` arguments for parsed options: ``--once`` makes no extra launch,
    ``--hits`` reads no clock."""
    return {
        "timing": False if opts.hits else None,
        "overhead": False if opts.once else None,
        "threshold": opts.threshold,
    }
