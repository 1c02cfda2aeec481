"""Self-contained HTML of a profile: the rich renderables recorded with inline styles.

No scripts, fonts or stylesheets are fetched, so the output works in a notebook
and as a report file opened with no network.
"""

from __future__ import annotations

import html
import io

from rich.console import Console
from rich.terminal_theme import MONOKAI

from ..stats import ProfileStats
from .rich_table import profile_renderables

_FRAGMENT = (
    "<pre style=\"font-family:Menlo,'DejaVu Sans Mono',Consolas,'Courier New',monospace;"
    'font-size:12px;line-height:1.3;background:#272822;color:#f8f8f2;padding:8px;overflow-x:auto">'
    "{code}</pre>"
)

_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title></head>
<body style="background:#1e1f1c;margin:16px">{body}</body></html>
"""


def profile_html(
    profile: ProfileStats,
    output_unit: float | None = None,
    stripzeros: bool = False,
    page: bool = False,
    title: str = "numba_lprun profile",
    width: int = 120,
) -> str:
    """The profile as an HTML fragment (for notebooks) or, with ``page``, a whole document."""
    console = Console(
        record=True,
        file=io.StringIO(),
        width=width,
        force_terminal=True,
        force_jupyter=False,
        highlight=False,
    )
    for renderable in profile_renderables(profile, output_unit, stripzeros):
        console.print(renderable)
    fragment = console.export_html(theme=MONOKAI, inline_styles=True, code_format=_FRAGMENT)
    return _PAGE.format(title=html.escape(title), body=fragment) if page else fragment
