"""Every private API of Numba and pyelftools that numba_lprun relies on, in one place.

Numba has no public way to give a twin line tables without variable debug info,
to copy a dispatcher's compiler pipeline, to read the object code it JIT-compiled,
or to reach its random states; pyelftools has no public reader for a DWARF line
program that no compile unit points at. Each use below names the Numba (and
llvmlite) versions it was checked against. pyproject.toml caps Numba below the
next minor release, and ``tests/test_private_api.py`` checks every entry on the
installed versions, so a Numba that moves one fails loudly in CI instead of
quietly profiling wrong.

Checked against: numba 0.68.1 (llvmlite 0.50.0), pyelftools 0.32.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

CHECKED_NUMBA = "0.68"


@dataclass(frozen=True)
class PrivateUse:
    """One private attribute: where it lives, and why numba_lprun needs it."""

    module: str
    path: str  # attribute path inside the module ("Class.attr")
    why: str

    def present(self) -> bool:
        try:
            obj = importlib.import_module(self.module)
        except ImportError:
            return False
        for part in self.path.split("."):
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True


USES: list[PrivateUse] = [
    PrivateUse(
        "numba.core.dispatcher",
        "_FunctionCompiler",
        "twins.py: a twin copies the original's compiler pipeline (dispatcher._compiler.pipeline_class)",
    ),
    PrivateUse(
        "numba.core.dispatcher",
        "Dispatcher._can_compile",
        "twins.py: a twin of a function with explicit signatures compiles nothing new either",
    ),
    PrivateUse(
        "numba.core.compiler",
        "Flags.dbg_directives_only",
        "twins.py: line tables without variable debug info (full debug info slowed a twin 2x)",
    ),
    PrivateUse(
        "numba.core.compiler",
        "_EarlyPipelineCompletion",
        "twins.py: the with-lifting pass replacement ends the pipeline as Numba's own does",
    ),
    PrivateUse(
        "numba.core.transforms",
        "with_lifting",
        "twins.py: lifted objmode blocks compile without line tables (LLVM warned on every compile)",
    ),
    PrivateUse(
        "numba.core.dispatcher",
        "LiftedCode",
        "twins.py: a lifted objmode block's target context (targetctx) is replaced",
    ),
    PrivateUse(
        "numba.core.codegen",
        "CPUCodeLibrary._get_compiled_object",
        "sampling/dwarf.py: the ELF object code of a twin, whose line tables map addresses to lines",
    ),
    PrivateUse(
        "numba.np.ufunc.parallel",
        "_launch_threads",
        "sampling/sampler.py: start Numba's worker threads before sampling so each gets a timer",
    ),
    PrivateUse(
        "numba._helperlib",
        "rnd_get_np_state_ptr",
        "run/snapshot.py: Numba's np.random state of the calling thread, saved and put back",
    ),
    PrivateUse(
        "numba._helperlib",
        "rnd_get_py_state_ptr",
        "run/snapshot.py: Numba's random state of the calling thread, saved and put back",
    ),
    PrivateUse(
        "elftools.dwarf.dwarfinfo",
        "DWARFInfo._parse_line_program_at_offset",
        "sampling/dwarf.py: line programs that no compile unit points at (directives-only tables)",
    ),
]


def missing() -> list[PrivateUse]:
    """The private uses the installed Numba and pyelftools no longer have."""
    return [use for use in USES if not use.present()]


def numba_random_state_addresses() -> list[tuple[str, int]]:
    """Addresses of Numba's ``np.random`` and ``random`` states of the calling thread.

    The states are thread-local C structs (numba/_random.c ``rnd_state_t``);
    ``numba._helperlib`` hands out their addresses.
    """
    from numba import _helperlib

    return [
        ("np.random", _helperlib.rnd_get_np_state_ptr()),
        ("random", _helperlib.rnd_get_py_state_ptr()),
    ]
