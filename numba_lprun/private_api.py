"""Every private API of Numba and pyelftools that numba_lprun relies on, in one place.

Numba has no public way to give a twin line tables without variable debug info,
to copy a dispatcher's compiler pipeline, to read the object code it JIT-compiled,
or to reach its random states; pyelftools has no public reader for a DWARF line
program that no compile unit points at. Each use below names the Numba (and
llvmlite) versions it was checked against. pyproject.toml caps Numba below the
next minor release, and ``tests/test_private_api.py`` checks every entry on the
installed versions, so a Numba that moves one fails loudly in CI instead of
quietly profiling wrong.

Checked against: numba 0.68.1 (llvmlite 0.50.0), pyelftools 0.33. The call sites in
sampling/, machine/, vectorized.py and run/snapshot.py go through the accessors
below; twins.py, twin_cache.py, ufuncs.py, kinds.py, jitclasses.py, overloads.py and
sampler.py still touch theirs directly, each listed here.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass

CHECKED_NUMBA = "0.68"


@dataclass(frozen=True)
class PrivateUse:
    """One private attribute: where it lives, and why numba_lprun needs it."""

    module: str
    path: str  # attribute path inside the module ("Class.attr")
    why: str
    instance_attribute: str | None = None  # set on instances only: the module's source must assign it

    def present(self) -> bool:
        try:
            obj = importlib.import_module(self.module)
        except ImportError:
            return False
        module = obj
        for part in self.path.split("."):
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        if self.instance_attribute is not None:
            import inspect

            return f"self.{self.instance_attribute}" in inspect.getsource(module)
        return True


USES: list[PrivateUse] = [
    PrivateUse(
        "numba.core.dispatcher",
        "_FunctionCompiler",
        "twins.py: a twin copies the original's compiler pipeline (dispatcher._compiler.pipeline_class)",
    ),
    PrivateUse(
        "numba.core.dispatcher",
        "Dispatcher._can_compile",
        "twins.py: a twin of a function with explicit signatures compiles nothing new either",
    ),
    PrivateUse(
        "numba.core.compiler",
        "Flags.dbg_directives_only",
        "twins.py: line tables without variable debug info (full debug info slowed a twin 2x)",
    ),
    PrivateUse(
        "numba.core.compiler",
        "_EarlyPipelineCompletion",
        "twins.py: the with-lifting pass replacement ends the pipeline as Numba's own does",
    ),
    PrivateUse(
        "numba.core.transforms",
        "with_lifting",
        "twins.py: lifted objmode blocks compile without line tables (LLVM warned on every compile)",
    ),
    PrivateUse(
        "numba.core.dispatcher",
        "LiftedCode",
        "twins.py: a lifted objmode block's target context (targetctx) is replaced",
    ),
    PrivateUse(
        "numba.core.codegen",
        "CPUCodeLibrary._get_compiled_object",
        "sampling/dwarf.py: the ELF object code of a twin, whose line tables map addresses to lines",
    ),
    PrivateUse(
        "numba.np.ufunc.parallel",
        "_launch_threads",
        "sampling/sampler.py: start Numba's worker threads before sampling so each gets a timer",
    ),
    PrivateUse(
        "numba._helperlib",
        "rnd_get_np_state_ptr",
        "run/snapshot.py: Numba's np.random state of the calling thread, saved and put back",
    ),
    PrivateUse(
        "numba._helperlib",
        "rnd_get_py_state_ptr",
        "run/snapshot.py: Numba's random state of the calling thread, saved and put back",
    ),
    PrivateUse(
        "numba.cpython.randomimpl",
        "get_state_ptr",
        "run/snapshot.py: the random states of parallel worker threads (read on each worker)",
    ),
    PrivateUse(
        "numba.core.debuginfo",
        "DIBuilder.initialize",
        "twins.py: line tables with inlining records (LineTablesOnly) instead of directives only",
        instance_attribute="emission_kind",
    ),
    PrivateUse(
        "numba.core.base",
        "BaseContext.subtarget",
        "twins.py: a target context with the line-tables DIBuilder, and one without debug info",
    ),
    PrivateUse(
        "numba.experimental.jitclass.boxing",
        "_cache_specialized_box",
        "run/jitclasses.py: a jitclass's box class, whose method wrappers are swapped for a run",
    ),
    PrivateUse(
        "numba.experimental.jitclass.boxing",
        "_generate_getter",
        "run/jitclasses.py: properties of a box class rebuilt against the twins",
    ),
    PrivateUse(
        "numba.experimental.jitclass.boxing",
        "_generate_setter",
        "run/jitclasses.py: properties of a box class rebuilt against the twins",
    ),
    PrivateUse(
        "numba.core.types.abstract",
        "_typecache",
        "run/jitclasses.py: interned bound-method types dropped, so p.step is typed afresh",
    ),
    PrivateUse(
        "numba.np.ufunc.dufunc",
        "DUFunc._rebuild",
        "instrument/ufuncs.py: a ufunc twin rebuilt from the original's reduce state",
    ),
    PrivateUse(
        "numba.np.ufunc.dufunc",
        "DUFunc._reduce_states",
        "instrument/ufuncs.py: the original ufunc's signatures and options",
    ),
    PrivateUse(
        "numba.core.typing.templates",
        "_OverloadFunctionTemplate",
        "instrument/kinds.py, run/overloads.py: the implementations an @overload compiled",
        instance_attribute="_impl_cache",
    ),
    PrivateUse(
        "numba.core.codegen",
        "CPUCodeLibrary._finalize_final_module",
        "instrument/unwind.py: a twin's linked, optimized module is made unwindable before "
        "machine code is made (callee copies internal, uwtable on every function)",
    ),
    PrivateUse(
        "numba.core.codegen",
        "CPUCodeLibrary",
        "instrument/unwind.py: the module that hook rewrites and replaces",
        instance_attribute="_final_module",
    ),
    PrivateUse(
        "numba.core.codegen",
        "CPUCodeLibrary",
        "sampling/dwarf.py: a twin's parfor gufunc libraries (the names of its loop bodies)",
        instance_attribute="_linking_libraries",
    ),
    PrivateUse(
        "numba.core.typed_passes",
        "BaseNativeLowering",
        "instrument/unwind.py: the twin pipeline's pass that creates the library; ours runs before it",
    ),
    PrivateUse(
        "numba.core.codegen",
        "CPUCodeLibrary._get_module_for_linking",
        "vectorized.py: the optimised IR of a twin loaded from the disk cache (optimized_ir)",
    ),
    PrivateUse(
        "numba.core.codegen",
        "CodeLibrary._disable_inspection",
        "vectorized.py: whether a library came from the disk cache (optimized_ir)",
    ),
    PrivateUse(
        "numba.core.caching",
        "_CacheLocator",
        "instrument/twin_cache.py: where a twin's cache files live (TwinLocator)",
    ),
    PrivateUse(
        "numba.core.caching",
        "IndexDataCacheFile._load_data",
        "instrument/twin_cache.py: cache data files carry a checksum; a corrupt one is a miss",
    ),
    PrivateUse(
        "numba.core.caching",
        "IndexDataCacheFile._load_index",
        "instrument/twin_cache.py: a corrupt index is a miss and is rewritten",
    ),
    PrivateUse(
        "numba.core.caching",
        "Cache._index_key",
        "instrument/twin_cache.py: a twin's cache key adds its identity and dependencies",
    ),
    PrivateUse(
        "numba.core.compiler",
        "CompileResult._reduce",
        "instrument/twin_cache.py: a twin's compile result is pickled as Numba pickles its own",
    ),
    PrivateUse(
        "numba.core.compiler",
        "CompileResult._rebuild",
        "instrument/twin_cache.py: a cached twin is rebuilt as Numba rebuilds its own",
    ),
    PrivateUse(
        "numba.core.funcdesc",
        "FunctionDescriptor.global_dict",
        "instrument/twin_cache.py: a dynamic function's globals, dropped from the pickle, put back on load",
    ),
    PrivateUse(
        "numba.core.funcdesc",
        "_dynamic_modname",
        "instrument/twin_cache.py: which descriptors look their globals up in the twin",
    ),
    PrivateUse(
        "numba.core.base",
        "BaseContext.mangler",
        "instrument/twin_cache.py: twins' symbol names carry their key as an ABI tag (tagged_context)",
    ),
    PrivateUse(
        "numba.core.dispatcher",
        "Dispatcher.enable_caching",
        "instrument/twin_cache.py: a twin's disk cache is set as enable_caching sets one (_cache)",
        instance_attribute="_cache",
    ),
    PrivateUse(
        "elftools.dwarf.dwarfinfo",
        "DWARFInfo._parse_line_program_at_offset",
        "sampling/dwarf.py: line programs that no compile unit points at (directives-only tables)",
    ),
]


def missing() -> list[PrivateUse]:
    """The private uses the installed Numba and pyelftools no longer have."""
    return [use for use in USES if not use.present()]


def numba_random_state_addresses() -> list[tuple[str, int]]:
    """Addresses of Numba's ``np.random`` and ``random`` states of the calling thread.

    The states are thread-local C structs (numba/_random.c ``rnd_state_t``);
    ``numba._helperlib`` hands out their addresses.
    """
    from numba import _helperlib

    return [
        ("np.random", _helperlib.rnd_get_np_state_ptr()),
        ("random", _helperlib.rnd_get_py_state_ptr()),
    ]


@functools.cache
def _worker_state_reader():
    """A ``parallel=True`` function that writes each worker thread's random-state addresses.

    The states are thread-local, so only code running on a worker can find its
    own; prange hands every thread a share of the iterations. Compiled once per
    process (about a second), and only when a parallel function is profiled.
    """
    from llvmlite import ir
    from numba import get_thread_id, njit, prange, types
    from numba.cpython.randomimpl import get_state_ptr
    from numba.extending import intrinsic

    def reader(kind: str):
        @intrinsic
        def address(typingctx):
            def codegen(context, builder, sig, args):
                return builder.ptrtoint(get_state_ptr(context, builder, kind), ir.IntType(64))

            return types.int64(), codegen

        return address

    np_state, py_state = reader("np"), reader("py")

    @njit(parallel=True)
    def read(np_out, py_out):
        for _ in prange(np_out.size * 64):
            thread = get_thread_id()
            np_out[thread] = np_state()
            py_out[thread] = py_state()

    return read


def worker_random_state_addresses() -> list[tuple[str, int]]:
    """Addresses of Numba's random states in its parallel worker threads (not the caller's).

    Reading an address initializes a state that was never used (from entropy,
    as Numba would on first use), which changes nothing a program can observe.
    """
    import numpy as np
    from numba import config, get_num_threads

    n = max(get_num_threads(), config.NUMBA_NUM_THREADS)
    np_out, py_out = np.zeros(n, np.int64), np.zeros(n, np.int64)
    _worker_state_reader()(np_out, py_out)
    mine = {address for _, address in numba_random_state_addresses()}
    found = []
    for thread in range(n):
        for label, address in (("np.random", int(np_out[thread])), ("random", int(py_out[thread]))):
            if address and address not in mine:
                found.append((f"{label} (worker thread {thread})", address))
    return found


def compiled_object(library) -> bytes | None:
    """The ELF object code Numba kept for ``library`` (None where it kept none, e.g. wrappers)."""
    try:
        return library._get_compiled_object()
    except (ValueError, RuntimeError, AttributeError):
        return None


def optimized_ir(library) -> str:
    """The optimised LLVM IR of ``library``, also when Numba loaded it from a disk cache.

    A library rebuilt from cached object code has an empty final module (Numba
    warns and returns nothing useful from ``get_llvm_str``); the module it keeps
    for linking into callers is the same optimised IR (exported functions marked
    ``linkonce_odr``).
    """
    if getattr(library, "_disable_inspection", False):
        return str(library._get_module_for_linking())
    return library.get_llvm_str()


def parse_line_program_at(dwarf, offset: int, structs):
    """pyelftools' line program at ``offset`` of ``.debug_line`` (no compile unit needed)."""
    return dwarf._parse_line_program_at_offset(offset, structs)
