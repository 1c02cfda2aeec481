"""The Samples column (``--sample-counts``): one registry entry, shown by all three renderers
only when asked."""

from pathlib import Path

from numba_lprun.renderers import HTMLRenderer, RichRenderer, TextRenderer
from numba_lprun.renderers.columns import SAMPLE_COUNTS
from numba_lprun.stats import ProfileStats

FIXTURE = Path(__file__).parent / "fixtures" / "sampled_probes.json"
ASKED = frozenset({SAMPLE_COUNTS})


def _profile() -> ProfileStats:
    return ProfileStats.from_json(FIXTURE.read_text())


def _a_count(profile: ProfileStats) -> tuple[int, int]:
    lineno, count = max(profile.functions[0].samples.counts.items(), key=lambda item: item[1])
    return lineno, count


def test_text_writes_the_counts_only_when_asked():
    profile = _profile()
    lineno, count = _a_count(profile)
    assert "Samples per line" not in TextRenderer(width=0).render(profile)
    assert f"{lineno}: {count}" in TextRenderer(width=0, columns=ASKED).render(profile)


def test_rich_has_the_column_only_when_asked():
    profile = _profile()
    plain = RichRenderer(width=200).render(profile)
    asked = RichRenderer(width=200, columns=ASKED).render(profile)
    assert "Samples" not in plain.split("Line Contents")[0].splitlines()[-1]
    assert "Samples" in asked.split("Line Contents")[0].splitlines()[-1]
    assert str(_a_count(profile)[1]) in asked


def test_html_has_the_column_with_its_explanation_only_when_asked():
    profile = _profile()
    assert '(--sample-counts)">Samples</th>' not in HTMLRenderer().render(profile)
    html = HTMLRenderer(columns=ASKED).render(profile)
    assert 'title="how many samples landed on the line (--sample-counts)">Samples</th>' in html
    assert f'<td class="n">{_a_count(profile)[1]}</td>' in html
