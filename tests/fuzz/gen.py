"""Hypothesis strategies that write small random Numba-compatible functions as source text.

``programs()`` draws the text of a module: two jitted helpers (``ihelp`` and
``fhelp``) and ``target(n, m, a, t)``, an ``@njit`` function built from nested
``for`` and ``while`` loops, ``if``/``elif``/``else``, ``break``, ``continue``,
early returns, loop ``else`` clauses, several statements on one line and
statements and conditions spread over several lines. ``inputs()`` draws arguments
for it: ``n`` in 0..4, ``m`` in -6..6, ``a`` a float array of 1..5 elements and
``t`` a float (array elements and ``t`` are multiples of 0.25, so sums are exact).

The programs are built so that CPython and Numba agree on them:

* every loop terminates: ``for`` loops run over short ranges or the array, and
  every ``while`` loop is driven by its own counter, incremented first thing in
  its body (so ``continue`` cannot skip it) and bounded by a small constant;
* integers stay far from 64-bit overflow: integer variables are only assigned
  ``(...) % M`` or changed by small steps, and expressions multiply at most four
  bounded atoms;
* division only by positive constants, no float ``%``/``//`` and no ``**``, but for one
  statement that divides by ``(...) % 3`` and raises ``ZeroDivisionError`` where that is 0;
  ``raise ValueError`` as a block's last statement, and calls of ``icheck``, a helper that
  raises ``ValueError`` on some arguments, and a slice whose step is ``(...) % 3`` (``ValueError``
  where it is 0): a call may raise on any iteration, and the hits of the lines that ran before
  must still be line_profiler's; slices with any bounds (they clamp) read windows of the array;
* types never change: ``x``/``y`` are always int, ``f``/``g`` always float (an
  integer-only float expression is wrapped in ``float()``), loop variables are
  read only inside their loop, and every ``return`` returns ``x, y, f, g, b``;
* the input array is copied (``b = a.copy()``) before it is written, so running
  a function twice (a profiler's baseline run) gives the same result;
* floats may overflow to inf or nan: CPython and Numba do the same IEEE
  operations (no fast-math), and results compare NaN equal to NaN.

Expressions that branch over lines (``and``/``or`` or a conditional expression
as a value, chained comparisons) and a statement over lines that raises before its
last line event (the stride's ``.sum`` after a raising slice) are numba_lprun's known
limitations (see test_fuzz.py): they are written on one line unless
``programs(risky=True)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

HELPERS = """\
import numpy as np
from numba import njit


@njit
def ihelp(p, q):
    return (p * 7 + q) % 101


@njit
def fhelp(u, v):
    return 0.5 * u + v


@njit
def icheck(p):
    if p % 11 == 7:
        raise ValueError("icheck")
    return p % 101


K = 3


"""

BR = "\x00"  # a line break inside brackets, indented when the statement is laid out
WRITABLE_INTS = ("x", "y")
WRITABLE_FLOATS = ("f", "g")
RETURN = "return x, y, f, g, b"
RETURN_SPLIT = f"return (x,{BR}y, f,{BR}g, b)"


@dataclass
class Scope:
    """What a statement may use where it is generated."""

    ints: list[str] = field(default_factory=lambda: ["x", "y", "n", "m"])
    floats: list[str] = field(default_factory=lambda: ["f", "g", "t"])
    loops: int = 0  # enclosing loops (break and continue allowed when > 0)
    depth: int = 0  # nesting of compound statements

    def inner(self, ints=(), floats=(), loop=False) -> Scope:
        return Scope(
            self.ints + list(ints), self.floats + list(floats), self.loops + int(loop), self.depth + 1
        )


class _Writer:
    """Draws one function body; each statement is a list of (indent, text) lines."""

    def __init__(self, draw, max_stmts: int, risky: bool = False):
        self.draw = draw
        self.risky = risky  # also write the known limitations (see test_fuzz.py)
        self.budget = max_stmts
        self.names = 0  # loop variables and counters get fresh names
        self.breaks = 0  # > 0 inside an expression that must stay on one line

    # -- choices (every one shrinks towards the simplest option) --------------------
    def chance(self, percent: int) -> bool:
        return self.draw(st.integers(0, 99)) >= 100 - percent

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def br(self, percent: int = 15) -> str:
        return BR if self.breaks == 0 and self.chance(percent) else ""

    def one_line(self, make, *args) -> str:
        """``make(*args)`` with no line breaks inside it (unless risky)."""
        self.breaks += not self.risky
        try:
            return make(*args)
        finally:
            self.breaks -= not self.risky

    def fresh(self, stem: str) -> str:
        self.names += 1
        return f"{stem}{self.names}"

    # -- expressions ----------------------------------------------------------------
    def iatom(self, sc: Scope) -> str:
        kind = self.pick(["const", "var", "var", "len", "global"])
        if kind == "const":
            return str(self.draw(st.integers(0, 9)))
        if kind == "len":
            return "len(b)"
        if kind == "global":
            return "K"
        return self.pick(sc.ints)

    def iexpr(self, sc: Scope, depth: int = 2) -> str:
        if depth == 0 or not self.chance(55):
            return self.iatom(sc)
        kind = self.pick(["bin", "bin", "mod", "floordiv", "call", "abs", "minmax", "ifexp"])
        if kind == "bin":
            op = self.pick(["+", "-", "*"])
            return f"({self.iexpr(sc, depth - 1)} {op}{self.br()} {self.iexpr(sc, depth - 1)})"
        if kind in ("mod", "floordiv"):
            op = "%" if kind == "mod" else "//"
            return f"({self.iexpr(sc, depth - 1)} {op} {self.draw(st.integers(1, 7))})"
        if kind == "call":
            return f"ihelp({self.iexpr(sc, depth - 1)},{self.br()} {self.iexpr(sc, depth - 1)})"
        if kind == "abs":
            return f"abs({self.iexpr(sc, depth - 1)})"
        if kind == "minmax":
            fn = self.pick(["min", "max"])
            return f"{fn}({self.iexpr(sc, depth - 1)}, {self.iexpr(sc, depth - 1)})"
        # a conditional expression, on one line (a multi-line one branches over lines)
        return f"({self.iatom(sc)} if {self.one_line(self.cond, sc, 0)} else {self.iatom(sc)})"

    def index(self, sc: Scope) -> str:
        return f"b[{self.iexpr(sc, 1)} % len(b)]"

    def fatom(self, sc: Scope) -> str:
        kind = self.pick(["var", "const", "elem", "var", "int", "sum", "window"])
        if kind == "var":
            return self.pick(sc.floats)
        if kind == "const":
            return self.pick(["0.5", "1.25", "-2.0", "3.0"])
        if kind == "elem":
            return self.index(sc)
        if kind == "int":
            return self.iatom(sc)
        if kind == "window":  # a view (slices clamp: any bounds)
            return f"b[{self.iatom(sc)} :{self.br()} {self.iatom(sc)}].sum()"
        return "b.sum()" if self.chance(50) else "np.sum(b)"

    def fexpr(self, sc: Scope, depth: int = 2) -> str:
        text = self._fexpr(sc, depth)
        if not any(name in text for name in ("f", "g", "t", ".", "b[", "v")):
            text = f"float({text})"  # keep float variables float in CPython too
        return text

    def _fexpr(self, sc: Scope, depth: int) -> str:
        if depth == 0 or not self.chance(55):
            return self.fatom(sc)
        kind = self.pick(["bin", "bin", "call", "abs"])
        if kind == "bin":
            op = self.pick(["+", "-", "*"])
            return f"({self._fexpr(sc, depth - 1)} {op}{self.br()} {self._fexpr(sc, depth - 1)})"
        if kind == "call":
            return f"fhelp({self._fexpr(sc, depth - 1)},{self.br()} {self._fexpr(sc, depth - 1)})"
        return f"abs({self._fexpr(sc, depth - 1)})"

    def cond(self, sc: Scope, depth: int = 2) -> str:
        br = self.br
        if depth == 0 or not self.chance(40):
            kind = self.pick(["int", "int", "float", "parity", "chain"])
            if kind == "chain":
                low, high = sorted((self.draw(st.integers(-3, 9)), self.draw(st.integers(-3, 9))))
                return f"{low} <= {self.one_line(self.iexpr, sc, 1)} < {high}"
            if kind == "int":
                op = self.pick([">", "<", "==", "!=", ">=", "<="])
                return f"{self.iexpr(sc, 1)} {op}{br(10)} {self.iexpr(sc, 1)}"
            if kind == "float":
                op = self.pick([">", "<", ">=", "<="])
                return f"{self.fexpr(sc, 1)} {op} {self.pick(['0.0', '1.5', '-1.0', '4.0'])}"
            return f"{self.pick(sc.ints)} % 2 == {self.draw(st.integers(0, 1))}"
        kind = self.pick(["and", "or", "not"])
        if kind == "not":
            return f"not ({self.cond(sc, depth - 1)})"
        return f"({self.cond(sc, depth - 1)} {kind}{br(35)} {self.cond(sc, depth - 1)})"

    # -- statements -------------------------------------------------------------------
    def simple(self, sc: Scope, terminators: bool = True) -> tuple[str, bool]:
        """One simple statement and whether it ends its block."""
        kinds = ["iassign", "iaug", "fassign", "faug", "store", "swap", "pass", "call", "assert"]
        kinds += ["divide", "check", "stride"]
        if self.risky:
            kinds += ["branchy"]
        if terminators:
            kinds += ["return", "raise"] + (["break", "continue"] if sc.loops else [])
        kind = self.pick(kinds)
        if kind == "iassign":
            return (
                f"{self.pick(WRITABLE_INTS)} = ({self.iexpr(sc)}) % {self.pick(['7', '101', '1009'])}",
                False,
            )
        if kind == "iaug":
            step = self.pick([str(self.draw(st.integers(1, 9))), self.pick(sc.ints[2:]), None])
            step = step if step is not None else f"({self.iexpr(sc, 1)}) % 7"
            return f"{self.pick(WRITABLE_INTS)} {self.pick(['+=', '-='])} {step}", False
        if kind == "fassign":
            return f"{self.pick(WRITABLE_FLOATS)} = {self.fexpr(sc)}", False
        if kind == "faug":
            op = self.pick(["+=", "-=", "*="])
            value = "0.5" if op == "*=" else self.fexpr(sc)
            return f"{self.pick(WRITABLE_FLOATS)} {op} {value}", False
        if kind == "store":
            return f"{self.index(sc)} {self.pick(['=', '+='])} {self.fexpr(sc, 1)}", False
        if kind == "swap":
            return self.pick(["x, y = y, x", "f, g = g, f"]), False
        if kind == "pass":
            return "pass", False
        if kind == "assert":  # always true
            value = self.iexpr(sc, 1)
            if self.chance(50):
                test = f"({value}) =={self.br(30)} ({value})"
            else:
                test = f"len(b) >{self.br(30)} 0"
            return f"assert ({test})" + (', "never"' if self.chance(30) else ""), False
        if kind == "call":
            return f"ihelp({self.iexpr(sc, 1)},{self.br()} {self.iexpr(sc, 1)})", False
        if kind == "divide":  # ZeroDivisionError where the remainder is 0
            return f"{self.pick(WRITABLE_INTS)} = ({self.iexpr(sc, 1)}) // (({self.iexpr(sc, 1)}) % 3)", False
        if kind == "stride":  # ValueError where the step is 0
            # on one line (unless risky): the raise comes before the line event of ``.sum`` on a
            # later line, which numba_lprun counts as if the statement had completed
            name = self.pick(WRITABLE_FLOATS)
            start, step = self.one_line(lambda: (self.iatom(sc), self.iexpr(sc, 1)))
            return f"{name} = b[{start}::({step}) % 3].sum()", False
        if kind == "check":  # ValueError on some arguments
            return f"{self.pick(WRITABLE_INTS)} = icheck({self.iexpr(sc, 1)})", False
        if kind == "raise":
            return 'raise ValueError("fuzz")', True
        if kind == "branchy":  # a conditional expression or and/or as a value, over lines
            if self.chance(50):
                test = self.cond(sc, 1)
                return f"x = ({self.iexpr(sc, 1)} if{BR} {test} else{self.br(50)} {self.iexpr(sc, 1)})", False
            op = self.pick(["and", "or"])
            return f"y = ({self.iexpr(sc, 1)} % 3 {op}{BR} {self.iexpr(sc, 1)} % 5)", False
        if kind == "return":
            return (RETURN_SPLIT if self.chance(25) else RETURN), True
        return kind, True

    def simple_group(self, sc: Scope, terminators: bool = True) -> tuple[str, bool]:
        """One to three simple statements on one line, ``a = 1; b = 2``."""
        parts, ends = [], False
        for _ in range(1 + (self.draw(st.integers(0, 2)) if self.chance(30) else 0)):
            text, ends = self.simple(sc, terminators)
            parts.append(text)
            self.budget -= 1
            if ends:
                break
        return "; ".join(parts), ends

    def block(self, sc: Scope, indent: int, first: list | None = None) -> tuple[list, bool]:
        """An indented block of at least one statement; whether it ends in a terminator."""
        lines = list(first or [])
        ends = False
        while True:
            stmt, ends = self.statement(sc, indent)
            lines.extend(stmt)
            if ends and self.chance(5):  # dead code after a terminator
                text, _ = self.simple_group(sc, terminators=False)
                lines.append((indent, text))
            if ends or self.budget <= 0 or not self.chance(45):
                return lines, ends

    def statement(self, sc: Scope, indent: int) -> tuple[list, bool]:
        compound = ["if", "for", "while", "while_true"] if sc.depth < 3 and self.budget > 1 else []
        kind = self.pick(["simple", "simple"] + compound + compound[:2])
        if kind == "simple":
            text, ends = self.simple_group(sc)
            return [(indent, text)], ends
        self.budget -= 1
        if kind == "if":
            return self.if_stmt(sc, indent), False
        if kind == "for":
            return self.for_stmt(sc, indent), False
        if kind == "while":
            return self.while_stmt(sc, indent), False
        return self.while_true(sc, indent), False

    def clause(self, header: str, sc: Scope, indent: int, one_line_ok: bool = True) -> list:
        """``header:`` and its body, on the header's line or as a block below it."""
        if one_line_ok and self.chance(30):
            text, _ = self.simple_group(sc)
            return [(indent, f"{header} {text}")]
        body, _ = self.block(sc, indent + 4)
        return [(indent, header)] + body

    def if_stmt(self, sc: Scope, indent: int) -> list:
        inner = sc.inner()
        lines = self.clause(f"if {self.test(sc)}:", inner, indent)
        for _ in range(self.draw(st.integers(1, 2)) if self.chance(40) else 0):
            lines += self.clause(f"elif {self.test(sc)}:", inner, indent)
        if self.chance(40):
            lines += self.clause("else:", inner, indent)
        return lines

    def test(self, sc: Scope) -> str:
        """A condition for ``if``/``elif``/``while``, often spread over lines."""
        if self.chance(35):
            op = self.pick(["and", "or"])
            text = f"{self.cond(sc, 1)} {op}{BR} {self.cond(sc, 1)}"
        else:
            text = self.cond(sc)
        return f"({text})" if BR in text else text

    def loop_else(self, sc: Scope, indent: int) -> list:
        return self.clause("else:", sc.inner(), indent) if self.chance(25) else []

    def for_stmt(self, sc: Scope, indent: int) -> list:
        if self.chance(20):
            var = self.fresh("v")
            inner = sc.inner(floats=[var], loop=True)
            header = f"for {var} in ({self.br(20)}b):"
        else:
            var = self.fresh("i")
            inner = sc.inner(ints=[var], loop=True)
            kind = self.pick(["const", "n", "len", "two"])
            if kind == "const":
                bounds = str(self.draw(st.integers(0, 4)))
            elif kind == "n":
                bounds = f"{self.br(10)}n"
            elif kind == "len":
                bounds = "len(b)"
            else:
                bounds = f"{self.pick(['m', '0', '1'])},{self.br(30)} {self.pick(['n', '3', 'len(b)'])}"
            header = f"for {var} in range({bounds}):"
        return self.clause(header, inner, indent) + self.loop_else(sc, indent)

    def while_stmt(self, sc: Scope, indent: int) -> list:
        k = self.fresh("k")
        inner = sc.inner(ints=[k], loop=True)
        bound = self.pick(["3", "n", "2", "4", "0"])
        test = f"{k} < {bound}"
        if self.chance(40):
            extra = self.cond(inner, 1)
            test = f"({test} and{self.br(50)} {extra})"
        step = f"{k} += 1"
        if self.chance(30):  # the body on the header line: while k < 3: k += 1
            text = step
            if self.chance(50):
                more, _ = self.simple_group(inner)
                text = f"{step}; {more}"
            lines = [(indent, f"while {test}: {text}")]
        else:
            body, _ = self.block(inner, indent + 4, [(indent + 4, step)])
            lines = [(indent, f"while {test}:")] + body
        return [(indent, f"{k} = 0")] + lines + self.loop_else(sc, indent)

    def while_true(self, sc: Scope, indent: int) -> list:
        k = self.fresh("k")
        inner = sc.inner(ints=[k], loop=True)
        stop = f"if {k} > {self.pick(['2', 'n', '3'])}:"
        guard = [(indent + 4, f"{stop} break")]
        if self.chance(40):
            guard = [(indent + 4, stop), (indent + 8, "break")]
        body, _ = self.block(inner, indent + 4, [(indent + 4, f"{k} += 1")] + guard)
        return [(indent, f"{k} = 0"), (indent, "while True:")] + body + self.loop_else(sc, indent)


def layout(lines: list) -> str:
    """Source text of (indent, text) lines; ``BR`` becomes a newline inside brackets."""
    out = []
    for indent, text in lines:
        pad = " " * indent
        out.append(pad + text.replace(BR, "\n" + pad + " " * 8))
    return "\n".join(out) + "\n"


@st.composite
def programs(draw, max_stmts: int = 14, risky: bool = False):
    """Source text of a module defining the helpers and ``target(n, m, a, t)``."""
    w = _Writer(draw, draw(st.integers(2, max_stmts)), risky)
    sc = Scope()
    head = [(4, "x = m; y = 0")] if w.chance(30) else [(4, "x = m"), (4, "y = 0")]
    head += [(4, "f = t"), (4, "g = 0.0"), (4, "b = a.copy()")]
    body, ends = w.block(sc, 4, head)
    if not ends:
        body.append((4, RETURN_SPLIT if w.chance(20) else RETURN))
    return HELPERS + "@njit\ndef target(n, m, a, t):\n" + layout(body)


_QUARTERS = st.integers(-16, 16).map(lambda q: q / 4)


@st.composite
def inputs(draw):
    """Arguments ``(n, m, a, t)`` for ``target``."""
    import numpy as np

    n = draw(st.integers(0, 4))
    m = draw(st.integers(-6, 6))
    a = np.array(draw(st.lists(_QUARTERS, min_size=1, max_size=5)), dtype=np.float64)
    return n, m, a, draw(_QUARTERS)
