"""Where jitted code finds a profiled function other than by a name: one strategy per holder.

A function bound to a name (a module's global, a statement's local) is reached by swapping
that name for its twin (``reach``). Two kinds of profiled function are reached through an
object of Numba's that holds them, which a name swap never touches:

* a jitclass member, held by its class: jitted code finds it in the class type's member
  dicts, and Python through the constructor, method wrappers and property accessors Numba
  made once (``jitclasses``);
* an ``@overload`` or ``@register_jitable`` implementation, held by its typing templates:
  typing asks a template for an implementation (``_impl_cache``: argument types ->
  dispatcher), and lowering links the entry point the template noted
  (``_compiled_overloads``). For a run each template that holds a profiled implementation
  gets a copy of both dicts in which that implementation is replaced by its twin, and the
  jitted callers that name the overloaded function are relinked (recompiled, they ask the
  template again and link the twin). Argument types no caller compiled before the run are
  built by the template from the original code, as Numba would: only implementations
  compiled earlier are profiled.

A :class:`Holder` says, for the holders of a phase's targets, what the runner needs: dicts to
swap like namespaces, what jitted callers name, what jitted code to relink, which instance
types make a caller a user of the holder, how the twins are swapped in (every change through
the phase's ``Swap``, so ``Swap.restore`` puts it back) and what Numba must forget after each
swap and restore. The runner asks every holder the same questions (``HOLDERS``): a new way of
reaching code is one strategy here, not a branch in the runner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..internals import (
    CPUDispatcher,
    bound_methods,
    implementation_sources,
    replace_implementations,
    templates_with_implementations,
)
from .jitclasses import (
    box_properties,
    class_namespaces,
    classes_reaching,
    entry_points,
    forget_bound_methods,
    fresh_property,
    instance_type_names,
)
from .reach import Swap, holding_callers
from .targets import Target

#: What a holder's strategy is given to swap twins in: the holders, each target's twin dispatcher
#: by the target's Python function, the phase's undo log, the twin kind, and a memo the runner keeps
#: for the strategy between phases (what is dear to make again, such as compiled properties).
SwapIn = Callable[[list, Mapping[object, object], Swap, str, dict], None]


def _nothing(held: list) -> list:
    return []


def _forget_nothing(held: list) -> None:
    return None


@dataclass(frozen=True)
class Holder:
    """How calls reach the twins of the targets an object of one kind holds."""

    name: str
    of: Callable[[Target], list]  # what holds a target's code (empty: nothing of this kind)
    swap_in: SwapIn
    after_names: bool  # swapped in once the names are (it compiles against what they hold now)
    namespaces: Callable[[list], list[dict]] = _nothing  # dicts swapped like module globals
    named: Callable[[list], list[object]] = _nothing  # what jitted callers name to reach them
    entry_points: Callable[[list], list[CPUDispatcher]] = _nothing  # jitted code to relink
    instance_types: Callable[[list], list[str]] = _nothing  # a caller using these reaches them unnamed
    #: attribute names whose use in a caller's source makes it one, read where its compiled
    #: types are not kept (a ``cache=True`` function's)
    attributes: Callable[[list], list[str]] = _nothing
    forget: Callable[[list], None] = _forget_nothing  # after each swap and each restore
    #: holders of code that calls the targets by name (the originals given), reached as the
    #: holders of the targets themselves are
    reaching: Callable[[list], list] = _nothing

    def held(self, targets: Iterable[Target]) -> list:
        """The holders of ``targets`` (each once, in the targets' order), then those of the
        code that calls them by name (``reaching``)."""
        targets = list(targets)
        owners = [h for target in targets for h in self.of(target)]
        return list(dict.fromkeys(owners + self.reaching([t.original for t in targets])))


def _swap_box_properties(classes: list, twins: Mapping, swap: Swap, kind: str, memo: dict) -> None:
    """Python-level property access reaches the twins: each box property is replaced by one
    compiled against the swapped member dicts (kept per twin kind: compiling is dear)."""
    for box, name, old in box_properties(classes):
        key = (kind, box, name)
        if key not in memo:
            memo[key] = fresh_property(box, name, old)
        swap.set_attribute(box, name, memo[key])


def templates_reaching(originals: Iterable[object]) -> list[type]:
    """The overload templates (``@overload``, ``@register_jitable``) one of whose implementations
    calls one of ``originals`` (``holding_callers``): a profiled helper called from an
    overload's body. Jitted code reaches that body through the template, whose cache holds the
    implementation compiled before the run (linked to the original helper), so the template
    gets its relinked copy for the run (else the helper read "not called"); one whose callers
    came from Numba's cache compiled no body in this process, and is found from the body's
    source (``implementation_sources``): its callers, relinked, have it compile one."""
    return holding_callers(templates_with_implementations(), implementation_sources, originals)


def _swap_implementations(templates: list, twins: Mapping, swap: Swap, kind: str, memo: dict) -> None:
    """Point each template's implementations at the twins (and at the relinked copies of those
    that call a target)."""
    for template in templates:
        replace_implementations(template, twins, swap.set_attribute)


JITCLASS_MEMBERS = Holder(
    "jitclass",
    lambda target: [target.owner] if target.owner is not None else [],
    _swap_box_properties,
    after_names=True,
    namespaces=class_namespaces,
    entry_points=entry_points,
    instance_types=instance_type_names,
    forget=forget_bound_methods,
    reaching=classes_reaching,
)
OVERLOAD_IMPLEMENTATIONS = Holder(
    "overload",
    lambda target: target.templates,
    _swap_implementations,
    after_names=False,  # before: the callers relinked when the names are swapped ask the templates
    named=lambda templates: [t.key for t in templates],  # the Python function overloaded
    # an @overload_method's callers name no function: their types hold the bound method
    instance_types=lambda templates: [name for name, _ in bound_methods(t.key for t in templates)],
    attributes=lambda templates: [attr for _, attr in bound_methods(t.key for t in templates)],
    reaching=templates_reaching,
)

#: Every holder, asked in this order.
HOLDERS = (JITCLASS_MEMBERS, OVERLOAD_IMPLEMENTATIONS)
