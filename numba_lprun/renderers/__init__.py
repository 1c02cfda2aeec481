"""Turn a ``ProfileStats`` into something to read.

``text`` writes line_profiler's exact layout; ``rich_table`` builds rich
renderables for terminals; ``html`` records those renderables into
self-contained HTML for notebooks and report files. None of them knows how the
numbers were measured.
"""

from .html import profile_html
from .rich_table import print_profile, profile_renderables
from .text import profile_text

__all__ = ["print_profile", "profile_html", "profile_renderables", "profile_text"]
