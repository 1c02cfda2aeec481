"""Profiles of several processes added up (``merge.merged``), on saved profiles: no compile."""

from __future__ import annotations

from dataclasses import replace

from numba_lprun.merge import merged
from numba_lprun.stats import ProcessPart, ProfileStats
from tests.render_kernels import FIXTURES


def _load(name: str) -> ProfileStats:
    return ProfileStats.from_json((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def test_a_function_only_workers_ran_has_each_workers_figures_once():
    """Two workers ran a function the main process never knew: its hits, calls, samples and
    probe times are the two workers' sums (the first worker's were counted twice before)."""
    worker = _load("sampled_probes")
    main = replace(worker, functions=())
    parts = [ProcessPart("worker A", 1, worker), ProcessPart("worker B", 2, worker)]
    profile = merged(main, parts, [])
    assert len(profile.functions) == len(worker.functions)
    for got, one in zip(profile.functions, worker.functions, strict=True):
        assert got.source.key == one.source.key
        assert got.counts.hits == {line: 2 * hits for line, hits in one.counts.hits.items()}
        assert got.counts.calls == 2 * one.counts.calls
        assert got.probes.ticks == {line: 2 * ticks for line, ticks in one.probes.ticks.items()}
        assert got.probes.hits == {line: 2 * hits for line, hits in one.probes.hits.items()}
        assert got.samples.counts == {line: 2 * n for line, n in one.samples.counts.items()}
    assert [p.label for p in profile.parts] == ["main", "worker A", "worker B"]


def test_the_ranks_wait_is_named_before_the_slow_ranks_loop():
    """Rank 1 runs its loop three times as long; rank 0 waits for it in a collective call. Their
    shares differ by about the same points on both lines (each rank's sum to 100), so which reads
    larger is the samples' noise: the line both ranks ran equally often is the wait, and the note
    names it where the loop's spread reads larger (as in one CI run under load)."""
    from numba_lprun.merge import _imbalance
    from numba_lprun.sampling.attribution import LineSamples

    one = _load("sampled_probes").functions[0]
    loop, wait, other = sorted(one.counts.hits)[:3]

    def rank(loop_hits, samples):
        counts = replace(one.counts, hits={loop: loop_hits, wait: 3, other: 3})
        shares = dict(zip((loop, wait, other), samples, strict=True))
        return replace(one, counts=counts, samples=LineSamples(counts=shares))

    rank0, rank1 = rank(300, (300, 600, 100)), rank(900, (980, 20, 0))  # spreads: loop 68, wait 58
    note = _imbalance(rank0, [(ProcessPart("rank 1", 2, _load("sampled_probes")), rank1)])
    assert note is not None and f"differ most on line {wait} " in note.text
    assert "rank 0 spends 60%" in note.text


def test_a_function_only_the_other_ranks_ran_is_said_of_ranks_not_workers():
    """Under ``mpiexec`` the other processes are ranks of the job, not workers the run started:
    the overhead note said "its calls ran in worker processes"."""
    other = _load("sampled_probes")
    rank0 = replace(
        other,
        functions=tuple(replace(f, counts=replace(f.counts, hits={}, calls=0)) for f in other.functions),
    )
    for ranks, said in (
        (2, "its calls ran on the MPI job's other ranks"),
        (0, "its calls ran in worker processes"),
    ):
        profile = merged(rank0, [ProcessPart("rank 1", 2, other)], [], ranks=ranks)
        ran = [f for f in profile.functions if f.counts.calls]
        assert ran and all(f.distortion.unmeasured.startswith(said) for f in ran)
