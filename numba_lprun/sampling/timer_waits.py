"""How long each timer waits: the mean period at a rate, and a first wait at a random phase.

Kept apart from the handler (which draws each later wait itself, in machine code) because
the sampler draws the first ones in Python, when it arms a timer.
"""

from __future__ import annotations

import random


def period_ns(rate_hz: float) -> int:
    """A timer's mean wait between signals, in ns, at ``rate_hz``."""
    return max(2, int(round(1e9 / rate_hz)))


def first_wait(period: int, rng: random.Random) -> int:
    """When a timer first fires, in ns: drawn so that its signals, re-armed at uniform
    waits in [period / 2, 3 period / 2) (``_Body.rearm``), are as likely at every moment
    from the start on. That is the renewal process's forward-recurrence time: density
    1 / period below period / 2, falling linearly to 0 at 3 period / 2. A first signal at
    a fixed delay lands on the same lines in every short run."""
    if rng.random() < 0.5:
        return max(1, int(period * 0.5 * rng.random()))
    return max(1, int(period * (1.5 - (1.0 - rng.random()) ** 0.5)))
