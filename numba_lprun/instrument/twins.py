"""Compile twins of jitted functions.

A twin is a new dispatcher with the original's target options, ``locals`` and
signatures, built from a rewritten function (the counting, the probed or the plain twin)
or from the original's own code with different globals (a *relinked* caller, so a
jitted caller reaches a twin instead of the callee it linked at compile time).
Originals are never touched, and no twin is ever written to Numba's disk cache:
twins have a cache of their own (``twin_cache``), keyed by ``twin_identity``.
"""

from __future__ import annotations

import ast
import functools
import re
import types as pytypes
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

import numba

from .. import internals
from ..errors import TwinCompileError
from ..internals import (
    CPUDispatcher,
    can_compile,
    is_twin,
    line_tables_only,
    make_twin_dispatcher,
    pipeline_class,
    tagged_pipeline,
    with_pass_before_lowering,
)
from ..twin_kind import PLAIN, TwinKind
from . import probes as P
from . import unwind
from .branch_budget import budgeted
from .disk_cache import cache_root
from .exits import flushing
from .function_kinds import treated_as
from .in_place import FACTORY, mangling_class, placed
from .source import FunctionSource
from .twin_cache import not_cached_because
from .twin_identity import name_twin, register, share_identity, twin_key


def objmode_names(py_func: pytypes.FunctionType) -> frozenset[str]:
    """Names under which ``numba.objmode`` is reachable from ``py_func``'s globals."""
    names = {"objmode"}
    names.update(k for k, v in py_func.__globals__.items() if v is numba.objmode)
    return frozenset(names)


def exec_def(
    tree: ast.FunctionDef, src: FunctionSource, globals_: dict, relink: dict[int, object] | None = None
) -> pytypes.FunctionType:
    """Execute a rewritten def in ``globals_`` as Python compiled the original (``in_place``).

    The factory is given the original's closure contents, so the twin closes over the same
    objects as the original (``relink``: id(object) -> what the twin closes over instead, as
    CUDA's device functions' twins); cells the original has still empty stay empty
    (``fill_cells``). The class statement around it is bound in ``globals_`` only while the
    def executes. The CPU and CUDA twins share it.
    """
    py_func = src.py_func
    scope_name = mangling_class(py_func.__qualname__)
    had, before = scope_name in globals_, globals_.get(scope_name)
    try:
        exec(compile(placed(tree, py_func), src.filename, "exec"), globals_)
        make = vars(globals_[scope_name])[FACTORY]
    finally:
        if had:
            globals_[scope_name] = before
        else:
            globals_.pop(scope_name, None)
    cells = py_func.__closure__ or ()
    contents = []
    for cell in cells:
        value = cell_value(cell)
        contents.append(value if relink is None else relink.get(id(value), value))
    made = make(*contents)
    code = made.__code__
    made.__code__ = code.replace(co_name=py_func.__code__.co_name, co_qualname=py_func.__qualname__)
    for mine, theirs in zip(made.__closure__ or (), cells, strict=True):
        if is_empty(theirs):  # bound later (see fill_cells)
            del mine.cell_contents
    return made


@dataclass(eq=False)
class Twin:
    """One twin dispatcher and what it replaces (equal only to itself: kept by identity)."""

    original: CPUDispatcher
    dispatcher: CPUDispatcher
    kind: TwinKind
    compile_seconds: float = 0.0
    compiled: list[str] = field(default_factory=list)  # signatures compiled, as text
    kernel: object = None  # a ufunc's or stencil's twin: where its code is (see ufuncs)
    vectorized: dict = field(default_factory=dict)  # ``vectorized_lines``' memo for this twin's code
    builds_read: dict = field(default_factory=dict)  # ``callees_faster_in_copies``' memo for it

    @property
    def code(self):
        """The dispatcher whose ``overloads`` hold the twin's compiled code."""
        return self.dispatcher if self.kernel is None else self.kernel

    @property
    def has_code(self) -> bool:
        """Whether the twin holds compiled code: compiled ahead (``compiled``) or on its first
        call, as when the original had compiled nothing before the profile (a script's)."""
        return bool(self.compiled) or bool(getattr(self.code, "overloads", None))


def line_table_options(original: CPUDispatcher) -> dict:
    """Target options that add line tables (debug info) and change nothing else.

    ``debug=True`` alone would also turn on bounds checking and extend variable
    lifetimes (numba/core/cpu.py), so both are pinned to what the original does.
    """
    boundscheck = original.targetoptions.get("boundscheck")
    if boundscheck is None:
        boundscheck = bool(numba.config.BOUNDSCHECK)
    return internals.line_table_options(boundscheck)


def _new_dispatcher(
    original: CPUDispatcher,
    py_func: pytypes.FunctionType,
    line_tables: bool = False,
    kind: str = "relinked",
    slot: P.CounterSlot | None = None,
) -> CPUDispatcher:
    """A dispatcher like ``original`` for ``py_func``, cached in numba_lprun's own directory.

    Twins have ``__module__ = None``: Numba then treats them as dynamically
    generated, so object-mode blocks look globals up in the twin's own globals
    (where the probes are) and nothing is cached or pickled by module name.
    With ``line_tables`` the code carries DWARF line tables (for the vectorization
    check and the sampler), compiled otherwise exactly as the original.
    ``twin_identity`` keys the twin (``slot``: its probes' counters symbol), tags
    its symbol names and gives it a disk cache (``twin_cache``), so an unchanged
    twin compiled by an earlier process is loaded instead of compiled.
    """
    options = dict(original.targetoptions)
    pipeline = pipeline_class(original)
    if line_tables and not options.get("debug"):
        options.update(line_table_options(original))
        pipeline = line_tables_pipeline(pipeline)
    pipeline = flushing(pipeline)  # counters held in registers reach memory on every exit
    pipeline = budgeted(pipeline)  # and leave an if's arms as foldable as the plain code's
    pipeline = with_pass_before_lowering(pipeline, P.derive_counts)  # lines that follow from others: derived
    locals_ = dict(original.locals)
    naming = name_twin(twin_key(kind, py_func, options, locals_, pipeline, slot), slot)
    dispatcher = make_twin_dispatcher(
        original,
        functools.partial(fill_cells, py_func, original),
        py_func,
        locals=locals_,
        targetoptions=options,
        pipeline_class=tagged_pipeline(pipeline, naming.tag),
        silent=kind == PLAIN,  # compiled beside the twin the program's calls run on
    )
    register(dispatcher, py_func, naming)
    return dispatcher


def line_tables_pipeline(base: type) -> type:
    """``base`` (a compiler pipeline class) as the plain twin compiles: line tables and
    inlining records only (``internals.line_tables_only``), and every function its code
    runs unwindable (``unwind``), for the sampler.

    Full debug info declares every variable (``llvm.dbg.declare``), which keeps
    LLVM from pruning reference counts and other work: a convolution ran 2x slower
    with it. Line directives give the same line tables and leave codegen alone.
    """
    return line_tables_only(base, unwind.keep_loop_body_apart, unwind.UnwindableLibrary)


def loaded_from_cache(twin: Twin) -> int:
    """How many of the twin's signatures were loaded from the disk cache instead of compiled
    (for progress messages: a load fires no compile event)."""
    stats = getattr(twin.code, "stats", None)
    return sum(stats.cache_hits.values()) if stats is not None else 0


def uncached_reason(twin: Twin) -> str | None:
    """Why some of the twin's compiled code is not kept on disk for the next process (None: it
    all is, or the cache is off), for the profile's header."""
    if twin.kernel is not None:
        return "ufunc and stencil twins are not cached yet" if cache_root() is not None else None
    return not_cached_because(twin.dispatcher)


def make_twin(
    original: CPUDispatcher,
    src: FunctionSource,
    tree: ast.FunctionDef,
    extra_globals: dict,
    kind: str,
    line_tables: bool = False,
) -> Twin:
    """A twin built from a rewritten def; its globals are a copy of the original's."""
    globals_ = LiveGlobals(src.py_func.__globals__)
    globals_.update(extra_globals)
    py_func = exec_def(tree, src, globals_)
    py_func.__defaults__ = src.py_func.__defaults__
    py_func.__kwdefaults__ = src.py_func.__kwdefaults__
    py_func.__name__ = src.py_func.__name__
    py_func.__qualname__ = src.py_func.__qualname__
    py_func.__module__ = None  # see _new_dispatcher
    build_kernel = treated_as(original).kernel_twin
    if build_kernel is not None:  # a ufunc's kernel compiles as the original's (no line tables)

        def pipeline(base: type) -> type:  # a stencil's loop nest, as a dispatcher twin's
            return budgeted(flushing(line_tables_pipeline(base) if line_tables else base))

        try:
            twin, code = build_kernel(original, py_func, pipeline, line_tables)
        except Exception as exc:  # Numba raises many types; all mean the twin failed
            raise TwinCompileError(src.py_func.__qualname__, numba_reason(exc), kind=kind) from None
        return Twin(original, twin, kind, compiled=["kernel"], kernel=code)
    slot = extra_globals.get(P.SLOT)
    return Twin(original, _new_dispatcher(original, py_func, line_tables, kind, slot), kind)


class LiveGlobals(dict):
    """A twin's globals: a copy of the module's, which ``link`` points at other twins, that
    looks up in the module itself what the copy lacks.

    Numba reads a function's globals when it compiles (``__globals__[name]``), and a
    twin compiles when first called: by then a script may have bound names that did
    not exist when the twin was made (the function's own name, when ``@njit`` is
    seen as it runs; a helper defined further down). What it finds there is linked as
    the copy's names are (``links``, set by ``link``): a profiled function defined
    later is reached through its twin.
    """

    def __init__(self, module_globals: dict):
        super().__init__(module_globals)
        self._module = module_globals
        # id(original) -> (it, its twin), weakly: compiled code keeps its globals, and with them
        # these, for as long as it lives
        self.links: dict[int, tuple[weakref.ref, weakref.ref]] = {}

    def linked(self, value: object) -> object:
        """``value``, or the twin it is linked to."""
        pair = self.links.get(id(value))
        twin = pair[1]() if pair is not None and pair[0]() is value else None
        return value if twin is None else twin

    def __missing__(self, name: str):
        return self.linked(self._module[name])

    def catch_up(self) -> None:
        """Take what the module bound or rebound since the copy was made, as the original
        sees it when it compiles (``SCALE = 2`` after the ``def``: the original's code
        multiplies by 2, and so must the twin's). Object-mode code also reads this dict
        itself, at run time, where ``__missing__`` is never asked. A name the copy points
        at a twin keeps it (``link`` chose it), and a twin the module holds while a run's
        swap is in place is not taken (the twin of another phase, perhaps)."""
        twins = (pair[1]() for pair in self.links.values())
        linked = {id(twin) for twin in twins if twin is not None}
        for name, value in list(self._module.items()):
            mine = dict.get(self, name, _UNBOUND)
            if mine is value or id(mine) in linked or is_twin(value):
                continue
            dict.__setitem__(self, name, self.linked(value))


_UNBOUND = object()


def fill_cells(twin_func: pytypes.FunctionType, original: CPUDispatcher, types: tuple) -> None:
    """Fill the twin's closure cells that were empty when it was made from the original's,
    which the program has bound since, and bring its globals up to the module's
    (``LiveGlobals.catch_up``), but for the globals the original's own code for ``types``
    read when it compiled (``internals.globals_frozen_by``): called before each compile of the
    twin, for the argument ``types``.

    A closure that calls itself (``fib3 = njit(fib3)`` inside ``make()``), or a sibling
    defined after it in the same function, is made while that cell is still empty; Numba
    reads the cell when the function first compiles, and so does its twin. A global rebound
    after the original compiled (``SCALE = 10.0``; a helper defined again in a notebook) is
    not in the original's code, which keeps the value it read: the twin's code for those types
    reads that value too, or it computes what the program does not (30.0 where it returns 6.0).
    """
    g = twin_func.__globals__
    if isinstance(g, LiveGlobals):
        g.catch_up()
        for name, value in internals.globals_frozen_by(original, types).items():
            if name in g:
                dict.__setitem__(g, name, g.linked(value))
    for mine, theirs in zip(twin_func.__closure__ or (), original.py_func.__closure__ or (), strict=False):
        if is_empty(mine) and not is_empty(theirs):
            value = theirs.cell_contents
            mine.cell_contents = g.linked(value) if isinstance(g, LiveGlobals) else value


def make_relinked(original: CPUDispatcher, linked: Iterable[Twin] = ()) -> Twin:
    """A copy of ``original`` whose globals and closure can be pointed at other twins.

    A ufunc (``@vectorize``/``@guvectorize``) is rebuilt around a copy of its kernel, pointed
    at the ``linked`` twins first: Numba compiles the loops of its listed signatures as it
    rebuilds it, and they must call the twins.
    """
    build_kernel = treated_as(original).kernel_twin
    old = original.py_func if build_kernel is None else treated_as(original).python_function(original)
    cells = tuple(
        pytypes.CellType() if is_empty(c) else pytypes.CellType(c.cell_contents)
        for c in (old.__closure__ or ())
    )
    py_func = pytypes.FunctionType(
        old.__code__, LiveGlobals(old.__globals__), old.__name__, old.__defaults__, cells or None
    )
    py_func.__kwdefaults__ = old.__kwdefaults__
    py_func.__qualname__ = old.__qualname__
    py_func.__module__ = None  # see _new_dispatcher
    if build_kernel is None:  # with line tables: a profiled helper inlined here is sampled here
        return Twin(original, _new_dispatcher(original, py_func, line_tables=True), "relinked")
    _point_at(py_func, list(linked))
    try:
        twin, code = build_kernel(original, py_func, lambda base: base, False)
    except Exception as exc:  # Numba raises many types; all mean the twin failed
        raise TwinCompileError(old.__qualname__, numba_reason(exc), kind="relinked") from None
    return Twin(original, twin, "relinked", compiled=["kernel"], kernel=code)


def compile_in_place(replaced: CPUDispatcher, twin: Twin) -> list[object]:
    """Make ``replaced``, a twin dispatcher that ``twin`` was built to replace, compile as ``twin``
    does: jitted code typed with ``replaced`` (passed to it as an argument, held in a closure or
    a tuple it reads) calls the code that very object holds, whatever the program's names now
    hold. Returns its compiled code dropped (``internals.compile_as``)."""
    dropped = internals.compile_as(replaced, twin.dispatcher)
    share_identity(replaced, twin.dispatcher)
    return dropped


def cell_value(cell: pytypes.CellType) -> object:
    """What a closure cell holds (None for an empty cell: no call could use it)."""
    try:
        return cell.cell_contents
    except ValueError:
        return None


def is_empty(cell: pytypes.CellType) -> bool:
    """Whether a closure cell is still unbound (its variable is assigned later)."""
    try:
        cell.cell_contents  # noqa: B018  (reading is the test)
    except ValueError:
        return True
    return False


def link(twins: Iterable[Twin]) -> None:
    """Point every twin's globals and closure cells at the other twins of its set (and what it
    finds later, see ``LiveGlobals`` and ``fill_cells``)."""
    twins = list(twins)
    for twin in twins:
        _point_at(twin.code.py_func, twins)


def _point_at(py_func: pytypes.FunctionType, twins: list[Twin]) -> None:
    """Point ``py_func``'s globals and closure cells at ``twins`` (where they name their originals)."""
    replace = {id(t.original): t.dispatcher for t in twins}
    g = py_func.__globals__
    if isinstance(g, LiveGlobals):
        g.links = {id(t.original): (weakref.ref(t.original), weakref.ref(t.dispatcher)) for t in twins}
    for name, value in list(g.items()):
        if id(value) in replace:
            g[name] = replace[id(value)]
    for cell in py_func.__closure__ or ():
        if not is_empty(cell) and id(cell.cell_contents) in replace:
            cell.cell_contents = replace[id(cell.cell_contents)]


_LINE_RE = re.compile(r'File "([^"]+)", line (\d+)')
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
_NOISE = ("Failed in ", "During:", "File ", "Rewrite ", "- Resolution", "- argument")


def numba_reason(exc: BaseException) -> str:
    """The one line of a Numba error message that says what went wrong."""
    lines = [ln.strip() for ln in _ANSI_RE.sub("", str(exc)).splitlines()]
    useful = [ln for ln in lines if ln and not ln.startswith(_NOISE) and set(ln) != {"^"}]
    return useful[0] if useful else type(exc).__name__


def _twin_error(twin: Twin, exc: Exception, src: FunctionSource | None) -> TwinCompileError:
    message = _ANSI_RE.sub("", str(exc))
    reason = numba_reason(exc)
    lineno, line = None, ""
    if src is not None:
        hits = [int(n) for f, n in _LINE_RE.findall(message) if f == src.filename]
        if hits:
            lineno = hits[-1]
            line = src.line_text(lineno)
    return TwinCompileError(twin.original.py_func.__qualname__, reason, lineno, line, twin.kind)


def compile_like_original(twin: Twin, src: FunctionSource | None = None) -> None:
    """Compile ``twin`` for every signature its original has, then match its
    ``disable_compile`` state (explicit eager signatures compile nothing new)."""
    original = twin.original
    compile_like(twin, original, src)
    if not can_compile(original):
        twin.dispatcher.disable_compile()


def compile_like(twin: Twin, model: CPUDispatcher, src: FunctionSource | None = None) -> None:
    """Compile ``twin`` for every signature ``model`` has compiled (the original, or another
    twin that compiled on its first call).

    The return type is given only where it was (explicit signatures, after which ``model``
    compiles nothing new: a result is cast to it); else the twin infers its own, as the
    original did. Its probes can keep Numba from pruning a branch that is never taken, so
    an inferred ``Literal[int](0)`` of the original may be ``int64`` in the twin, and
    forcing the original's would not compile."""
    explicit = not can_compile(model)
    for cres in list(model.overloads.values()):
        sig = cres.signature
        if not explicit or isinstance(sig.return_type, numba.types.Generator):  # a generator's names it
            sig = sig.args
        if tuple(cres.signature.args) in twin.dispatcher.overloads:  # kept (Numba refuses even those
            continue  # once compiling is disabled)
        try:
            twin.dispatcher.compile(sig)
        except Exception as exc:  # Numba raises many types; all mean the twin failed
            raise _twin_error(twin, exc, src) from None
        if str(sig) not in twin.compiled:
            twin.compiled.append(str(sig))
