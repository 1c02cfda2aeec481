"""A script whose kernel raises."""

from numba import njit


@njit
def checked(x):
    if x < 0:
        raise ValueError("negative input")
    return x


checked(1)
checked(-1)
