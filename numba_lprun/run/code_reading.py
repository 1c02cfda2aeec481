"""Read each profiled function's machine code by line, from the twin its samples came from.

The code view lines up with the samples only when it is the code that was
sampled: the plain twin's where extra runs sampled it, otherwise the user's run's
twin. Readings are kept per (twin, signatures, samples), so asking for the
profile again reads nothing unless something ran since.
"""

from __future__ import annotations

from ..instrument.twin_identity import symbol_mark
from ..machine import CodeReading, read_code_by_line
from .measurements import PLAIN, CallRecord, Counted, Key, Sampled
from .runner import Runner
from .sampled_run import twin_hosts


def read_twin_code(runner: Runner, record: CallRecord, kept: dict) -> dict[Key, CodeReading]:
    """Key -> the code reading of each target (``kept`` caches readings between calls)."""
    users = [m.twin for m in record.of(Counted) if m.user]
    out = {}
    for key, target in runner.targets.items():
        sampled = [m for m in record.of(Sampled) if key in m.functions]
        kind = PLAIN if any(m.twin == PLAIN for m in sampled) or not users else users[-1]
        twin = target.twins.get(kind) or target.twins.get(PLAIN)
        if twin is None:
            continue
        addresses: dict[int, int] = {}
        for m in sampled:
            if m.twin == twin.kind:
                for address, count in m.functions[key].addresses.items():
                    addresses[address] = addresses.get(address, 0) + count
        state = (key, twin, len(twin.code.overloads), sum(addresses.values()))
        if state not in kept:
            src = target.source
            last = src.first_lineno + len(src.lines) - 1
            where = (twin.code, src.filename, src.body_lineno, last)
            hosts = twin_hosts(runner, twin.kind, where)
            lines = (src.filename, src.body_lineno, last)
            mark = symbol_mark(twin.code)
            kept[state] = read_code_by_line(twin.code, twin.kind, *lines, addresses, hosts, mark)
        if twin.has_code or kept[state].unavailable is None:  # a twin that never compiled may
            out[key] = kept[state]  # run inlined in code loaded from the twin cache (a caller's)
    return out
