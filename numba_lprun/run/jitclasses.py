"""Make calls of jitclass members reach their twins for a run, and put the class back.

A jitclass member is not called through a name: jitted code finds it in the
class type's dicts (``jit_methods``, ``jit_props``, ``jit_static_methods``) when
it is typed and lowered, and Python reaches it through small jitted wrappers
Numba made once (the constructor ``cls._ctor``, and the box class's method
wrappers and property accessors), which linked the members they saw. So for a
run the class is *recompiled against the twins*: the class type's dicts are
treated as namespaces (their entries swapped like module globals), every other
member of the class and every wrapper becomes a relinked twin (fresh code typed
against the swapped dicts), and jitted functions whose compiled code uses the
class's instances are relinked too. ``Swap.restore`` puts every entry back.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..instrument.profilable import class_members
from ..internals import (
    CPUDispatcher,
    box_class,
    box_instance_type,
    compiled_box_property,
    forget_bound_method_types,
    jitclass_constructor,
    jitclasses,
)
from .reach import code_names, holding_callers


def class_namespaces(classes: Iterable[type]) -> list[dict]:
    """The class types' member dicts, swapped for a run like module namespaces."""
    spaces = []
    for cls in classes:
        class_type = cls.class_type
        spaces += [class_type.jit_methods, class_type.jit_static_methods]
        spaces += list(class_type.jit_props.values())
    return spaces


def _dispatchers_in(value: object) -> list[CPUDispatcher]:
    """Dispatchers a box method wrapper calls (in its closure)."""
    found = []
    for cell in getattr(value, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:
            continue
        if isinstance(inner, CPUDispatcher):
            found.append(inner)
    return found


def entry_points(classes: Iterable[type]) -> list[CPUDispatcher]:
    """Jitted code Numba made for each class that links its members: members themselves,
    the constructor, and the box class's method wrappers and property accessors."""
    found: dict[int, CPUDispatcher] = {}
    for cls in classes:
        for _, disp in class_members(cls):
            found[id(disp)] = disp
        ctor = jitclass_constructor(cls)
        if isinstance(ctor, CPUDispatcher):
            found[id(ctor)] = ctor
        box = box_class(cls)
        if box is not None:
            for value in vars(box).values():
                if not isinstance(value, property):  # properties: see box_properties
                    for disp in _dispatchers_in(value):
                        found[id(disp)] = disp
    return list(found.values())


def box_properties(classes: Iterable[type]) -> list[tuple[type, str, property]]:
    """(box class, name, property) of each jitclass property on the box classes Numba made.

    Numba replaces a box property's getter with the compiled entry point of an
    accessor (no dispatcher left to redirect), so for a run the property itself
    is replaced by :func:`fresh_property`.
    """
    found = []
    for cls in classes:
        box = box_class(cls)
        if box is None:
            continue
        for name in cls.class_type.jit_props:
            value = vars(box).get(name)
            if isinstance(value, property):
                found.append((box, name, value))
    return found


def fresh_property(box: type, name: str, old: property) -> property:
    """A property of ``box`` whose accessors are compiled now, against the swapped member dicts."""
    return compiled_box_property(box_instance_type(box), name, old)


def forget_bound_methods(classes: Iterable[type]) -> None:
    """Make Numba type ``instance.method`` afresh, against the member dicts as they are now.

    Typing ``p.step`` makes a bound-method type that Numba interns; it would keep
    typing calls against the original member while lowering (which reads the dict)
    links the twin. Done when the dicts are swapped and again when they are put back.
    """
    forget_bound_method_types(cls.class_type.instance_type for cls in classes)


def instance_type_names(classes: Iterable[type]) -> list[str]:
    """The Numba type names of the classes' instances (unique per class)."""
    return [cls.class_type.instance_type.name for cls in classes]


def uses_instances(dispatcher: CPUDispatcher, type_names: list[str], attributes: list[str] = ()) -> bool:
    """Whether ``dispatcher``'s compiled code handles an instance of one of the classes
    (as an argument, result or local, also inside a container type), or a bound method of
    ``type_names``; where Numba kept no types of a compile (``cache=True``), whether its source
    names one of ``attributes`` (the methods')."""
    if not type_names:
        return False
    named = attributes and not set(attributes).isdisjoint(code_names(dispatcher.py_func))
    for cres in list(dispatcher.overloads.values()):
        typemap = getattr(getattr(cres, "fndesc", None), "typemap", None) or {}
        if not typemap and named:
            return True
        types_seen = [*cres.signature.args, cres.signature.return_type, *typemap.values()]
        for ty in types_seen:
            text = str(ty)
            if any(name in text for name in type_names):
                return True
    return False


def classes_reaching(originals: Iterable[object]) -> list[type]:
    """The jitclasses one of whose members calls one of ``originals`` (``holding_callers``): a
    profiled helper that a method calls. Python and jitted code reach that method through the
    class, as they reach a profiled member, so the class is recompiled against the twins the
    same way (else the helper read "not called")."""
    return holding_callers(
        jitclasses(), lambda cls: [disp.py_func for _, disp in class_members(cls)], originals
    )
