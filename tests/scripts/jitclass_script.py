"""A simulation written with a jitclass: its methods are the jitted code."""

import numpy as np
from numba import float64
from numba.experimental import jitclass


@jitclass([("pos", float64[:]), ("vel", float64[:])])
class Particles:
    def __init__(self, n):
        self.pos = np.zeros(n)
        self.vel = np.linspace(0.0, 1.0, n)

    def step(self, dt):
        for i in range(self.pos.size):
            self.pos[i] += self.vel[i] * dt

    def energy(self):
        return 0.5 * (self.vel**2).sum()


p = Particles(100)
for _ in range(20):
    p.step(0.1)
print("energy", round(p.energy(), 3), "x", round(p.pos[-1], 3))
