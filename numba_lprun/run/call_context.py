"""What every phase of one profiled call shares: the settings, the call context, and the
way an extra run is made silently (its output discarded, its exception stopping the rest)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .. import settings
from ..sampling import USERS_RUN_SIGNALS
from .compiles import Progress
from .measurements import Measurement, Restored
from .phase_run import PhaseRun
from .quiet import quiet
from .replay import CallRecorder
from .runner import Runner
from .sampled_run import SegmentedSampling
from .snapshot import describe

#: A run that is the only one starts sampling this many times faster (at most BOOST_MAX_HZ, and
#: at most what half the sampler's budget affords where signals are dear: ``sample_cost.afford``)
#: for its first BOOST_SAMPLES samples: about 0.1 s at the default rate.
BOOST_FACTOR, BOOST_MAX_HZ, BOOST_SAMPLES = 4.0, 10_000.0, 800


@dataclass(frozen=True)
class RunSettings:
    """How a call is to be profiled (what the options asked for)."""

    timing: bool = True  # False: hits only (no sampler, no clock probes)
    sample: bool = True  # sample the runs; False: times come from clock probes
    probes: bool = False  # also time every line with clock probes
    repeat: bool = True  # extra runs allowed where the call's state can be put back
    rate_hz: float = 2000.0
    sample_time: float = 1.0  # seconds of sampled repeats allowed
    min_samples: int = 2000  # samples in the profiled functions that end the repeats
    snapshot_budget: int | None = None
    asm: bool = False  # count allocations in one more run (machine-code view)
    extra_limit: float = 0.5  # seconds of the user's run above which no plain run is made for the overhead
    compare_code: bool = False  # compile the plain twins after a one-run profile however long it takes
    # which threads existing when sampling starts are sampled (``Sampler.existing_threads``): "user"
    # (those that may run the program's code), or "main" (a Ray worker's: its engine's are the rest)
    existing_threads: str = "user"


class Children(Protocol):
    """The processes the user's run starts (``processes.launch``): profiled while ``watching``;
    ``elsewhere``: what work the run did in other processes (a second run would do it again)."""

    def watching(self) -> contextlib.AbstractContextManager: ...
    def elsewhere(self) -> str | None: ...


@dataclass
class CallContext:
    """What every phase of one call shares."""

    runner: Runner
    execute: Callable[[PhaseRun], Any]
    namespaces: list[dict]
    progress: Progress | None
    settings: RunSettings
    concurrent: bool  # a profiled function runs on several threads: sample every Numba thread
    made: list[Measurement] = field(default_factory=list)
    result: Any = None
    user_seconds: float = 0.0  # the user's run's time, compiles left out
    stopped: str | None = None  # why the extra runs stopped (one raised)
    extra_result: Any = None  # the last compared replay's differences from the user's run (name -> relative)
    children: Children | None = None  # processes the user's run starts are profiled too
    last_sampling: SegmentedSampling | None = None  # the latest phase's (a worker reads it as it runs)
    recorder: CallRecorder | None = None  # the user's run's calls, which the extra runs replay

    def sampling(self, kind: str, boost: bool = False, users_run: bool = False) -> SegmentedSampling:
        """A sampler for one phase on ``kind`` twins (their code is walked by the handler
        itself); ``boost``: start faster (a run that is the only one); ``users_run``: a sample
        counted at what it costs the user's code (``sample_cost.USERS_RUN_SIGNALS``)."""
        rate = self.settings.rate_hz
        fast = (min(BOOST_FACTOR * rate, BOOST_MAX_HZ), BOOST_SAMPLES) if boost else None
        # the handler walks the twins' frames itself (sampling._handler); NUMBA_LPRUN_OWN_WALK=0 leaves
        # every walk to libgcc
        own = settings.switch(settings.OWN_WALK, True)
        code = functools.partial(twin_code, self.runner, kind) if own else None
        self.last_sampling = SegmentedSampling(
            rate,
            self.concurrent,
            fast,
            code=code,
            existing_threads=self.settings.existing_threads,
            sample_signals=USERS_RUN_SIGNALS if users_run else 1.0,
            threads_now=self.runner.runs_on_threads,
        )
        return self.last_sampling

    @property
    def replay_share(self) -> float:
        """The user's run's worth of calls one replay makes (``CallRecorder.share``)."""
        return self.recorder.share if self.recorder is not None else 0.0

    def restore(self, quick: bool = False) -> None:
        """Put back what the last extra run changed in the recorded calls' state, and say what
        that was (``quick``: between replays of a run of them, see ``CallRecorder.restore``)."""
        if self.recorder is None:
            return
        items = self.recorder.restore(quick)
        named = [i for i in items if i.kind != "bindings"]  # a statement binding its names is no news
        if named:
            self.made.append(
                Restored({i.name: describe([i]) for i in named}, {i.name: i.nbytes for i in named})
            )


def twin_code(runner: Runner, kind: str) -> list[object]:
    """The dispatchers holding the compiled code of ``runner``'s ``kind`` twins."""
    return [twin.code for twin in runner.twins(kind)]


class Phase(Protocol):
    def run(self, ctx: CallContext) -> None: ...


def sampled_by(sampling: SegmentedSampling | None):
    return sampling.running() if sampling is not None else contextlib.nullcontext()


def silently(ctx: CallContext, run: PhaseRun, silenced: bool = False, compare: bool = False) -> bool:
    """An extra run: the user's run's calls replayed (``replay``; never the statement), its
    output discarded (``silenced``: already), its exception not the user's but stopping the
    extra runs (``ctx.stopped``). ``compare``: how far the calls' results and changed state lie
    from the user's run's is kept (``ctx.extra_result``). Whether it completed."""
    if ctx.recorder is None:
        ctx.stopped = "no call of your run was recorded for a replay"
        return False
    with contextlib.nullcontext() if silenced else quiet():
        try:
            ctx.extra_result = ctx.recorder.replay(run.replacements, compare)
        except (Exception, SystemExit) as exc:
            ctx.stopped = f"a replay of your run's calls raised {type(exc).__name__}, which your run did not"
            return False
    return True


def too_long(ctx: CallContext) -> str | None:
    """Why the plain run is not made after a user's run this long (None: it is)."""
    limit = ctx.settings.extra_limit
    if ctx.user_seconds <= limit:
        return None
    return (
        f"your run took {ctx.user_seconds:.2f} s, so no plain run of it was made for the overhead "
        f"figure (it would take as long; --extra-limit {limit:g} s)"
    )
