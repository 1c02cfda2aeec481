"""The Python API: ``LineProfiler``, shaped like ``line_profiler.LineProfiler``.

It ties the stages together: read and rewrite each function, run the plain and
the instrumented twins, and fold their counters into plain-data stats.
"""

from __future__ import annotations

import ast
import hashlib
import io
import linecache
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from line_profiler.line_profiler import LineStats
from numba.core.registry import CPUDispatcher

from .diagnose import DEFAULT_THRESHOLD, diagnose
from .instrument.calibrate import probe_cost_ticks
from .instrument.clock import current_clock
from .instrument.kinds import resolve
from .run.quiet import quiet
from .run.runner import INSTRUMENTED, PLAIN, Key, PhaseRun, Progress, Runner, Target, runs_concurrently
from .run.sampled_run import SegmentedSampling, Where, charge, line_maps, samples_inside
from .run.snapshot import Reach, call_reach, describe, statement_reach, take_snapshot
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
    ``corrected=False``.
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
    ):
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
        lines = source.splitlines(keepends=True)
        linecache.cache[filename] = (len(source), None, lines, filename)
        tree = ast.parse(source, filename)
        codes = [compile(ast.Module(body=[stmt], type_ignores=[]), filename, "exec") for stmt in tree.body]
        fixed = namespace if isinstance(namespace, dict) else None

        def execute(run: PhaseRun) -> None:
            ns = fixed if fixed is not None else namespace()
            run.add_namespace(ns)
            try:
                for code in codes:
                    before = {k: id(v) for k, v in ns.items()}
                    exec(code, ns)
                    found = [
                        v
                        for k, v in list(ns.items())
                        if before.get(k) != id(v) and pick is not None and pick(v)
                    ]
                    found += list(discover()) if discover is not None else []
                    for func in found:
                        self._track(run.adopt(func))
            finally:
                if fixed is None:  # a fresh namespace per run: let it go with its run
                    run.drop_namespace(ns)

        reach = statement_reach(codes, [fixed]) if fixed is not None else Reach()
        self.run_phases(execute, [fixed] if fixed is not None else [], progress, reach)
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
            snapshot = take_snapshot(reach or Reach(), self.snapshot_budget)
            if snapshot.unrestorable is not None:
                self.isolation.single_run = snapshot.unrestorable
                if self.sampling is not None:
                    self.sampling.not_repeated = "the call ran once (see Runs)"
            else:
                self.isolation.single_run = None
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
        """The plain run (timed, for the overhead figure), then its sampled repeats."""
        try:
            with self._runner.phase(PLAIN, namespaces, progress) as run:
                try:
                    with quiet():
                        execute(run)
                except (Exception, SystemExit):  # the instrumented run is the one the user sees
                    pass
        finally:
            self._collect(PLAIN)
            self._note_restored(snapshot.restore())
        sampling = self._new_sampling()
        if sampling is not None:
            self._sampled_repeats(execute, namespaces, progress, snapshot, sampling)

    def _sampled_repeats(
        self,
        execute: Callable[[PhaseRun], Any],
        namespaces: list[dict],
        progress: Progress | None,
        snapshot,
        sampling: SegmentedSampling,
    ) -> None:
        """Repeat the plain run under the sampler until enough samples or the time budget.

        At least one repeat runs, so the probe-free view is never empty; state is
        put back after each. Repeats run in batches inside one sampler segment,
        sized from what the previous batch yielded: starting and stopping the
        sampler and counting samples after every repeat cost about 10 ms each,
        more than a quick statement itself. Repeats are not part of the overhead
        figure.
        """
        started = time.perf_counter()
        maps = None
        inside, counted, repeats, batch = 0, 0, 0, 1
        try:
            with self._runner.phase(PLAIN, namespaces, progress, sampling) as run:
                while True:
                    batch_start = time.perf_counter()
                    with sampling.running(), quiet():
                        for _ in range(batch):
                            try:
                                execute(run)
                            except (Exception, SystemExit):
                                pass
                            finally:
                                self._note_restored(snapshot.restore(run.replacements))
                            repeats += 1
                    per_repeat = (time.perf_counter() - batch_start) / batch
                    if sampling.unavailable is not None:
                        break
                    if maps is None:
                        maps = line_maps(self._plain_code())
                    got = samples_inside(sampling.segments[counted:], maps)
                    inside, counted = inside + got, len(sampling.segments)
                    left = self.sample_time - (time.perf_counter() - started)
                    if inside >= self.min_samples or left < per_repeat / 2:
                        break
                    wanted = math.ceil((self.min_samples - inside) * batch / max(got, 1))
                    batch = max(1, min(wanted, int(left / per_repeat)))
        finally:
            self._runner.take_counts(PLAIN)
            self.sampling.repeats += repeats
            self.sampling.seconds += time.perf_counter() - started
            self._collect_samples(sampling, maps)

    def _note_restored(self, items: list) -> None:
        info = self.isolation
        for item in items:
            if item.kind == "bindings":  # a statement binding its names is expected, not news
                continue
            if item.name not in info.restored:
                info.restored[item.name] = describe([item])
                info.restored_bytes += item.nbytes

    def _new_sampling(self) -> SegmentedSampling | None:
        if self.sampling is None or self.sampling.unavailable is not None:
            return None
        parallel = any(runs_concurrently(t.original) for t in self._runner.targets.values())
        return SegmentedSampling(self.sampling.rate_hz, parallel)

    def _plain_code(self) -> dict[Key, Where]:
        where = {}
        for key, target in self._runner.targets.items():
            twin = target.twins.get(PLAIN)
            if twin is not None:
                last = target.source.first_lineno + len(target.source.lines) - 1
                where[key] = (twin.code, target.source.filename, target.source.first_lineno, last)
        return where

    def _collect_samples(self, sampling: SegmentedSampling, maps: dict | None) -> None:
        info = self.sampling
        if sampling.unavailable is not None:
            info.unavailable = sampling.unavailable
        if not sampling.segments:
            return
        charged = charge(sampling, maps if maps is not None else line_maps(self._plain_code()))
        if sampling.unavailable is not None:
            info.unavailable = sampling.unavailable
            return
        info.total += charged.total
        info.outside += charged.outside
        info.cpu_seconds += charged.total_seconds
        info.outside_cpu_seconds += charged.outside_seconds
        info.achieved_hz = sampling.achieved_hz or info.achieved_hz
        for key, lines in charged.seconds.items():
            stats = self._stats[key]
            for line, secs in lines.items():
                stats.sampled[line] = stats.sampled.get(line, 0.0) + secs
            for line, count in charged.lines.get(key, {}).items():
                stats.sample_counts[line] = stats.sample_counts.get(line, 0) + count

    def _collect(self, phase: str) -> None:
        counts = self._runner.take_counts(phase)
        for key, target in self._runner.targets.items():
            self._track(target)
            stats = self._stats[key]
            table = counts[key]
            calls, ticks = (int(v) for v in table[-1])
            twin = target.twins.get(phase)
            if twin is not None:
                stats.compile_seconds[phase] = twin.compile_seconds
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
    @property
    def profile(self) -> ProfileStats:
        """The plain-data profile (what renderers take), with diagnostics filled in."""
        for stats in self._stats.values():
            diagnose(stats, self._clock.seconds_per_tick, self.threshold, self.corrected)
        functions = list(self._stats.values())
        return ProfileStats(
            self._clock.seconds_per_tick, self._clock.note, functions, self.sampling, self.isolation
        )

    def get_stats(self) -> LineStats:
        """A ``line_profiler.LineStats``: timings keyed (filename, first line, qualified name)."""
        return self.profile.to_line_stats()

    @property
    def overhead(self) -> dict[str, float | None]:
        """Instrumented / plain time per function name (None without a comparable baseline)."""
        return {s.name: s.overhead for s in self._stats.values()}

    def print_stats(
        self, stream: io.TextIOBase | None = None, output_unit: float | None = None, stripzeros: bool = False
    ) -> None:
        """Write line_profiler's text report, with the same marks and notes as the magic.

        Times print in nanoseconds unless ``output_unit`` says otherwise, as
        line_profiler's own reports do (the raw unit is one clock tick).
        """
        from .renderers.text import profile_text

        stream = sys.stdout if stream is None else stream
        stream.write(profile_text(self.profile, output_unit, stripzeros))

    def dump_stats(self, filename: str) -> None:
        """Write a ``.lprof`` file that ``python -m line_profiler FILE`` shows.

        line_profiler reads source lines from the files named in the stats. Code
        whose source is not on disk (notebook and ``%%nlprun`` cells, exec'd code)
        has its source written beside the stats, in ``FILE.sources/``, and the
        stats name those files, so the lines still show when the file is read in
        another process later.
        """
        stats = self.get_stats()
        by_key = {s.key: s for s in self._stats.values()}
        timings = {}
        for key, rows in stats.timings.items():
            path, first, name = key
            if not os.path.exists(path) and key in by_key:
                path = _save_source(filename, by_key[key])
            timings[(path, first, name)] = rows
        LineStats(timings, stats.unit).to_file(filename)


def _save_source(stats_file: str, stats: FunctionStats) -> str:
    """Write the source of ``stats``' file next to ``stats_file``; return its path."""
    lines = linecache.getlines(stats.filename)
    if not lines:  # keep line numbers: pad up to the def, then the def's own lines
        lines = ["\n"] * (stats.first_lineno - 1) + [
            ln if ln.endswith("\n") else ln + "\n" for ln in stats.source_lines
        ]
    folder = stats_file + ".sources"
    os.makedirs(folder, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", stats.filename).strip("_.")[-60:] or "source"
    digest = hashlib.sha1(stats.filename.encode()).hexdigest()[:8]
    path = os.path.abspath(os.path.join(folder, f"{stem}-{digest}.py"))
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
    return path


def defined_in(filename: str) -> Callable[[object], bool]:
    """A ``pick`` for ``runsource``: jitted functions whose code comes from ``filename``."""

    def pick(value: object) -> bool:
        return isinstance(value, CPUDispatcher) and value.py_func.__code__.co_filename == filename

    return pick
