"""The one door to Numba's internals: every private API numba_lprun relies on, by intent.

Numba has no public way to give a twin line tables without variable debug info,
to copy a dispatcher's compiler pipeline, to rebuild a ufunc around another
kernel, to reach a jitclass's box class, to read the object code it JIT-compiled,
or to reach its random states; pyelftools has no public reader for a DWARF line
program that no compile unit points at. Each function here does one such thing,
named by what it is for, and declares what it touches and the releases it was
checked on (``registry.touches``); ``USES`` is built from those declarations.

Outside this package, numba_lprun imports nothing from ``numba.core``,
``numba._*``, ``llvmlite.binding`` or Numba's other internal modules, and reads
no private attribute of a Numba object: ``tests/test_architecture.py`` enforces
it and ``tests/test_private_api.py`` checks every use on the installed release.

Modules, by topic: ``dispatchers`` (the CPU dispatcher, its pipeline, compile
events), ``redirect`` (calls of an original sent to its twin), ``line_tables``
(twins with line tables only), ``kernels`` (ufuncs and stencils), ``jitclasses``,
``overloads``, ``libraries`` (object code, linked libraries, symbols),
``irbuilder`` (LLVM IR helpers for intrinsics), ``codegen`` (hooks after lowering,
before native lowering and on the final module; JIT symbols), ``caching`` (Numba's
disk cache, for twins), ``program_cache`` (the program's own cache kept clean while a
run lasts), ``runtime`` (allocator, worker threads, random states) and
``cuda`` (the simulator's kernels).
"""

from __future__ import annotations

from .caching import CacheRules, cache_refusal, disk_cache_for, use_disk_cache
from .codegen import (
    before_lowering,
    host_cpu_identity,
    internalize_linked_copies,
    ir_pass,
    library_pass,
    llvm_options_settable,
    mark_unplaced_code,
    native_function,
    optimized_with_if_conversion_budget,
    register_symbol,
    reparsed,
    rewrite_final_module,
    runs_post_lowering,
    tagged_context,
    tagged_pipeline,
    with_pass_before_lowering,
    with_post_lowering,
)
from .cuda import simulated_device_flag, simulated_fastmath
from .dispatchers import (
    CPUDispatcher,
    can_compile,
    compile_as,
    compile_events,
    forget_compiled,
    functions_typed,
    ignore_debug_info_warnings,
    is_dispatcher,
    is_ufunc_kernel,
    pickle_identity,
    pipeline_class,
    unpickle_as,
    unpickled_dispatchers,
    unpickled_under,
)
from .irbuilder import branching_here, counted_loop, stack_slot, stack_value
from .jitclasses import (
    box_class,
    box_instance_type,
    compiled_box_property,
    forget_bound_method_types,
    is_jitclass,
    is_jitclass_instance,
    jitclass_constructor,
    jitclass_fields,
    jitclasses,
)
from .kernels import (
    StencilBuild,
    is_cpu_ufunc,
    is_stencil,
    kernel_classes,
    kernel_function,
    rebuild_stencil,
    rebuild_ufunc,
    registered_callers,
    ufunc_classes,
    ufunc_dispatcher,
)
from .libraries import (
    READ,
    WRITTEN,
    argument_access,
    code_library_class,
    compiled_object,
    defined_function,
    kept_only_by_numba,
    linked_libraries,
    numba_helper_address,
    optimized_ir,
    parse_line_program_at,
    symbol_address,
)
from .line_tables import line_table_options, line_tables_only
from .overloads import (
    bound_methods,
    cached_dispatchers,
    implementation_sources,
    implementations_cached,
    overloads_function,
    replace_implementations,
    templates_with_implementations,
)
from .probe_flow import EXIT, ProbeFlow, ProbeSite, read_probe_flow
from .processes import process_target, set_process_target
from .program_cache import forget_profiler_code, guarded_program_caches
from .redirect import (
    compiled_entry_points,
    fell_back,
    is_twin,
    make_twin_dispatcher,
    own_class,
    record_calls,
    redirect_calls,
    stop_redirect,
)
from .registry import NUMBA_RANGE, USES, PrivateUse, installed_numba, minor, missing, private_names
from .runtime import (
    allocation_statistics_on,
    numba_random_state_addresses,
    use_python_allocator,
    worker_random_state_addresses,
)

__all__ = [
    "CPUDispatcher",
    "bound_methods",
    "implementation_sources",
    "implementations_cached",
    "CacheRules",
    "cache_refusal",
    "NUMBA_RANGE",
    "PrivateUse",
    "StencilBuild",
    "USES",
    "allocation_statistics_on",
    "before_lowering",
    "box_class",
    "branching_here",
    "box_instance_type",
    "cached_dispatchers",
    "can_compile",
    "compile_as",
    "compile_events",
    "functions_typed",
    "is_ufunc_kernel",
    "forget_compiled",
    "forget_profiler_code",
    "guarded_program_caches",
    "compiled_box_property",
    "compiled_object",
    "defined_function",
    "counted_loop",
    "disk_cache_for",
    "forget_bound_method_types",
    "host_cpu_identity",
    "ignore_debug_info_warnings",
    "installed_numba",
    "internalize_linked_copies",
    "is_cpu_ufunc",
    "is_dispatcher",
    "pickle_identity",
    "process_target",
    "set_process_target",
    "unpickle_as",
    "unpickled_dispatchers",
    "unpickled_under",
    "is_jitclass",
    "is_jitclass_instance",
    "is_stencil",
    "kernel_classes",
    "ufunc_classes",
    "jitclass_constructor",
    "jitclass_fields",
    "jitclasses",
    "kernel_function",
    "library_pass",
    "ir_pass",
    "with_pass_before_lowering",
    "read_probe_flow",
    "ProbeFlow",
    "ProbeSite",
    "EXIT",
    "line_table_options",
    "line_tables_only",
    "linked_libraries",
    "code_library_class",
    "kept_only_by_numba",
    "minor",
    "missing",
    "numba_helper_address",
    "numba_random_state_addresses",
    "optimized_ir",
    "overloads_function",
    "parse_line_program_at",
    "READ",
    "WRITTEN",
    "argument_access",
    "pipeline_class",
    "private_names",
    "rebuild_stencil",
    "rebuild_ufunc",
    "registered_callers",
    "own_class",
    "make_twin_dispatcher",
    "is_twin",
    "fell_back",
    "record_calls",
    "redirect_calls",
    "compiled_entry_points",
    "llvm_options_settable",
    "mark_unplaced_code",
    "optimized_with_if_conversion_budget",
    "native_function",
    "register_symbol",
    "reparsed",
    "replace_implementations",
    "rewrite_final_module",
    "runs_post_lowering",
    "simulated_device_flag",
    "simulated_fastmath",
    "stack_slot",
    "stack_value",
    "stop_redirect",
    "symbol_address",
    "tagged_context",
    "tagged_pipeline",
    "templates_with_implementations",
    "ufunc_dispatcher",
    "use_disk_cache",
    "use_python_allocator",
    "with_post_lowering",
    "worker_random_state_addresses",
]
