"""A function's def compiled as Python compiled the original: in its class, with its free variables.

Why: a twin is made by compiling the function's source again, and Python compiles a
def differently depending on where it stands. Inside a class, private names are
mangled (``self.__value`` is ``self._Counter__value``); inside another function, the
names it shares with it are closure cells, not globals. So the def is placed in a
factory whose parameters are the original's free variables, itself a method of a
class statement named as the innermost class around the original. The same placement
tells whether the source found for a function is the source it was compiled from
(``compiles_to``): a file edited since would give a twin that computes something else.
"""

from __future__ import annotations

import ast
import copy
import sys
from types import CodeType, FunctionType

#: The def's name while it is compiled (its code takes the original's name back): a closure
#: that calls itself (``fib3`` inside ``make()``) keeps naming the cell the factory is given.
TWIN_DEF = "_nlp_twin"
FACTORY = "_nlp_factory"
_TYPE_PARAMS = {"type_params": []} if sys.version_info >= (3, 12) else {}


def mangling_class(qualname: str) -> str:
    """The name of the innermost class a function with ``qualname`` was written in, which
    Python mangles its private names with; ``_`` (a name Python mangles nothing with) for a
    function written in no class. In ``Holder.make.<locals>.read``, ``make`` is a function
    (its locals follow) and ``Holder`` a class."""
    parts = qualname.split(".")[:-1]
    classes = [
        part
        for i, part in enumerate(parts)
        if part != "<locals>" and (i + 1 == len(parts) or parts[i + 1] != "<locals>")
    ]
    return classes[-1] if classes else "_"


def placed(tree: ast.FunctionDef, py_func: FunctionType) -> ast.Module:
    """A module holding ``tree`` (a def of ``py_func``, perhaps rewritten) as Python compiled
    ``py_func``: ``class <C>: def _nlp_factory(<free variables>): def _nlp_twin(...)``."""
    tree = copy.copy(tree)
    tree.name = TWIN_DEF
    factory = ast.FunctionDef(
        name=FACTORY,
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=name) for name in py_func.__code__.co_freevars],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=[tree, ast.Return(value=ast.Name(id=TWIN_DEF, ctx=ast.Load()))],
        decorator_list=[],
        returns=None,
        type_comment=None,
        **_TYPE_PARAMS,
    )
    scope = ast.ClassDef(
        name=mangling_class(py_func.__qualname__),
        bases=[],
        keywords=[],
        body=[factory],
        decorator_list=[],
        **_TYPE_PARAMS,
    )
    for node in (factory, scope):
        ast.copy_location(node, tree)
    return ast.fix_missing_locations(ast.Module(body=[scope], type_ignores=[]))


def compiles_to(tree: ast.FunctionDef, py_func: FunctionType, filename: str) -> bool:
    """Whether ``tree`` (a def found in the source) compiles, in place, to what ``py_func``'s
    code can be (``_same_meaning``). False for a def edited since ``py_func`` was made (the twin
    would compute what the edit says), or another lambda of the same line."""
    try:
        module = compile(placed(tree, py_func), filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    made = _nested(module, TWIN_DEF)
    return made is not None and _same_meaning(made, py_func.__code__)


def _nested(code: CodeType, name: str) -> CodeType | None:
    """The code object named ``name`` among those ``code`` holds, at any depth."""
    for const in code.co_consts:
        if isinstance(const, CodeType):
            if const.co_name == name:
                return const
            found = _nested(const, name)
            if found is not None:
                return found
    return None


def _names_and_values(code: CodeType) -> tuple[frozenset, frozenset]:
    """The names a code object and the functions inside it use, and the constants they hold."""
    names, values = set(code.co_names), set()
    for const in code.co_consts:
        if isinstance(const, CodeType):
            inner_names, inner_values = _names_and_values(const)
            names |= inner_names
            values |= inner_values
        else:
            values.add((type(const).__name__, repr(const)))
    return frozenset(names), frozenset(values)


def _same_meaning(made: CodeType, original: CodeType) -> bool:
    """Whether ``made`` (compiled from the source found) can be ``original``'s code: the same
    variables and arguments, the same names, and no constant the original does not hold.

    Not the instructions: which ones the compiler picks depends on the module around the
    def (an attribute of a module-level import is loaded as an attribute, else as a method)
    and on the Python release, and line_profiler pads a code object it profiles with no-ops
    and may add a constant. An edit that changes a name, a variable or a literal shows; one
    that only changes an operator does not.
    """
    shape = (
        "co_varnames",
        "co_freevars",
        "co_cellvars",
        "co_argcount",
        "co_posonlyargcount",
        "co_kwonlyargcount",
    )
    if any(getattr(made, attr) != getattr(original, attr) for attr in shape):
        return False
    made_names, made_values = _names_and_values(made)
    names, values = _names_and_values(original)
    return made_names == names and made_values <= values
