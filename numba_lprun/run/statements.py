"""Module-like source run statement by statement, adopting the functions it defines.

A ``%%nlprun`` cell or a script defines the jitted functions it profiles itself:
they do not exist before the run, and each run (plain, sampled repeats,
instrumented) defines them anew. So the source runs one top-level statement at a
time, and after each one the new bindings that ``pick`` accepts (and whatever
``discover`` finds) are adopted by the phase: swapped for their twins from then on.
"""

from __future__ import annotations

import ast
import linecache
from collections.abc import Callable, Iterable

from .runner import PhaseRun, Target
from .snapshot import Reach, statement_reach


def statement_run(
    source: str,
    filename: str,
    namespace: dict | Callable[[], dict],
    pick: Callable[[object], bool] | None,
    discover: Callable[[], Iterable[Callable]] | None,
    adopted: Callable[[Target], None],
) -> tuple[Callable[[PhaseRun], None], list[dict], Reach]:
    """What a phase runs for ``source``, the namespaces to swap in, and the state it reaches.

    ``namespace`` may be a factory, called once per run, for a fresh module
    namespace each time (nothing to restore in it then). The source is registered
    in linecache under ``filename`` so its functions' source can be read back;
    ``adopted`` is told of each function adopted.
    """
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    tree = ast.parse(source, filename)
    codes = [compile(ast.Module(body=[stmt], type_ignores=[]), filename, "exec") for stmt in tree.body]
    fixed = namespace if isinstance(namespace, dict) else None

    def execute(run: PhaseRun) -> None:
        ns = fixed if fixed is not None else namespace()
        run.add_namespace(ns)
        try:
            for code in codes:
                before = {k: id(v) for k, v in ns.items()}
                exec(code, ns)
                found = [
                    v for k, v in list(ns.items()) if before.get(k) != id(v) and pick is not None and pick(v)
                ]
                found += list(discover()) if discover is not None else []
                for func in found:
                    adopted(run.adopt(func))
        finally:
            if fixed is None:  # a fresh namespace per run: let it go with its run
                run.drop_namespace(ns)

    reach = statement_reach(codes, [fixed]) if fixed is not None else Reach()
    return execute, [fixed] if fixed is not None else [], reach
