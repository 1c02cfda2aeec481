"""The package keeps the shape the README promises: data flows one way, modules stay small.

Read from the source with ``ast`` (nothing is imported): each module imports
only from its own stage or the stages before it, no two modules import each
other (directly or round a circle), no module reaches into another stage's
private names, and modules and functions stay short enough to read.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from numba_lprun.internals import installed_numba

PACKAGE = Path(__file__).resolve().parent.parent / "numba_lprun"

#: The stages, in the order data flows; a module may import from its own stage and earlier ones.
STAGES: list[set[str]] = [
    {"errors", "interrupts", "twin_kind", "settings", "decorator"},
    {"internals"},  # the one door to Numba's private API
    {"instrument", "vectorized"},  # source -> instrumented AST -> twins
    {"sampling"},
    {"machine"},
    {"run"},  # run phases -> measurements
    {"codec", "stats_parts", "stats", "diagnose", "assemble", "merge"},  # the immutable profile
    {"renderers"},
    {"processes"},  # worker processes: their runs, their parts of the profile
    {"profiler", "cuda"},  # the Python API
    {"options"},
    {"session"},  # between the front ends and the profiler: request, outcome, presentation
    {"magic", "cli", "__main__", "demo"},  # front ends
]
MAX_MODULE_LINES = 600  # a guide (modules cut by subject), not a cap to squeeze under
MAX_FUNCTION_LINES = 80
MAX_PROFILER_LINES = 150


def stage_of(module: str) -> int:
    """The stage of ``numba_lprun.a.b`` (by its first part, ``a``); the package itself is the last."""
    if module == "numba_lprun":
        return len(STAGES) - 1
    top = module.split(".")[1]
    for index, names in enumerate(STAGES):
        if top in names:
            return index
    raise AssertionError(f"{module} is in no stage: add it to STAGES")


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports_of(name: str, path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names imported from it, line) for every import of the package's own modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("numba_lprun")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("numba_lprun"):
                out.append((target, [a.name for a in node.names], node.lineno))
    return out


def resolve(target: str, names: list[str], known: dict[str, Path]) -> list[str]:
    """The modules an import statement loads: ``from pkg import mod`` names a module too."""
    found = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
    return found or [target]


def test_each_module_imports_only_from_its_stage_or_earlier():
    known = modules()
    wrong = []
    for name, path in known.items():
        if name == "numba_lprun":  # the package's front door re-exports the API
            continue
        for target, names, line in imports_of(name, path):
            for imported in resolve(target, names, known):
                if stage_of(imported) > stage_of(name):
                    wrong.append(f"{path.name}:{line} {name} imports {imported}")
    assert not wrong, "\n".join(wrong)


def test_no_import_circles():
    known = modules()
    graph = {
        name: {m for t, names, _ in imports_of(name, path) for m in resolve(t, names, known) if m != name}
        for name, path in known.items()
    }
    graph = {name: {m for m in deps if m in known} for name, deps in graph.items()}
    circles = []

    def visit(node: str, trail: list[str], seen: set[str]) -> None:
        for dep in sorted(graph[node]):
            if dep in trail:
                circles.append(trail[trail.index(dep) :] + [dep])
            elif dep not in seen:
                seen.add(dep)
                visit(dep, trail + [dep], seen)

    for name in known:
        if name.count(".") >= 1:  # packages import their modules to re-export them: not a circle
            visit(name, [name], {name})
    circles = [c for c in circles if not any(m == c[0].rsplit(".", 1)[0] for m in c)]
    assert not circles, "\n".join(" -> ".join(c) for c in circles[:10])


def test_no_module_reaches_into_another_stages_private_names():
    known = modules()
    wrong = []
    for name, path in known.items():
        for target, names, line in imports_of(name, path):
            if target.split(".")[:2] == name.split(".")[:2]:
                continue  # within one stage's package
            wrong += [f"{path.name}:{line} imports {target}.{n}" for n in names if n.startswith("_")]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("name", sorted(modules()))
def test_modules_and_functions_stay_small(name):
    path = modules()[name]
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_MODULE_LINES, f"{name}: {len(source.splitlines())} lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{name}.{node.name}: {length} lines"


# -- the one door to Numba's internals (numba_lprun/internals/) ------------------------------
DOOR = "numba_lprun.internals"
#: Numba's public modules, importable anywhere (``numba.cuda`` is numba-cuda's public package).
PUBLIC_NUMBA = {"numba", "numba.extending", "numba.types", "numba.typed"}
PUBLIC_NUMBA |= {"numba.cuda", "numba.cuda.types", "numba.cuda.extending"}
#: Underscored names of the standard library's public API: no Numba object's.
STDLIB_PRIVATE = {
    "_getframe",
    "_fields",
    "_replace",
    "_CFuncPtr",
    "_registry",
}  # sys, namedtuple (x2), ctypes (a type hint), weakref.finalize (test_private_api.py runs on each Python)


def forbidden_import(node: ast.AST) -> str | None:
    """The Numba internal an import statement reaches (``numba.core``, ``numba._x``,
    ``llvmlite.binding``, any Numba module that is not public API), or None."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
        sub = {"numba": ("core",), "llvmlite": ("binding",)}.get(node.module, ())
        names = [node.module] + [
            f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_") or a.name in sub
        ]
    else:
        return None
    for name in names:
        parts = name.split(".")
        if parts[:2] == ["llvmlite", "binding"]:
            return name
        if parts[0] == "numba" and (name not in PUBLIC_NUMBA or any(p.startswith("_") for p in parts)):
            return name
    return None


def private_accesses(tree: ast.AST) -> list[tuple[str, int]]:
    """(name, line) of each ``x._name`` read or set, and of ``getattr(x, "_name")`` and kin."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found.append((node.attr, node.lineno))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2:
            if node.func.id in ("getattr", "hasattr", "setattr", "delattr"):
                if isinstance(node.args[1], ast.Constant):
                    found.append((str(node.args[1].value), node.lineno))
    return [(n, line) for n, line in found if n.startswith("_") and not n.startswith("__")]


def defined_names(inside_door: bool) -> set[str]:
    """Underscored names numba_lprun defines (in the door, or outside it): functions, classes,
    module and class attributes, ``self._x``/``cls._x``, and attributes set with its ``_nlp`` prefix."""
    names = set()
    for name, path in modules().items():
        if name.startswith(DOOR) != inside_door:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        for stmt in (s for body in bodies for s in body):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                mine = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
                if mine or node.attr.startswith("_nlp"):
                    names.add(node.attr)
    from numba_lprun.internals import private_names

    return {n for n in names if n.startswith("_")} - private_names()


def door_violations(name: str, source: str, ours: set[str], declared: set[str]) -> list[str]:
    """What module ``name`` (outside the door) reaches of Numba's internals, one line each."""
    tree = ast.parse(source)
    wrong = {(n.lineno, f"imports {what}") for n in ast.walk(tree) if (what := forbidden_import(n))}
    reads = {(line, attr) for line, attr in ((ln, a) for a, ln in private_accesses(tree))}
    wrong |= {(line, f"reads .{a}") for line, a in reads if a in declared or a not in ours | STDLIB_PRIVATE}
    wrong |= {
        (n.lineno, f"names {n.value!r}")  # a declared name as a key: __dict__["_impl_cache"]
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and n.value in declared and (n.lineno, n.value) not in reads
    }
    return [f"{name}:{line} {what}" for line, what in sorted(wrong)]


def test_numba_internals_are_reached_only_through_the_door():
    """Outside numba_lprun/internals/: no import of Numba's internals, and no underscored
    attribute unless numba_lprun defines it and the registry does not declare it as Numba's."""
    from numba_lprun.internals import private_names

    ours, declared = defined_names(inside_door=False), private_names()
    wrong = []
    for name, path in modules().items():
        if not name.startswith(DOOR):
            wrong += door_violations(name, path.read_text(encoding="utf-8"), ours, declared)
    assert not wrong, "Numba internals reached outside numba_lprun/internals/:\n" + "\n".join(wrong)


def test_the_registry_matches_what_the_door_reads_and_what_numba_has():
    """In the door, every underscored name read that numba_lprun does not define is declared
    (``registry.touches``), every declared name is read, and every declaration relied on with
    the installed Numba exists: the registry cannot go stale in either direction."""
    from numba_lprun.internals import USES, private_names

    read, spelled = set(), set()
    for name, path in modules().items():
        if name.startswith(DOOR):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            read |= {a for a, _ in private_accesses(tree)}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    read |= {a.name for a in node.names} | set((node.module or "").split("."))
                elif isinstance(node, ast.Import):
                    spelled |= {part for a in node.names for part in a.name.split(".")}
                elif isinstance(node, (ast.Attribute, ast.Name)):
                    spelled.add(getattr(node, "attr", None) or getattr(node, "id", None))
                elif isinstance(node, ast.Constant) and node.value in private_names():
                    read.add(node.value)  # a declared name, spelled as a key: "_impl_cache"
    own = defined_names(inside_door=True) | defined_names(inside_door=False) | STDLIB_PRIVATE
    undeclared = {n for n in read if n.startswith("_") and not n.startswith("__")} - private_names() - own
    assert not undeclared, f"read in internals/, not declared: {sorted(undeclared)}"
    unread = [str(u) for u in USES if u.reached() not in read | spelled]
    assert not unread, "declared, no longer read in internals/:\n" + "\n".join(unread)
    gone = [str(u) for u in USES if u.applies() and not u.present()]
    here = ".".join(map(str, installed_numba()))
    assert not gone, f"relied on with numba {here} but gone:\n" + "\n".join(gone)


def test_line_profiler_is_a_small_facade():
    tree = ast.parse((PACKAGE / "profiler.py").read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "LineProfiler"]
    assert cls.end_lineno - cls.lineno + 1 <= MAX_PROFILER_LINES


def test_no_twin_kind_is_a_string_literal_outside_its_enum():
    """The kinds of twin are named once (``twin_kind.TwinKind``): a bare "plain" retyped in a
    stage drifts (CUDA's user run once said "instrumented", a kind no code compared with)."""
    from numba_lprun.twin_kind import TwinKind

    words = {kind.value for kind in TwinKind} | {"instrumented"}
    found = []
    for name, path in modules().items():
        if name == "numba_lprun.twin_kind":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in words:
                found.append(f"{name}:{node.lineno} {node.value!r}")
    assert not found, found


def test_the_package_docstring_lists_the_stages_in_their_enforced_order():
    """``numba_lprun/__init__.py`` tells a new reader the order data flows in: it must be the
    order this file enforces (it once listed ``run/`` before ``sampling/`` and ``machine/``)."""
    import numba_lprun

    listed = re.findall(r"^- ``(\w+)/?``", numba_lprun.__doc__, flags=re.MULTILINE)
    stages = [stage_of(f"numba_lprun.{name}") for name in listed]
    assert stages == sorted(stages), list(zip(listed, stages, strict=True))
    assert {"internals", "instrument", "sampling", "machine", "run", "renderers"} <= set(listed)


#: The most fields ``FunctionStats`` may have of its own: the rest live in its parts (``stats_parts``).
MAX_FUNCTION_STATS_FIELDS = 12


def test_a_function_profile_is_made_of_a_few_parts():
    """``FunctionStats`` holds small frozen parts (its source, the counts, the samples, the probes,
    the distortion, the machine code, the extras, the diagnosis), not a field per figure: it had
    48, and the diagnosis was written into it after it was made."""
    import dataclasses
    import typing

    from numba_lprun.stats import FunctionStats

    fields = dataclasses.fields(FunctionStats)
    assert len(fields) <= MAX_FUNCTION_STATS_FIELDS, [f.name for f in fields]
    hints = typing.get_type_hints(FunctionStats)
    loose = [f.name for f in fields if not dataclasses.is_dataclass(hints[f.name])]
    assert not loose, loose  # each field a part
    assert all(hints[f.name].__dataclass_params__.frozen for f in fields)


def _forwards(node: ast.FunctionDef) -> bool:
    """Whether ``node``'s body is only ``return self.<part>.<figure>`` (a docstring aside)."""
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    value = body[0].value
    return (
        isinstance(value, ast.Attribute)
        and isinstance(value.value, ast.Attribute)
        and isinstance(value.value.value, ast.Name)
        and value.value.value.id == "self"
    )


def test_a_function_profile_has_one_way_to_read_each_figure():
    """A figure is read from its part (``f.counts.hits``), never also through a property of
    ``FunctionStats`` that forwards to it: there were 15 such properties, both ways were in use,
    and a new figure meant a part field and a forward."""
    tree = ast.parse((PACKAGE / "stats.py").read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "FunctionStats"]
    forwards = [n.name for n in cls.body if isinstance(n, ast.FunctionDef) and _forwards(n)]
    assert not forwards, forwards


#: The tests that tell a kind of function apart (a ufunc, a stencil, a jitclass), and the modules that
#: may ask them: the door, where they are defined, and the strategies (``instrument.function_kinds``).
KIND_TESTS = {"is_kernel_object", "is_cpu_ufunc", "is_stencil", "is_jitclass"}
KIND_MODULES = {"numba_lprun.instrument.function_kinds"}


def test_kinds_of_function_are_told_apart_only_by_their_strategies():
    """A stage asks a function's kind (``function_kinds.kind_of``) how to treat it, never whether it
    is a ufunc or a stencil: ``is_kernel_object`` was tested in 7 places, and adding a kind of
    function touched five modules."""
    found = []
    for name, path in modules().items():
        if name in KIND_MODULES or name.startswith(DOOR):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = getattr(node, "id", None) or getattr(node, "attr", None) or getattr(node, "name", None)
            if isinstance(node, (ast.Name, ast.Attribute, ast.alias)) and named in KIND_TESTS:
                found.append(f"{name}:{getattr(node, 'lineno', '?')} {named}")
    assert not found, found


def test_the_docs_list_the_parts_in_their_enforced_order():
    """``docs/how_it_works.md`` draws the package as the pipeline, each part importing only from
    the parts above it: its listing must be in the order this file enforces (it once put
    ``run/`` above ``machine/``, which ``run/`` imports)."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "how_it_works.md").read_text(encoding="utf-8")
    listing = text.split("```\nnumba_lprun/\n", 1)[1].split("```", 1)[0]
    listed = re.findall(r"^  (\w+)(?:/|\.py)", listing, flags=re.MULTILINE)
    stages = [stage_of(f"numba_lprun.{name}") for name in listed]
    assert stages == sorted(stages), list(zip(listed, stages, strict=True))
    assert {"internals", "instrument", "sampling", "machine", "run", "renderers", "processes"} <= set(listed)


def test_the_environment_is_read_only_in_the_settings_module():
    """Every environment variable is named and read in ``settings`` with one rule for "off" (seven
    modules read them, with as many rules)."""
    found = []
    for name, path in modules().items():
        if name == "numba_lprun.settings":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv"):
                found.append(f"{name}:{node.lineno} {node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module == "os":
                if any(alias.name in ("environ", "getenv") for alias in node.names):
                    found.append(f"{name}:{node.lineno} from os import")
    assert not found, found


#: The front ends, and the one module they share between them and the profiler.
FRONT_ENDS = ("numba_lprun.magic", "numba_lprun.cli")
SESSION = "numba_lprun.session"


def test_the_magic_and_the_command_line_share_the_session_module():
    """What both front ends do is written once, in ``session``: they import it, and neither
    reaches past it for what it decides (the CPU/CUDA split, the failure banner, what is
    profiled) nor words what it words (each used to repeat them, in slightly different words)."""
    known = modules()
    shared = {"split_cuda", "cuda_refusals", "profiler_failed", "statement_run", "SourceRun"}
    worded = ("cannot be profiled together", "itself failed", "could have profiled")
    wrong = []
    for name in FRONT_ENDS:
        imported = {(target, n) for target, names, _ in imports_of(name, known[name]) for n in names}
        if not any(target == SESSION for target, _ in imported):
            wrong.append(f"{name} does not import {SESSION}")
        wrong += [
            f"{name} imports {t}.{n}" for t, n in imported if n in shared or t.startswith("numba_lprun.run")
        ]
        tree = ast.parse(known[name].read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                wrong += [f"{name}:{node.lineno} words {w!r}" for w in worded if w in node.value]
    assert not wrong, wrong


#: The one thing a front end hands the run stage that it calls: the progress line, a sink for
#: text ("compiling twins", "plain run 2 of 3") that decides nothing about the run.
PROGRESS_SINKS = {("magic.py", "__call__"), ("magic.py", "clear")}


def calls_up_during(action) -> list[str]:
    """The front-end functions (``magic``, ``cli``, ``session``) called while a frame of the run
    stage (``run/``, ``profiler.py``) is on the stack, as ``action()`` runs: a call back up."""
    front = {str(PACKAGE / f) for f in ("magic.py", "cli.py", "session.py")}
    below = (str(PACKAGE / "run") + "/", str(PACKAGE / "profiler.py"))
    found: list[str] = []

    def watch(frame, event, arg):
        if event != "call" or frame.f_code.co_filename not in front:
            return
        where = (Path(frame.f_code.co_filename).name, frame.f_code.co_name)
        caller = frame.f_back
        while caller is not None:
            if caller.f_code.co_filename.startswith(below) and where not in PROGRESS_SINKS:
                found.append(f"{where[0]}:{frame.f_code.co_firstlineno} {where[1]}")
                return
            caller = caller.f_back

    sys.setprofile(watch)
    try:
        action()
    finally:
        sys.setprofile(None)
    return found


CELL = """
from numba import njit

@njit
def twice(x):
    return 2 * x

y = twice(21)
"""

SCRIPT = """
from numba import njit

@njit
def twice(x):
    return 2 * x

@profile
@njit
def thrice(x):
    return 3 * x

print(twice(21) + thrice(1))
"""


def test_the_run_stage_never_calls_a_front_end(ipshell, tmp_path, capsys):
    """A cell's and a script's new functions are judged by the run stage from the front end's
    ``Selection`` (data): nothing in ``run/`` calls back into the magic, the command line or
    the session while the program runs (the run stage called the magic's ``pick`` closure after
    every statement, the CLI's ``pick``, ``_MarkedFinder`` and namespace factory too)."""
    from numba_lprun import cli

    script = tmp_path / "marks.py"
    script.write_text(SCRIPT, encoding="utf-8")
    up = calls_up_during(lambda: ipshell.run_cell_magic("nlprun", "--once", CELL))
    up += calls_up_during(lambda: cli.main(["--once", "--hits", str(script)]))
    up += calls_up_during(lambda: cli.main(["--once", "--hits", "-f", "twice", str(script)]))
    out = capsys.readouterr().out
    assert ipshell.user_ns["y"] == 42 and out.count("\n45\n") == 2, out
    headings = re.findall(r"^Function:\s+(\w+)", out, flags=re.MULTILINE)
    assert headings == ["twice", "thrice", "twice"], out  # the cell's, the script's marked one, -f's
    assert not up, up


#: State keyed by ``id()`` that stays: lookups of arbitrary values, which may be unhashable (a
#: module's globals, the objects a snapshot walks), each guarded by the object held beside it.
ID_KEYED = {
    ("numba_lprun.instrument.twins", "links"),  # any global's value: weakly held, checked with `is`
    ("numba_lprun.run.snapshot", "seen"),  # the objects one snapshot walk has met, while it walks
}


def _is_id_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "id"


def _self_attribute(node: ast.AST) -> str | None:
    """``x`` for ``self.x`` (or ``self.x.y``...), else None."""
    while isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            return node.attr
        node = node.value
    return None


def test_no_state_is_kept_by_id():
    """An object's state lives in containers keyed by the object (targets, twins, dispatchers and
    classes hash by identity), not by ``id()``: an id outlives its object and a new object may get
    it (the runner had 8 fields keyed by id and guards against reuse; 22 such uses in all)."""
    found = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            keyed = None
            if isinstance(node, ast.Subscript):
                parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                keyed = _self_attribute(node.value) if any(map(_is_id_call, parts)) else None
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
                first = node.args[0]
                first = first.elt if isinstance(first, ast.GeneratorExp) else first
                if node.func.attr in ("get", "add", "pop", "setdefault", "update") and _is_id_call(first):
                    keyed = _self_attribute(node.func.value)
            if keyed is not None and (name, keyed) not in ID_KEYED:
                found.append(f"{name}:{node.lineno} self.{keyed} keyed by id()")
    assert not found, found
