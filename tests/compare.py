"""The one way tests compare results: profiled and unprofiled calls must agree."""

import numpy as np

RTOL = 1e-9  # reductions may be reassociated (parallel=True, fastmath); nothing else may differ


def same(a, b) -> bool:
    """Equal results: NaN equals NaN, floats within ``RTOL``, containers element by element."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=RTOL, atol=0, equal_nan=True)
    if isinstance(a, float) or isinstance(b, float):
        return bool(np.isclose(a, b, rtol=RTOL, atol=0, equal_nan=True))
    return a == b
