"""The profile of one CUDA launch: frozen values, one per profiled function.

What one launch measured, in the GPU's own terms (warps, lanes, cycles), kept
apart from the CPU profile so the launch code needs nothing of the CPU run
model; ``adapt`` maps it onto the common value (``numba_lprun.stats``) that the
renderers show: ``hits`` -> hits per line, ``cycles`` -> probe times in ticks
named "cycle", ``warps`` and ``lanes`` -> extra per-line columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class CudaLine:
    """One source line of a CUDA function, over one or more launches."""

    lineno: int
    hits: int  # thread executions (what line_profiler counts if every thread ran py_func)
    warps: int  # warp executions
    cycles: int | None = None  # GPU cycles summed over warp executions (timed twin only)

    @property
    def lanes(self) -> float | None:
        """Mean active lanes per warp execution (divergence shows as fewer than 32)."""
        return self.hits / self.warps if self.warps else None


@dataclass(frozen=True)
class CudaFunctionProfile:
    """Per-line counts of one kernel or device function."""

    name: str
    qualname: str
    filename: str
    first_lineno: int  # co_firstlineno (the decorator line), as line_profiler keys it
    kind: str  # "kernel" or "device function"
    source: tuple[str, ...] = field(repr=False)  # lines from first_lineno to the end of the def
    lines: tuple[CudaLine, ...] = ()
    calls: int = 0  # thread calls (a kernel: threads that ran it)
    warp_calls: int = 0

    @property
    def key(self) -> tuple[str, int, str]:
        """What identifies the function across launches (line_profiler's key)."""
        return (self.filename, self.first_lineno, self.qualname)

    @property
    def hits(self) -> dict[int, int]:
        return {ln.lineno: ln.hits for ln in self.lines if ln.hits}

    def line(self, lineno: int) -> CudaLine | None:
        for ln in self.lines:
            if ln.lineno == lineno:
                return ln
        return None

    @property
    def total_cycles(self) -> int | None:
        cycles = [ln.cycles for ln in self.lines if ln.cycles is not None]
        return sum(cycles) if cycles else None

    def line_text(self, lineno: int) -> str:
        index = lineno - self.first_lineno
        return self.source[index].rstrip("\n") if 0 <= index < len(self.source) else ""


@dataclass(frozen=True)
class CudaLaunch:
    """How the profile was taken."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    simulator: bool
    timing: bool  # the user's launch ran the timed twin (clock reads per line)
    device: str = ""
    plain_ms: float | None = None  # best of the plain twin's launches
    probed_ms: float | None = None  # the probed twin's launch(es), best
    launches: int = 1  # launches made in all (the user's, last, included)
    restored: tuple[str, ...] = ()  # arguments put back before each extra launch
    notes: tuple[str, ...] = ()

    @property
    def threads(self) -> int:
        return _product(self.grid) * _product(self.block)

    @property
    def overhead(self) -> float | None:
        """Instrumented / plain launch time over the same launches (None: not measured)."""
        if self.plain_ms and self.probed_ms:
            return self.probed_ms / self.plain_ms
        return None


@dataclass(frozen=True)
class CudaProfile:
    launch: CudaLaunch
    functions: tuple[CudaFunctionProfile, ...]

    def function(self, name: str) -> CudaFunctionProfile:
        for f in self.functions:
            if name in (f.name, f.qualname):
                return f
        raise KeyError(name)


def merge_profiles(profiles: list[CudaProfile]) -> CudaProfile:
    """Counts of several launches added per function and line (the last launch's header)."""
    merged: dict[tuple, CudaFunctionProfile] = {}
    for profile in profiles:
        for f in profile.functions:
            merged[f.key] = f if f.key not in merged else _add(merged[f.key], f)
    return CudaProfile(profiles[-1].launch, tuple(merged.values()))


def _add(a: CudaFunctionProfile, b: CudaFunctionProfile) -> CudaFunctionProfile:
    lines = []
    for x, y in zip(a.lines, b.lines, strict=True):
        cycles = None if x.cycles is None or y.cycles is None else x.cycles + y.cycles
        lines.append(CudaLine(x.lineno, x.hits + y.hits, x.warps + y.warps, cycles))
    return replace(a, lines=tuple(lines), calls=a.calls + b.calls, warp_calls=a.warp_calls + b.warp_calls)


def _product(dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n
