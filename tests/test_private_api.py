"""Every private Numba and pyelftools API numba_lprun uses is still there.

A Numba release that moves one of them must fail here, loudly, rather than make
twins or the sampled view quietly wrong.
"""

import numba

from numba_lprun.private_api import CHECKED_NUMBA, USES, missing


def test_every_private_use_is_present():
    assert missing() == []


def test_the_installed_numba_is_one_the_uses_were_checked_on():
    assert numba.__version__.startswith(CHECKED_NUMBA + "."), numba.__version__
    assert len(USES) >= 10
