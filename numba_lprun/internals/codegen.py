"""Code generation after lowering: hooks between Numba's lowering, LLVM's optimizer and the JIT.

Twins need three things done to their code that Numba has no public switch for:

* a hook after each function is lowered, before its module is optimized (the exit
  flushes of ``instrument.exits``): Numba calls its target context's
  ``post_lowering(module, library)`` then, so the pipeline's context is given a
  subclass that runs the hook too;
* the code library a function is lowered into, before lowering fills it (a pass
  inserted before Numba's native lowering creates it, as lowering would);
* the library's final module, linked and optimized, rewritten before machine code is
  made (``instrument.unwind``, ``instrument.select_compares``):
  ``CPUCodeLibrary._finalize_final_module`` is the only place where that module exists
  and is not yet compiled;
* symbol names of a twin's own (``tagged_context``), so that code cached by different
  processes never defines the same symbol twice in one.

Parsing and editing LLVM modules and registering JIT symbols is ``llvmlite.binding``,
which numba_lprun reaches only here.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator

from numba.core import funcdesc, itanium_mangler

from .registry import touches

LibraryHook = Callable[[object], None]


@functools.cache
def _context_with_hook(base: type, hook: Callable, label: str) -> type:
    """A subclass of the target context class ``base`` whose ``post_lowering`` also runs ``hook``.

    A subclass rather than a function stored on the context: Numba derives the
    context each function is lowered with from the one given (``subtarget``:
    fastmath, error model...), and its own ``post_lowering`` reads those settings
    from ``self``; a copy keeps its class, so every derived context does both.
    """

    def post_lowering(self, module, library):
        base.post_lowering(self, module, library)
        hook(module, library)

    hooks = (*getattr(base, "nlp_post_lowering_hooks", ()), hook)
    namespace = {"post_lowering": post_lowering, "nlp_post_lowering_hooks": hooks}
    return type(f"{label}{base.__name__}", (base,), namespace)


@touches(
    "numba.core.base",
    "BaseContext.post_lowering",
    "instrument/exits.py: probe state is flushed before every exit of each lowered function",
    params=("self", "mod", "library"),
)
@touches(
    "numba.core.base",
    "BaseContext.subtarget",
    "instrument/exits.py: the pipeline lowers with a copy of its context, of the hooked class",
)
def with_post_lowering(base: type, hook: Callable, label: str = "PostLowering") -> type:
    """``base`` (a Numba compiler pipeline class) whose lowering runs ``hook(module, library)`` after
    Numba's own post-lowering of each function (and of each ``prange`` body's gufunc).

    ``label`` prefixes the new classes' names. Cached: one class per ``(base, hook)``.
    """
    return _pipeline_with_hook(base, hook, label)


@functools.cache
def _pipeline_with_hook(base: type, hook: Callable, label: str) -> type:
    def __init__(self, typingctx, targetctx, library, args, return_type, flags, locals):
        targetctx = targetctx.subtarget()
        targetctx.__class__ = _context_with_hook(type(targetctx), hook, label)
        base.__init__(self, typingctx, targetctx, library, args, return_type, flags, locals)

    return type(f"{label}{base.__name__}", (base,), {"__init__": __init__})


def runs_post_lowering(context: object, hook: Callable) -> bool:
    """Whether code lowered with ``context`` (a target context) runs ``hook`` after lowering
    (a pipeline made by :func:`with_post_lowering`; ufunc and stencil kernels are built by
    Numba's own builders, without it)."""
    return hook in getattr(context, "nlp_post_lowering_hooks", ())


@touches("numba.core.compiler_machinery", "LoweringPass", "instrument/unwind.py: the pass's base class")
@touches(
    "numba.core.compiler_machinery",
    "register_pass",
    "instrument/unwind.py: the library pass is registered (once per name)",
)
@touches(
    "numba.core.cpu",
    "CPUContext.codegen",
    "instrument/unwind.py: the library is created as lowering creates it (named after the function)",
)
def library_pass(name: str, prepare: LibraryHook, description: str) -> type:
    """A compiler pass that creates the code library a function will be lowered into and
    hands it to ``prepare(library)`` first; insert it with :func:`before_lowering`.

    Numba's native lowering creates the library itself when none is given, named
    after the function, with object caching on: this pass does the same, earlier.
    Call once per ``name`` (Numba's pass registry refuses a second pass of one name).
    """
    from numba.core.compiler_machinery import LoweringPass, register_pass

    def __init__(self) -> None:
        LoweringPass.__init__(self)

    def run_pass(self, state) -> bool:
        if state.library is None:
            state.library = state.targetctx.codegen().create_library(state.func_id.func_qualname)
            state.library.enable_object_caching()
        prepare(state.library)
        return False

    namespace = {"_name": name, "description": description, "__init__": __init__, "run_pass": run_pass}
    cls = type("LibraryPass", (LoweringPass,), namespace)
    return register_pass(mutates_CFG=False, analysis_only=True)(cls)


@touches("numba.core.compiler_machinery", "LoweringPass", "instrument/derived_counts.py: its pass's base")
@touches(
    "numba.core.compiler_machinery",
    "register_pass",
    "instrument/derived_counts.py: the IR pass is registered (once per name)",
)
def ir_pass(name: str, run: Callable[[object], None], description: str) -> type:
    """A compiler pass that hands the pipeline's state (its typed IR) to ``run(state)``, which
    may rewrite statements but not the control flow; insert it with :func:`with_pass_before_lowering`.
    Call once per ``name`` (Numba's pass registry refuses a second pass of one name)."""
    from numba.core.compiler_machinery import LoweringPass, register_pass

    def __init__(self) -> None:
        LoweringPass.__init__(self)

    def run_pass(self, state) -> bool:
        run(state)
        return True

    namespace = {"_name": name, "description": description, "__init__": __init__, "run_pass": run_pass}
    cls = type("IRPass", (LoweringPass,), namespace)
    return register_pass(mutates_CFG=False, analysis_only=False)(cls)


@functools.cache
def with_pass_before_lowering(base: type, inserted: type) -> type:
    """``base`` (a Numba compiler pipeline class) running ``inserted`` (an :func:`ir_pass`) just
    before its native lowering, after every other pass: on the IR that is lowered."""

    def define_pipelines(self):
        pipelines = base.define_pipelines(self)
        for pm in pipelines:
            pm.passes = before_lowering(pm.passes, inserted)
            pm.finalize()
        return pipelines

    return type(f"{inserted._name.title()}{base.__name__}", (base,), {"define_pipelines": define_pipelines})


@touches(
    "numba.core.typed_passes",
    "BaseNativeLowering",
    "instrument/unwind.py: the pass that creates the library; the library pass runs before it",
)
def before_lowering(passes: list[tuple[type, str]], inserted: type) -> list[tuple[type, str]]:
    """A pipeline's ``(pass class, description)`` list with ``inserted`` (a :func:`library_pass`)
    before its native lowering pass (the one that creates the library)."""
    from numba.core.typed_passes import BaseNativeLowering

    out = []
    for cls, desc in passes:
        if isinstance(cls, type) and issubclass(cls, BaseNativeLowering):
            out.append((inserted, inserted.description))
        out.append((cls, desc))
    return out


@touches(
    "numba.core.codegen",
    "CPUCodeLibrary._finalize_final_module",
    "instrument/unwind.py, select_compares.py: a twin's optimized module rewritten before its machine code",
)
@touches(
    "numba.core.codegen",
    "CPUCodeLibrary",
    "instrument/unwind.py: the module that hook rewrites and replaces",
    instance_attribute="_final_module",
)
def rewrite_final_module(library: object, rewrite: Callable[[object], object]) -> None:
    """Have ``rewrite(module)`` replace ``library``'s final module when it is finalized.

    Numba calls ``_finalize_final_module`` once, after the linked module is
    optimized and before machine code is made; ``rewrite`` gets that module (an
    llvmlite ``ModuleRef``) and returns the one to compile. Rewrites run in the order
    they were given, each once: giving one a second time changes nothing.
    """
    rewrites = getattr(library, "nlp_final_module_rewrites", None)
    if rewrites is not None:
        if rewrite not in rewrites:
            rewrites.append(rewrite)
        return
    rewrites = library.nlp_final_module_rewrites = [rewrite]
    finalize = library._finalize_final_module

    def _finalize_final_module() -> None:
        for each in rewrites:
            library._final_module = each(library._final_module)
        finalize()

    library._finalize_final_module = _finalize_final_module


@touches(
    "numba.core.codegen",
    "CPUCodeLibrary._finalize_final_module",
    "instrument/unwind.py: a twin's machine code is made with its location-less code marked",
)
def mark_unplaced_code(library: object) -> None:
    """Have LLVM give line 0 to the machine code of ``library`` that has no source line, while
    it makes that code (LLVM's ``-use-unknown-locations``, put back after).

    Why: by default LLVM's line table lets such an instruction take the row before it. An
    optimization that drops a call's location (copies of a libm call in an unrolled loop)
    then leaves the call on the loop header's line or the next statement's, and the samples
    inside it with them: a loop whose line calls ``sin`` read 59% where it had 97%. Marked 0,
    the sampled view places it (``sampling.object_code.function_lines``). The option is
    global to LLVM, so it is on only while this library's machine code is made: other code
    compiled meanwhile on another thread would get the marks too, which changes only the
    line tables of code compiled with them. Once per library. Not on LLVM 14, which cannot
    put an option back (``llvm_options_settable``): there such code keeps the row before it.
    """
    if getattr(library, "nlp_unplaced_marked", False) or not llvm_options_settable():
        return
    finalize = library._finalize_final_module

    def _finalize_final_module() -> None:
        with llvm_option("use-unknown-locations", "Enable", "Default"):
            finalize()

    library._finalize_final_module = _finalize_final_module
    library.nlp_unplaced_marked = True


#: LLVM's own default of ``-two-entry-phi-node-folding-threshold`` (SimplifyCFG, LLVM 11-22)
IF_CONVERSION_DEFAULT = 4


@touches(
    "numba.core.codegen",
    "CPUCodeLibrary.add_ir_module",
    "instrument/branch_budget.py: a counting twin's functions are optimized with a wider budget",
    params=("self", "ir_module"),
)
@touches(
    "numba.core.codegen",
    "CPUCodeLibrary.finalize",
    "instrument/branch_budget.py: a counting twin's linked module is optimized with a wider budget",
    params=("self",),
)
def optimized_with_if_conversion_budget(library: object, extra: int) -> bool:
    """Have LLVM optimize ``library``'s code (each function as it is added, then the linked
    module) with the budget of SimplifyCFG's turning an ``if``/``else`` into selects
    (``-two-entry-phi-node-folding-threshold``) raised by ``extra`` instructions, and its
    default back after each.

    The option is global to LLVM; Numba optimizes under its compiler lock, so no other
    compile of Numba's sees it. False, and nothing done, where LLVM cannot set an option a
    second time (``llvm_options_settable``). Once per library."""
    if getattr(library, "nlp_if_conversion_budget", None) is not None:
        return True
    if not llvm_options_settable():
        return False
    threshold = IF_CONVERSION_DEFAULT + extra
    option = ("two-entry-phi-node-folding-threshold", str(threshold), str(IF_CONVERSION_DEFAULT))
    add_ir_module, finalize = library.add_ir_module, library.finalize

    def add_ir_module_with_budget(ir_module) -> None:
        with llvm_option(*option):
            add_ir_module(ir_module)

    def finalize_with_budget() -> None:
        with llvm_option(*option):
            finalize()

    library.add_ir_module = add_ir_module_with_budget
    library.finalize = finalize_with_budget
    library.nlp_if_conversion_budget = threshold
    return True


@functools.cache
def llvm_options_settable() -> bool:
    """Whether LLVM lets a command-line option be set more than once (LLVM 15 and newer).

    LLVM 14 (Numba 0.59 and 0.60) refuses a second setting: it prints "may only occur zero or
    one times!" to the process's stderr and keeps the first value for the rest of the process,
    so an option set for a twin's compile and put back would stay set for the user's code.
    There, numba_lprun leaves LLVM's options alone."""
    import llvmlite.binding as ll

    return ll.llvm_version_info >= (15,)


@contextlib.contextmanager
def llvm_option(name: str, value: str, default: str) -> Iterator[None]:
    """LLVM's option ``name`` set to ``value`` while the block runs, then to ``default``: LLVM
    has no way to read an option back, so it is put back to its default, not to what it was
    (numba_lprun is the only code here that sets these). Only where ``llvm_options_settable``."""
    import llvmlite.binding as ll

    ll.set_option("", f"-{name}={value}")
    try:
        yield
    finally:
        ll.set_option("", f"-{name}={default}")


#: Linkages of function copies linked in from other libraries (weak: the JIT would run
#: the other library's definition instead).
_COPY_LINKAGES = {"linkonce_odr", "linkonce", "weak_odr", "weak"}


def internalize_linked_copies(module: object) -> int:
    """Make the function copies linked into ``module`` (a ``ModuleRef``) from other libraries
    its own (``internal``); returns how many were changed."""
    changed = 0
    for fn in module.functions:
        if fn.is_declaration or fn.linkage.name not in _COPY_LINKAGES:
            continue
        fn.linkage = "internal"
        fn.visibility = "default"  # local linkage requires it
        changed += 1
    return changed


@touches(
    "llvmlite.binding",
    "parse_assembly",
    "instrument/unwind.py, select_compares.py: the rewritten final module is parsed back and verified",
)
def reparsed(module: object, text: str) -> object | None:
    """``text`` (LLVM IR) parsed as a module that replaces ``module`` (its name, data layout
    and triple kept), or None when it does not parse or verify."""
    import llvmlite.binding as ll

    try:
        result = ll.parse_assembly(text)
        result.verify()
    except RuntimeError:
        return None
    result.name = module.name
    result.data_layout = module.data_layout
    result.triple = module.triple
    return result


@touches(
    "llvmlite.binding",
    "add_symbol",
    "instrument/probes.py: the probes' counters symbol resolves to the counters' address",
)
def register_symbol(name: str, address: int) -> None:
    """Have the JIT's linker resolve ``name`` to ``address`` in code it loads from now on."""
    import llvmlite.binding as ll

    ll.add_symbol(name, address)


@touches(
    "numba.core.codegen",
    "CPUCodeLibrary.add_llvm_module",
    "instrument/stripes.py: the stripe function is compiled by Numba's own JIT, on its own",
)
@touches(
    "numba.core.codegen",
    "JITCodeLibrary.get_pointer_to_function",
    "instrument/stripes.py: the stripe function's address, for the JIT's linker",
)
@functools.cache
def native_function(ir_text: str, name: str) -> tuple[object, int]:
    """(the code library, the address) of the function ``name`` that the LLVM module ``ir_text``
    defines, compiled once per process by Numba's JIT (the library is kept with the answer, for
    the process's life) and resolved by that name in the code the JIT loads later
    (``register_symbol``): twins call it without seeing its body, which is the point."""
    import llvmlite.binding as ll
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    with global_compiler_lock:  # Numba's JIT is driven under it
        library = cpu_target.target_context.codegen().create_library(f"numba_lprun.{name}")
        library.add_llvm_module(ll.parse_assembly(ir_text))
        library.finalize()
        address = library.get_pointer_to_function(name)
    register_symbol(name, address)
    return library, address


@touches(
    "llvmlite.binding",
    "get_host_cpu_features",
    "instrument/disk_cache.py: cached records and twins are keyed by the CPU code is made for",
)
@touches("llvmlite.binding", "get_host_cpu_name", "instrument/disk_cache.py: the CPU's name, in the key")
@touches("llvmlite.binding", "get_process_triple", "instrument/disk_cache.py: the target triple, in the key")
def host_cpu_identity() -> str:
    """The CPU as code generation sees it: LLVM's process triple, host CPU name and features.

    This is what Numba keys its own cache with (``codegen.magic_tuple()``).
    """
    import llvmlite.binding as ll

    return f"{ll.get_process_triple()}|{ll.get_host_cpu_name()}|{ll.get_host_cpu_features().flatten()}"


#: Numba's identity of each function a twin compile started (``FunctionIdentity.unique_id``, unique
#: in the process) -> the tag of that twin and the ABI tags of its compile flags. A mutually
#: recursive call is named in the *caller's* lowering, with the caller's mangler and flags
#: (``Lower._lower_call_RecursiveCall``), which a twin and the relinked twin it calls do not share:
#: the callee's are found here, so the call names the symbol the callee really defines.
#: Process-wide, as the JIT's symbols are; one short entry per twin compile.
_NAMING_OF_FUNCTION: dict[int, tuple[str, tuple[str, ...]]] = {}


@touches(
    "numba.core.funcdesc",
    "default_mangler",
    "instrument/twin_identity.py: twins' symbol names carry their key as an ABI tag",
    params=("name", "argtypes", "abi_tags", "uid"),
)
@touches(
    "numba.core.base",
    "BaseContext.mangler",
    "instrument/twin_identity.py: a target context whose mangler adds the tag (subtarget)",
)
def tagged_context(targetctx: object, tag: str) -> object:
    """``targetctx`` whose symbol names (functions, Environments) carry ``tag`` as an ABI tag.

    Numba names a dynamic function ``<dynamic>.f`` plus a per-process counter, so
    twins cached by different processes could define the same symbol in one
    process (and share one Environment). The ABI tag makes each twin's names its own;
    it is not shown by ``machine.names.pretty``. A name of another function (``uid``:
    a mutually recursive callee) carries that function's tag, none for a function that
    is no twin.
    """

    def mangler(name, argtypes, *, abi_tags=(), uid=None):
        if uid is None:
            tags = (*abi_tags, tag)
        elif uid in _NAMING_OF_FUNCTION:  # a twin's function: its own tag and flags
            its_tag, its_flags = _NAMING_OF_FUNCTION[uid]
            tags = (*its_flags, its_tag)
        else:  # a function compiled as Numba compiles it (no twin)
            tags = tuple(abi_tags)
        return funcdesc.default_mangler(name, argtypes, abi_tags=tags, uid=uid)

    return targetctx.subtarget(mangler=mangler)


@touches(
    "numba.core.itanium_mangler",
    "mangle_abi_tag",
    "sampling/dwarf.py: a twin's inlined code is told by its tag, as its symbols spell it",
    params=("abi_tag",),
)
def tag_in_symbols(tag: str) -> str:
    """How ``tag`` (``tagged_context``'s) is spelled inside each symbol it names: an ABI tag with
    its length (``B6nlpab1``), so one tag is never read inside a longer one (``nlpab1n2``)."""
    return itanium_mangler.mangle_abi_tag(tag)


@touches(
    "numba.core.compiler",
    "CompilerBase._compile_core",
    "instrument/twin_identity.py: a twin's function identity is known once its compile starts",
)
@touches(
    "numba.core.compiler",
    "CompilerBase",
    "the compile's state: its function identity (func_id.unique_id) and flags (get_mangle_string)",
    instance_attribute="state",
)
def tagged_pipeline(base: type, tag: str) -> type:
    """``base`` (a Numba compiler class) compiling with symbol names that carry ``tag``
    (``tagged_context``), its functions known by their identity as ``tag``'s."""

    def __init__(self, typingctx, targetctx, library, args, return_type, flags, locals):
        targetctx = tagged_context(targetctx, tag)
        base.__init__(self, typingctx, targetctx, library, args, return_type, flags, locals)

    def _compile_core(self):
        flags = (self.state.flags.get_mangle_string(),)  # what Numba's lowering names it with
        _NAMING_OF_FUNCTION[self.state.func_id.unique_id] = (tag, flags)
        return base._compile_core(self)

    namespace = {"__init__": __init__, "_compile_core": _compile_core, "__qualname__": base.__qualname__}
    return type(base.__name__, (base,), namespace)
