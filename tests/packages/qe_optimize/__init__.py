"""Two modules of QuantEcon.py's ``quantecon.optimize`` (root finding and scalar maximization)
with their own tests, copied unchanged from https://github.com/QuantEcon/QuantEcon.py
(commit 13b436b, MIT licence: LICENSE beside this file) but for this file and the tests'
import line (``quantecon.optimize`` -> ``qe_optimize``). numba_lprun's tests profile this
package while its own test suite runs (``nlprun --source qe_optimize -m pytest``): other
people's kernels, called the way their tests call them."""

from .root_finding import bisect, brentq, newton, newton_halley, newton_secant
from .scalar_maximization import brent_max

__all__ = ["bisect", "brent_max", "brentq", "newton", "newton_halley", "newton_secant"]
