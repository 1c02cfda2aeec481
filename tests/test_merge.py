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
