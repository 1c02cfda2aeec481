"""The Python API: ``LineProfiler``, shaped like ``line_profiler.LineProfiler``.

A small facade: it keeps the targets (``run.Runner``), runs each profiled call
as a list of phases (``run.phases``), keeps what they measured, and assembles
the frozen profile on demand (``assemble``).
"""

from __future__ import annotations

import functools
import io
import os
import sys
from collections.abc import Callable
from typing import Any

from .assemble import assemble, assembly_settings
from .diagnose import DEFAULT_THRESHOLD
from .errors import without_profiler_frames
from .instrument.clock import ClockInfo, current_clock
from .instrument.profilable import resolve
from .instrument.twins import Twin
from .merge import merged
from .processes.child import write_run_part
from .processes.launch import Launches
from .run.code_reading import read_twin_code
from .run.measurements import CallRecord, Counted, close_call, merge_records
from .run.phase_run import PhaseRun
from .run.phases import CallContext, RunSettings, plan, run_phases
from .run.replay import CallRecorder
from .run.runner import Runner
from .run.selection import MainModule, Selection, SourceRun
from .run.snapshot import Reach, call_reach, default_budget, statement_reach
from .run.statements import statement_run
from .run.targets import TWIN_KINDS
from .sampling import sampler_unavailable
from .stats import LineStats, ProcessPart, ProfileStats

DEFAULT_SAMPLE_RATE = 2000.0  # Hz per thread: the sampler costs about 3% per kHz here
DEFAULT_SAMPLE_TIME = 1.0  # seconds of sampled repeats allowed beyond the user's run
DEFAULT_MIN_SAMPLES = 2000  # samples in the profiled functions that end the repeats early
DEFAULT_EXTRA_LIMIT = 0.5  # seconds: a longer user's run gets no plain run (it would cost as much again)


def _profiled_call(
    profiler: LineProfiler,
    execute: Callable[[PhaseRun], Any],
    namespaces: list[dict],
    reach: Reach | None,
    progress: Callable[[str], None] | None,
    once: str | None,
) -> Any:
    """``LineProfiler.run_call``'s work: the call's phases planned and run, and its record
    added to the profiler's whatever happens (the user's exception without our frames)."""
    __tracebackhide__ = True
    runner, settings = profiler._runner, profiler.settings
    if once is None and not settings.repeat:
        once = "--once asked for one run"
    concurrent = runner.runs_on_threads()
    # the functions as each process starts: a script may define them first (``Runner.adopt``)
    launches = Launches(lambda: [t.original for t in runner.targets.values()], settings.timing)
    ctx = CallContext(runner, execute, namespaces, progress, settings, concurrent, children=launches)
    if once is None and settings.timing:
        # the extra runs replay the calls the user's run makes (never the statement), each from the
        # state it was made in (``replay``)
        budget = settings.snapshot_budget if settings.snapshot_budget is not None else default_budget()
        ctx.recorder = CallRecorder(budget, concurrent)
    planned = plan(settings, once, sampler_unavailable())
    # the processes it starts run the same twins, sampled alike
    launches.twin, launches.sampled = planned.user.kind, planned.user.sampled
    launches.rate_hz = settings.rate_hz
    kind = planned.user.kind
    # a process the run forks itself (os.fork) goes on with the run: its own counts, sent as a part
    launches.on_fork = lambda: runner.take_counts(kind)
    launches.fork_part = lambda: _send_fork_part(ctx, launches, kind, profiler._clock)
    try:
        return run_phases(ctx, planned, once)
    except Exception as exc:  # the user's, with the profiler's frames left out (not its own)
        raise without_profiler_frames(exc)  # noqa: B904  (the same exception, not a new one)
    finally:
        if launches.forked_child:  # the parent shows its counts, not this process
            launches.fork_part()
        else:
            call = close_call(ctx.made, runner.facts(kind), kind)
            profiler._record = merge_records(profiler._record, call)
            parts, missing = launches.collect()
            profiler._parts += parts
            profiler._missing += tuple(missing)


def _send_fork_part(ctx: CallContext, launches: Launches, kind: str, clock: ClockInfo) -> None:
    """A forked child's counts, written once as its part for the parent to merge: the user's
    run's, or where the child ends inside it (``os._exit``), the counters as they are."""
    if launches.directory is None or launches.fork_part is None:
        return
    launches.fork_part = None  # once
    made = ctx.made
    if not any(isinstance(m, Counted) and m.user for m in made):
        made = [*made, Counted(kind, True, ctx.runner.take_counts(kind))]
    label = f"process {os.getpid()} (forked by your run)"
    write_run_part(launches.directory, label, made, ctx.runner, kind, ctx.settings, clock)


def _raises_the_users_error(method: Callable) -> Callable:
    """``method`` (a public entry) raising the user's error with the profiler's frames left out,
    but its own, named as the method: where it raises the error again, as Python shows any
    re-raise. An entry calling another (``run``, ``runctx``) leaves out the inner one's too."""

    def entry(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            raise without_profiler_frames(exc)  # noqa: B904  (the same exception, not a new one)

    entry.__code__ = entry.__code__.replace(co_name=method.__name__, co_qualname=method.__qualname__)
    return functools.wraps(method)(entry)


class LineProfiler:
    """Line-profile Numba jitted functions: exact hits from counters, times from samples. The user's
    run: counting twins under a native sampler (processes it starts count too); then extra runs (a
    timed plain run and sampled repeats if it took at most ``extra_limit`` s, a probed run for
    ``probes=True``) where the state it reaches can be put back (``repeat=True``); else the plain
    twins only compiled, to compare vectorization, where cheap (``compare_code``: always)."""

    def __init__(
        self,
        *functions: Callable,
        probes: bool = False,
        timing: bool = True,
        sample: bool = True,
        repeat: bool = True,
        corrected: bool = True,
        threshold: float = DEFAULT_THRESHOLD,
        sample_rate: float = DEFAULT_SAMPLE_RATE,
        sample_time: float = DEFAULT_SAMPLE_TIME,
        min_samples: int = DEFAULT_MIN_SAMPLES,
        snapshot_budget: int | None = None,
        asm: bool = False,
        extra_limit: float = DEFAULT_EXTRA_LIMIT,
        compare_code: bool = False,
    ):
        self.settings = RunSettings(  # by keyword, grouped: what runs, how it is sampled, what is kept
            timing=timing, sample=sample, probes=probes, repeat=repeat, asm=asm, compare_code=compare_code,
            rate_hz=sample_rate, sample_time=sample_time, min_samples=min_samples, extra_limit=extra_limit,
            snapshot_budget=snapshot_budget,
        )  # fmt: skip
        self.threshold, self.corrected = threshold, corrected
        self._clock = current_clock()
        self._runner = Runner(self._clock.kind, shows_times=timing)
        self._record: CallRecord | None = None  # every profiled call so far, added up
        self._parts: list[ProcessPart] = []  # what the processes the calls started measured
        self._missing: tuple[str, ...] = ()  # why some of them sent nothing
        self._readings: dict[tuple, Any] = {}
        self.last_source: SourceRun | None = None  # what the last runsource found
        for func in functions:
            self.add_function(func)

    def add_function(self, func: Callable | type, name: str | None = None) -> None:
        """Profile ``func`` too (a dispatcher, a jitclass or a member, a ufunc, a stencil, an
        overloaded function; ``name``: what its table's title calls it); ``NotProfilableError``."""
        for dispatcher in (found := resolve(func)):
            self._runner.add(dispatcher, name if found == [func] else None)

    def twins(self) -> list[Twin]:
        """The twins this profiler ran on (plain, counting, probed, relinked callers)."""
        return [twin for kind in TWIN_KINDS for twin in self._runner.twins(kind)]

    @property
    def functions(self) -> list[Callable]:
        return [t.original for t in self._runner.targets.values()]

    @_raises_the_users_error
    def runcall(self, func: Callable, /, *args: Any, **kwargs: Any) -> Any:
        """Profile ``func(*args, **kwargs)``; return the user's run's result."""

        def call(run: PhaseRun) -> Any:
            __tracebackhide__ = True
            replacement = run.replacements.get(id(func), func)
            if run.swap.recorder is not None and replacement is not func:  # the call the extra runs replay
                return run.swap.recorder(func, replacement, args, kwargs)
            return replacement(*args, **kwargs)

        return self.run_call(call, [], call_reach(func, args, kwargs))

    @_raises_the_users_error
    def runctx(self, cmd: str, globals: dict, locals: dict | None) -> LineProfiler:
        """Execute the statement ``cmd`` in ``globals``/``locals``, profiled."""
        code = compile(cmd, "<nlprun>", "exec")
        locals = globals if locals is None else locals
        reach = statement_reach([code], [locals, globals])
        self.run_call(lambda _: exec(code, globals, locals), [globals, locals], reach)
        return self

    @_raises_the_users_error
    def run(self, cmd: str) -> LineProfiler:
        """Execute ``cmd`` in ``__main__``'s namespace."""
        main = vars(sys.modules["__main__"])
        return self.runctx(cmd, main, main)

    @_raises_the_users_error
    def runsource(
        self,
        source: str,
        filename: str,
        namespace: dict | MainModule,
        selection: Selection | None = None,
        progress: Callable[[str], None] | None = None,
        once: str | None = None,
        flags: int = 0,
    ) -> LineProfiler:
        """Run module-like ``source`` by statement (``run.statements``), profiling what ``selection``
        accepts of what it defines; ``once``: why it runs only once (a script)."""
        __tracebackhide__ = True
        self.last_source = SourceRun(selection or Selection(filename))
        execute, namespaces, reach = statement_run(source, filename, namespace, self.last_source, flags)
        self.run_call(execute, namespaces, reach, progress, once)
        return self

    def run_call(
        self,
        execute: Callable[[PhaseRun], Any],
        namespaces: list[dict],
        reach: Reach | None = None,
        progress: Callable[[str], None] | None = None,
        once: str | None = None,
    ) -> Any:
        """Run ``execute`` as one profiled call: the user's run's result (its exception raised)."""
        __tracebackhide__ = True
        return _profiled_call(self, execute, namespaces, reach, progress, once)

    @property
    def profile(self) -> ProfileStats:
        """The profile of every call so far: a frozen value, never changed by later runs."""
        record = self._record or CallRecord()
        settings = assembly_settings(self.settings, self._clock, self.threshold, self.corrected, record)
        readings = read_twin_code(self._runner, record, self._readings) if self.settings.asm else None
        return merged(assemble(record, settings, readings), self._parts, self._missing, self.corrected)

    def get_stats(self) -> LineStats:
        """A ``line_profiler.LineStats``: timings keyed (filename, first line, qualified name)."""
        return self.profile.to_line_stats()

    @property
    def overhead(self) -> dict[str, float | None]:  # the user's run / the plain runs, None: not measured
        return {s.source.name: s.distortion.overhead for s in self.profile.functions}

    def print_stats(
        self,
        stream: io.TextIOBase | None = None,
        output_unit: float | None = None,
        stripzeros: bool = False,
        asm_lines: int | None = None,
    ) -> None:
        """Write line_profiler's text report, with the same notes as the magic."""
        from .renderers import TextRenderer

        lines = (3 if self.settings.asm else 0) if asm_lines is None else asm_lines
        renderer = TextRenderer(output_unit, stripzeros, asm_lines=lines)
        (sys.stdout if stream is None else stream).write(renderer.render(self.profile))

    def dump_stats(self, filename: str) -> None:
        """Write a ``.lprof`` file that ``python -m line_profiler FILE`` shows, and that
        ``python -m numba_lprun show FILE`` shows whole, notes included (``renderers.lprof``)."""
        from .renderers import LprofWriter

        LprofWriter(filename).write(self.profile)
