"""The plain twins compiled after a one-run profile, when that is worth its cost.

Why a budget: after a run that is the only one (a script, ``--once``, a run too long to
repeat) the plain twins are compiled only to compare which loops LLVM vectorized in
each twin: evidence of distortion, not a measurement. On package code that compile is
as long as the counting twins' (a parallel 280-line routine: 33 s of a 126 s profile),
so the profile would wait for a note. The plain twins are compiled when that is expected
to cost at most ``SHARE`` of the profile so far (or ``FLOOR`` seconds); otherwise the
note says they were not compared and how to ask (``--compare-code``). The estimate is the
user's twin's own compile time, or the longest one recorded on disk for the same source
(a counting twin loaded from the cache says nothing of a plain twin that never compiled).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..instrument import disk_cache
from ..instrument.source import FunctionSource
from ..twin_kind import COUNTING
from .call_context import CallContext
from .measurements import PLAIN, CodeUncompared
from .targets import Target

FLOOR = 1.0  # seconds: a plain build expected to take this long or less is always made
SHARE = 0.1  # of the profile's time so far: a plain build expected to take longer is left out
RECORDS = "compile-seconds"  # disk records: the longest compile of a function's twin, by source


def record_key(src: FunctionSource) -> str:
    """The disk record of a function's compile time: by its file, name and source."""
    text = "\n".join([src.filename, src.py_func.__qualname__, *src.lines, disk_cache.code_version()])
    return hashlib.sha1(text.encode()).hexdigest()


def _needs_compile(target: Target, user_kind: str) -> bool:
    """Whether the plain twin lacks code for a signature the user's twin compiled."""
    user = target.twins.get(user_kind)
    if user is None or user.kernel is not None:
        return False
    plain = target.twins.get(PLAIN)
    have = set(plain.dispatcher.overloads) if plain is not None else set()
    return not set(user.dispatcher.overloads) <= have


def expected_seconds(target: Target, user_kind: str) -> float:
    """How long the target's plain twin is expected to take to compile: the user's twin's own
    compile time, or the longest recorded for the same source. The record keeps the longest
    seen (a twin loaded from the cache in 0.05 s says nothing of a fresh compile)."""
    user = target.twins.get(user_kind)
    if user is None:
        return 0.0
    key = record_key(target.source)
    recorded = disk_cache.load_record(RECORDS, key).get("seconds", 0.0)
    recorded = recorded if isinstance(recorded, (int, float)) else 0.0
    if user.compile_seconds >= FLOOR * SHARE and user.compile_seconds > recorded:
        disk_cache.update_record(RECORDS, key, seconds=round(user.compile_seconds, 3))
    return max(user.compile_seconds, recorded)


@dataclass(frozen=True)
class PlainBuild:
    """Compile the plain twins without running them, after a user's run that had no extra run.

    The overhead cannot be measured then, but both twins carry line tables, so
    which loops LLVM vectorized in each can still be compared: evidence of
    distortion that needs no run, made where it costs little (see the module).
    """

    user_kind: str = COUNTING

    def run(self, ctx: CallContext) -> None:
        targets = list(ctx.runner.targets.values())
        expected_each = {id(t): expected_seconds(t, self.user_kind) for t in targets}  # and recorded
        needed = [t for t in targets if _needs_compile(t, self.user_kind)]
        expected = sum(expected_each[id(t)] for t in needed)
        compiled = sum(t.twins[self.user_kind].compile_seconds for t in targets if self.user_kind in t.twins)
        allowed = max(FLOOR, SHARE * (ctx.user_seconds + compiled))
        if needed and expected > allowed and not ctx.settings.compare_code:
            ctx.made.append(CodeUncompared(_why(expected, ctx.user_seconds + compiled)))
            return
        with ctx.runner.phase(PLAIN, ctx.namespaces, ctx.progress, runs_nothing=True):
            ctx.runner.compile_like_user(self.user_kind)
        ctx.runner.take_counts(PLAIN)


def _why(expected: float, spent: float) -> str:
    return (
        f"the plain twins were not compiled to compare vectorization (about {expected:.1f} s more, "
        f"{100 * expected / max(spent, 1e-9):.0f}% of the profile so far; --compare-code compiles them)"
    )
