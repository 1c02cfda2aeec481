"""Make jitted code reach the twins of ``@overload`` and ``@register_jitable`` implementations.

Jitted code calls such a function through a typing template: typing asks the
template for an implementation (``_impl_cache``: argument types -> dispatcher),
and lowering links the entry point the template noted (``_compiled_overloads``).
Neither is a name that can be swapped, so for a run each template that holds a
profiled implementation gets a copy of both dicts in which that implementation's
dispatcher is replaced by its twin, and the jitted callers that name the
overloaded function are relinked (recompiled, they ask the template again and
link the twin). ``Swap.restore`` puts the template's own dicts back. Argument
types no caller compiled before the run are built by the template from the
original code, as Numba would: only implementations compiled earlier are profiled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .reach import Swap


def overloaded_functions(templates: Iterable[type]) -> list[object]:
    """The Python functions the templates overload: what jitted callers name."""
    return [t.key for t in templates]


def swap_implementations(templates: Iterable[type], twins: Mapping[object, object], swap: Swap) -> None:
    """Point each template's implementations at the twins (``twins``: code object -> twin)."""
    for template in templates:
        cache = template.__dict__["_impl_cache"]
        replaced = {}
        for key, value in list(cache.items()):
            if isinstance(value, tuple) and len(value) == 2:
                disp, args = value
                code = getattr(getattr(disp, "py_func", None), "__code__", None)
                value = (twins.get(code, disp), args)
            replaced[key] = value
        swap.set_attribute(template, "_impl_cache", replaced)
        swap.set_attribute(template, "_compiled_overloads", dict(template.__dict__["_compiled_overloads"]))
