"""The three twins of a profiled function, named once.

Why an Enum of strings: the kind of twin travels everywhere (which twin a phase runs,
what a measurement describes, what the user's run ran on in the saved profile, which
twin's machine code was read), and bare strings retyped in each stage drifted
("instrumented" meant two of them). A ``StrEnum`` member still equals its string, so a
profile saved as JSON reads back unchanged.
"""

from __future__ import annotations

from enum import StrEnum


class TwinKind(StrEnum):
    """Which twin: the optimizer's own code, exact hits per line, or hits and a clock read per line."""

    PLAIN = "plain"  # the user's function compiled again, unchanged: the overhead figure's baseline
    COUNTING = "counting"  # a hit counter per line (the user's run's, under the sampler)
    PROBED = "probed"  # counters and a clock probe per line (--probes, or where no sampler runs)

    @classmethod
    def _missing_(cls, value: object) -> TwinKind | None:
        """Profiles saved before the kinds were named once called a CUDA kernel's twin, which
        reads the clock per line, "instrumented": they still load."""
        return cls.PROBED if value == "instrumented" else None


PLAIN, COUNTING, PROBED = TwinKind.PLAIN, TwinKind.COUNTING, TwinKind.PROBED
