"""The Python API: ``LineProfiler``, shaped like ``line_profiler.LineProfiler``.

It ties the stages together: read and rewrite each function, run the plain and
the instrumented twins, and fold their counters into plain-data stats.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import Any

from line_profiler.line_profiler import LineStats, show_text

from .clock import current_clock
from .runner import INSTRUMENTED, PLAIN, Progress, Runner, Target
from .stats import FunctionStats, ProfileStats


def _new_stats(target: Target, timed: bool) -> FunctionStats:
    src = target.source
    filename, first, name = src.key
    return FunctionStats(
        filename=filename,
        first_lineno=first,
        name=name,
        qualname=src.py_func.__qualname__,
        source_lines=list(src.lines),
        objmode_lines=set(target.rewrites[INSTRUMENTED].objmode_lines),
        timed=timed,
    )


class LineProfiler:
    """Line-profile Numba jitted functions by running a plain and an instrumented twin.

    ``functions`` are Numba CPU dispatchers (``@njit``/``@jit``). With
    ``baseline=True`` every call or statement runs twice, first on the plain twins
    (for the overhead figure), then on the instrumented ones: side effects happen
    twice. ``timing=False`` counts hits only, leaving the optimizer almost alone.
    """

    def __init__(self, *functions: Callable, baseline: bool = True, timing: bool = True):
        self.baseline = baseline
        self.timing = timing
        self._clock = current_clock()
        self._runner = Runner(self._clock.kind, timing)
        self._stats: dict[int, FunctionStats] = {}
        for func in functions:
            self.add_function(func)

    # -- setup --------------------------------------------------------------------
    def add_function(self, func: Callable) -> None:
        """Profile ``func`` too (a Numba dispatcher); TypeError with the reason otherwise."""
        target = self._runner.add(func)
        self._stats.setdefault(id(func), _new_stats(target, self.timing))

    @property
    def functions(self) -> list[Callable]:
        return [t.original for t in self._runner.targets.values()]

    # -- running ------------------------------------------------------------------
    def runcall(self, func: Callable, /, *args: Any, **kwargs: Any) -> Any:
        """Call ``func(*args, **kwargs)`` (twice with a baseline) and return what it returns."""

        def call(replacements: dict) -> Any:
            return replacements.get(id(func), func)(*args, **kwargs)

        return self.run_phases(call, [])

    def runctx(self, cmd: str, globals: dict, locals: dict | None) -> LineProfiler:
        """Execute the statement ``cmd`` in ``globals``/``locals`` (twice with a baseline)."""
        code = compile(cmd, "<nlprun>", "exec")
        locals = globals if locals is None else locals
        self.run_phases(lambda _: exec(code, globals, locals), [globals, locals])
        return self

    def run(self, cmd: str) -> LineProfiler:
        """Execute ``cmd`` in ``__main__``'s namespace."""
        import __main__

        return self.runctx(cmd, __main__.__dict__, __main__.__dict__)

    def run_phases(
        self, execute: Callable[[dict], Any], namespaces: list[dict], progress: Progress | None = None
    ) -> Any:
        """Run ``execute`` on the plain twins (if baseline), then on the instrumented ones.

        ``execute`` gets the map from id(original) to its twin. Statistics are kept
        whatever happens; an exception from the instrumented run (or else from the
        plain one) is re-raised afterwards; KeyboardInterrupt or SystemExit in the
        plain run stops before the instrumented one.
        """
        baseline_error: BaseException | None = None
        if self.baseline:
            try:
                with self._runner.phase(PLAIN, namespaces, progress) as replacements:
                    try:
                        execute(replacements)
                    except Exception as exc:
                        baseline_error = exc
            finally:
                self._collect(PLAIN)
        try:
            with self._runner.phase(INSTRUMENTED, namespaces, progress) as replacements:
                result = execute(replacements)
        finally:
            self._collect(INSTRUMENTED)
        if baseline_error is not None:
            raise baseline_error
        return result

    def _collect(self, phase: str) -> None:
        counts = self._runner.take_counts(phase)
        for key, target in self._runner.targets.items():
            stats = self._stats[key]
            table = counts[key]
            calls, ticks = (int(v) for v in table[-1])
            if phase == PLAIN:
                stats.plain_calls += calls
                stats.plain_ticks += ticks
                twin = target.twins.get(PLAIN)
                if twin is not None:
                    stats.compile_seconds[PLAIN] = twin.compile_seconds
                continue
            stats.calls += calls
            stats.instrumented_ticks += ticks
            for row, line in enumerate(target.rows):
                hits, line_ticks = (int(v) for v in table[row])
                if hits or line_ticks:
                    stats.hits[line] = stats.hits.get(line, 0) + hits
                    stats.ticks[line] = stats.ticks.get(line, 0) + line_ticks
            twin = target.twins.get(INSTRUMENTED)
            if twin is not None:
                stats.compile_seconds[INSTRUMENTED] = twin.compile_seconds
                for sig in twin.dispatcher.signatures:
                    text = ", ".join(str(t) for t in sig)
                    if text not in stats.signatures:
                        stats.signatures.append(text)

    # -- results ------------------------------------------------------------------
    @property
    def profile(self) -> ProfileStats:
        """The plain-data profile (what renderers take)."""
        return ProfileStats(self._clock.seconds_per_tick, self._clock.note, list(self._stats.values()))

    def get_stats(self) -> LineStats:
        """A ``line_profiler.LineStats``: timings keyed (filename, first line, name)."""
        return self.profile.to_line_stats()

    @property
    def overhead(self) -> dict[str, float | None]:
        """Instrumented / plain time per function name (None without a comparable baseline)."""
        return {s.name: s.overhead for s in self._stats.values()}

    def print_stats(
        self, stream: io.TextIOBase | None = None, output_unit: float | None = None, stripzeros: bool = False
    ) -> None:
        """Write line_profiler's text report, then one overhead line per function.

        Times print in nanoseconds unless ``output_unit`` says otherwise, as
        line_profiler's own reports do (the raw unit is one clock tick).
        """
        stream = sys.stdout if stream is None else stream
        output_unit = 1e-9 if output_unit is None else output_unit
        stats = self.get_stats()
        show_text(stats.timings, stats.unit, output_unit=output_unit, stream=stream, stripzeros=stripzeros)
        for fstats in self._stats.values():
            ratio = fstats.overhead
            said = f"{ratio:.2f}x the plain run" if ratio is not None else "overhead not measured"
            stream.write(f"numba_lprun: {fstats.qualname}: instrumented run {said}\n")

    def dump_stats(self, filename: str) -> None:
        """Write a ``.lprof`` file that ``python -m line_profiler FILE`` shows."""
        self.get_stats().to_file(filename)
