"""``.lprof`` files that ``python -m line_profiler FILE`` shows, sources included.

line_profiler reads source lines from the files named in the stats. Code whose
source is not on disk (notebook and ``%%nlprun`` cells, exec'd code) has its
source written beside the stats, in ``FILE.sources/``, and the stats name those
files, so the lines still show when the file is read in another process later.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import re

from ..stats import FunctionStats, LineStats, ProfileStats, write_line_stats


def write_lprof(profile: ProfileStats, filename: str) -> None:
    """Write ``profile`` to ``filename`` as line_profiler's stats, with in-memory sources saved."""
    stats = profile.to_line_stats()
    by_key = {s.key: s for s in profile.functions}
    timings = {}
    for key, rows in stats.timings.items():
        path, first, name = key
        if not os.path.exists(path) and key in by_key:
            path = _save_source(filename, by_key[key])
        timings[(path, first, name)] = rows
    write_line_stats(LineStats(timings, stats.unit), filename)


def _save_source(stats_file: str, stats: FunctionStats) -> str:
    """Write the source of ``stats``' file next to ``stats_file``; return its path."""
    lines = linecache.getlines(stats.filename)
    if not lines:  # keep line numbers: pad up to the def, then the def's own lines
        lines = ["\n"] * (stats.first_lineno - 1) + [
            ln if ln.endswith("\n") else ln + "\n" for ln in stats.source_lines
        ]
    folder = stats_file + ".sources"
    os.makedirs(folder, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", stats.filename).strip("_.")[-60:] or "source"
    digest = hashlib.sha1(stats.filename.encode()).hexdigest()[:8]
    path = os.path.abspath(os.path.join(folder, f"{stem}-{digest}.py"))
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
    return path
