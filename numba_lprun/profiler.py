"""The Python API: ``LineProfiler``, shaped like ``line_profiler.LineProfiler``.

It ties the stages together: read and rewrite each function, run the plain and
the instrumented twins, and fold their counters into plain-data stats.
"""

from __future__ import annotations

import copy
import io
import sys
from collections.abc import Callable, Iterable
from typing import Any

from line_profiler.line_profiler import LineStats
from numba.core.registry import CPUDispatcher

from .diagnose import DEFAULT_THRESHOLD, diagnose
from .instrument.calibrate import probe_cost_ticks
from .instrument.clock import current_clock
from .instrument.kinds import resolve
from .instrument.twins import Twin
from .lprof import write_lprof
from .run.baseline import SampledRepeats, plain_code, plain_run, sampled_repeats
from .run.counted_run import count_allocations
from .run.runner import INSTRUMENTED, PLAIN, Key, PhaseRun, Progress, Runner, Target, runs_concurrently
from .run.sampled_run import SegmentedSampling, line_maps
from .run.snapshot import Reach, call_reach, describe, statement_reach, take_snapshot
from .run.statements import statement_run
from .stats import FunctionStats, IsolationInfo, ProfileStats, SamplingInfo
from .vectorized import vectorized_lines

DEFAULT_SAMPLE_RATE = 4000.0  # Hz per thread: shares are what matter in repeats, so sample densely
DEFAULT_SAMPLE_TIME = 1.0  # seconds of sampled repeats allowed beyond the first plain run
DEFAULT_MIN_SAMPLES = 2000  # samples in the profiled functions that end the repeats early


class LineProfiler:
    """Line-profile Numba jitted functions by running a plain and an instrumented twin.

    ``functions`` are Numba CPU dispatchers (``@njit``/``@jit``). With
    ``baseline=True`` a call or statement runs on the plain twins first (for the
    overhead figure), is repeated there under the sampler (``sample=True``: a
    probe-free view of the optimized code, until ``min_samples`` land in the
    profiled functions or ``sample_time`` seconds are spent), and then runs on the
    instrumented twins. Before the first run the state the call can reach is
    saved, and put back after every extra run, so the instrumented run starts
    from the user's state and the user keeps one run's effects; what the extra
    runs print is discarded. State that cannot be saved (or more than
    ``snapshot_budget`` bytes) makes the call run once, instrumented only, and
    the profile says why. ``timing=False`` counts hits only, leaving the
    optimizer almost alone. Times have the probes' own cost taken out unless
    ``corrected=False``. With ``asm=True`` the profile also holds each plain
    twin's machine code by line, with samples per instruction, call targets named
    and hints about the hot lines (``FunctionStats.code``, ``.hints``), and the call
    runs once more on the plain twins to count each line's allocations: reading
    the code costs about 0.01-0.12 s per function, so it is off by default;
    ``describe_code()`` builds it on demand.
    """

    def __init__(
        self,
        *functions: Callable,
        baseline: bool = True,
        timing: bool = True,
        corrected: bool = True,
        threshold: float = DEFAULT_THRESHOLD,
        sample: bool = True,
        sample_rate: float = DEFAULT_SAMPLE_RATE,
        sample_time: float = DEFAULT_SAMPLE_TIME,
        min_samples: int = DEFAULT_MIN_SAMPLES,
        snapshot_budget: int | None = None,
        asm: bool = False,
    ):
        self.asm = asm
        self._described: dict[Key, tuple] = {}
        self.allocations: dict[Key, dict[int, int]] | None = None
        self.baseline = baseline
        self.timing = timing
        self.corrected = corrected
        self.threshold = threshold
        self.sample_time = sample_time
        self.min_samples = min_samples
        self.snapshot_budget = snapshot_budget
        self.sampling = SamplingInfo(sample_rate, target=min_samples) if sample else None
        if sample and not baseline:
            self.sampling.unavailable = "sampling rides on the plain run, which --once skips"
        self.allocations_unavailable = (
            None if baseline else "counting rides on the plain run, which --once skips"
        )
        self.isolation = IsolationInfo()
        self._clock = current_clock()
        self._probe_ticks = probe_cost_ticks(self._clock.kind) if timing else 0.0
        self._runner = Runner(self._clock.kind, timing)
        self._stats: dict[Key, FunctionStats] = {}
        for func in functions:
            self.add_function(func)

    # -- setup --------------------------------------------------------------------
    def add_function(self, func: Callable | type) -> None:
        """Profile ``func`` too; TypeError (NotProfilableError) with the reason otherwise.

        ``func`` is a Numba dispatcher, a jitclass (all its methods, properties and
        static methods) or one of a jitclass's methods or properties.
        """
        for dispatcher in resolve(func):
            self._track(self._runner.add(dispatcher))

    def _track(self, target: Target) -> None:
        src = target.source
        if src.key in self._stats:
            return
        filename, first, name = src.key
        self._stats[src.key] = FunctionStats(
            filename=filename,
            first_lineno=first,
            name=name,
            qualname=src.py_func.__qualname__,
            source_lines=list(src.lines),
            objmode_lines=set(target.rewrites[INSTRUMENTED].objmode_lines),
            timed=self.timing,
            probe_ticks=self._probe_ticks,
        )

    def twins(self) -> list[Twin]:
        """The twins this profiler runs on: plain, instrumented and relinked jitted callers.

        Each has ``original``, ``dispatcher``, ``kind`` and ``compiled`` (signatures).
        Twins are kept on the original dispatcher between profilers, so a second
        profile of the same function finds the same twins.
        """
        return [twin for phase in (PLAIN, INSTRUMENTED) for twin in self._runner.twins(phase)]

    @property
    def functions(self) -> list[Callable]:
        return [t.original for t in self._runner.targets.values()]

    # -- running ------------------------------------------------------------------
    def runcall(self, func: Callable, /, *args: Any, **kwargs: Any) -> Any:
        """Profile ``func(*args, **kwargs)``; return the (instrumented) call's result.

        The arguments are restored between runs, so they end as one call leaves them.
        """

        def call(run: PhaseRun) -> Any:
            return run.replacements.get(id(func), func)(*args, **kwargs)

        return self.run_phases(call, [], reach=call_reach(args, kwargs))

    def runctx(self, cmd: str, globals: dict, locals: dict | None) -> LineProfiler:
        """Execute the statement ``cmd`` in ``globals``/``locals``, profiled."""
        code = compile(cmd, "<nlprun>", "exec")
        locals = globals if locals is None else locals
        reach = statement_reach([code], [locals, globals])
        self.run_phases(lambda _: exec(code, globals, locals), [globals, locals], reach=reach)
        return self

    def run(self, cmd: str) -> LineProfiler:
        """Execute ``cmd`` in ``__main__``'s namespace."""
        import __main__

        return self.runctx(cmd, __main__.__dict__, __main__.__dict__)

    def runsource(
        self,
        source: str,
        filename: str,
        namespace: dict | Callable[[], dict],
        pick: Callable[[object], bool] | None = None,
        discover: Callable[[], Iterable[Callable]] | None = None,
        progress: Progress | None = None,
    ) -> LineProfiler:
        """Execute module-like ``source`` statement by statement, profiled.

        After each top-level statement, every new binding in the namespace that
        ``pick`` accepts, and every function ``discover`` returns, is profiled from
        then on: that is how a ``%%nlprun`` cell or a script profiles the jitted
        functions it defines itself. ``namespace`` may be a factory, called once per
        run, for a fresh module namespace each time (nothing to restore in it
        then). The source is registered in linecache under ``filename`` so its
        functions' source can be read back.
        """
        execute, namespaces, reach = statement_run(source, filename, namespace, pick, discover, self._track)
        self.run_phases(execute, namespaces, progress, reach)
        return self

    def run_phases(
        self,
        execute: Callable[[PhaseRun], Any],
        namespaces: list[dict],
        progress: Progress | None = None,
        reach: Reach | None = None,
    ) -> Any:
        """Run ``execute`` as one profiled call: baseline runs (if any), then the instrumented run.

        The state ``reach`` leads to is saved first and put back after each
        baseline run, so the instrumented run is the user's call; its result and
        exception are the ones returned and raised. Statistics are kept whatever
        happens; KeyboardInterrupt in a baseline run restores the state and stops.
        """
        if self.baseline:
            parallel = any(
                (getattr(t.original, "targetoptions", None) or {}).get("parallel")
                for t in self._runner.targets.values()
            )
            snapshot = take_snapshot(reach or Reach(), self.snapshot_budget, parallel)
            if snapshot.unrestorable is not None:
                self.isolation.single_run = snapshot.unrestorable
                self.allocations, self.allocations_unavailable = None, "the call ran once (see Runs)"
                if self.sampling is not None:
                    self.sampling.not_repeated = "the call ran once (see Runs)"
            else:
                self.isolation.single_run = None
                if self.sampling is not None:
                    self.sampling.not_repeated = None
                self._baseline(execute, namespaces, progress, snapshot)
        try:
            with self._runner.phase(INSTRUMENTED, namespaces, progress) as run:
                result = execute(run)
        finally:
            self._collect(INSTRUMENTED)
        return result

    def _baseline(
        self, execute: Callable[[PhaseRun], Any], namespaces: list[dict], progress: Progress | None, snapshot
    ) -> None:
        """The sampled repeats of the plain run, then one timed plain run for the overhead figure.

        The timed run comes after the repeats, right before the instrumented run,
        so both meet the same warm caches and allocator: timed first, straight
        after the twins compiled, a conv-like kernel ran up to 1.5x slower (cold
        pages for its output arrays), which made the probes look cheaper than
        they are.
        """
        if self.sampling is not None and self.sampling.unavailable is None:
            self._sample(execute, namespaces, progress, snapshot)
        restored = plain_run(
            self._runner, execute, namespaces, progress, lambda: self._collect(PLAIN), snapshot
        )
        self._note_restored(restored)
        if self.asm:
            self._counted_run(execute, namespaces, progress, snapshot)

    def _sample(
        self, execute: Callable[[PhaseRun], Any], namespaces: list[dict], progress: Progress | None, snapshot
    ) -> None:
        """Sampled repeats of the plain run, folded into the stats."""
        parallel = any(runs_concurrently(t.original) for t in self._runner.targets.values())
        sampling = SegmentedSampling(self.sampling.rate_hz, parallel)
        repeats = None
        try:
            repeats = sampled_repeats(
                self._runner,
                execute,
                namespaces,
                progress,
                snapshot,
                sampling,
                self.min_samples,
                self.sample_time,
            )
        finally:
            if repeats is not None:
                self._note_restored(repeats.restored)
                self._add_samples(repeats)

    def _counted_run(self, execute, namespaces: list[dict], progress: Progress | None, snapshot) -> None:
        def restore(run: PhaseRun) -> None:
            self._note_restored(snapshot.restore(run.replacements))

        maps = lambda: line_maps(plain_code(self._runner))  # noqa: E731
        counts, why = count_allocations(self._runner, execute, namespaces, progress, restore, maps)
        if why is not None or self.allocations_unavailable is not None:  # counts must cover every run
            self.allocations, self.allocations_unavailable = None, self.allocations_unavailable or why
            return
        if self.allocations is None:
            self.allocations = {}
        for key, lines in (counts or {}).items():
            mine = self.allocations.setdefault(key, {})
            for line, count in lines.items():
                mine[line] = mine.get(line, 0) + count

    def _note_restored(self, items: list) -> None:
        info = self.isolation
        for item in items:
            if item.kind == "bindings":  # a statement binding its names is expected, not news
                continue
            if item.name not in info.restored:
                info.restored[item.name] = describe([item])
                info.restored_bytes += item.nbytes

    def _add_samples(self, repeats: SampledRepeats) -> None:
        info = self.sampling
        info.repeats += repeats.repeats
        info.seconds += repeats.seconds
        if repeats.unavailable is not None:
            info.unavailable = repeats.unavailable
        charged = repeats.samples
        if charged is None:
            return
        info.total += charged.total
        info.outside += charged.outside
        info.cpu_seconds += charged.total_seconds
        info.outside_cpu_seconds += charged.outside_seconds
        info.achieved_hz = repeats.achieved_hz or info.achieved_hz
        for key, lines in charged.seconds.items():
            stats = self._stats[key]
            for line, secs in lines.items():
                stats.sampled[line] = stats.sampled.get(line, 0.0) + secs
            for line, count in charged.lines.get(key, {}).items():
                stats.sample_counts[line] = stats.sample_counts.get(line, 0) + count
            for address, count in charged.addresses.get(key, {}).items():
                stats.sample_addresses[address] = stats.sample_addresses.get(address, 0) + count

    def _collect(self, phase: str) -> None:
        counts = self._runner.take_counts(phase)
        for key, target in self._runner.targets.items():
            self._track(target)
            stats = self._stats[key]
            table = counts[key]
            calls, ticks = (int(v) for v in table[-1])
            twin = target.twins.get(phase)
            if twin is not None:
                stats.compile_seconds[phase] = self._runner.compile_seconds.get(id(twin), 0.0)
            if phase == PLAIN:
                stats.plain_calls += calls
                stats.plain_ticks += ticks
                continue
            stats.calls += calls
            stats.instrumented_ticks += ticks
            for row, line in enumerate(target.rows):
                hits, line_ticks = (int(v) for v in table[row])
                if hits or line_ticks:
                    stats.hits[line] = stats.hits.get(line, 0) + hits
                    stats.ticks[line] = stats.ticks.get(line, 0) + line_ticks
            plain = target.twins.get(PLAIN)
            if twin is not None and plain is not None:
                stats.lost_vectorization = vectorized_lines(plain.code) - vectorized_lines(twin.code)
            if twin is not None:
                for sig in twin.code.overloads:  # argument tuples (a ufunc kernel's: signatures)
                    text = ", ".join(str(t) for t in getattr(sig, "args", sig))
                    if text not in stats.signatures:
                        stats.signatures.append(text)

    # -- results ------------------------------------------------------------------
    def describe_code(self) -> None:
        """Read each plain twin's machine code into its stats (``code``, ``hints``).

        Done by ``profile`` when ``asm=True``; again only when something changed.
        """
        from .machine import describe

        where = plain_code(self._runner)
        hosts = [w[0] for w in where.values()]
        for key, (dispatcher, *_rest) in where.items():
            stats = self._stats[key]
            counted = sum(sum(v.values()) for v in (self.allocations or {}).values())
            state = (
                len(dispatcher.signatures),
                stats.samples,
                stats.calls,
                counted,
                self.allocations_unavailable,
            )
            if self._described.get(key) == state:
                continue
            allocations = self.allocations.get(key, {}) if self.allocations is not None else None
            describe(stats, dispatcher, hosts, allocations, self.allocations_unavailable)
            self._described[key] = state

    @property
    def profile(self) -> ProfileStats:
        """A snapshot of the profile so far (what renderers take), with diagnostics filled in.

        The snapshot is a copy: later runs of this profiler accumulate into its own
        counters and never change a ``ProfileStats`` a caller already holds.
        """
        if self.asm:
            self.describe_code()
        functions = []
        for stats in self._stats.values():
            snapshot = copy.deepcopy(stats)
            diagnose(snapshot, self._clock.seconds_per_tick, self.threshold, self.corrected)
            functions.append(snapshot)
        return ProfileStats(
            self._clock.seconds_per_tick,
            self._clock.note,
            functions,
            copy.deepcopy(self.sampling),
            copy.deepcopy(self.isolation),
        )

    def get_stats(self) -> LineStats:
        """A ``line_profiler.LineStats``: timings keyed (filename, first line, qualified name)."""
        return self.profile.to_line_stats()

    @property
    def overhead(self) -> dict[str, float | None]:
        """Instrumented / plain time per function name (None without a comparable baseline)."""
        return {s.name: s.overhead for s in self._stats.values()}

    def print_stats(
        self,
        stream: io.TextIOBase | None = None,
        output_unit: float | None = None,
        stripzeros: bool = False,
        asm_lines: int | None = None,
    ) -> None:
        """Write line_profiler's text report, with the same marks and notes as the magic.

        Times print in nanoseconds unless ``output_unit`` says otherwise, as
        line_profiler's own reports do (the raw unit is one clock tick). With
        ``asm=True`` the hints follow, and the ``asm_lines`` (default 3) hottest
        lines are listed instruction by instruction.
        """
        from .renderers.text import profile_text

        stream = sys.stdout if stream is None else stream
        lines = (3 if self.asm else 0) if asm_lines is None else asm_lines
        stream.write(profile_text(self.profile, output_unit, stripzeros, asm_lines=lines))

    def dump_stats(self, filename: str) -> None:
        """Write a ``.lprof`` file that ``python -m line_profiler FILE`` shows.

        line_profiler reads source lines from the files named in the stats. Code
        whose source is not on disk (notebook and ``%%nlprun`` cells, exec'd code)
        has its source written beside the stats, in ``FILE.sources/``, and the
        stats name those files, so the lines still show when the file is read in
        another process later.
        """
        write_lprof(self.profile, filename)


def defined_in(filename: str) -> Callable[[object], bool]:
    """A ``pick`` for ``runsource``: jitted functions whose code comes from ``filename``."""

    def pick(value: object) -> bool:
        return isinstance(value, CPUDispatcher) and value.py_func.__code__.co_filename == filename

    return pick
