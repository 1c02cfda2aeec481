"""Plain Python code in another module that calls jitted kernels, as user code would."""

from tests import kernels


def drive(a):
    return kernels.poly(a[0]) + kernels.caller(a)
