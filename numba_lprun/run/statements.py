"""Module-like source run statement by statement, adopting the functions it defines.

A ``%%nlprun`` cell or a script defines the jitted functions it profiles itself:
they do not exist before the run, and each run defines them anew. So the source
runs one top-level statement at a time, and after each one the new bindings
that the front end's ``Selection`` accepts (a jitted function, a jitclass, a ufunc, a
stencil: see ``resolve``; judged here, by ``selection.SourceRun``) are adopted by the
phase: their calls reach their twins from then on. Functions made while a statement runs (an
``@njit`` inside another function, as examples and tests write them) are
adopted as the decorator makes them (``new_dispatchers``).
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import linecache
import sys
from collections.abc import Callable, Iterator
from types import CodeType

from ..errors import NotProfilableError
from ..instrument.profilable import dispatcher_class, resolve
from ..internals import kernel_classes
from ..interrupts import ctrl_c_deferred
from .phase_run import PhaseRun
from .selection import MainModule, SourceRun
from .snapshot import Reach, statement_reach


def statement_run(
    source: str, filename: str, namespace: dict | MainModule, judged: SourceRun, flags: int = 0
) -> tuple[Callable[[PhaseRun], None], list[dict], Reach]:
    """What a phase runs for ``source``, the namespaces to look in, and the state it reaches.

    ``namespace`` may be a ``MainModule``, made fresh for each run (nothing to
    restore in it then). The source is registered in linecache under ``filename``
    so its functions' source can be read back. ``judged`` says what is adopted;
    ``flags``: the compiler flags the source runs under (IPython's, for a cell: the
    ``__future__`` imports of earlier cells), beside its own ``__future__`` imports.
    """
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    codes = statement_codes(source, filename, flags)
    fixed = namespace if isinstance(namespace, dict) else None

    def execute(run: PhaseRun) -> None:
        ns = fixed if fixed is not None else namespace.make()
        judged.namespace = ns
        run.add_namespace(ns)

        def made(dispatcher: object) -> None:
            if judged.accepts(dispatcher):
                run.adopt(dispatcher)

        try:
            with new_dispatchers(made):
                for code in codes:
                    before = {k: id(v) for k, v in ns.items()}
                    exec(code, ns)
                    new = [v for k, v in list(ns.items()) if before.get(k) != id(v)]
                    found = [d for v in new for d in _chosen(judged, v)]
                    found += judged.marked_since()
                    if found:
                        run.adopt(*found)
        finally:
            if fixed is None:  # a fresh namespace per run: let it go with its run
                run.drop_namespace(ns)

    reach = statement_reach(codes, [fixed]) if fixed is not None else Reach()
    return execute, [fixed] if fixed is not None else [], reach


def statement_codes(source: str, filename: str, flags: int = 0) -> list[CodeType]:
    """``source``'s top-level statements, each compiled to the bytecode Python gives it in
    the whole module.

    Two things of the whole module change a statement's code: its ``__future__`` imports
    (a statement compiled alone would take this module's own instead), and the names
    its imports bind, for which CPython calls ``math.exp(x)`` as an attribute, not a
    method. A function compiled otherwise has other bytecode than in a plain run, and
    Numba keys its cache by the bytecode: a profile found no warm entry and left new
    ones in the program's cache. So each statement is compiled behind the module's
    imports, in a block that never runs (``if False:``), with the module's flags."""
    tree = ast.parse(source, filename)
    flags |= _future_flags(tree)
    compile(tree, filename, "exec", flags=flags, dont_inherit=True)  # the module's SyntaxErrors, as Python
    imports = _imports(tree.body)
    codes = []
    for stmt in tree.body:
        unrun = ast.copy_location(ast.If(test=ast.Constant(False), body=imports, orelse=[]), stmt)
        future = isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"  # first, or an error
        body = [unrun, stmt] if imports and not future else [stmt]
        module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
        codes.append(compile(module, filename, "exec", flags=flags, dont_inherit=True))
    return codes


def bound_by(source: str) -> set[str]:
    """The names ``source``'s top-level statements bind (functions, classes, assignments, imports):
    what ``-f`` may name in a cell before the cell has made it."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).partition(".")[0] for a in node.names}
    return names


def _future_flags(tree: ast.Module) -> int:
    """The compiler flags of the module's ``from __future__ import`` statements."""
    flags = 0
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for alias in node.names:
                flags |= getattr(__future__, alias.name).compiler_flag
    return flags


def _imports(body: list) -> list[ast.stmt]:
    """The module-level import statements (inside ``if``, ``try``, ``with`` blocks too; not
    inside functions and classes, which have scopes of their own), ``__future__``'s left out."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if getattr(node, "module", None) != "__future__":
                found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                found += _imports(getattr(node, name, None) or [])
    return found


def _chosen(judged: SourceRun, value: object) -> list:
    """The dispatchers of a new binding ``value`` the source's selection profiles: all that
    stand for it, or the members ``-f Class.member`` names of a class."""
    members = judged.members_named(value)
    if members is None:
        return _profilable(value) if judged.accepts(value) else []
    chosen = []
    for dispatcher in _profilable(value):
        name = members.get(getattr(getattr(dispatcher, "py_func", None), "__name__", None))
        if name is not None:
            judged.found_member(name)
            chosen.append(dispatcher)
    return chosen


def _profilable(value: object) -> list:
    """The dispatchers that stand for ``value`` (a jitclass gives its members); none if it
    cannot be profiled (the selection took it as the source's own)."""
    try:
        return resolve(value)
    except NotProfilableError:
        return []


#: Modules whose frames sit between a Numba decorator and the code that applied it.
_DECORATOR_MODULES = ("numba.core.decorators",)
#: Where ``@overload`` (and so ``register_jitable``) makes a dispatcher of its implementation.
_OVERLOAD_MODULE = "numba.core.typing.templates"


def _made_by_a_decorator_in_user_code(made: object, decorators: tuple[str, ...] = _DECORATOR_MODULES) -> bool:
    """Whether the object being made comes from a decorator (``@njit``, ``@vectorize``,
    ``@stencil``: Numba code in ``decorators``) applied by the program itself, not from Numba
    or numba_lprun making one for their own use (a ufunc's kernel, a jitclass's members, a
    twin)."""
    frame = sys._getframe(2)  # the caller of the patched __init__
    while frame is not None and frame.f_globals.get("__name__", "").startswith(decorators):
        frame = frame.f_back
    if frame is None:
        return False
    if _made_for_an_overload(frame, made):
        return True
    return not _tools_own(frame.f_globals.get("__name__", "") or "")


def _made_for_an_overload(frame, made: object) -> bool:
    """Whether Numba's ``@overload`` machinery is compiling a program's own function: what
    ``register_jitable`` makes of a plain function (as pandas' ``engine="numba"`` does with a
    user's function), or an ``@overload``'s implementation defined in the program. That
    function is the program's as much as one it decorated itself."""
    if frame.f_globals.get("__name__") != _OVERLOAD_MODULE or frame.f_code.co_name != "_build_impl":
        return False
    py_func = getattr(made, "py_func", None)
    return py_func is not None and not _tools_own(getattr(py_func, "__module__", "") or "")


def _tools_own(module: str) -> bool:
    """Whether ``module`` is Numba's or numba_lprun's own code; Numba's test suite (``numba.tests``)
    is a program like any other (``--source numba.tests.test_range`` profiles its kernels)."""
    if module == "numba.tests" or module.startswith("numba.tests."):
        return False
    return module in ("numba", "numba_lprun") or module.startswith(("numba.", "numba_lprun."))


def _reporting(cls: type, decorators: tuple[str, ...], found: Callable[[object], None]) -> Callable:
    """A replacement ``__init__`` for ``cls`` that tells ``found`` of each object the program makes."""
    base_init = cls.__init__

    def __init__(self, *args, **kwargs):
        base_init(self, *args, **kwargs)
        if type(self) is cls and _made_by_a_decorator_in_user_code(self, decorators):
            found(self)

    return __init__


@contextlib.contextmanager
def new_dispatchers(found: Callable[[object], None]) -> Iterator[None]:
    """Tell ``found`` of every jitted function, ufunc and stencil the program makes while the
    block runs (inside functions too: ``vectorize([...])(f)`` in ``main()``).

    Each class's ``__init__`` is wrapped for the block (and put back, Ctrl-C held
    meanwhile); an object is reported once made, when it comes from a decorator in
    the program's own code (see above).
    """
    patched = [(dispatcher_class(), _DECORATOR_MODULES)]
    patched += [(cls, (package + ".",)) for cls, package in kernel_classes()]
    saved = [(cls, "__init__" in vars(cls), vars(cls).get("__init__")) for cls, _ in patched]
    with ctrl_c_deferred():
        for cls, decorators in patched:
            cls.__init__ = _reporting(cls, decorators, found)
    try:
        yield
    finally:
        with ctrl_c_deferred():
            for cls, had, old in saved:
                if had:
                    cls.__init__ = old
                else:
                    del cls.__init__
