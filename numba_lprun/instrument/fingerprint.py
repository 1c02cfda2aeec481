"""What a twin's compiled code depends on, as a digest for its cache key.

Numba keys a cached function by its bytecode and closure and drops the whole index
when its source file changes; a jitted callee defined in another file, or a global
constant there, can then go stale in the cache. A twin inlines its callees (other
twins, the user's helpers) and freezes the globals it reads as constants, so its
key here covers them too: the code object (bytecode, constants, line numbers:
the twin's line tables and probe rows depend on them), default arguments, closure
cells and every global its code names, recursively through the jitted and Python
functions it reaches. A value that cannot be described stably (its ``repr``
carries a memory address, a very large array) makes the twin uncacheable: a key
that differs in every process would only fill the cache.
"""

from __future__ import annotations

import builtins
import enum
import hashlib
import re
import types as pytypes
import warnings
import weakref

import numpy as np
from numba import types as nbtypes

from . import probes as P

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_CLASS_ADDRESS = re.compile(r"#([0-9a-f]{8,})(?=<)")  # jitclass.P#7f92...<x:float64>
_ANY_ADDRESS = re.compile(r"#[0-9a-f]{8,}|0x[0-9a-fA-F]{6,}")
_MAX_ARRAY_BYTES = 1 << 20  # Numba freezes global arrays as constants; larger ones are not cached
_SCALARS = (type(None), bool, int, float, complex, str, bytes)

# Twin dispatcher -> its identity token (None: a one-off twin that is never cached).
_twin_tokens: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class Uncacheable(Exception):
    """Raised inside the description when a value has no stable description."""


def remember_twin(dispatcher: object, token: str | None) -> None:
    """Record ``dispatcher`` as a twin whose code is described by ``token``."""
    _twin_tokens[dispatcher] = token


def token_of(dispatcher: object) -> str | None:
    """The token ``remember_twin`` recorded for the twin ``dispatcher`` (None: none, or never cached)."""
    return _twin_tokens.get(dispatcher)


def code_digest(code: pytypes.CodeType) -> str:
    """The code object as compiled (bytecode, constants, names, file and line table).

    Not ``marshal.dumps``: marshal marks an object it writes as shared only while its
    reference count is above one, so the same code gave another digest once Numba had
    compiled a function holding its constants (a parallel twin's key changed between its
    load and its save, and it was never found again)."""
    return hashlib.sha256(_code_text(code).encode()).hexdigest()


_CODE_FIELDS = (
    *("co_name", "co_qualname", "co_filename", "co_firstlineno", "co_flags"),
    *("co_argcount", "co_posonlyargcount", "co_kwonlyargcount"),
    *("co_names", "co_varnames", "co_freevars", "co_cellvars"),
)
_CODE_BYTES = ("co_code", "co_linetable", "co_lnotab", "co_exceptiontable")


def _code_text(code: pytypes.CodeType) -> str:
    parts = [f"{name}={getattr(code, name)!r}" for name in _CODE_FIELDS if hasattr(code, name)]
    with warnings.catch_warnings():  # co_lnotab is deprecated (3.12) but still there
        warnings.simplefilter("ignore", DeprecationWarning)
        parts += [f"{name}={getattr(code, name).hex()}" for name in _CODE_BYTES if hasattr(code, name)]
    parts.append("consts=" + ",".join(_constant(c) for c in code.co_consts))
    return ";".join(parts)


def _constant(value: object) -> str:
    """A code constant, the same in every process (a frozenset's order follows the string hash)."""
    if isinstance(value, pytypes.CodeType):
        return f"code({_code_text(value)})"
    if isinstance(value, tuple):
        return "(" + ",".join(_constant(v) for v in value) + ")"
    if isinstance(value, frozenset):
        return "frozenset(" + ",".join(sorted(_constant(v) for v in value)) + ")"
    return f"{type(value).__name__}:{value!r}"


class _Walk:
    """One description in progress: what was visited (cycles) and the probe symbols met."""

    def __init__(self):
        self.seen: set[int] = set()
        self.symbols: set[str] = set()


def dependencies(py_func: pytypes.FunctionType) -> tuple[str, frozenset[str]] | None:
    """A digest of what ``py_func``'s code reaches by name, and the counters symbols of the
    probes met on the way; None when something has no stable description."""
    walk = _Walk()
    try:
        text = _function(py_func, walk)
    except Uncacheable:
        return None
    return hashlib.sha256(text.encode()).hexdigest(), frozenset(walk.symbols)


def describe(value: object) -> str | None:
    """A stable text for one value (None: it has none); used for default arguments and options."""
    try:
        return _value(value, _Walk())
    except Uncacheable:
        return None


def stable_signature(args: tuple) -> str | None:
    """``str(args)`` with each jitclass's address (``instance.jitclass.P#7f92...<x:float64>``)
    replaced by a digest of the class: its name, its fields (in the text already) and its
    members' code and what they reach (as ``dependencies`` describes a function). None: a
    class has no stable description. Numba's own types compare by that name, so a cached
    entry is found by this text instead of the types."""
    classes: dict[str, object] = {}
    for t in args:
        _jitclass_types(t, classes, set())
    walk = _Walk()

    def digest(found: re.Match) -> str:
        members = classes.get(found.group(1))
        if members is None:
            raise Uncacheable
        dicts = (members.jit_methods, members.jit_static_methods, members.jit_props)
        text = f"{members.class_name}:{[_value(d, walk) for d in dicts]}"
        return "#=" + hashlib.sha256(text.encode()).hexdigest()[:16]

    try:
        described = _CLASS_ADDRESS.sub(digest, str(args))
    except Uncacheable:
        return None
    return None if _ANY_ADDRESS.search(described) else described  # an address of another kind


def _jitclass_types(value: object, out: dict[str, object], seen: set[int]) -> None:
    """The jitclass types (``ClassType``) reachable from a Numba type, by the address in their name."""
    if id(value) in seen or len(seen) > 10_000:
        return
    seen.add(id(value))
    if isinstance(value, (tuple, list)):
        items = value
    elif isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, nbtypes.Type):
        if hasattr(value, "jit_methods") and hasattr(value, "struct"):  # a ClassType
            out[format(id(value), "x")] = value
        items = list(vars(value).values())
    else:
        return
    for item in items:
        _jitclass_types(item, out, seen)


def _names(code: pytypes.CodeType) -> set[str]:
    """Every name the code (and the code nested in it: lambdas, comprehensions) looks up."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names |= _names(const)
    return names


def _function(func: pytypes.FunctionType, walk: _Walk) -> str:
    if id(func) in walk.seen:
        return f"cycle:{func.__qualname__}"
    walk.seen.add(id(func))
    parts = [code_digest(func.__code__), _value(func.__defaults__, walk), _value(func.__kwdefaults__, walk)]
    namespace = func.__globals__
    for name in sorted(_names(func.__code__)):
        if name in namespace:
            parts.append(f"{name}={_value(namespace[name], walk)}")
        elif hasattr(builtins, name):
            parts.append(f"{name}=builtin")
    for cell in func.__closure__ or ():
        try:
            contents = cell.cell_contents
        except ValueError:
            parts.append("empty-cell")
            continue
        parts.append(_value(contents, walk))
    return "(" + ";".join(parts) + ")"


def _dispatcher(value: object, walk: _Walk) -> str:
    py_func = value.py_func
    try:
        is_twin = value in _twin_tokens
    except TypeError:  # not weak-referenceable: cannot be a twin
        is_twin = False
    if is_twin:
        token = _twin_tokens[value]
        if token is None:
            raise Uncacheable
        return f"twin:{token}:{_function(py_func, walk)}"
    options = getattr(value, "targetoptions", None) or {}
    described = sorted((str(k), _value(v, walk)) for k, v in options.items())
    return f"jit:{type(value).__qualname__}:{described}:{_function(py_func, walk)}"


def _value(value: object, walk: _Walk) -> str:
    """The description of ``value``; raises Uncacheable when there is no stable one."""
    if P.is_probe(value):
        token = P.probe_token(value)
        if token is None:
            raise Uncacheable
        walk.symbols.add(P.probe_symbol(value))
        return token
    if isinstance(value, _SCALARS):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, (tuple, list, frozenset, set)):
        items = [_value(v, walk) for v in value]
        if isinstance(value, (set, frozenset)):
            items.sort()
        return f"{type(value).__name__}[{','.join(items)}]"
    if isinstance(value, dict):
        items = sorted(f"{_value(k, walk)}={_value(v, walk)}" for k, v in value.items())
        return f"dict[{','.join(items)}]"
    if isinstance(value, pytypes.ModuleType):
        return f"module:{value.__name__}"
    if isinstance(value, pytypes.FunctionType):
        return "function:" + _function(value, walk)
    if _is_dispatcher(value):
        return _dispatcher(value, walk)
    if isinstance(value, np.ndarray):
        if value.nbytes > _MAX_ARRAY_BYTES or value.dtype.hasobject:
            raise Uncacheable
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return f"array:{value.dtype.str}:{value.shape}:{digest}"
    if _is_jitclass(value):  # its members are reached through the class type (swapped for a run)
        members = value.class_type
        dicts = (members.jit_methods, members.jit_static_methods, members.jit_props)
        described = [_value(d, walk) for d in dicts]
        return f"jitclass:{value.__module__}.{value.__qualname__}:{described}"
    if isinstance(value, (type, pytypes.BuiltinFunctionType, np.ufunc)):
        module = getattr(value, "__module__", None) or type(value).__module__
        return f"{type(value).__name__}:{module}.{getattr(value, '__qualname__', value.__name__)}"
    if isinstance(value, (np.generic, enum.Enum)):
        return f"{type(value).__module__}.{type(value).__qualname__}:{value!r}"
    text = repr(value)
    if _ADDRESS.search(text):
        raise Uncacheable
    return f"{type(value).__module__}.{type(value).__qualname__}:{text}"


def _is_jitclass(value: object) -> bool:
    members = getattr(value, "class_type", None) if isinstance(value, type) else None
    return hasattr(members, "jit_methods") and hasattr(members, "jit_props")


def _is_dispatcher(value: object) -> bool:
    """A jitted function (CPU dispatcher or the like): it has the Python function it compiles."""
    py_func = getattr(value, "py_func", None)
    return isinstance(py_func, pytypes.FunctionType) and hasattr(value, "targetoptions")
