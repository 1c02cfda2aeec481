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
import dis
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
    """Whether ``tree`` (a def found in the source) compiles, in place, to ``py_func``'s code:
    the same instructions, names and constants. False for a def edited since ``py_func`` was
    made (the twin would compute what the edit says), or another lambda of the same line."""
    try:
        module = compile(placed(tree, py_func), filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    made = _nested(module, TWIN_DEF)
    return made is not None and _shape(made) == _shape(py_func.__code__)


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


#: Instructions the compiler chooses by context outside the def (an attribute of a name imported at
#: the module's top level is loaded as an attribute, else as a method, in Python 3.11): one meaning.
_SAME_AS = {"LOAD_METHOD": "LOAD_ATTR"}
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
#: No-ops (line_profiler pads a code object it profiles with some) and the prefix of an argument
#: too wide for one byte (a jump over longer code: where it lands is not compared)
_NO_MEANING = frozenset({"NOP", "EXTENDED_ARG"})
_BY_VALUE = frozenset(dis.hasname) | frozenset(dis.haslocal) | frozenset(dis.hasfree)


def _shape(code: CodeType) -> tuple:
    """What a code object computes, without its name, line numbers, jump offsets or no-ops: its
    instructions (by meaning), with the names, constants and variables they use."""
    steps = []
    for instr in dis.get_instructions(code):
        if instr.opname in _NO_MEANING:
            continue
        if instr.opcode in _JUMPS:
            operand: object = None  # where it lands follows from the instructions around it
        elif instr.opcode in dis.hasconst:
            value = instr.argval
            operand = _shape(value) if isinstance(value, CodeType) else (type(value).__name__, repr(value))
        elif instr.opcode in _BY_VALUE:
            operand = instr.argval
        else:
            operand = instr.arg
        steps.append((_SAME_AS.get(instr.opname, instr.opname), operand))
    counts = (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount)
    return (tuple(steps), code.co_varnames, code.co_freevars, code.co_cellvars, counts)
