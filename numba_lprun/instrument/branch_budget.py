"""A counting twin's short ``if``/``else`` still becomes a select where the plain code's does.

Why: LLVM turns an ``if``/``else`` whose two arms are short into selects, with no branch
left, when the arms' instructions fit SimplifyCFG's budget for it (LLVM's
``-two-entry-phi-node-folding-threshold``, 4). In hits-only mode the counting twin adds to
each arm the count of its first line (an add to a register), which spends 2 of those 4: the
Collatz step ``if k % 2 == 0: k //= 2`` / ``else: k = 3 * k + 1`` was a conditional move in the
plain code and a branch in the twin, mispredicted on about every other step (the loop ran
1.7-2.2x the plain loop's time). So a counting twin's code is optimized with that budget
raised by the two adds (``EXTRA``): a two-armed ``if`` the plain code folds folds in the twin
too. Counts cannot change: the optimizer keeps what the code computes.

What it does not match: an arm of several lines adds a counter per line (beyond the raise), and
the raise also lets LLVM fold an ``if`` whose arms cost 5 or 6, which the plain code keeps as a
branch. Only twins that hold counters in registers (hits only, which the sampled view runs on
too), and only where LLVM can put the option back (LLVM 15 and newer: Numba 0.61 and newer,
``internals.llvm_options_settable``): the budget is raised only while such a twin's code is
optimized, under Numba's compiler lock.

The other way round, a select the plain code's code generation turns back into a branch (to
skip a division) is given the same chance in the twin: ``select_compares``, for the same
twins, on every LLVM.
"""

from __future__ import annotations

from ..internals import (
    optimized_with_if_conversion_budget,
    reparsed,
    rewrite_final_module,
    with_post_lowering,
)
from .congruent_counts import merge_congruent_counts
from .select_compares import own_select_compares

#: The instructions a counting twin adds to a two-armed ``if``: one count in each arm
EXTRA = 2
_MARK = "_nlp_counts_in_registers"


def note_counts_in_registers(module: object) -> None:
    """Say that ``module`` (an llvmlite ``ir.Module`` being lowered) counts hits in registers."""
    setattr(module, _MARK, True)


def _branch_as_plain_code(module: object, library: object) -> None:
    """A library that counts in registers: its ``if``s folded (the budget) and unfolded
    (``select_compares``) where the plain code's are, its counts that the program computes
    anyway read from the program's values (``congruent_counts``)."""
    if getattr(module, _MARK, False):
        optimized_with_if_conversion_budget(library, EXTRA)
        rewrite_final_module(library, _final_module_rewritten)


def _final_module_rewritten(module: object) -> object:
    """An optimized module (an llvmlite ``ModuleRef``) with its congruent counts merged, then its
    selects given compares of their own: parsed back once; ``module`` itself when neither
    changed anything, or should the rewrite not parse back and verify."""
    text, merged = merge_congruent_counts(str(module))
    text, copied = own_select_compares(text)
    if not (merged or copied):
        return module
    result = reparsed(module, text)
    return module if result is None else result


def budgeted(base: type) -> type:
    """``base`` (a Numba compiler pipeline class) whose libraries that count hits in registers
    are optimized with the raised budget and their selects given compares of their own (a
    ``prange`` body's gufunc too: lowered the same way)."""
    return with_post_lowering(base, _branch_as_plain_code, "Budgeted")
