"""The probes of a GPU twin: numba-cuda intrinsics that count in registers.

One probe per Python line event (``_nlp_line(k)``, ``k`` a literal row). Per
thread, in allocas of the function being lowered (promoted to registers by
NVVM): the hits of each row, and the warp executions counted by one lane (the
lowest lane of ``activemask()``). Nothing touches memory while the function
runs; ``_nlp_leave()`` (at every return) sums each row over the warp's active
lanes with ``redux.sync`` and the lowest lane adds the sums to global counters
with one atomic per row, in a stripe picked by the block index so that blocks do
not all hit the same addresses. Mean active lanes = hits / warp executions (each
active lane counts itself, so this is the mean ``popc(activemask())``).

The timed twin also reads ``%clock64`` at every probe. A warp's time on a line
runs from its probe to the warp's next probe in the same function; after a
divergent branch the lanes that ran last hold the latest timestamp, so the
interval is charged by the lowest of the lanes whose timestamp is youngest
(``redux.sync.min`` of the ages, ``vote.sync.ballot``), to that lane's previous
row, in a per-thread array indexed at run time (local memory); those per-lane
sums are added to the counters at return. The clock is read again at the end of
the probe, so the probe's own work is charged to no line. ``redux.sync`` needs
compute capability 8.0 or later.

Counters (int64), shape ``(STRIPES, n_rows + 1, 3)``: per row (hits, warp
executions, cycles); row ``n_rows`` holds (thread calls, warp calls, cycles before
the first line).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from ..instrument.probe_intrinsics import line_intrinsic, no_arg_intrinsic

STRIPES = 32
HITS, WARPS, CYCLES = 0, 1, 2
_I1, _I32, _I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)


def counters_shape(n_rows: int) -> tuple[int, int, int]:
    return (STRIPES, n_rows + 1, 3)


def sum_counters(counters: np.ndarray) -> np.ndarray:
    """Counters of all stripes added: shape ``(n_rows + 1, 3)``."""
    return counters.sum(axis=0)


@dataclass(frozen=True)
class GpuProbeConfig:
    """What one twin's probes do; the counters at ``address`` must outlive the code."""

    address: int  # device address of the int64 counters
    n_rows: int
    timing: bool


def _asm(builder: ir.IRBuilder, ret: ir.Type, text: str, constraints: str, args: list) -> ir.Value:
    fnty = ir.FunctionType(ret, [a.type for a in args])
    return builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), args)


def _sreg(builder: ir.IRBuilder, name: str) -> ir.Value:
    fname = f"llvm.nvvm.read.ptx.sreg.{name}"
    module = builder.module
    fn = module.globals.get(fname) or ir.Function(module, ir.FunctionType(_I32, []), fname)
    return builder.call(fn, [])


def clock64(builder: ir.IRBuilder) -> ir.Value:
    return _asm(builder, _I64, "mov.u64 $0, %clock64;", "=l", [])


def activemask(builder: ir.IRBuilder) -> ir.Value:
    return _asm(builder, _I32, "activemask.b32 $0;", "=r", [])


def redux(builder: ir.IRBuilder, op: str, value: ir.Value, mask: ir.Value) -> ir.Value:
    return _asm(builder, _I32, f"redux.sync.{op}.u32 $0, $1, $2;", "=r,r,r", [value, mask])


def ballot(builder: ir.IRBuilder, flag: ir.Value, mask: ir.Value) -> ir.Value:
    text = "{ .reg .pred p; setp.ne.u32 p, $1, 0; vote.sync.ballot.b32 $0, p, $2; }"
    return _asm(builder, _I32, text, "=r,r,r", [builder.zext(flag, _I32), mask])


def lowest_lane(builder: ir.IRBuilder, lanes: ir.Value) -> ir.Value:
    """Whether this lane is the lowest set bit of ``lanes``."""
    return builder.icmp_unsigned("==", _sreg(builder, "laneid"), builder.cttz(lanes, ir.Constant(_I1, 1)))


class _Slots:
    """The per-call allocas of one function for one config."""

    def __init__(self, builder: ir.IRBuilder, cfg: GpuProbeConfig):
        n = cfg.n_rows
        with builder.goto_entry_block():
            self.hits = [self._zeroed(builder, _I32, f"nlp.hits{k}") for k in range(n)]
            self.warps = [self._zeroed(builder, _I32, f"nlp.warps{k}") for k in range(n)]
            if cfg.timing:
                self.cycles = builder.alloca(ir.ArrayType(_I64, n + 1), name="nlp.cycles")
                builder.store(ir.Constant(ir.ArrayType(_I64, n + 1), None), self.cycles)
                self.prev_row = self._zeroed(builder, _I32, "nlp.prev_row")
                builder.store(ir.Constant(_I32, n), self.prev_row)
                self.prev_t = builder.alloca(_I64, name="nlp.prev_t")
                builder.store(clock64(builder), self.prev_t)

    @staticmethod
    def _zeroed(builder: ir.IRBuilder, ty: ir.Type, name: str) -> ir.Value:
        slot = builder.alloca(ty, name=name)
        builder.store(ir.Constant(ty, 0), slot)
        return slot


class _Emitter:
    def __init__(self, cfg: GpuProbeConfig):
        self.cfg = cfg

    def slots(self, builder: ir.IRBuilder) -> _Slots:
        fn = builder.function
        cache = getattr(fn, "_nlp_cuda_slots", None)
        if cache is None:
            cache = fn._nlp_cuda_slots = {}
        if self.cfg.address not in cache:
            cache[self.cfg.address] = _Slots(builder, self.cfg)
        return cache[self.cfg.address]

    @staticmethod
    def bump(builder: ir.IRBuilder, slot: ir.Value, amount: ir.Value) -> None:
        builder.store(builder.add(builder.load(slot), amount), slot)

    def charge(self, builder: ir.IRBuilder, s: _Slots, mask: ir.Value) -> None:
        """Charge the warp's time since its last probe to the previous row (timed twin)."""
        age = builder.trunc(builder.sub(clock64(builder), builder.load(s.prev_t)), _I32)
        youngest = redux(builder, "min", age, mask)
        chosen = ballot(builder, builder.icmp_unsigned("==", age, youngest), mask)
        amount = builder.select(
            lowest_lane(builder, chosen), builder.zext(youngest, _I64), ir.Constant(_I64, 0)
        )
        cell = builder.gep(s.cycles, [ir.Constant(_I32, 0), builder.load(s.prev_row)])
        builder.store(builder.add(builder.load(cell), amount), cell)

    def enter(self, builder: ir.IRBuilder) -> None:
        s = self.slots(builder)
        if self.cfg.timing:
            builder.store(ir.Constant(_I32, self.cfg.n_rows), s.prev_row)
            builder.store(clock64(builder), s.prev_t)

    def line(self, builder: ir.IRBuilder, row: int) -> None:
        s = self.slots(builder)
        self.bump(builder, s.hits[row], ir.Constant(_I32, 1))
        mask = activemask(builder)
        self.bump(builder, s.warps[row], builder.zext(lowest_lane(builder, mask), _I32))
        if self.cfg.timing:
            self.charge(builder, s, mask)
            builder.store(ir.Constant(_I32, row), s.prev_row)
            builder.store(clock64(builder), s.prev_t)

    def counter(self, builder: ir.IRBuilder, stripe: ir.Value, row: int, column: int) -> ir.Value:
        base = builder.inttoptr(ir.Constant(_I64, self.cfg.address), _I64.as_pointer())
        per_stripe = (self.cfg.n_rows + 1) * 3
        index = builder.add(
            builder.mul(stripe, ir.Constant(_I64, per_stripe)), ir.Constant(_I64, row * 3 + column)
        )
        return builder.gep(base, [index])

    def add_if_nonzero(self, builder: ir.IRBuilder, ptr: ir.Value, value: ir.Value) -> None:
        with builder.if_then(builder.icmp_unsigned("!=", value, ir.Constant(value.type, 0))):
            builder.atomic_rmw(
                "add", ptr, builder.zext(value, _I64) if value.type != _I64 else value, "monotonic"
            )

    def stripe(self, builder: ir.IRBuilder) -> ir.Value:
        x, y, z = (_sreg(builder, f"ctaid.{d}") for d in "xyz")
        nx, ny = _sreg(builder, "nctaid.x"), _sreg(builder, "nctaid.y")
        block = builder.add(x, builder.mul(nx, builder.add(y, builder.mul(ny, z))))
        return builder.zext(builder.urem(block, ir.Constant(_I32, STRIPES)), _I64)

    def leave(self, builder: ir.IRBuilder) -> None:
        """Charge the last line (timed), then add this call's counts to the counters:
        warp sums by the lowest active lane, and each lane's own cycles."""
        s = self.slots(builder)
        n = self.cfg.n_rows
        mask = activemask(builder)
        stripe = self.stripe(builder)
        if self.cfg.timing:
            self.charge(builder, s, mask)
            builder.store(ir.Constant(_I32, n), s.prev_row)
        sums = []
        for row in range(n):
            sums.append(
                (
                    redux(builder, "add", builder.load(s.hits[row]), mask),
                    redux(builder, "add", builder.load(s.warps[row]), mask),
                )
            )
            builder.store(ir.Constant(_I32, 0), s.hits[row])
            builder.store(ir.Constant(_I32, 0), s.warps[row])
        threads = _asm(builder, _I32, "popc.b32 $0, $1;", "=r,r", [mask])
        with builder.if_then(lowest_lane(builder, mask)):
            for row, (hits, warps) in enumerate(sums):
                self.add_if_nonzero(builder, self.counter(builder, stripe, row, HITS), hits)
                self.add_if_nonzero(builder, self.counter(builder, stripe, row, WARPS), warps)
            self.add_if_nonzero(builder, self.counter(builder, stripe, n, HITS), threads)
            self.add_if_nonzero(builder, self.counter(builder, stripe, n, WARPS), ir.Constant(_I32, 1))
        if self.cfg.timing:
            for row in range(n + 1):
                cell = builder.gep(s.cycles, [ir.Constant(_I32, 0), ir.Constant(_I32, row)])
                self.add_if_nonzero(builder, self.counter(builder, stripe, row, CYCLES), builder.load(cell))
                builder.store(ir.Constant(_I64, 0), cell)
            builder.store(clock64(builder), s.prev_t)


def make_gpu_probes(cfg: GpuProbeConfig) -> dict[str, object]:
    """The intrinsics of one twin, keyed by the global names the rewriter uses."""
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    emit = _Emitter(cfg)

    def no_arg(action):
        return no_arg_intrinsic(intrinsic, types, lambda builder, context: action(builder))

    return {
        "_nlp_enter": no_arg(emit.enter),
        "_nlp_line": line_intrinsic(intrinsic, types, emit.line),
        "_nlp_leave": no_arg(emit.leave),
        "_nlp_flush": no_arg(lambda builder: None),
    }
