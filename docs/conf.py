"""Sphinx configuration: MyST markdown sources, the API from docstrings, and the option
reference generated from ``numba_lprun/options.py`` (``_ext/options_reference.py``).

Build (warnings are errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # numba_lprun from this checkout

project = "numba_lprun"
author = "the numba_lprun developers"
copyright = "2026, the numba_lprun developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "options_reference",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "_generated"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}

html_theme = "alabaster"
html_title = "numba_lprun"
