"""What can be profiled, and which dispatchers stand for it.

Numba code is written in more ways than ``@njit``: a ``@jitclass`` keeps one
dispatcher per method, property accessor and static method in its class type,
and the user holds the class, not those dispatchers (``Particle.step`` on a
jitclass is the plain Python function). This module turns what a user names (an
object, or an expression such as ``Particle.step``) into the CPU dispatchers to
profile, and refuses what cannot be profiled with a one-line reason naming it.
The front ends (magic, CLI) and ``LineProfiler`` all go through :func:`resolve`.
"""

from __future__ import annotations

import gc
import importlib
from types import FunctionType

from ..decorator import MARK
from ..errors import CudaFunctionError, NotProfilableError
from ..internals import (
    CPUDispatcher,
    cached_dispatchers,
    jitclasses,
    overloads_function,
    templates_with_implementations,
)
from .function_kinds import CUDA, JITCLASS, class_members, kind_of
from .source import describe, python_function_of


def owning_jitclass(dispatcher: object) -> type | None:
    """The jitclass whose class type holds ``dispatcher`` as a member, if any."""
    for cls in jitclasses():
        if any(disp is dispatcher for _, disp in class_members(cls)):
            return cls
    return None


def _member_of_function(func: object) -> list[CPUDispatcher]:
    """Dispatchers of jitclass members compiled from ``func`` (a function or property)."""
    wanted = {id(f) for f in (getattr(func, "fget", None), getattr(func, "fset", None)) if f is not None}
    wanted.add(id(getattr(func, "__func__", func)))  # staticmethod objects
    found = []
    for cls in jitclasses():
        found += [disp for _, disp in class_members(cls) if id(disp.py_func) in wanted]
    return found


def overload_templates(func: object) -> list[type]:
    """Typing templates made by ``@overload(func)`` or ``@register_jitable`` on ``func``
    (also found from the overload function itself)."""
    return [t for t in templates_with_implementations() if overloads_function(t, func)]


def implementations(template: type) -> list[CPUDispatcher]:
    """The implementation dispatchers an overload template compiled, one per Python function."""
    found: dict[object, CPUDispatcher] = {}
    for disp in cached_dispatchers(template):
        found.setdefault(disp.py_func.__code__, disp)
    return list(found.values())


def templates_holding(dispatcher: object) -> list[type]:
    """Overload templates whose cache holds an implementation compiled from ``dispatcher``'s code,
    or that ``register_jitable`` made for its very function (whose cache takes ``dispatcher``
    once the template has built it: it may be building it now)."""

    def code_of(disp: object) -> object:
        return getattr(getattr(disp, "py_func", None), "__code__", None)

    code, py_func = code_of(dispatcher), getattr(dispatcher, "py_func", None)
    found = []
    for template in templates_with_implementations():
        if any(code_of(disp) is code for disp in cached_dispatchers(template)) or (
            py_func is not None and getattr(template, "key", None) is py_func
        ):
            found.append(template)
    return found


def may_be_compiled_later(func: object) -> bool:
    """Whether ``func`` is a plain Python function that Numba may compile while a statement runs
    (a library given it, as pandas' ``engine="numba"`` is, or ``register_jitable``): not one of
    its jitted functions' own Python code (``f.py_func``), which is profiled as that function."""
    if not isinstance(func, FunctionType):
        return False
    for held_by in gc.get_referrers(func):  # a dispatcher keeps its Python function in its __dict__
        holders = gc.get_referrers(held_by) if isinstance(held_by, dict) else [held_by]
        if any(is_dispatcher(d) and getattr(d, "py_func", None) is func for d in holders):
            return False
    return True


def refuse_cuda(obj: object) -> None:
    """Where CUDA kernels leave the CPU path: ``LineProfiler(kern)`` says, as a
    ``CudaFunctionError``, that ``numba_lprun.cuda`` profiles the kernel's launches (the
    front ends never get here: ``cuda.split_cuda`` sends kernels there first)."""
    raise CudaFunctionError(
        f"{describe(obj)} is a CUDA kernel or device function: its launches are profiled by "
        "numba_lprun.cuda (profile_launch, CudaLineProfiler), not by the CPU profiler",
        obj,
    )


def resolve(obj: object) -> list[CPUDispatcher]:
    """The dispatchers to profile for ``obj``; NotProfilableError saying why there are none.

    A jitclass gives all its members; one of its methods, properties or static
    methods (as the class attribute gives it: a function, a property or the
    dispatcher) gives that member; a ``@njit``/``@jit`` dispatcher and a ufunc
    made by ``@vectorize``/``@guvectorize`` (target ``cpu``) give themselves; a
    function given to ``@register_jitable``, or overloaded by ``@overload`` (or the
    overload function itself), gives the implementations jitted code compiled for it.
    A CUDA kernel or device function raises ``CudaFunctionError`` (``refuse_cuda``).
    """
    kind = kind_of(obj)
    if kind is CUDA:
        refuse_cuda(obj)
    if kind is JITCLASS:
        members = [disp for _, disp in class_members(obj)]
        for disp in members:
            python_function_of(disp)  # refuse the whole class with the member's reason
        return members
    if kind is not None and kind.profiled_itself:  # a dispatcher, a ufunc, a stencil
        python_function_of(obj)
        return [obj]
    if isinstance(obj, (FunctionType, property, staticmethod)):
        members = _member_of_function(obj)
        if members:
            return members
    templates = overload_templates(obj) if isinstance(obj, FunctionType) else []
    if templates:
        found = [disp for t in templates for disp in implementations(t)]
        if not found:
            raise NotProfilableError(
                f"{describe(obj)} is implemented by @overload/@register_jitable, but no jitted code "
                "has compiled it yet: run the code that calls it once, then profile it"
            )
        for disp in found:
            python_function_of(disp)
        return found
    python_function_of(obj)  # raises with the reason
    raise NotProfilableError(f"{describe(obj)} is not a Numba jitted function")


def evaluate_expression(expr: str, namespace: dict) -> object:
    """What the expression ``expr`` gives in ``namespace`` (the magic's ``-f``), not yet
    resolved: the front end first asks whether it is CUDA; NotProfilableError if it fails."""
    try:
        return eval(expr, namespace)
    except Exception as exc:
        raise NotProfilableError(f"{type(exc).__name__}: {exc}") from None


def import_spec(spec: str) -> object:
    """The object ``module:attr.attr`` names, importing the module (the CLI's ``-f``)."""
    module_name, _, attr = spec.partition(":")
    try:
        obj = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:
        raise NotProfilableError(f"{type(exc).__name__}: {exc}") from None
    return obj


def dispatcher_class() -> type:
    """The class ``@njit``/``@jit`` make for the CPU target."""
    return CPUDispatcher


def is_dispatcher(value: object) -> bool:
    """Whether ``value`` is a Numba CPU dispatcher (``@njit``/``@jit``)."""
    return isinstance(value, CPUDispatcher)


def source_file(value: object) -> str | None:
    """The file the Python code behind ``value`` comes from (a jitted function, a jitclass,
    a ufunc or a stencil), or None for anything else."""
    kind = kind_of(value)
    return kind.source_file(value) if kind is not None else None


def is_marked(obj: object) -> bool:
    """Whether ``obj`` is a jitted function carrying ``@numba_lprun.profile``'s mark (on itself
    or its py_func).

    Only dispatchers are asked: other objects may do anything on attribute access.
    """
    if not isinstance(obj, CPUDispatcher):
        return False
    return getattr(obj, MARK, False) is True or getattr(obj.py_func, MARK, False) is True


def profilable_in(namespace: dict, filename: str | None, module: str | None = None) -> list[str]:
    """How to name, with ``-f``, each thing in ``namespace`` that could be profiled (only
    those whose code comes from ``filename``, when given): ``module:name``
    (``module:Class`` for a jitclass), or ``name`` without a module.

    Said when nothing profiled ran, so a user learns what was there to ask for."""
    found = []
    for name, value in list(namespace.items()):
        where = source_file(value)
        if name.startswith("_") or where is None or (filename is not None and where != filename):
            continue
        spelled = f"{module}:{name}" if module else name
        if kind_of(value) is JITCLASS:
            spelled += " (a jitclass: all its members; or one, such as " + spelled + ".method)"
        found.append(spelled)
    return found
