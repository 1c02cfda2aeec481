"""``python -m numba_lprun``: the ``nlprun`` command line."""

import sys

from .cli import main

sys.exit(main())
