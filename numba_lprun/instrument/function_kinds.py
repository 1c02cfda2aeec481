"""The kinds of function numba_lprun profiles, and how each is treated: one strategy per kind.

Numba compiles Python functions into several kinds of object: a CPU dispatcher
(``@njit``/``@jit``, a jitclass's members included), a ufunc or gufunc built for the
``cpu`` target (``@vectorize``/``@guvectorize``: a ``DUFunc`` or ``GUFunc``), a
``@stencil``, a ``@jitclass`` (profiled through its members) and a ``@cuda.jit``
kernel or device function (profiled by ``numba_lprun.cuda``, refused by the CPU
profiler). Each stage asks the object's :class:`FunctionKind` (``kind_of``) what it
needs to know: where its source is, how its twin is built, whether its calls run
concurrently, whether samples can be placed on its lines, where its targets are kept.
Adding a kind of function is adding one strategy here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FunctionType

from ..internals import (
    CPUDispatcher,
    is_cpu_ufunc,
    is_dispatcher,
    is_jitclass,
    is_stencil,
    kernel_function,
    ufunc_dispatcher,
)
from .ufuncs import stencil_twin, ufunc_twin

#: How a kernel object's twin is built: (original, rewritten kernel, pipeline, line tables) ->
#: (the twin, where its code is); see ``ufuncs``.
KernelTwin = Callable[[object, FunctionType, Callable[[type], type], bool], tuple[object, object]]


def _by_options(obj: object) -> bool:
    """A dispatcher's calls may run on several threads at once: ``parallel=True`` code runs its
    ``prange`` bodies on worker threads, and a ``nogil=True`` function can be called from several
    Python threads at the same time (a thread pool)."""
    options = getattr(obj, "targetoptions", None) or {}
    return bool(options.get("parallel") or options.get("nogil"))


def _itself(obj: object) -> object:
    return obj


@dataclass(frozen=True)
class FunctionKind:
    """One kind of function: how each stage treats the objects of that kind."""

    name: str
    accepts: Callable[[object], bool]  # whether an object is of this kind
    #: the Python function whose source stands for the object (None: no CPU source to show)
    python_function: Callable[[object], FunctionType | None]
    #: the module whose code defines the object (``--source PKG``)
    module: Callable[[object], str | None]
    profiled_itself: bool = True  # profiled as the object itself (a jitclass: through its members)
    #: how its twin is built, for a kernel object (None: a dispatcher's twin, ``twins.make_twin``)
    kernel_twin: KernelTwin | None = None
    concurrent: Callable[[object], bool] = _by_options  # its calls may run on several threads at once
    #: its code may run on Numba's worker threads though its calls are not concurrent (a stencil, which a
    #: ``parallel=True`` caller inlines into its loops)
    inlined_by_parallel_callers: bool = False
    line_tables: bool = True  # its twins carry line tables, so samples map to its lines (not a ufunc's)
    #: why no sample maps to its lines where ``sampleable`` says none can (the profile's note says it)
    unsampled_because: str = ""
    per_point: bool = False  # its kernel is called once per point of an array (its calls are never timed)
    #: where its targets are kept between profiles (the object itself, or one Numba keeps inside it)
    holder: Callable[[object], object] = _itself

    @property
    def kernel(self) -> bool:
        """Compiled from a kernel function, without a dispatcher of its own (a ufunc, a stencil):
        its callees are not linked to twins, its twin is rebuilt around the rewritten kernel."""
        return self.kernel_twin is not None

    def source_file(self, obj: object) -> str | None:
        """The file the Python code behind ``obj`` comes from, or None."""
        py_func = self.python_function(obj)
        return py_func.__code__.co_filename if py_func is not None else None

    def sampleable(self, inlined_in_parallel: bool = False) -> bool:
        """Whether samples can be mapped to the lines of a function of this kind: its twins carry
        line tables, unless a ``parallel=True`` caller reaches it (``inlined_in_parallel``) and
        Numba's parfor pass inlines it into that caller's loops, whose line table names none of
        its lines."""
        return self.line_tables and not (inlined_in_parallel and self.inlined_by_parallel_callers)

    def unsampled(self, inlined_in_parallel: bool = False) -> str:
        """Why samples cannot be mapped to its lines (``sampleable``), or "" where they can."""
        return "" if self.sampleable(inlined_in_parallel) else self.unsampled_because

    def may_run_on_threads(self, obj: object) -> bool:
        """Whether ``obj``'s code may run on Numba's worker threads in some run."""
        return self.concurrent(obj) or self.inlined_by_parallel_callers


def class_members(cls: type) -> Iterator[tuple[str, CPUDispatcher]]:
    """(label, dispatcher) of each method, property accessor and static method of a jitclass."""
    class_type = cls.class_type
    for name, disp in class_type.jit_methods.items():
        yield name, disp
    for name, accessors in class_type.jit_props.items():
        for which, disp in accessors.items():
            yield f"{name}.{'fget' if which == 'get' else 'fset'}", disp
    for name, disp in class_type.jit_static_methods.items():
        yield name, disp


def is_cuda_function(obj: object) -> bool:
    """Whether ``obj`` is a ``@cuda.jit`` kernel or device function (numba-cuda's
    dispatcher or the simulator's kernel); by its type's module, importing nothing
    (importing numba.cuda is slow, and under the simulator must wait for the environment).
    ``cuda/`` and the front ends' ``cuda.split_cuda`` use this one."""
    return type(obj).__module__.startswith("numba.cuda") and hasattr(obj, "py_func")


def _first_member_function(cls: type) -> FunctionType | None:
    members = [disp for _, disp in class_members(cls)]
    return members[0].py_func if members else None


def _module_of_function(python_function: Callable[[object], FunctionType | None]):
    def module(obj: object) -> str | None:
        return getattr(python_function(obj), "__module__", None)

    return module


def _py_func(obj: object) -> FunctionType:
    return obj.py_func


DISPATCHER = FunctionKind(
    "dispatcher",
    lambda obj: isinstance(obj, CPUDispatcher),
    _py_func,
    _module_of_function(_py_func),
)
UFUNC = FunctionKind(  # NumPy runs ufunc loops without the GIL, and Numba builds them without line tables
    "ufunc",
    is_cpu_ufunc,
    kernel_function,
    _module_of_function(kernel_function),
    kernel_twin=ufunc_twin,
    concurrent=lambda obj: True,
    line_tables=False,
    unsampled_because="Numba builds a ufunc's loops without line tables: no sample can be placed on them",
    holder=ufunc_dispatcher,  # the kernel dispatcher: the object the user holds is left as it was
)
STENCIL = FunctionKind(  # called from Python it holds the GIL; in a parallel caller it is inlined
    "stencil",
    is_stencil,
    kernel_function,
    _module_of_function(kernel_function),
    kernel_twin=stencil_twin,
    concurrent=lambda obj: False,
    inlined_by_parallel_callers=True,
    unsampled_because=(
        "Numba inlines a stencil into its parallel caller's loops, whose line table names none of its lines"
    ),
    per_point=True,
)
JITCLASS = FunctionKind(
    "jitclass",
    is_jitclass,
    _first_member_function,
    lambda cls: getattr(cls, "__module__", None),
    profiled_itself=False,
)
CUDA = FunctionKind(  # profiled by numba_lprun.cuda: no CPU source, no CPU twin
    "cuda",
    is_cuda_function,
    lambda obj: None,
    lambda obj: None,
    profiled_itself=False,
)

#: Every kind, in the order an object is tested against them.
KINDS = (CUDA, JITCLASS, DISPATCHER, UFUNC, STENCIL)
#: The kinds compiled from a kernel function, without a dispatcher of their own.
KERNEL_KINDS = tuple(kind for kind in KINDS if kind.kernel)


def kind_of(obj: object) -> FunctionKind | None:
    """The kind of function ``obj`` is, or None (not Numba code numba_lprun knows)."""
    return next((kind for kind in KINDS if kind.accepts(obj)), None)


def treated_as(obj: object) -> FunctionKind:
    """The kind of a compiled function met in a run (a target, or a jitted caller found in a
    module): anything that is not a ufunc or a stencil is treated as a CPU dispatcher."""
    return next((kind for kind in KERNEL_KINDS if kind.accepts(obj)), DISPATCHER)


def is_kernel_object(obj: object) -> bool:
    """A ufunc (cpu) or a stencil: compiled from a kernel function, without a dispatcher of its own."""
    return any(kind.accepts(obj) for kind in KERNEL_KINDS)


def is_compiled_code(obj: object) -> bool:
    """Numba's compiled code: a dispatcher of any kind, a ufunc or gufunc built for the cpu or a
    stencil (code, not state: what a profile swaps in for it is put back by the runner)."""
    return is_dispatcher(obj) or is_kernel_object(obj)
