"""A saved profile loads again: ``to_json`` writes its format (2: a function's profile in
parts), and ``from_json`` migrates format 1 (flat functions, no ``"format"`` key), so profiles
saved before the parts, and a worker process of an older install, still load."""

from __future__ import annotations

import dataclasses
import json
import typing

import pytest

from numba_lprun.codec import to_data
from numba_lprun.stats import FORMAT, FunctionStats, ProfileStats
from numba_lprun.stats_parts import FLAT_FIELDS, SINCE_FORMAT_2
from tests.render_kernels import FIXTURES

NAMES = ("sampled_probes", "probes_only", "package_style", "cuda_simulated")


def _load(name: str) -> ProfileStats:
    return ProfileStats.from_json((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def test_a_profile_saved_in_format_1_loads_as_the_same_profile():
    """``sampled_probes_format1.json``, a real profile as format 1 wrote it: each of its
    functions' flat fields lands in its part with the same value, and the rest as it was."""
    data = json.loads((FIXTURES / "sampled_probes_format1.json").read_text(encoding="utf-8"))
    assert "format" not in data and "probe_ticks" in data["functions"][0]
    profile = ProfileStats.from_json(json.dumps(data))
    for flat, stats in zip(data["functions"], profile.functions, strict=True):
        for old, value in flat.items():
            part, name = FLAT_FIELDS[old]
            assert json.loads(json.dumps(to_data(getattr(getattr(stats, part), name)))) == value, old
    assert profile.functions[0].probes.ticks and profile.functions[0].diagnosis.notes  # not empty parts
    loaded = json.loads(json.dumps(to_data(profile)))
    for key, value in data.items():  # what the profile held beside its functions (it had fewer fields)
        if isinstance(value, dict):
            assert {k: loaded[key][k] for k in value} == value, key
        elif key != "functions":
            assert loaded[key] == value, key


def test_the_renderers_fixture_is_that_profile_migrated():
    """``sampled_probes.json`` was made from it (remade by a new run, it differs: then
    compare a new format-1 profile, or drop this test)."""
    text = (FIXTURES / "sampled_probes_format1.json").read_text(encoding="utf-8")
    assert ProfileStats.from_json(text) == _load("sampled_probes")


@pytest.mark.parametrize("name", NAMES)
def test_the_fixtures_are_saved_in_the_current_format_and_round_trip(name):
    text = (FIXTURES / f"{name}.json").read_text(encoding="utf-8")
    assert json.loads(text)["format"] == FORMAT
    profile = ProfileStats.from_json(text)
    assert ProfileStats.from_json(profile.to_json()) == profile
    assert profile.to_json() == text.rstrip("\n")


FLAT = {
    "filename": "k.py",
    "first_lineno": 1,
    "name": "k",
    "qualname": "k",
    "source_lines": ["def k():\n", "    return 1\n"],
    "hits": {"2": 3},
    "calls": 3,
    "run_ticks": 900,
    "sample_counts": {"2": 5},
    "sample_seconds": {"2": 0.5},
    "probe_ticks": {"2": 700},
    "probe_hits": {"2": 3},
    "probe_cost": 10.0,
    "probes_corrected": False,
    "overhead": 1.1,
    "overhead_spread": [0.9, 1.2],
    "overhead_unmeasured": None,
    "notes": [{"level": "info", "text": "counting run 1.10x the plain run"}],
    "disagree": [2],
    "code": {"2": {"line": 2, "instructions": [], "allocations": 1, "executions": 3}},
    "code_twin": "plain",
    "hot_lines": [2],
    "header_rows": [["Launch", "1 x 32"]],
    "a_field_format_1_never_had": 1,
}


def test_a_format_1_function_goes_into_its_parts_in_every_process_part():
    worker = {"unit": 1e-9, "clock": "c", "functions": [FLAT]}
    part = {"label": "w", "pid": 7, "profile": worker}
    data = {"unit": 1e-9, "clock": "c", "functions": [FLAT], "parts": [part]}
    profile = ProfileStats.from_json(json.dumps(data))
    for f in (profile.functions[0], profile.parts[0].profile.functions[0]):
        assert f.source.lines == ("def k():\n", "    return 1\n") and f.source.key == ("k.py", 1, "k")
        assert f.counts.hits == {2: 3} and f.counts.ticks == 900
        assert f.samples.counts == {2: 5} and f.samples.seconds == {2: 0.5}
        assert f.probes.ticks == {2: 700} and f.probes.cost == 10.0
        assert f.distortion.overhead == 1.1 and f.distortion.spread == (0.9, 1.2)
        assert f.diagnosis.notes[0].text.startswith("counting run") and f.diagnosis.disagree == {2}
        assert not f.diagnosis.probes_corrected and f.diagnosis.hot_lines == (2,)
        assert f.machine.lines[2].allocations == 1 and f.machine.twin == "plain"
        assert f.extras.rows == (("Launch", "1 x 32"),)
        assert f.probe_line_ticks(2) == 700.0  # raw, as the diagnosis said


def test_every_field_of_the_parts_has_a_format_1_name():
    hints = typing.get_type_hints(FunctionStats)
    parts = dataclasses.fields(FunctionStats)
    fields = {(f.name, g.name) for f in parts for g in dataclasses.fields(hints[f.name])}
    assert set(FLAT_FIELDS.values()) == fields - SINCE_FORMAT_2


def test_a_later_format_is_refused():
    with pytest.raises(ValueError, match="format 3"):
        ProfileStats.from_json(json.dumps({"format": FORMAT + 1, "unit": 1e-9, "clock": "c"}))
