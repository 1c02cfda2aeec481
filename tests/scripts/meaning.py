"""What Numba code means, case by case, printed as lines starting with "R ": the test runs this
script plain and under ``nlprun`` and compares them (results, exceptions, warnings), then the
hits of the functions each case profiles. Every Numba warning is an error here, as in test
suites that turn warnings into errors: a twin's compile must not warn where the original's
would not."""

import dis
import warnings

import numpy as np
from numba import int64, jit, njit, objmode
from numba.core import ir as numba_ir
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.errors import NumbaWarning, UnsupportedError
from numba.core.untyped_passes import IRProcessing
from numba.experimental import jitclass

warnings.simplefilter("error", NumbaWarning)


def report(label, thunk):
    try:
        value = thunk()
    except Exception as exc:  # the exception's type is what is compared
        value = f"raised {type(exc).__name__}"
    print(f"R {label}: {value!r}")


# explicit signatures: arguments are converted to them, and nothing else compiles
def ident(x):
    return x


def div(a, b):
    return a // b


as_float = njit("float64(float64)")(ident)
report("cast to the signature", lambda: as_float(3))
wrapping = njit("int32(int32, int32)")(div)
report("int32 wraps", lambda: wrapping(2**40, 3))
report("no matching signature", lambda: as_float("a"))


@njit
def twice(x):
    return x * 2


report("twice(1)", lambda: twice(1))
twice.disable_compile()
report("after disable_compile", lambda: twice(1.5))


# private names, mangled in the class they are written in
@jitclass([("__value", int64)])
class Counter:
    def __init__(self, v):
        self.__value = v

    def get(self):
        return self.__value


report("jitclass private attribute", lambda: Counter(5).get())

record = np.dtype([("__value", np.float64), ("_Holder__value", np.float64)])


class Holder:
    def reader(self):
        @njit
        def read(rec):
            return rec.__value

        return read


rows = np.zeros(1, dtype=record)
rows[0]["__value"], rows[0]["_Holder__value"] = 1.0, 2.0
report("record field mangled in a method's closure", lambda: Holder().reader()(rows[0]))


# closures that call themselves, and a sibling defined after them
def make_fib():
    @njit
    def fib3(n):
        if n < 2:
            return n
        return fib3(n - 1) + fib3(n - 2)

    return fib3


report("self-recursive closure", lambda: make_fib()(10))


def later_sibling():
    @njit
    def foo(x):
        return inner(x) + 1

    @njit
    def inner(x):
        return x * 2

    return foo(2)


report("closure calling a later sibling", later_sibling)


# mutual recursion between module functions
@njit
def outer_fac(n):
    if n < 1:
        return 1
    return n * inner_fac(n - 1)


@njit
def inner_fac(n):
    if n < 1:
        return 1
    return n * outer_fac(n - 1)


report("mutual recursion", lambda: outer_fac(10))


# object mode: made during the run, it runs as itself
def made_in_object_mode():
    def plus_one(x):
        return x + 1

    return jit(plus_one, forceobj=True)(1)


report("object mode", made_in_object_mode)


# an array expression and a lambda: their twins' compiles must not warn
@njit
def array_expression(a, b):
    c = a * 2.0 + b
    g = lambda x: x + 1  # noqa: E731
    return c.sum() + g(1)


report("array expression", lambda: array_expression(np.ones(4), np.ones(4)))


# a with objmode block: counted once per call
@njit
def with_objmode(n):
    s = 0
    for i in range(n):
        s += i
    with objmode(y="int64"):
        y = sum(range(10))
    return s + y


report("objmode block", lambda: with_objmode(100))


# a generator consumed by a function compiled during the run
@njit
def evens(n):
    for i in range(n):
        yield 2 * i


@njit
def consume(n):
    s = 0
    for v in evens(n):
        s += v
    return s


report("generator consumed", lambda: consume(5))


# cache=True: the second dispatcher of a function loads the first one's code
def cached(x):
    return x + 1


first = njit(cache=True)(cached)
report("cached first", lambda: first(1))
second = njit(cache=True)(cached)
report("cached second", lambda: (second(1), bool(second.stats.cache_hits), bool(second._cache_hits)))


# a pipeline of the program's own that refuses calls it does not know: the twin's probes are such
# calls, so the twin cannot compile, and the original runs as itself (said after the tables)
@register_pass(mutates_CFG=False, analysis_only=True)
class OnlyKnownCalls(FunctionPass):
    _name = "meaning_only_known_calls"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        for block in state.func_ir.blocks.values():
            for assign in block.find_insts(numba_ir.Assign):
                value = assign.value
                if isinstance(value, numba_ir.Global) and callable(value.value) and value.name != "abs":
                    raise UnsupportedError(f"{value.name} is not a call this pipeline allows")
        return False


class Sandboxed(CompilerBase):
    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(OnlyKnownCalls, IRProcessing)
        pm.finalize()
        return [pm]


@njit(pipeline_class=Sandboxed)
def sandboxed(x):
    return abs(x) + 1


report("a pipeline the twin cannot pass", lambda: sandboxed(-3))


# a global rebound after the def: the function compiles (at its first call) with what the module
# holds then, and so must its twin, made when the decorator ran
SCALE = 1


@njit
def scaled(x):
    return x * SCALE


SCALE = 2
report("a global rebound after the def", lambda: scaled(3))


# an objmode block naming a global bound after the def (here the function's own name): object-mode
# code reads the globals dict itself, at run time
@njit
def names_itself(x):
    with objmode(y="int64"):
        y = int(names_itself.py_func.__name__ == "names_itself")
    return x + y


report("objmode reads a later global", lambda: names_itself(1))


# the program reading its own code (dis) in an objmode block sees the code it wrote
@njit
def reads_itself(x):
    with objmode(y="int64"):
        y = 0
        for instruction in dis.get_instructions(reads_itself):
            if "_nlp" in str(instruction.argval):
                y += 1
    return x + y


report("the program's view of its own code", lambda: reads_itself(1))
