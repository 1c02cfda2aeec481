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

import importlib
from collections.abc import Iterator
from types import FunctionType

from numba.core.registry import CPUDispatcher

from ..errors import NotProfilableError
from .source import describe, python_function_of
from .ufuncs import is_kernel_object


def is_jitclass(obj: object) -> bool:
    """Whether ``obj`` is a class made by ``@jitclass``."""
    from numba.experimental.jitclass.base import JitClassType

    return isinstance(obj, JitClassType)


def jitclasses() -> list[type]:
    """Every jitclass defined so far (each registers itself with ``as_numba_type``)."""
    from numba.core.typing.asnumbatype import as_numba_type

    return [cls for cls in list(as_numba_type.lookup) if is_jitclass(cls)]


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
    from numba.core.typing.templates import builtin_registry

    found = []
    for template in list(builtin_registry.functions):
        cache = getattr(template, "_impl_cache", None)
        if cache is None:
            continue
        if getattr(template, "key", None) is func or getattr(template, "_overload_func", None) is func:
            found.append(template)
    return found


def implementations(template: type) -> list[CPUDispatcher]:
    """The implementation dispatchers an overload template compiled, one per Python function."""
    found: dict[object, CPUDispatcher] = {}
    for disp in cached_dispatchers(template):
        found.setdefault(disp.py_func.__code__, disp)
    return list(found.values())


def cached_dispatchers(template: type) -> list[CPUDispatcher]:
    """Dispatchers in a template's ``_impl_cache`` (overload templates cache (dispatcher,
    argument types) pairs; intrinsic templates cache signatures, which are skipped)."""
    found = []
    for value in list(template._impl_cache.values()):
        if isinstance(value, tuple) and value and isinstance(value[0], CPUDispatcher):
            found.append(value[0])
    return found


def templates_holding(dispatcher: object) -> list[type]:
    """Overload templates whose cache holds an implementation compiled from ``dispatcher``'s code."""
    from numba.core.typing.templates import builtin_registry

    def code_of(disp: object) -> object:
        return getattr(getattr(disp, "py_func", None), "__code__", None)

    code = code_of(dispatcher)
    found = []
    for template in list(builtin_registry.functions):
        cache = getattr(template, "_impl_cache", None)
        if cache and any(code_of(disp) is code for disp in cached_dispatchers(template)):
            found.append(template)
    return found


def resolve(obj: object) -> list[CPUDispatcher]:
    """The dispatchers to profile for ``obj``; NotProfilableError saying why there are none.

    A jitclass gives all its members; one of its methods, properties or static
    methods (as the class attribute gives it: a function, a property or the
    dispatcher) gives that member; a ``@njit``/``@jit`` dispatcher and a ufunc
    made by ``@vectorize``/``@guvectorize`` (target ``cpu``) give themselves; a
    function given to ``@register_jitable``, or overloaded by ``@overload`` (or the
    overload function itself), gives the implementations jitted code compiled for it.
    """
    if is_jitclass(obj):
        members = [disp for _, disp in class_members(obj)]
        for disp in members:
            python_function_of(disp)  # refuse the whole class with the member's reason
        return members
    if isinstance(obj, CPUDispatcher) or is_kernel_object(obj):
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


def resolve_expression(expr: str, namespace: dict) -> list[CPUDispatcher]:
    """``resolve`` what the expression ``expr`` gives in ``namespace`` (the magic's ``-f``)."""
    try:
        obj = eval(expr, namespace)
    except Exception as exc:
        raise NotProfilableError(f"{type(exc).__name__}: {exc}") from None
    return resolve(obj)


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
