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

from ..internals import replace_implementations
from .reach import Swap


def overloaded_functions(templates: Iterable[type]) -> list[object]:
    """The Python functions the templates overload: what jitted callers name."""
    return [t.key for t in templates]


def swap_implementations(templates: Iterable[type], twins: Mapping[object, object], swap: Swap) -> None:
    """Point each template's implementations at the twins (``twins``: code object -> twin)."""
    for template in templates:
        replace_implementations(template, twins, swap.set_attribute)
