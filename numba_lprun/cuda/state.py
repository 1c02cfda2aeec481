"""A launch's arguments on the device, saved and put back between launches.

A kernel writes its array arguments in place. The user's launch must run once,
with its effects, so any extra launch (the plain twin timed for the overhead
figure, warm-up launches) starts from the same device state: each array argument
is moved to the device once (host arrays are copied back into the user's arrays
after the user's launch, as numba-cuda does for a plain launch), saved with a
device-to-device copy, and copied back before every launch after the first.
Scalars cannot be changed by a kernel. Anything else (records, tuples of arrays,
non-contiguous views) cannot be saved here: then no extra launch is made.
"""

from __future__ import annotations

import numbers

import numpy as np


def _is_device_array(value: object) -> bool:
    return hasattr(value, "copy_to_host") and hasattr(value, "copy_to_device")


def _contiguous(value: object) -> bool:
    flags = getattr(value, "flags", None)
    try:
        return bool(flags["C_CONTIGUOUS"] or flags["F_CONTIGUOUS"])
    except (TypeError, KeyError):
        return bool(getattr(value, "is_c_contiguous", lambda: False)())


class LaunchState:
    """The launch's arguments as passed to the twins, and their saved device copies."""

    def __init__(self, args: tuple):
        from numba import cuda

        self.user_args = args
        self.args: list = []
        self.host_back: list[tuple[np.ndarray, object]] = []
        self.saved: list[tuple[object, object]] = []
        self.blocker: str | None = None  # why the state cannot be saved, if it cannot
        for i, value in enumerate(args):
            if isinstance(value, np.ndarray) and value.ndim > 0:
                dev = cuda.to_device(value)
                self.host_back.append((value, dev))
                value = dev
            if _is_device_array(value):
                if not _contiguous(value):
                    self.blocker = f"argument {i} is a non-contiguous device array"
            elif not isinstance(value, (numbers.Number, np.generic, bool)) and self.blocker is None:
                self.blocker = f"argument {i} is a {type(value).__name__}"
            self.args.append(value)

    @property
    def can_restore(self) -> bool:
        return self.blocker is None

    def names(self) -> tuple[str, ...]:
        return tuple(f"argument {i}" for i, v in enumerate(self.args) if _is_device_array(v))

    def save(self) -> None:
        """Copy every device array argument on the device (call before the first launch)."""
        from numba import cuda

        self.saved = []
        for value in self.args:
            if _is_device_array(value):
                copy = cuda.device_array_like(value)
                copy.copy_to_device(value)
                self.saved.append((value, copy))

    def restore(self) -> None:
        for value, copy in self.saved:
            value.copy_to_device(copy)

    def finish(self) -> None:
        """Copy host arrays back from the device after the user's launch, drop the copies."""
        for host, dev in self.host_back:
            dev.copy_to_host(host)
        self.saved = []
