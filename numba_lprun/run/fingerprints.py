"""Fingerprints of arrays a recorded call only reads: whether they changed, without a copy.

A replay starts each recorded call from the state it had before the call. An array the
call cannot write (``internals.argument_access``: LLVM proved its data pointer read
only and kept nowhere) needs no copy for that, as long as nothing else changed it between
the call and the replays: the statement's own Python code after the call (``x += dt * f``
between two calls of a force kernel) or a later call that writes it. A fingerprint taken
before the call and again when the statement ends tells; a copy of a large array costs far
more (a 160 MB copy took 15 ms on warm pages and 0.9 s on a VM's fresh ones, and its
comparison after the call another 10 ms; this fingerprint takes about 5 ms, reading it once).

The fingerprint is the sum of each KiB's 64-bit words (modulo 2**64), and the bytes past
the last whole KiB: any change inside one KiB changes that KiB's sum unless the words it
writes keep their sum, and a permutation across KiBs (a sort, a shuffle, a reversal)
changes the sums it moves values between. A change it misses makes a replay start from
the changed array (its samples describe a slightly different call); it never touches the
user's data, which no replay can write.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_BLOCK_WORDS = 128  # 1 KiB of 64-bit words per sum


@dataclass(frozen=True, eq=False)
class Fingerprint:
    """Per-KiB sums of an array's bytes, and its bytes past the last whole KiB."""

    sums: np.ndarray
    tail: bytes

    def same_as(self, other: Fingerprint) -> bool:
        return self.tail == other.tail and np.array_equal(self.sums, other.sums)

    @property
    def nbytes(self) -> int:
        return self.sums.nbytes + len(self.tail)


def contiguous_bytes(a: np.ndarray) -> np.ndarray | None:
    """``a``'s buffer as flat bytes, where it is one contiguous block of plain values (None:
    strided, or holding Python objects, which a fingerprint of bytes cannot follow)."""
    if a.dtype.hasobject:
        return None
    if a.flags.c_contiguous:
        flat = a.reshape(-1)
    elif a.flags.f_contiguous:
        flat = a.T.reshape(-1)
    else:
        return None
    return flat.view(np.uint8) if flat.size else np.zeros(0, np.uint8)


def fingerprint(a: np.ndarray) -> Fingerprint | None:
    """The fingerprint of ``a``'s contents (None: ``contiguous_bytes`` says why not)."""
    data = contiguous_bytes(a)
    if data is None:
        return None
    whole = data.size - data.size % (8 * _BLOCK_WORDS)
    words = data[:whole].view(np.uint64).reshape(-1, _BLOCK_WORDS)
    return Fingerprint(np.add.reduce(words, axis=1, dtype=np.uint64), data[whole:].tobytes())
