"""What each run phase measured, as frozen values, and the one way to add them up.

Why values: a phase hands back what it measured and writes nothing anywhere
else; ``assemble`` turns a list of these into the profile in one pure step. Many
measurements are counts keyed by function and line (hits, samples, ticks), and
two of the same kind add up field by field: :func:`fold` does that for all of
them, so no caller merges nested dicts by hand.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..sampling.attribution import LineSamples
from ..twin_kind import COUNTING, PLAIN, PROBED, TwinKind  # noqa: F401 (the run stage names twins by these)
from .page_faults import FRESH_PAGES

Key = tuple[str, int, str]  # a function, keyed as line_profiler keys it: (filename, first line, name)

T = TypeVar("T")


def fold(values: Iterable[T]) -> T | None:
    """The field-by-field sum of ``values`` (dataclasses, dicts, numbers); None when empty.

    Numbers add; dicts merge, adding the values of keys they share; tuples
    concatenate; dataclasses fold field by field, a field marked ``SAME`` (a setting every
    value shares) kept rather than added. Any other value (a string, a flag) is taken from the
    last value that has one, so a reason stated by one run is kept. A rate is never folded: its
    numerator and denominator are (``Sampled.achieved_hz``), so runs of any length combine exactly.
    """
    result: Any = None
    for value in values:
        result = value if result is None else _add(result, value)
    return result


#: A dataclass field's ``metadata`` key for how two values of it combine (see ``fold``).
COMBINE = "combine"


#: ``field(metadata=SAME)``: a setting every value shares (the rate asked for): kept, not added.
SAME = {COMBINE: "same"}


def _add(a: Any, b: Any) -> Any:
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        merged = {f.name: _add_field(f, a, b) for f in dataclasses.fields(a)}
        return dataclasses.replace(a, **merged)
    if isinstance(a, dict):
        out = dict(a)
        for key, value in b.items():
            out[key] = _add(out[key], value) if key in out else value
        return out
    if isinstance(a, (int, float)) and not isinstance(a, bool) and isinstance(b, (int, float)):
        return a + b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return a + b
    return b if b is not None else a


def _add_field(f: dataclasses.Field, a: Any, b: Any) -> Any:
    x, y = getattr(a, f.name), getattr(b, f.name)
    if f.metadata.get(COMBINE) == "same":
        return y if y else x
    return _add(x, y)


@dataclass(frozen=True)
class FunctionCounts:
    """One function's counters after a run: completed calls, their time, hits and ticks per line."""

    calls: int = 0
    ticks: int = 0  # entry-to-return clock ticks of the completed calls
    hits: dict[int, int] = field(default_factory=dict)  # line -> hits (empty for a plain twin)
    line_ticks: dict[int, int] = field(default_factory=dict)  # line -> ticks (a probed twin only)
    per_run: tuple[int, ...] = ()  # ticks of each run, where runs were counted one by one


@dataclass(frozen=True)
class Counted:
    """The counters of one run (or several runs of one kind), per profiled function."""

    twin: TwinKind
    user: bool  # the user's own run (its effects and result are the user's)
    functions: dict[Key, FunctionCounts] = field(default_factory=dict)
    runs: int = 1  # executions of the statement these counters add up
    faults: tuple[int, ...] = ()  # minor page faults of the process in each run (-1: unknown)
    compiled: bool = False  # Numba compiled during its (first) run: a run straight after a compile is slower


@dataclass(frozen=True)
class Sampled:
    """The samples of one or more sampled runs."""

    twin: str
    user: bool
    runs: int = 0  # executions of the statement that were sampled
    seconds: float = 0.0  # their wall time
    # the user's runs' worth of calls these runs made: 1 for a user's run, a replay's share of its
    # calls for each replay (all of them: 1; "12 of its 4,096 calls": 12/4,096)
    worth: float = 0.0
    rate_hz: float = field(default=0.0, metadata=SAME)  # the rate asked for
    signals: int = 0  # SIGPROFs handled, recorded or dropped
    thread_seconds: float = 0.0  # seconds the sampler's timers were armed, summed over threads
    total: int = 0
    outside: int = 0  # samples whose stack lies outside every profiled function
    cpu_seconds: float = 0.0
    outside_cpu_seconds: float = 0.0
    stopped: dict[str, int] = field(default_factory=dict)  # cause -> samples whose walk stopped short
    functions: dict[Key, LineSamples] = field(default_factory=dict)
    unavailable: str | None = None
    lowered: str | None = None  # why the rate was below the one asked for

    @property
    def achieved_hz(self) -> float:
        """Signals handled per thread per second: the rate sampled at, over all the runs added."""
        return self.signals / self.thread_seconds if self.thread_seconds > 0 else 0.0

    @property
    def inside(self) -> int:
        """Samples charged to at least one line of a profiled function."""
        return self.total - self.outside - sum(self.stopped.values())


@dataclass(frozen=True)
class Restored:
    """State an extra run changed and that was put back: name -> what it was, and its size."""

    items: dict[str, str] = field(default_factory=dict)
    nbytes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ExtraRun:
    """Extra runs made of one kind ("timed plain run", "sampled repeat of the plain run", ...)."""

    what: str
    runs: int = 1

    def __str__(self) -> str:
        if self.runs == 1:
            return f"a {self.what}"
        first, _, rest = self.what.partition(" of ") if " of " in self.what else (self.what, "", "")
        words = first.split(" ")
        at = next((i for i, w in enumerate(words) if w in ("run", "repeat")), len(words) - 1)
        words[at] += "s"
        return f"{self.runs} {' '.join(words)}" + (f" of {rest}" if rest else "")


@dataclass(frozen=True)
class HitsShort:
    """Profiled functions whose hits may be short, and why: the run met a way its code ran on
    threads that the counters were not built for, and could not mend (name -> why)."""

    reasons: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Unprofiled:
    """Functions the program made during the run that could not be profiled: they ran as
    themselves (object-mode code, say). Name -> why."""

    reasons: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CacheKept:
    """Entries of the program's own Numba cache not written during the run, by the file stem
    Numba names them with (``callers.logpdf-7.py311``): their code was linked against a twin,
    and they compile again after it (``internals.program_cache``)."""

    entries: tuple[str, ...] = ()


@dataclass(frozen=True)
class RanOnce:
    """No extra run was made, and why."""

    why: str


@dataclass(frozen=True)
class CodeUncompared:
    """The plain twins were not compiled after a one-run profile (``plain_build``), and why."""

    why: str


@dataclass(frozen=True)
class Differed:
    """Results of the plain run that differed from the user's run's: name -> largest relative
    difference, and the profiled functions compiled with ``fastmath`` (the usual cause)."""

    values: dict[str, float] = field(default_factory=dict)
    fastmath: tuple[str, ...] = ()
    measured: bool = True  # False: no plain run was made to compare with


@dataclass(frozen=True)
class Allocations:
    """Allocations counted per line in a run of the plain twins (or why not)."""

    lines: dict[Key, dict[int, int]] | None = None
    unavailable: str | None = None


@dataclass(frozen=True, kw_only=True)
class FunctionFacts:
    """What is known about a profiled function without running it: source, twins, code."""

    filename: str
    first_lineno: int
    name: str
    qualname: str
    source_lines: tuple[str, ...]
    objmode_lines: frozenset[int] = frozenset()
    signatures: tuple[str, ...] = ()
    compile_seconds: dict[str, float] = field(default_factory=dict)  # twin kind -> seconds this call
    uncached: dict[str, str] = field(default_factory=dict)  # twin kind compiled -> why not on disk
    vectorized: dict[str, frozenset[int]] = field(default_factory=dict)  # twin kind -> SIMD loop lines
    #: callees the program runs as their own, scalar build and the twins as a vectorized copy
    faster_callees: frozenset[str] = frozenset()
    #: why no sample maps to its lines (a ufunc's, a stencil's in a parallel caller); "": they do
    unsampled: str = ""
    title: str = ""  # what its table is headed with (see ``naming``); "": the qualified name
    calls_timed: bool = True  # its twin read the clock at each call's entry and exit (not a helper's)

    @property
    def key(self) -> Key:
        return (self.filename, self.first_lineno, self.name)


@dataclass(frozen=True)
class Compared:
    """One function's time in a kind of run against the plain runs of the same calls."""

    baseline: float = 0.0  # the plain runs' median, in ticks, summed over the calls compared
    ticks: int = 0  # the compared run's ticks over the same calls
    calls: int = 0  # profiled calls compared
    lows: tuple[float, ...] = ()  # per call compared (with 3 plain runs or more): fastest plain run / median
    highs: tuple[float, ...] = ()  # and slowest
    skipped: int = 0  # profiled calls that could not be compared
    why: str | None = None  # why (the latest reason)
    faults: tuple[int, ...] = ()  # per call compared, where known: the compared run's page faults
    plain_faults: tuple[float, ...] = ()  # and the median of its plain runs' (``page_faults``)
    left_out: int = 0  # plain runs left out of the baseline: they paid a compile or fresh memory
    compiled: int = 0  # compared runs that Numba compiled during (their time leaves the compile out)


@dataclass(frozen=True)
class Comparison:
    """How one kind of run compared with the plain runs, per function (the overhead figure)."""

    twin: str
    user: bool
    functions: dict[Key, Compared] = field(default_factory=dict)


@dataclass(frozen=True)
class CompileFailed:
    """Profiled functions whose compile failed in the user's run, each with why in one line:
    they were called and never ran (not "not called"), and the user's error is that failure."""

    functions: dict[Key, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Unreached:
    """Profiled functions that counted nothing in the user's run while compiled code the run could
    not send to a twin links their own (``run.unreached``): that code's names, per function. Their
    calls from there, if any, are not counted, so they are not "not called"."""

    functions: dict[Key, tuple[str, ...]] = field(default_factory=dict)


Measurement = (
    Counted
    | Sampled
    | Restored
    | ExtraRun
    | RanOnce
    | Allocations
    | Comparison
    | Differed
    | CodeUncompared
    | Unprofiled
    | CacheKept
    | CompileFailed
    | Unreached
)


@dataclass(frozen=True)
class CallRecord:
    """What one or more profiled calls (``runcall``, a statement, a script) measured."""

    measurements: tuple[Measurement, ...] = ()
    facts: tuple[FunctionFacts, ...] = ()

    def of(self, kind: type[T]) -> list[T]:
        return [m for m in self.measurements if isinstance(m, kind)]


#: Plain runs of a call needed for an overhead figure: with fewer, their spread is unknown.
MIN_PLAIN_RUNS = 3


def compared(made: list[Measurement], key: Key, twin: str, user: bool) -> Compared:
    """``twin``'s run of one call against the median of that call's plain runs, for ``key``.

    Every plain run of a call (the timed run, and the sampled repeats where there
    were any) runs the same call, so their median is the baseline and their
    spread says how noisy the machine was: one run of either kind can be 1.5x
    off on a busy machine, or straight after a compile (cold pages).
    """
    plain = fold(
        m.functions[key] for m in made if isinstance(m, Counted) and m.twin == PLAIN and key in m.functions
    )
    mine = [
        m for m in made if isinstance(m, Counted) and m.twin == twin and m.user == user and key in m.functions
    ]
    other = fold(m.functions[key] for m in mine)
    once = [m.why for m in made if isinstance(m, RanOnce)]
    first_costs = [r for r in _plain_runs(made, key) if r[0] > 0]
    kept = _without_first_run_costs(first_costs)
    runs = [ticks for ticks, _, _ in kept]
    if other is not None and other.calls == 0 and (plain is None or plain.calls == 0):
        return Compared()  # not called in this profiled call
    why = None
    if once:
        why = once[0]
    elif not runs or other is None:
        why = "no plain run of the same calls"
    elif other.calls == 0:
        why = "no call of it completed"
    elif plain.calls != other.calls * len(plain.per_run):
        why = "the plain runs and the profiled run made different calls"
    elif len(runs) < MIN_PLAIN_RUNS:  # one run can be 1.5x off on a busy machine: no figure from it
        made_runs = "one plain run" if len(runs) == 1 else f"{len(runs)} plain runs"
        why = f"{made_runs} only, too few to tell the counters' cost from the machine's noise"
    if why is not None:
        return Compared(skipped=1, why=why)
    median = statistics.median(runs)
    faults, plain_faults = _faults(made, key, twin, user)
    spread = (min(runs) / median,), (max(runs) / median,)
    left_out, compiled = len(first_costs) - len(kept), sum(m.compiled for m in mine)
    extra = {"faults": faults, "plain_faults": plain_faults, "left_out": left_out, "compiled": compiled}
    return Compared(median, other.ticks, 1, *spread, **extra)


def _plain_runs(made: list[Measurement], key: Key) -> list[tuple[int, int, bool]]:
    """(ticks, page faults (-1: unknown), compiled) of each plain run of ``key``, in order."""
    out = []
    for m in made:
        if isinstance(m, Counted) and m.twin == PLAIN and key in m.functions:
            ticks = m.functions[key].per_run
            faults = m.faults if len(m.faults) == len(ticks) else (-1,) * len(ticks)
            out += [(t, f, m.compiled and i == 0) for i, (t, f) in enumerate(zip(ticks, faults, strict=True))]
    return out


def _without_first_run_costs(runs: list[tuple[int, int, bool]]) -> list[tuple[int, int, bool]]:
    """The plain runs that paid no first run's costs (a compile just before, or fresh memory the
    others reused: 1 MiB and twice the others' faults more), where ``MIN_PLAIN_RUNS`` of them
    are left; else all of them (then the spread shows what those costs did)."""
    known = [f for _, f, _ in runs if f >= 0]
    typical = statistics.median(known) if known else 0
    fresh = [f >= 0 and f - typical >= max(FRESH_PAGES, typical) for _, f, _ in runs]
    rest = [r for r, new in zip(runs, fresh, strict=True) if not (r[2] or new)]
    return rest if len(rest) >= MIN_PLAIN_RUNS else runs


def _faults(made: list[Measurement], key: Key, twin: str, user: bool) -> tuple[tuple, tuple]:
    """((the compared run's page faults,), (its plain runs' median,)), or two empty tuples where
    a run's are unknown: the process's faults, charged to each function the call ran."""
    runs = [m for m in made if isinstance(m, Counted) and key in m.functions]
    mine = [f for m in runs if m.twin == twin and m.user == user for f in m.faults]
    plain = [f for m in runs if m.twin == PLAIN for f in m.faults]
    if len(mine) != 1 or not plain or min(mine + plain) < 0:
        return (), ()
    return (mine[0],), (statistics.median(plain),)


def close_call(made: list[Measurement], facts: tuple[FunctionFacts, ...], user_twin: str) -> CallRecord:
    """One call's record: its comparisons computed while its runs are still told apart,
    then the per-run times dropped (what is left adds up over calls, in constant space)."""
    keys = [f.key for f in facts]
    comparisons = [Comparison(user_twin, True, {k: compared(made, k, user_twin, True) for k in keys})]
    if user_twin != PROBED and any(isinstance(m, Counted) and m.twin == PROBED for m in made):
        comparisons.append(Comparison(PROBED, False, {k: compared(made, k, PROBED, False) for k in keys}))
    kept = []
    for m in made:
        if isinstance(m, Counted):
            m = dataclasses.replace(
                m, functions={k: dataclasses.replace(c, per_run=()) for k, c in m.functions.items()}
            )
        kept.append(m)
    return CallRecord(tuple(kept + comparisons), facts)


def _group(m: Measurement) -> tuple:
    """Measurements that add up: the same type, on the same kind of twin, the user's or not."""
    return (type(m).__name__, getattr(m, "twin", None), getattr(m, "user", None), getattr(m, "what", None))


def restored_union(items: Iterable[Restored]) -> Restored:
    """What was put back, each thing once (every repeat puts the same things back)."""
    names: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for m in items:
        names.update(m.items)
        sizes.update(m.nbytes)
    return Restored(names, sizes)


def merge_records(older: CallRecord | None, newer: CallRecord) -> CallRecord:
    """Two records as one: counts and samples add up, what was put back and the extra
    runs are listed once, reasons and facts are the newer ones (compile times add up)."""
    if older is None:
        return newer
    groups: dict[tuple, list[Measurement]] = {}
    for m in older.measurements + newer.measurements:
        groups.setdefault(_group(m), []).append(m)
    merged: list[Measurement] = []
    for items in groups.values():
        if isinstance(items[0], Restored):
            merged.append(restored_union(items))
        elif isinstance(items[0], Differed):  # the largest difference of each value, over the calls
            values: dict[str, float] = {}
            for m in items:
                for name, found in m.values.items():
                    values[name] = max(found, values.get(name, 0.0))
            fastmath = tuple(dict.fromkeys(f for m in items for f in m.fastmath))
            merged.append(Differed(values, fastmath, any(m.measured for m in items)))
        elif isinstance(items[0], CompileFailed):  # every function that failed, in any call
            merged.append(CompileFailed({k: why for m in items for k, why in m.functions.items()}))
        elif isinstance(items[0], Unreached):  # the code named in any call
            named: dict[Key, tuple[str, ...]] = {}
            for m in items:
                for k, names in m.functions.items():
                    named[k] = tuple(dict.fromkeys(named.get(k, ()) + names))
            merged.append(Unreached(named))
        elif isinstance(items[0], (RanOnce, CodeUncompared)):  # said of the newest call only
            merged += [m for m in items if m in newer.measurements][-1:]
        else:
            merged.append(fold(items))
    facts = {f.key: f for f in older.facts}
    for f in newer.facts:
        before = facts.get(f.key)
        seconds = (
            fold([before.compile_seconds, f.compile_seconds]) if before is not None else f.compile_seconds
        )
        uncached = {**before.uncached, **f.uncached} if before is not None else f.uncached
        facts[f.key] = dataclasses.replace(f, compile_seconds=seconds, uncached=uncached)
    return CallRecord(tuple(merged), tuple(facts.values()))
