"""Twins that carry DWARF line tables and are otherwise compiled exactly as the original.

The sampler maps machine addresses to source lines through line tables, and the
vectorization check reads loop lines from them. ``debug=True`` gives them, but
also full variable debug info (which slowed a convolution 2x: ``llvm.dbg.declare``
keeps LLVM from pruning reference counts), bounds checking and extended variable
lifetimes. Numba has no public switch for "line tables only": it takes a pipeline
class whose flags ask for directives only, a DIBuilder subclass that emits LLVM's
``LineTablesOnly`` kind, and a with-lifting pass that keeps debug info out of
lifted object-mode blocks. All of it overrides Numba's private internals, so it
lives here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from .codegen import before_lowering
from .registry import touches


@touches(
    "numba.core.cpu",
    "CPUTargetOptions._dbg_extend_lifetimes",
    "twins.py: debug=True would extend variable lifetimes; the twin pins it off",
)
def line_table_options(boundscheck: bool) -> dict:
    """Target options that add line tables (debug info) and change nothing else.

    ``debug=True`` alone also turns on bounds checking and extends variable
    lifetimes (numba/core/cpu.py): bounds checking is pinned to ``boundscheck``
    (what the original does), lifetimes to Numba's default without debug.
    """
    return {"debug": True, "boundscheck": boundscheck, "_dbg_extend_lifetimes": False}


@functools.cache
def _with_lifting_pass() -> type:
    """Numba's ``WithLifting`` pass, with line tables off in lifted ``objmode`` blocks.

    A lifted ``with objmode`` block is compiled in object mode with the twin's
    flags; Numba's object-mode lowering marks a subprogram but never finalizes the
    debug info (``PyLower.post_lower`` skips ``debuginfo.finalize``), so its LLVM
    module lacks the "Debug Info Version" flag and LLVM prints "ignoring debug info
    with an invalid version (0)" on stderr at every compile. Object-mode code is
    never sampled, so it needs no line table. Registered on first use (Numba's pass
    registry refuses a second pass of one name).
    """
    from numba.core import transforms
    from numba.core.compiler import _EarlyPipelineCompletion, compile_ir
    from numba.core.compiler_machinery import register_pass
    from numba.core.dispatcher import ObjModeLiftedWith
    from numba.core.untyped_passes import WithLifting

    @register_pass(mutates_CFG=True, analysis_only=False)
    class LineTablesWithLifting(WithLifting):
        _name = "nlp_line_tables_with_lifting"

        def run_pass(self, state):
            main, withs = transforms.with_lifting(
                func_ir=state.func_ir,
                typingctx=state.typingctx,
                targetctx=state.targetctx,
                flags=state.flags,
                locals=state.locals,
            )
            if not withs:
                return True
            for lifted in withs:
                if isinstance(lifted, ObjModeLiftedWith):  # lowered with the lifted code's context
                    lifted.flags.debuginfo = False
                    lifted.targetctx = lifted.targetctx.subtarget(enable_debuginfo=False)
            cres = compile_ir(
                state.typingctx,
                state.targetctx,
                main,
                state.args,
                state.return_type,
                state.flags,
                state.locals,
                lifted=tuple(withs),
                lifted_from=None,
                pipeline_class=type(state.pipeline),
            )
            raise _EarlyPipelineCompletion(cres)

    return LineTablesWithLifting


@touches(
    "numba.core.typing.templates",
    "_OverloadFunctionTemplate",
    "twins.py: an @overload's implementations are keyed by the flags of the caller being compiled",
    instance_attribute="_impl_cache",
)
@touches(
    "numba.core.targetconfig",
    "ConfigStack",
    "twins.py: the compile's entry on the flags stack is replaced, typing to lowering (push, pop)",
    instance_attribute="_stk",
)
@functools.cache
def _lookups_as_plain_code_passes() -> tuple[type, type]:
    """Two passes: from typing to lowering, what the compile asks of others sees the original's flags.

    Numba pushes a copy of the compile's flags (``targetconfig.ConfigStack``) for what the
    compile reaches: a template keys the ``@overload`` or ``@register_jitable`` implementation it
    builds by them (``_impl_cache``), and a jitted callee compiled meanwhile inherits some. A
    twin's flags ask for line tables, so its lookups missed the implementations the program's
    own callers compiled: Numba built each again (a compile, kept in the template for good) and,
    where the implementation was profiled, missed the entry swapped for its twin (the helper read
    "not called"). The first pass, before typing, puts in that copy's place on the stack another
    without the line tables' flags (a new object: a template keeps it in its keys, so it is never
    changed after); the second, before lowering, which reads the stack's top, puts the compile's
    own copy back. An error between leaves the stack as deep as it was: Numba pops the compile's
    entry, whichever object it is. Registered on first use."""
    from numba.core.compiler_machinery import FunctionPass, LoweringPass, register_pass
    from numba.core.targetconfig import ConfigStack

    def plain_copy(flags):
        plain = flags.copy()
        for name in LINE_TABLE_FLAGS:
            if hasattr(plain, name):
                setattr(plain, name, False)
        return plain

    @register_pass(mutates_CFG=False, analysis_only=True)
    class LookupsAsPlainCode(FunctionPass):
        _name = "nlp_lookups_as_plain_code"
        description = "what the compile asks of others sees the original's flags"

        def __init__(self):
            FunctionPass.__init__(self)

        def run_pass(self, state):
            stack = ConfigStack()._stk
            pushed = ConfigStack.top_or_none()
            if pushed is not None and "nlp_pushed_flags" not in state:
                # replaced, never changed: a template keeps the object in its keys
                stack.pop()
                stack.push(plain_copy(pushed))
                state["nlp_pushed_flags"] = pushed
            return False

    @register_pass(mutates_CFG=False, analysis_only=True)
    class LoweringAsTwin(LoweringPass):  # after the IR's dels are placed: not a FunctionPass
        _name = "nlp_lowering_as_twin"
        description = "the lowering sees the twin's own flags"

        def __init__(self):
            LoweringPass.__init__(self)

        def run_pass(self, state):
            pushed = state.pop("nlp_pushed_flags", None)
            if pushed is not None:
                stack = ConfigStack()._stk
                stack.pop()
                stack.push(pushed)
            return False

    return LookupsAsPlainCode, LoweringAsTwin


def around_typing(passes: list[tuple[type, str]], before: type, after: type) -> list[tuple[type, str]]:
    """A pipeline's ``(pass class, description)`` list with ``before`` ahead of its type inference
    and ``after`` ahead of its native lowering (``before_lowering``); unchanged where it has no
    type inference (object mode), so the two are always inserted together."""
    from numba.core.typed_passes import BaseTypeInference

    found = (
        i for i, (cls, _) in enumerate(passes) if isinstance(cls, type) and issubclass(cls, BaseTypeInference)
    )
    typing = next(found, None)
    if typing is None:
        return passes
    with_after = before_lowering(passes, after)
    if len(with_after) == len(passes):  # no native lowering: nothing to put back before
        return passes
    return [*with_after[:typing], (before, before.description), *with_after[typing:]]


#: The flags a twin's line tables set (``line_table_options``, ``line_tables_only``); Numba's
#: defaults without debug info are all False.
LINE_TABLE_FLAGS = ("debuginfo", "dbg_directives_only", "dbg_extend_lifetimes", "dbg_optnone")


@functools.cache
def _line_tables_dibuilder(on_subprogram: Callable | None) -> type:
    """Numba's DIBuilder, emitting LLVM's ``LineTablesOnly`` kind where Numba asks for directives.

    Numba offers full debug info or ``DebugDirectivesOnly``; the second keeps
    codegen as without debug info but emits no ``.debug_info`` at all, so code that
    LLVM inlined from another jitted function cannot be told from its caller's.
    ``LineTablesOnly`` adds just the subprograms and their inlined-call records
    (``DW_TAG_inlined_subroutine`` with the call's line); the lowering stays the
    directives-only one. Variables are not declared at all: LLVM asserts on a
    variable in a ``LineTablesOnly`` unit, and the plain build has none either.
    A subprogram's signature is left empty, as ``clang -gline-tables-only`` leaves
    it: Numba describes each argument's type by asking LLVM for its size, and LLVM
    aborts the process (an assertion, not an exception) on a type it cannot size,
    such as a jitclass's ``optional(deferred_type)`` member before its first compile.
    A line table names no type, so nothing is described that LLVM could reject.
    A subprogram is named by its symbol (``DW_AT_name``; the unit keeps no linkage name), so
    inlined code tells its function apart from another compile of the same lines.
    ``on_subprogram(function)`` is called with each function given a subprogram.
    """
    from numba.core import debuginfo

    class LineTablesDIBuilder(debuginfo.DIBuilder):
        def __init__(self, module, filepath, cgctx, directives_only):
            self.nlp_line_tables = directives_only
            super().__init__(module, filepath, cgctx, directives_only)

        def initialize(self):
            if self.nlp_line_tables:
                self.emission_kind = "LineTablesOnly"
            super().initialize()

        def mark_subprogram(self, function, qualname, argnames, argtypes, line):
            # a LineTablesOnly unit keeps a subprogram's name but drops its linkage name: the
            # name is the symbol, so inlined code says which function's it is (a twin's symbols
            # carry its tag), not only which lines (two dispatchers of one def share them)
            name = function.name if self.nlp_line_tables else qualname
            super().mark_subprogram(function, name, argnames, argtypes, line)
            if on_subprogram is not None:
                on_subprogram(function)

        def mark_variable(self, builder, allocavalue, name, lltype, size, line, datamodel=None, argidx=None):
            if self.nlp_line_tables:
                return None
            return super().mark_variable(builder, allocavalue, name, lltype, size, line, datamodel, argidx)

        def _di_subroutine_type(self, line, function, argmap):
            if not self.nlp_line_tables:
                return super()._di_subroutine_type(line, function, argmap)
            return self.module.add_debug_info("DISubroutineType", {"types": self.module.add_metadata([])})

    return LineTablesDIBuilder


@touches(
    "numba.core.compiler",
    "Flags.dbg_directives_only",
    "twins.py: line tables without variable debug info (full debug info slowed a twin 2x)",
)
@touches(
    "numba.core.debuginfo",
    "DIBuilder.__init__",
    "twins.py: the line-tables DIBuilder is made as Numba makes its own",
    params=("self", "module", "filepath", "cgctx", "directives_only"),
)
@touches(
    "numba.core.debuginfo",
    "DIBuilder.initialize",
    "twins.py: line tables with inlining records (LineTablesOnly) instead of directives only",
    instance_attribute="emission_kind",
)
@touches(
    "numba.core.debuginfo",
    "DIBuilder.mark_variable",
    "twins.py: no variable is declared in a LineTablesOnly unit (LLVM asserts on one)",
    params=("self", "builder", "allocavalue", "name", "lltype", "size", "line", "datamodel", "argidx"),
)
@touches(
    "numba.core.debuginfo",
    "DIBuilder._di_subroutine_type",
    "twins.py: no argument type is described (sizing a recursive jitclass type aborts LLVM)",
    params=("self", "line", "function", "argmap"),
)
@touches(
    "numba.core.debuginfo",
    "DIBuilder.mark_subprogram",
    "twins.py, instrument/unwind.py: a prange body's function is kept from being inlined",
    params=("self", "function", "qualname", "argnames", "argtypes", "line"),
)
@touches(
    "numba.core.base",
    "BaseContext.subtarget",
    "twins.py: a target context with the line-tables DIBuilder, and one without debug info",
)
@touches(
    "numba.core.compiler",
    "_EarlyPipelineCompletion",
    "twins.py: the with-lifting pass replacement ends the pipeline as Numba's own does",
)
@touches(
    "numba.core.transforms",
    "with_lifting",
    "twins.py: lifted objmode blocks compile without line tables (LLVM warned on every compile)",
    params=("func_ir", "typingctx", "targetctx", "flags", "locals"),
)
@touches(
    "numba.core.compiler",
    "compile_ir",
    "twins.py: the lifted function is compiled as WithLifting compiles it",
)
@touches("numba.core.untyped_passes", "WithLifting", "twins.py: the pass replaced in the twin's pipeline")
@touches("numba.core.compiler_machinery", "register_pass", "twins.py: the replacement pass is registered")
@touches(
    "numba.core.dispatcher",
    "LiftedCode",
    "twins.py: a lifted objmode block's flags and target context (targetctx) are replaced",
    instance_attribute="targetctx",
)
@touches("numba.core.dispatcher", "ObjModeLiftedWith", "twins.py: which lifted blocks run in object mode")
@touches(
    "numba.core.compiler_machinery",
    "PassManager.finalize",
    "twins.py: the edited pipelines are finalized",
)
def line_tables_only(
    base: type, on_subprogram: Callable | None = None, library_pass: type | None = None
) -> type:
    """``base`` (a compiler pipeline class) with debug info reduced to line tables and
    inlining records: no variable info, no debug info in lifted object-mode blocks.

    ``on_subprogram(function)`` is called with each llvmlite function given line
    tables; ``library_pass`` (a ``codegen.library_pass``) runs before native lowering.
    Use it with :func:`line_table_options` as the twin's target options.
    """
    return _line_tables_only(base, on_subprogram, library_pass)


@touches(
    "numba.core.base",
    "BaseContext._compile_subroutine_no_cache",
    "twins.py: what the twin's lowering compiles for itself (argsort's sort) gets no line tables",
    params=("self", "builder", "impl", "sig", "locals", "flags"),
)
@touches(
    "numba.core.base",
    "BaseContext.enable_debuginfo",
    "twins.py: the subroutines' target context is the twin's without debug info",
)
@functools.cache
def _plain_subroutines(context_class: type) -> type:
    """``context_class`` (the twin's target context's) whose internal subroutines compile without
    debug info, as the original's do.

    Numba compiles some of a function's operations as subroutines of its own source
    (``np.argsort``'s sort, from ``numba/np/arrayobj.py``) with the caller's target context: a
    twin's would give them line tables and look up their first line by parsing that whole
    7,000-line file (0.17 s of a twin's compile that sorts). Their lines are Numba's, never
    shown; LLVM gives code it inlines from them the twin's calling line, and a sample in one
    not inlined walks up to it. Numba also keeps each subroutine once per process, whichever
    compile came first (its key has no debug flag), so the twin and the original now get the
    same code.
    """

    def _compile_subroutine_no_cache(self, *args, **kwargs):
        plain = self.subtarget(enable_debuginfo=False) if self.enable_debuginfo else self
        return context_class._compile_subroutine_no_cache(plain, *args, **kwargs)

    namespace = {"_compile_subroutine_no_cache": _compile_subroutine_no_cache}
    return type(f"PlainSubroutines{context_class.__name__}", (context_class,), namespace)


@functools.cache
def _line_tables_only(base: type, on_subprogram: Callable | None, library_pass: type | None) -> type:
    lifting = _with_lifting_pass()
    builder = _line_tables_dibuilder(on_subprogram)
    from numba.core.untyped_passes import WithLifting

    def __init__(self, typingctx, targetctx, library, args, return_type, flags, locals):
        flags.dbg_directives_only = True
        targetctx = targetctx.subtarget(DIBuilder=builder)
        targetctx.__class__ = _plain_subroutines(type(targetctx))
        base.__init__(self, typingctx, targetctx, library, args, return_type, flags, locals)

    def define_pipelines(self):
        pipelines = base.define_pipelines(self)
        as_plain, as_twin = _lookups_as_plain_code_passes()
        for pm in pipelines:
            pm.passes = [(lifting if cls is WithLifting else cls, desc) for cls, desc in pm.passes]
            pm.passes = around_typing(pm.passes, as_plain, as_twin)
            if library_pass is not None:
                pm.passes = before_lowering(pm.passes, library_pass)
            pm.finalize()
        return pipelines

    namespace = {"__init__": __init__, "define_pipelines": define_pipelines}
    return type(f"LineTables{base.__name__}", (base,), namespace)
