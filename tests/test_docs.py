"""The README stays short and points into docs/, whose option reference is generated from
``numba_lprun/options.py`` (the Sphinx build itself is nox's ``docs`` session)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def _generator():
    path = ROOT / "docs" / "_ext" / "options_reference.py"
    spec = importlib.util.spec_from_file_location("options_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_is_short_and_its_links_exist():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert "docs/index.md" in local
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing


def test_the_option_reference_has_a_row_per_declared_option():
    from numba_lprun.options import OPTIONS

    table = _generator().options_table()
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) == len(OPTIONS)
    for opt, row in zip(OPTIONS, rows, strict=True):
        assert row.startswith(f"| `{' / '.join(opt.flags)}` |"), row
        assert opt.help.split(":")[0] in row


def test_the_package_docstring_names_every_part():
    """The package's docstring is its map: every module and subpackage at its top is named there
    (``codec``, ``assemble``, ``options`` and six others were missing)."""
    import numba_lprun

    package = Path(numba_lprun.__file__).parent
    parts = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    parts |= {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    doc = numba_lprun.__doc__
    missing = sorted(part for part in parts if f"``{part}``" not in doc and f"``{part}/``" not in doc)
    assert not missing, missing
