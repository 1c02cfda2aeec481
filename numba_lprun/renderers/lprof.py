"""``.lprof`` files that ``python -m line_profiler FILE`` shows, sources included, and
that ``python -m numba_lprun show FILE`` shows again whole.

line_profiler reads source lines from the files named in the stats. Code whose
source is not on disk (notebook and ``%%nlprun`` cells, exec'd code) has its
source written beside the stats, in ``FILE.sources/``, and the stats name those
files, so the lines still show when the file is read in another process later.

line_profiler's stats hold hits and times only: no notes, intervals, samples or
machine code. So the whole profile (``ProfileStats.to_json``) follows the stats in
the same file, after ``PROFILE_MARK``. line_profiler reads the file with one
``pickle.load``, which stops where the stats' pickle ends, so it reads the file as its
own; ``read_profile`` reads past the pickle to the profile. One file to keep, to send
and to reopen.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import re

from ..stats import FunctionStats, LineStats, ProfileStats, write_line_stats

#: Between line_profiler's stats and the profile as JSON, in an ``.lprof`` numba_lprun writes.
PROFILE_MARK = b"\n# numba_lprun profile, as JSON (python -m numba_lprun show FILE)\n"


def write_lprof(profile: ProfileStats, filename: str) -> None:
    """Write ``profile`` to ``filename`` as line_profiler's stats, with in-memory sources saved."""
    stats = profile.to_line_stats()
    by_key = {s.source.key: s for s in profile.functions}
    timings = {}
    for key, rows in stats.timings.items():
        path, first, name = key
        if not os.path.exists(path) and key in by_key:
            path = _save_source(filename, by_key[key])
        timings[(path, first, name)] = rows
    write_line_stats(LineStats(timings, stats.unit), filename)
    with open(filename, "ab") as handle:
        handle.write(PROFILE_MARK + profile.to_json().encode("utf-8"))


def read_profile(filename: str) -> ProfileStats:
    """The profile saved in ``filename``: an ``.lprof`` that numba_lprun wrote, or the JSON of
    ``ProfileStats.to_json``. ``ValueError`` (one line, naming the file) for anything else:
    an ``.lprof`` that kernprof wrote holds line_profiler's stats only.

    Nothing is unpickled: the profile is found by its mark (the last one in the file; the
    JSON after it has no line starting with ``#``)."""
    with open(filename, "rb") as handle:
        data = handle.read()
    if data.lstrip().startswith(b"{"):
        return ProfileStats.from_json(data.decode("utf-8"))
    at = data.rfind(PROFILE_MARK)
    if at >= 0:
        return ProfileStats.from_json(data[at + len(PROFILE_MARK) :].decode("utf-8"))
    if data.startswith(b"\x80"):  # a pickle (protocol 2 or later): line_profiler's stats alone
        raise ValueError(
            f"{filename} holds line_profiler's stats only, without numba_lprun's profile (kernprof "
            f"writes such files): python -m line_profiler {filename} shows them"
        )
    raise ValueError(f"{filename} is neither an .lprof file nor a profile's JSON")


def _save_source(stats_file: str, stats: FunctionStats) -> str:
    """Write the source of ``stats``' file next to ``stats_file``; return its path."""
    lines = linecache.getlines(stats.source.filename)
    if not lines:  # keep line numbers: pad up to the def, then the def's own lines
        lines = ["\n"] * (stats.source.first_lineno - 1) + [
            ln if ln.endswith("\n") else ln + "\n" for ln in stats.source.lines
        ]
    folder = stats_file + ".sources"
    os.makedirs(folder, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", stats.source.filename).strip("_.")[-60:] or "source"
    digest = hashlib.sha1(stats.source.filename.encode()).hexdigest()[:8]
    path = os.path.abspath(os.path.join(folder, f"{stem}-{digest}.py"))
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
    return path
