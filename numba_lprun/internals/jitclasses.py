"""Jitclasses: what Numba made for a class besides its members' dispatchers.

Python reaches a jitclass's members through jitted wrappers Numba made once (the
constructor kept as ``cls._ctor``, and a *box class* per instance type, cached
in a private dict, whose method wrappers and property accessors linked the
members they saw); an instance knows its Numba type by ``_numba_type_``; and
Numba interns the types of bound methods in a private cache. For a run on
twins, the profiler reaches each of these: that is why they are behind the door.
"""

from __future__ import annotations

from collections.abc import Iterable

from .registry import touches


@touches(
    "numba.experimental.jitclass.base",
    "JitClassType",
    "instrument/profilable.py: the metaclass of every @jitclass",
)
def is_jitclass(obj: object) -> bool:
    """Whether ``obj`` is a class made by ``@jitclass``."""
    from numba.experimental.jitclass.base import JitClassType

    return isinstance(obj, JitClassType)


@touches(
    "numba.core.typing.asnumbatype",
    "as_numba_type.lookup",
    "instrument/profilable.py: every jitclass registers itself there (the jitclass of a member)",
)
def jitclasses() -> list[type]:
    """Every jitclass defined so far (each registers itself with ``as_numba_type``)."""
    from numba.core.typing.asnumbatype import as_numba_type

    return [cls for cls in list(as_numba_type.lookup) if is_jitclass(cls)]


@touches(
    "numba.experimental.jitclass.base",
    "JitClassType",
    "run/jitclasses.py: the jitted constructor of a jitclass (cls._ctor), relinked for a run",
    instance_attribute="_ctor",
)
def jitclass_constructor(cls: type) -> object | None:
    """The jitted function that constructs instances of ``cls`` (None until Numba made it)."""
    return cls.__dict__.get("_ctor")


@touches(
    "numba.experimental.jitclass.boxing",
    "_cache_specialized_box",
    "run/jitclasses.py: a jitclass's box class, whose method wrappers are swapped for a run",
)
def box_class(jitclass: type) -> type | None:
    """The box class Numba made for ``jitclass``'s instances (None before the first instance)."""
    from numba.experimental.jitclass.boxing import _cache_specialized_box

    return _cache_specialized_box.get(jitclass.class_type.instance_type)


@touches(
    "numba.experimental.jitclass.boxing",
    "",
    "run/runner.py, run/state_types.py: a box class names its instances' Numba type",
    instance_attribute="_numba_type_",
)
def box_instance_type(box: type) -> object | None:
    """The Numba instance type of a box class (None for any other class)."""
    return getattr(box, "_numba_type_", None)


def is_jitclass_instance(obj: object) -> bool:
    """Whether ``obj`` is an instance of a jitclass (its class is a box class)."""
    return box_instance_type(type(obj)) is not None and type(obj).__mro__[-2].__name__ == "Box"


def jitclass_fields(obj: object) -> list[str]:
    """The data fields of a jitclass instance, in the struct's order."""
    return list(box_instance_type(type(obj)).struct)


@touches(
    "numba.experimental.jitclass.boxing",
    "_generate_getter",
    "run/jitclasses.py: properties of a box class rebuilt against the twins",
)
@touches(
    "numba.experimental.jitclass.boxing",
    "_generate_setter",
    "run/jitclasses.py: properties of a box class rebuilt against the twins",
)
def compiled_box_property(instance_type: object, name: str, old: property) -> property:
    """A box property whose accessors are compiled now, against the member dicts as they are.

    Numba replaces a box property's getter with the compiled entry point of an
    accessor (no dispatcher left to redirect), so the property is made again.
    """
    from numba.experimental.jitclass.boxing import _generate_getter, _generate_setter

    fget = fset = None
    if old.fget is not None:
        fget = _generate_getter(name).compile((instance_type,))
    if old.fset is not None:
        fset = _generate_setter(name)
    return property(fget, fset, old.fdel, doc=old.__doc__)


@touches(
    "numba.core.types.abstract",
    "_typecache",
    "run/jitclasses.py: interned bound-method types dropped, so p.step is typed afresh",
)
@touches("numba.core.types", "BoundFunction", "run/jitclasses.py: the interned types dropped")
def forget_bound_method_types(instance_types: Iterable[object]) -> None:
    """Make Numba type ``instance.method`` afresh for instances of ``instance_types``.

    Typing ``p.step`` makes a ``BoundFunction`` type whose template captured the
    ``step`` dispatcher found then; Numba interns types by key, so later typing
    would reuse it while lowering (which reads the member dicts) links whatever is
    there now. Dropping the interned bound methods keeps the two on one dispatcher.
    """
    from numba.core.types import BoundFunction, abstract

    instance_types = list(instance_types)
    if not instance_types:
        return
    for ref in list(abstract._typecache):
        ty = ref()
        if isinstance(ty, BoundFunction) and any(ty.this == it for it in instance_types):
            abstract._typecache.pop(ref, None)
