"""Compiled code: the object code and optimised IR Numba keeps for a library, the libraries
linked into it, and the addresses of the C functions jitted code calls.

The sampler and the machine-code view read a twin's ELF object code (its DWARF
line tables, its symbols and relocations); Numba keeps it, and the list of
libraries linked in (a ``prange`` body's code, callees), only in private
attributes, as it keeps whether a library came from the disk cache (whose IR is
then only in the module kept for linking). pyelftools reads a line program only
through a compile unit, which directives-only tables do not have.
"""

from __future__ import annotations

import gc
from types import FrameType

from .registry import touches


@touches(
    "numba.core.codegen",
    "CPUCodeLibrary._get_compiled_object",
    "sampling/dwarf.py, machine/names.py: the ELF object code of a twin (line tables, symbols)",
)
def compiled_object(library) -> bytes | None:
    """The ELF object code Numba kept for ``library`` (None where it kept none, e.g. wrappers)."""
    try:
        return library._get_compiled_object()
    except (ValueError, RuntimeError, AttributeError):
        return None


@touches(
    "numba.core.codegen",
    "CodeLibrary",
    "instrument/parfor_code.py, machine: the libraries linked into a function's own (prange bodies, callees)",
    instance_attribute="_linking_libraries",
)
def linked_libraries(library) -> list:
    """The code libraries Numba linked into ``library`` (an empty list for one without any)."""
    return list(getattr(library, "_linking_libraries", ()))


@touches(
    "numba.core.codegen",
    "CodeLibrary",
    "run/unreached.py: every code library alive (its instances), to find code that links a profiled function",
)
def code_library_class() -> type:
    """The base class of every library of compiled code Numba makes (a function's, a ufunc's
    kernel and wrapper, a cfunc's)."""
    from numba.core.codegen import CodeLibrary

    return CodeLibrary


@touches(
    "numba.core.codegen",
    "CodeLibrary",
    "run/unreached.py: whether a library is kept alive by more than Numba's own bookkeeping",
    instance_attribute="_linking_libraries",
)
def kept_only_by_numba(library: object, libraries: list, ignore: set[int]) -> bool:
    """Whether nothing but Numba's own bookkeeping keeps ``library`` alive, so no code of the
    program can call it any more.

    Numba never frees compiled code: its target context keeps every function it compiled
    registered (a one-element tuple of its libraries beside each entry point and each user
    function), and a library linked into another is in that one's list of linked libraries.
    What a program can still call is held some other way (a ufunc's keepalive, a cfunc, a
    compile result). ``libraries``: every live library; ``ignore``: identities of the
    caller's own containers that hold ``library``.
    """
    linking = {id(getattr(lib, "_linking_libraries", None)) for lib in libraries}
    for ref in gc.get_referrers(library):
        if id(ref) in ignore or id(ref) in linking or isinstance(ref, FrameType):
            continue
        if type(ref) is tuple and len(ref) == 1:
            continue
        return False
    return True


@touches(
    "numba.core.codegen",
    "CodeLibrary",
    "sampling/unwind_tables.py: a function defined in a library whose object code is not kept",
    instance_attribute="_final_module",
)
def defined_function(library) -> str | None:
    """The name of a function ``library``'s final module defines (None: none, or no module):
    where its code is, for a library whose object code Numba did not keep (wrappers)."""
    module = getattr(library, "_final_module", None)
    for func in getattr(module, "functions", ()):
        if not func.is_declaration and getattr(func.linkage, "name", "") == "external":
            return func.name
    return None


@touches(
    "numba.core.codegen",
    "CPUCodeLibrary._get_module_for_linking",
    "vectorized.py: the optimised IR of a twin loaded from the disk cache",
)
@touches(
    "numba.core.codegen",
    "CodeLibrary._disable_inspection",
    "vectorized.py: whether a library came from the disk cache (its final module is empty)",
)
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


@touches(
    "numba.core.codegen",
    "CodeLibrary._disable_inspection",
    "vectorized.py: code loaded from the disk cache runs its own copies of its callees",
)
def from_disk_cache(library) -> bool:
    """Whether Numba rebuilt ``library`` from its disk cache (object code only: nothing was
    linked into it in this process)."""
    return bool(getattr(library, "_disable_inspection", False))


@touches(
    "numba._helperlib",
    "c_helpers",
    "machine/names.py: libm and runtime calls go through Numba's helper library",
)
def numba_helper_address(name: str) -> int | None:
    """The address of Numba's C helper ``name`` (``numba_*``, and libm wrappers), or None."""
    from numba import _helperlib

    return _helperlib.c_helpers.get(name)


@touches(
    "llvmlite.binding",
    "address_of_symbol",
    "machine/names.py: the address of a symbol jitted code calls outside the JIT",
)
def symbol_address(name: str) -> int:
    """The address LLVM's JIT resolves ``name`` to in this process (0 if none)."""
    import llvmlite.binding as ll

    return ll.address_of_symbol(name) or 0


@touches(
    "elftools.dwarf.dwarfinfo",
    "DWARFInfo._parse_line_program_at_offset",
    "sampling/dwarf.py: line programs that no compile unit points at (directives-only tables)",
    checked=("0.33", "0.33"),
    package="pyelftools",
)
def parse_line_program_at(dwarf, offset: int, structs):
    """pyelftools' line program at ``offset`` of ``.debug_line`` (no compile unit needed)."""
    return dwarf._parse_line_program_at_offset(offset, structs)


#: Parameter attributes by which LLVM says a function only reads through a pointer (nor writes
#: through anything derived from it, in the function or any callee it sees), only writes through
#: it (never reads what is there), and never lets it outlive the call: the spellings of LLVM 14-15
#: (``nocapture``) and of LLVM 20 on (``captures(none)``).
_ONLY_READ = frozenset({b"readonly", b"readnone"})
_ONLY_WRITTEN = frozenset({b"writeonly"})
_UNCAPTURED = frozenset({b"nocapture", b"captures(none)"})
READ, WRITTEN = "read", "written"


@touches(
    "numba.core.dispatcher",
    "_DispatcherBase",
    "run/replay.py: the overload a call's arguments select, to read what it writes",
    instance_attribute="overloads",
)
@touches(
    "numba.core.datamodel",
    "default_manager",
    "run/replay.py: where an array's data and parent pointers sit among a function's parameters",
)
def argument_access(dispatcher: object, args: tuple, memo: dict | None = None) -> dict[int, str] | None:
    """The array arguments that the code ``dispatcher`` compiled for ``args`` only reads
    (position -> ``READ``) or only writes (``WRITTEN``): LLVM inferred their data pointers
    ``readonly`` (or ``readnone``) or ``writeonly``, and uncaptured, and their Python objects
    uncaptured (never boxed back to Python, where other code could touch them). Why: saving
    such an argument before a call, so that a replay can start from it, is wasted: the call
    cannot change the one, and never looks at what the other held (a 160 MB input's copy took
    0.9 s on a VM whose fresh pages are dear). None where ``dispatcher`` has no code for these
    arguments' types yet; empty where anything else is unknown: a ``*args`` function, code
    without IR (object mode), an attribute LLVM did not infer. ``memo``, a dict the caller keeps,
    holds each compiled function's parameter attributes once read (reading them walks the
    optimised module: about 2.5 ms, at each of a statement's recorded calls)."""
    import numba
    from numba.core.datamodel import default_manager

    overloads = getattr(dispatcher, "overloads", None)
    py_func = getattr(dispatcher, "py_func", None)
    code = getattr(py_func, "__code__", None)
    if not isinstance(overloads, dict) or code is None or len(args) > code.co_argcount:
        return {}
    try:
        types = tuple(dispatcher.typeof_pyval(a) for a in args)
    except Exception:  # a value Numba cannot type: the call will say so
        return {}
    cres = overloads.get(types)
    if cres is None:
        return None
    if getattr(cres, "fndesc", None) is None or getattr(cres, "objectmode", False):
        return {}
    key = (cres.library, cres.fndesc.llvm_func_name)
    if memo is not None and key in memo:
        params = memo[key]
    else:
        params = _parameter_attributes(*key)
        if memo is not None:
            memo[key] = params
    if params is None:
        return {}
    access = {}
    for i, (ty, name) in enumerate(zip(types, cres.fndesc.args, strict=False)):
        if not isinstance(ty, numba.types.Array) or not ty.mutable:
            continue
        model = default_manager.lookup(ty)
        data = params.get(f"arg.{name}.{model.get_field_position('data')}")
        parent = params.get(f"arg.{name}.{model.get_field_position('parent')}")
        if data is None or parent is None or not (data & _UNCAPTURED and parent & _UNCAPTURED):
            continue
        if data & _ONLY_READ:
            access[i] = READ
        elif data & _ONLY_WRITTEN:
            access[i] = WRITTEN
    return access


@touches(
    "numba.core.codegen",
    "CodeLibrary",
    "run/replay.py: the optimised function's parameter attributes",
    instance_attribute="_final_module",
)
@touches(
    "numba.core.codegen",
    "CPUCodeLibrary._get_module_for_linking",
    "run/replay.py: the optimised function's parameter attributes, for a library from the disk cache",
)
def _parameter_attributes(library: object, name: str) -> dict[str, set[bytes]] | None:
    """The attributes of each parameter of the function ``name`` in ``library``'s optimised code
    (None: not there). A library loaded from the disk cache has an empty final module; the
    module it keeps for linking into callers holds the same optimised functions."""
    for module in (lambda: library._final_module, library._get_module_for_linking):
        try:
            func = module().get_function(name)
        except Exception:
            continue
        if not func.is_declaration:
            return {p.name: set(p.attributes) for p in func.arguments}
    return None
