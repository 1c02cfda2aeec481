"""``@overload`` and ``@register_jitable``: the typing templates that hold their implementations.

Jitted code calls such a function through a typing template: typing asks the
template for an implementation (its private ``_impl_cache``: argument types ->
dispatcher), and lowering links the entry point the template noted
(``_compiled_overloads``). Neither has a public reader, and the function an
``@overload`` template was made for is kept as ``_overload_func``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import FunctionType

from .registry import touches


@touches(
    "numba.core.typing.templates",
    "builtin_registry.functions",
    "instrument/profilable.py: every typing template registered, overloads among them",
)
@touches(
    "numba.core.typing.templates",
    "_OverloadFunctionTemplate",
    "instrument/profilable.py, run/overloads.py: the implementations an @overload compiled",
    instance_attribute="_impl_cache",
)
def templates_with_implementations() -> list[type]:
    """Every typing template that caches implementations (those ``@overload`` and
    ``@register_jitable`` made, and intrinsics)."""
    from numba.core.typing.templates import builtin_registry

    return [t for t in list(builtin_registry.functions) if getattr(t, "_impl_cache", None) is not None]


def implementation_sources(template: type) -> list[object]:
    """The Python functions a template's implementations are compiled from, where a program's
    code, not Numba's own, made it: those it compiled (its cache), the ``@overload`` function
    whose nested bodies it compiles next (``_overload_func``: a caller loaded from Numba's cache
    compiled none in this process), and a ``@register_jitable`` function itself (the key)."""
    # every profile asks this of each of the ~1,300 templates a process registers, whose caches
    # are nearly all empty: the dispatchers are read only where there are any
    cached = getattr(template, "_impl_cache", None)
    funcs = [disp.py_func for disp in cached_dispatchers(template)] if cached else []
    for func in (getattr(template, "_overload_func", None), getattr(template, "key", None)):
        if isinstance(func, FunctionType):
            funcs.append(func)
    return [f for f in funcs if not (getattr(f, "__module__", None) or "").startswith("numba.")]


def implementations_cached() -> int:
    """How many implementations the overload templates cache, all told: it grows with every
    one compiled, so the holders of profiled functions are looked for again only then."""
    return sum(len(t._impl_cache) for t in templates_with_implementations())


@touches(
    "numba.core.typing.templates",
    "_OverloadFunctionTemplate",
    "instrument/profilable.py: the function an @overload template was made for (found from the overload)",
    instance_attribute="_overload_func",
)
def overloads_function(template: type, func: object) -> bool:
    """Whether ``template`` was made by ``@overload(func)`` or ``@register_jitable`` on
    ``func``, or is the template of the overload function ``func`` itself."""
    return getattr(template, "key", None) is func or getattr(template, "_overload_func", None) is func


@touches(
    "numba.core.typing.templates",
    "_OverloadFunctionTemplate",
    "instrument/profilable.py: the implementation dispatchers an overload template compiled",
    instance_attribute="_impl_cache",
)
def cached_dispatchers(template: type) -> list[object]:
    """Dispatchers in a template's implementation cache (overload templates cache
    (dispatcher, argument types) pairs; intrinsic templates cache signatures, skipped)."""
    from .dispatchers import CPUDispatcher

    found = []
    for value in list(template._impl_cache.values()):
        if isinstance(value, tuple) and value and isinstance(value[0], CPUDispatcher):
            found.append(value[0])
    return found


@touches(
    "numba.core.typing.templates",
    "_OverloadFunctionTemplate",
    "run/overloads.py: the entry points lowering links, swapped with the implementations",
    instance_attribute="_compiled_overloads",
)
def replace_implementations(
    template: type, twins: Mapping[object, object], set_attribute: Callable[[object, str, object], None]
) -> None:
    """Point ``template``'s implementations at their twins (``twins``: Python function -> twin;
    not its code object, which every closure an ``@overload`` builds shares).

    The template's two caches are replaced by copies through ``set_attribute(obj,
    name, value)`` (the caller's undoable setter): implementations whose Python
    function has a twin are swapped for it; the linked entry points are copied, so
    what the run links (the twins') is gone when the caller puts the originals back.
    """
    cache = template.__dict__["_impl_cache"]
    replaced = {}
    for key, value in list(cache.items()):
        if isinstance(value, tuple) and len(value) == 2:
            disp, args = value
            py_func = getattr(disp, "py_func", None)
            value = (twins.get(py_func, disp) if py_func is not None else disp, args)
        replaced[key] = value
    set_attribute(template, "_impl_cache", replaced)
    set_attribute(template, "_compiled_overloads", dict(template.__dict__["_compiled_overloads"]))


@touches(
    "numba.core.typing.templates",
    "builtin_registry.attributes",
    "run/holders.py: the method templates @overload_method registered, by the function they call",
)
@touches(
    "numba.core.typing.templates",
    "_OverloadMethodTemplate",
    "run/holders.py: the method an @overload_method template types, and the function it calls",
    instance_attribute="_attr",
)
def bound_methods(functions: Iterable[object]) -> list[tuple[str, str]]:
    """The methods ``@overload_method`` made to call one of ``functions`` (its overload
    functions), each as (how Numba's types print it: ``BoundFunction((<class ...Array>,
    'hsum')``, its attribute name): jitted code that calls such a method holds one in its types
    and names the attribute in its source, but names neither the method nor the function."""
    from numba.core.typing.templates import _OverloadMethodTemplate, builtin_registry

    wanted = {id(f) for f in functions}
    found = []
    for template in list(builtin_registry.attributes):
        if isinstance(template, type) and issubclass(template, _OverloadMethodTemplate):
            if id(getattr(template, "_overload_func", None)) in wanted:
                found.append((f"BoundFunction({(template.key, template._attr)}", template._attr))
    return found
