"""The probes compiled into a twin: Numba intrinsics that read the clock and bump counters.

Each profiled function gets its own counter array, and its own set of intrinsics
whose code reaches that array at a fixed address (patched in at load time, see
below), so a probe is a clock read and two memory updates with no argument
passing. The per-call state (the previous line and when it started) lives in a
stack slot of the LLVM function the probe is lowered into: LLVM promotes it to
registers, every call (and every ``prange`` worker, whose body is a function of
its own) gets its own, and nothing Python can see is added, so reductions and
type inference are left alone. A generator's body is re-entered at each resume,
so the time it spends suspended is charged to no line (``ProbeConfig.local_hits``).

Counter layout, one row of two int64 per entry: rows ``0..n-1`` are the lines
(hits, ticks), row ``n`` is a trash row charged when there is no previous line,
row ``n+1`` holds the function totals (calls, ticks from entry to return).

The counters' address is not in the code: the probes name an external symbol
(``CounterSlot``), registered with the JIT (``internals.register_symbol``) before
the twin compiles, whose linker writes the address into the code when it loads it,
fresh or from the disk cache. The machine code is the same as with the address as
a constant (``benchmarks/relocatable_probes.py``), and can be cached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ..internals import branching_here, ir_pass
from .branch_budget import note_counts_in_registers
from .clock import emit_read
from .counter_slots import (  # noqa: F401  (the symbol helpers, re-exported for twin_cache and twin_identity)
    CounterSlot,
    may_keep,
    resolves_as_meant,
    symbol_taken,
    symbols_in,
)
from .derived_counts import DERIVED, PLANNED, Plan, decode, derive
from .derived_counts import ENTRY as ENTRY_BASE
from .derived_counts import RETURNED as RETURNED_BASE
from .exits import exits_flushed, flush_on_exit
from .probe_intrinsics import line_intrinsic, no_arg_intrinsic
from .select_compares import REGISTER_COUNTS
from .stripes import STRIPES, CounterTable, emit_thread_stripe, layout, stripes_supported

_I64 = ir.IntType(64)
_I32 = ir.IntType(32)
PREV_ROW, PREV_T, ENTRY_T, LOCAL_HITS = 0, 1, 2, 3  # fields of the state slot


def stripes_for(concurrent: bool) -> int:
    """Per-thread stripes of a twin's counters: where it runs on several threads at once and the
    platform lets a thread find its own."""
    return STRIPES if concurrent and stripes_supported() else 0


def new_counters(n_lines: int, concurrent: bool = False) -> CounterTable:
    """Zeroed counters for ``n_lines`` lines plus the trash and totals rows (``stripes_for``)."""
    return CounterTable(n_lines, stripes_for(concurrent))


@dataclass(frozen=True)
class ProbeConfig:
    """What a set of probes does; one config per twin of one function."""

    address: int  # of the counters' data; the array must outlive the compiled code
    n_lines: int
    clock: str  # "tsc" or "monotonic"
    timing: bool = True  # read the clock on every line (False: hit counts only)
    atomic: bool = False  # counters may be touched by several threads (parallel=True, nogil=True)
    suspends: bool = False  # a generator: its stack slot is made afresh at every resume
    call_clock: bool = True  # read the clock at each call's entry and exit (False: calls counted only)
    per_point: bool = False  # a stencil's kernel: its body runs, inlined, once per point of a loop nest
    stripes: int = 0  # per-thread copies of the counters (``stripes``): flushes add to the thread's own
    counts_calls: bool = True  # count each call where it is not timed (False: see ``silent``)

    @property
    def silent(self) -> bool:
        """Whether the probes emit nothing at all: a plain twin of a function whose calls are not
        timed (a helper jitted code calls, a stencil's kernel), which is then its original's code
        with line tables. Its call count was used by nothing (its time is its samples'), and
        counting it was code the original has not: a count in a register in every loop the
        helper is inlined into, a flush at each exit, and the inline hint that flush takes."""
        return not self.counts_calls and not self.clocks_calls

    @property
    def clocks_calls(self) -> bool:
        """Whether each call is timed from entry to exit: always with clock probes on the lines;
        without them, unless the profile shows no times at all (``--hits``), where two clock reads
        and an atomic update per call would be all a hot inlined helper's profile costs."""
        return self.timing or self.call_clock

    @property
    def local_calls(self) -> bool:
        """Calls counted in the stack slot with the hits (a field after the lines'), flushed with them."""
        return self.local_hits and not self.clocks_calls

    @property
    def local_hits(self) -> bool:
        """Hits-only mode counts in the stack slot, flushed at return; a generator's slot
        does not survive a yield, so there every hit goes straight to the counters."""
        return not self.timing and not self.suspends

    @property
    def trash_row(self) -> int:
        return self.n_lines

    def token(self) -> str:
        """Everything in the config that shapes the code (all but the counters' address)."""
        shape = (self.n_lines, self.clock, self.timing, self.atomic, self.suspends, self.clocks_calls)
        token = ":".join(map(str, shape)) + (":per-point" if self.per_point else "")
        token += ":silent" if self.silent else ""
        return token + (f":stripes{self.stripes}" if self.stripes else "")

    @property
    def totals_row(self) -> int:
        return self.n_lines + 1


FIELDS_NAME, STATE_NAME = REGISTER_COUNTS  # the stack slots of counts kept in registers


class _Emitter:
    """LLVM snippets shared by the intrinsics of one ProbeConfig."""

    def __init__(self, cfg: ProbeConfig, slot: CounterSlot):
        self.cfg = cfg
        self.slot = slot
        self.plans: list[Plan] = []  # ``derived_counts``: one per function compiled with a plan

    def register_plan(self, plan: Plan) -> int:
        """Keep ``plan`` for the line probes that name it (by its index, in their literal)."""
        self.plans.append(plan)
        return len(self.plans) - 1

    def plan_fields(self, builder: ir.IRBuilder, plan: Plan) -> ir.Value:
        """The stack array of the function's counted probes' fields (``derived_counts``), made on
        first use, zeroed at entry; the flush reads the plan from the function."""
        fn = builder.function
        plans = getattr(fn, "_nlp_plans", None)
        if plans is None:
            plans = fn._nlp_plans = {}
        key = self.slot.name
        if key not in plans:
            with builder.goto_entry_block():
                fields = builder.alloca(ir.ArrayType(_I64, max(plan.n_fields, 1)), name=FIELDS_NAME)
                for field in range(plan.n_fields):
                    self.set(builder, fields, field, ir.Constant(_I64, 0))
            plans[key] = (plan, fields)
        elif plans[key][0] is not plan:
            raise AssertionError(f"two count plans in one function ({fn.name})")
        return plans[key][1]

    def base(self, builder: ir.IRBuilder) -> ir.Value:
        """The counters' first cell: the slot's symbol, declared in the module being lowered."""
        module = builder.module
        name = self.slot.name
        symbol = module.globals.get(name)
        if symbol is None:
            symbol = ir.GlobalVariable(module, ir.ArrayType(_I64, 0), name=name)
            symbol.linkage = "external"
        return builder.bitcast(symbol, _I64.as_pointer())

    def cell(self, builder: ir.IRBuilder, row, column: int, stripe: ir.Value | None = None) -> ir.Value:
        base = self.base(builder)
        if isinstance(row, int):
            index = ir.Constant(_I64, 2 * row + column)
        else:
            index = builder.add(builder.shl(row, ir.Constant(_I64, 1)), ir.Constant(_I64, column))
        if stripe is not None:
            cells = layout(self.cfg.n_lines, self.cfg.stripes)[1]
            index = builder.add(index, builder.mul(stripe, ir.Constant(_I64, cells)))
        return builder.gep(base, [index])

    def add(self, builder: ir.IRBuilder, row, column: int, amount: ir.Value, stripe=None) -> None:
        """Add to a counter: of stripe 0 (atomically where threads meet), or of ``stripe``, the
        calling thread's own (a plain add: no other thread writes it)."""
        ptr = self.cell(builder, row, column, stripe)
        if self.cfg.atomic and stripe is None:
            builder.atomic_rmw("add", ptr, amount, "monotonic")
        else:
            builder.store(builder.add(builder.load(ptr), amount), ptr)

    def state(self, builder: ir.IRBuilder) -> ir.Value:
        """The per-call state slot of the function being lowered, made on first use.

        It is initialised in the entry block (no previous line; with clock probes,
        the clock read at entry), so probes in code with no explicit ``enter`` (a
        ``prange`` body outlined into a worker function) start from a defined state.
        """
        fn = builder.function
        slots = getattr(fn, "_nlp_state_slots", None)
        if slots is None:
            slots = fn._nlp_state_slots = {}
        key = self.slot.name
        if key not in slots:
            local_rows = (self.cfg.n_lines if self.cfg.local_hits else 0) + self.cfg.local_calls
            with builder.goto_entry_block():
                slot = builder.alloca(ir.ArrayType(_I64, LOCAL_HITS + local_rows), name=STATE_NAME)
                self.set(builder, slot, PREV_ROW, ir.Constant(_I64, self.cfg.trash_row))
                if self.cfg.timing or (self.cfg.suspends and self.cfg.clocks_calls):
                    now = emit_read(builder, self.cfg.clock)
                    self.set(builder, slot, PREV_T, now)
                    self.set(builder, slot, ENTRY_T, now)
                for row in range(local_rows):
                    self.set(builder, slot, LOCAL_HITS + row, ir.Constant(_I64, 0))
            slots[key] = slot
            if self.cfg.local_hits:  # hits held in the slot: flushed on every exit, errors too
                flush_on_exit(fn, key, self.flush)  # (builder, failing)
                # the flush is code the plain function does not have: the hint gives LLVM's
                # inliner the room it takes back (its threshold 250 -> 325), so a small
                # helper's twin is inlined where the plain helper is
                if "alwaysinline" not in fn.attributes and "noinline" not in fn.attributes:
                    fn.attributes.add("inlinehint")
        return slots[key]

    @staticmethod
    def get(builder: ir.IRBuilder, slot: ir.Value, field: int) -> ir.Value:
        return builder.load(builder.gep(slot, [ir.Constant(_I32, 0), ir.Constant(_I32, field)]))

    @staticmethod
    def set(builder: ir.IRBuilder, slot: ir.Value, field: int, value: ir.Value) -> None:
        builder.store(value, builder.gep(slot, [ir.Constant(_I32, 0), ir.Constant(_I32, field)]))

    def bump(self, builder: ir.IRBuilder, slot: ir.Value, field: int) -> None:
        self.set(builder, slot, field, builder.add(self.get(builder, slot, field), ir.Constant(_I64, 1)))

    def charge_previous(self, builder: ir.IRBuilder, slot: ir.Value, now: ir.Value) -> None:
        prev_row = self.get(builder, slot, PREV_ROW)
        self.add(builder, prev_row, 1, builder.sub(now, self.get(builder, slot, PREV_T)))

    def closes_at_exits(self, context: object) -> bool:
        """Whether calls close at the function's exits (``close_call``), or at ``leave``: a
        generator leaves at each yield and keeps its stretch in the slot, and a ufunc's or
        stencil's kernel is built without the exit hook."""
        return not self.cfg.suspends and exits_flushed(context)

    def enter(self, builder: ir.IRBuilder, context: object) -> None:
        """A call starts: its entry time goes to memory, not to a register (see ``close_call``)."""
        if self.cfg.silent:
            return
        slot = self.state(builder)
        if not self.cfg.clocks_calls:  # hits only: the call is counted, not timed
            if self.cfg.local_calls:
                self.bump(builder, slot, LOCAL_HITS + self.cfg.n_lines)
            else:
                self.add(builder, self.cfg.totals_row, 0, ir.Constant(_I64, 1))
            return
        now = emit_read(builder, self.cfg.clock)
        self.set(builder, slot, PREV_ROW, ir.Constant(_I64, self.cfg.trash_row))
        self.set(builder, slot, PREV_T, now)
        if not self.closes_at_exits(context):
            self.set(builder, slot, ENTRY_T, now)
            return
        ptr = self.cell(builder, self.cfg.totals_row, 1)
        builder.atomic_rmw("sub", ptr, now, "monotonic")
        flush_on_exit(builder.function, ("close", self.slot.name), self.close_call)

    def close_call(self, builder: ir.IRBuilder, failing: bool = False) -> None:
        """At every exit of a function that ``enter``-ed (returns and exceptions alike): the
        call counts, and its time is the exit time added to the entry time's negative.

        Why not the entry time held in a register until the return: a clock reading
        kept alive across a loop slowed a loop of read-modify-writes (a histogram's
        ``counts[b] += 1``) 15x on this machine, in code otherwise identical. The
        entry time is subtracted from the total with an atomic add, whose result LLVM
        cannot carry to the return in a register.
        """
        now = emit_read(builder, self.cfg.clock)
        self.add(builder, self.cfg.totals_row, 0, ir.Constant(_I64, 1))
        self.add(builder, self.cfg.totals_row, 1, now)

    def line(self, builder: ir.IRBuilder, row: int) -> None:
        slot = self.state(builder)
        if row >= PLANNED:  # a probe of a plan (``derived_counts``): its own field, or nothing
            plan_id, field = decode(row)
            fields = self.plan_fields(builder, self.plans[plan_id])
            if field != DERIVED:
                self.bump(builder, fields, field)
                note_counts_in_registers(builder.module)
            return
        if self.cfg.local_hits:  # count in the stack slot: LLVM keeps it in a register
            self.bump(builder, slot, LOCAL_HITS + row)
            note_counts_in_registers(builder.module)  # (an if's arms may still fold: ``branch_budget``)
            return
        self.add(builder, row, 0, ir.Constant(_I64, 1))
        if not self.cfg.timing:
            return
        now = emit_read(builder, self.cfg.clock)
        self.charge_previous(builder, slot, now)
        self.set(builder, slot, PREV_ROW, ir.Constant(_I64, row))
        self.set(builder, slot, PREV_T, now)

    def flush(self, builder: ir.IRBuilder, failing: bool = False) -> None:
        """Move the hits counted in the stack slot (hits-only mode) to the counters; at the error
        exit (``failing``), out of line (``flush_out_of_line``)."""
        if not self.cfg.local_hits or self.cfg.silent:
            return
        slot = self.state(builder)
        rows = list(range(self.cfg.n_lines)) + ([self.cfg.totals_row] if self.cfg.local_calls else [])
        values = [self.get(builder, slot, field) for field in range(LOCAL_HITS, LOCAL_HITS + len(rows))]
        if not values:  # nothing counted (a plain twin's call-only probes)
            return
        self.add_derived(builder, values, failing)
        if failing:
            self.call_out_of_line(builder, values, rows)
        elif self.cfg.atomic and self.cfg.stripes:  # a thread's own stripe takes plain adds
            self.flush_striped(builder, values, rows)
        else:
            self.add_values(builder, rows, values)
        for field in range(LOCAL_HITS, LOCAL_HITS + len(rows)):
            self.set(builder, slot, field, ir.Constant(_I64, 0))

    def add_derived(self, builder: ir.IRBuilder, values: list[ir.Value], failing: bool) -> None:
        """Each planned row's count (``derived_counts``) added to ``values``: sums and differences
        of the counted fields, the call (1) and its normal return (0 at the error exit); the
        fields zeroed after."""
        planned = getattr(builder.function, "_nlp_plans", {}).get(self.slot.name)
        if planned is None:
            return
        plan, fields = planned
        counted = [self.get(builder, fields, field) for field in range(plan.n_fields)]
        constants = {ENTRY_BASE: 1, RETURNED_BASE: 0 if failing else 1}
        for row, terms in plan.rows:
            total = values[row]
            for base, coeff in terms:
                if base in constants:
                    total = builder.add(total, ir.Constant(_I64, coeff * constants[base]))
                    continue
                term = counted[base]
                if coeff == 1:
                    total = builder.add(total, term)
                elif coeff == -1:
                    total = builder.sub(total, term)
                else:
                    total = builder.add(total, builder.mul(term, ir.Constant(_I64, coeff)))
            values[row] = total
        for field in range(plan.n_fields):
            self.set(builder, fields, field, ir.Constant(_I64, 0))

    def flush_striped(self, builder: ir.IRBuilder, values: list[ir.Value], rows: list[int]) -> None:
        """The flush of concurrent counters with stripes, where any hit is held: plain adds to
        the thread's own stripe (``emit_thread_stripe``: claimed by its first flush), inline;
        where another thread holds its slot, a call out of line (``flush_out_of_line``) adds
        atomically to the shared one.

        Why out of line: atomic adds inline made a one-line helper's twin
        (a Gaussian called from a ``prange`` loop) about 120 instructions, which LLVM called
        instead of inlining it as it does the plain helper (the counting run was 1.8x the
        plain one). Why tested for hits: a flush of a slot known empty (a ``prange``
        iteration's, then the exit's) folds away."""
        with branching_here(builder):
            held = values[0]
            for value in values[1:]:
                held = builder.or_(held, value)
            with builder.if_then(builder.icmp_unsigned("!=", held, ir.Constant(_I64, 0))):
                owners = layout(self.cfg.n_lines, self.cfg.stripes)[2]
                stripe = emit_thread_stripe(builder, self.base(builder), owners, self.cfg.stripes)
                own = builder.icmp_unsigned("!=", stripe, ir.Constant(_I64, 0))
                with builder.if_else(own, likely=True) as (mine, shared):
                    with mine:
                        self.add_values(builder, rows, values, stripe)
                    with shared:
                        self.call_out_of_line(builder, values, rows)

    def call_out_of_line(self, builder: ir.IRBuilder, values: list[ir.Value], rows: list[int]) -> None:
        """``flush_out_of_line`` called with ``values`` (spilled to a stack array of its own:
        the slot's address is never taken, so LLVM keeps the slot in registers)."""
        entry = ir.IRBuilder(builder.function.entry_basic_block)  # the builder stays where it is
        entry.position_at_start(builder.function.entry_basic_block)  # (before an exit's ret)
        spill = entry.alloca(ir.ArrayType(_I64, len(rows)), name="nlp.spill")
        for field, value in enumerate(values):
            self.set(builder, spill, field, value)
        function = self.flush_out_of_line(builder.module, rows)
        builder.call(function, [builder.bitcast(spill, _I64.as_pointer())])

    def flush_out_of_line(self, module: ir.Module, rows: list[int]) -> ir.Function:
        """A function (cold, never inlined) adding ``rows``' hits (an array of them, its
        argument) to the counters: for the error exit, and for the flushes to striped counters
        of a thread whose slot another thread holds (its own stripe where it has one, else the
        shared stripe's atomic adds). One per module and counters."""
        name = f"nlp.flush.{self.slot.name}.{len(rows)}"
        function = module.globals.get(name)
        if function is not None:
            return function
        function = ir.Function(module, ir.FunctionType(ir.VoidType(), [_I64.as_pointer()]), name=name)
        function.linkage = "internal"
        function.attributes.add("noinline")
        function.attributes.add("cold")
        builder = ir.IRBuilder(function.append_basic_block("entry"))
        spilled = function.args[0]
        values = [builder.load(builder.gep(spilled, [ir.Constant(_I64, k)])) for k in range(len(rows))]
        if self.cfg.atomic and self.cfg.stripes:
            owners = layout(self.cfg.n_lines, self.cfg.stripes)[2]
            stripe = emit_thread_stripe(builder, self.base(builder), owners, self.cfg.stripes)
            owned = builder.icmp_unsigned("!=", stripe, ir.Constant(_I64, 0))
            with builder.if_else(owned, likely=True) as (mine, shared):
                with mine:
                    self.add_values(builder, rows, values, stripe)
                with shared:
                    self.add_values(builder, rows, values)
        else:
            self.add_values(builder, rows, values)
        builder.ret_void()
        return function

    def add_values(self, builder: ir.IRBuilder, rows: list[int], values: list[ir.Value], stripe=None) -> None:
        """``values`` added to the hits of ``rows`` (see ``add``: of ``stripe``, or stripe 0)."""
        for row, value in zip(rows, values, strict=True):
            self.add(builder, row, 0, value, stripe)

    def leave(self, builder: ir.IRBuilder, context: object) -> None:
        """A return: the last line is charged; the hits held in registers go to memory here only
        in code built without the exit flushes (``exits``), which otherwise move them once, at
        the function's one normal exit, however many returns it has: one flush per call that
        LLVM can keep in registers across a loop the function is inlined into, where a flush
        at each return is a store on some iterations only, which it cannot. The call itself is
        closed at the function's exits (``close_call``), or here. A stencil kernel's return
        ends one point of the loop nest it is inlined into: its hits stay in the slot until the
        loop nest exits (a store per point would keep the loop scalar)."""
        if self.cfg.silent:
            return
        if not exits_flushed(context):  # else the function's one normal exit flushes (``exits``)
            self.flush(builder)
        slot = self.state(builder)
        closes_here = self.cfg.clocks_calls and not self.closes_at_exits(context)
        if not (self.cfg.timing or closes_here):
            return
        now = emit_read(builder, self.cfg.clock)
        if self.cfg.timing:
            self.charge_previous(builder, slot, now)
            self.set(builder, slot, PREV_ROW, ir.Constant(_I64, self.cfg.trash_row))
            self.set(builder, slot, PREV_T, now)
        if closes_here:
            self.add(builder, self.cfg.totals_row, 0, ir.Constant(_I64, 1))
            self.add(builder, self.cfg.totals_row, 1, builder.sub(now, self.get(builder, slot, ENTRY_T)))


def _no_arg_probe(emit: Callable[[ir.IRBuilder, object], None]):
    """An intrinsic taking no argument that emits ``emit(builder, context)`` where it is called."""
    return no_arg_intrinsic(intrinsic, types, emit)


def make_probes(cfg: ProbeConfig) -> dict[str, object]:
    """The intrinsics for one twin, keyed by the global names the rewriter uses, and
    their ``CounterSlot`` under ``SLOT``.

    ``enter()`` starts a call, ``line(k)`` is the line event of row ``k`` (a
    literal) and ``leave()`` ends a call (the rewriter puts it after a return
    value is computed). In hits-only mode hits are counted in the per-call stack
    slot, which keeps them in registers and lets LLVM vectorize the loop;
    ``leave`` and ``flush()`` (at the end of each ``prange`` iteration, whose
    worker never returns through ``leave``) move them to the counters.
    """
    slot = CounterSlot(cfg.address, cfg.token())
    emit = _Emitter(cfg, slot)

    probes = {
        ENTER: _no_arg_probe(emit.enter),
        LINE: line_intrinsic(intrinsic, types, emit.line),
        LEAVE: _no_arg_probe(emit.leave),
        FLUSH: _no_arg_probe(lambda builder, context: emit.flush(builder)),
    }
    for kind, probe in probes.items():
        setattr(probe, PROBE_ATTR, _ProbeTag(kind, emit))
    return {**probes, SLOT: slot}


class _ProbeTag:
    """Marks a probe intrinsic, so a twin's cache key can say what the probe compiles to."""

    def __init__(self, kind: str, emit: _Emitter):
        self.kind = kind
        self.emit = emit

    def token(self) -> str | None:
        """The probe's config and symbol; None when its symbol is a one-off (never cached)."""
        slot = self.emit.slot
        if not slot.canonical:
            return None
        return f"probe:{self.kind}:{self.emit.cfg.token()}:{slot.symbol}"


_KINDS = {"_nlp_enter": "enter", "_nlp_line": "line", "_nlp_leave": "leave", "_nlp_flush": "flush"}


def owner_of(obj: object) -> tuple[str, object] | None:
    """``(kind, emitter)`` of a probe intrinsic ("enter", "line", "leave", "flush"), else None:
    what ``internals.read_probe_flow`` reads a call's callee with."""
    tag = getattr(obj, PROBE_ATTR, None)
    if not isinstance(tag, _ProbeTag):
        return None
    return _KINDS[tag.kind], tag.emit


def planning_emitter(obj: object) -> _Emitter | None:
    """The emitter of the probe intrinsic ``obj`` where its lines may be planned: it counts hits
    in registers (``derived_counts``)."""
    tag = getattr(obj, PROBE_ATTR, None)
    if isinstance(tag, _ProbeTag) and tag.emit.cfg.local_hits:
        return tag.emit
    return None


def probe_token(obj: object) -> str | None:
    """``obj``'s probe token if it is a probe intrinsic with a cacheable symbol, else None."""
    tag = getattr(obj, PROBE_ATTR, None)
    return tag.token() if isinstance(tag, _ProbeTag) else None


def probe_symbol(obj: object) -> str:
    """The counters symbol of a probe intrinsic (bound)."""
    return getattr(obj, PROBE_ATTR).emit.slot.name


def is_probe(obj: object) -> bool:
    return isinstance(getattr(obj, PROBE_ATTR, None), _ProbeTag)


ENTER, LINE, LEAVE, FLUSH = "_nlp_enter", "_nlp_line", "_nlp_leave", "_nlp_flush"
SLOT = "_nlp_slot"  # the CounterSlot of a set of probes (see make_twin, which names it)
PROBE_ATTR = "_nlp_probe"
PYHIT = "_nlp_pyhit"  # a plain Python hit counter, for lines inside objmode blocks


def make_python_hit(counters: CounterTable):
    """A Python-level hit counter for lines that run in object mode (objmode blocks)."""
    shared = counters.shared

    def nlp_pyhit(row: int) -> None:
        shared[row, 0] += 1

    return nlp_pyhit


#: the compiler pass of ``derived_counts`` (inserted just before lowering, ``twins``)
derive_counts = ir_pass(
    "nlp_derive_counts",
    lambda state: derive(state, owner_of, planning_emitter),
    "numba_lprun: count fewer lines, derive the rest",
)
