"""Every private Numba (and numba-cuda, pyelftools) API numba_lprun relies on is still there.

A Numba release that moves one of them must fail here, loudly, rather than make
twins or the sampled view quietly wrong. Each use names the Numba releases it was
checked on (``numba_lprun.internals``); a use that moved has one entry per place,
and only the one relied on with the installed release is checked.
"""

import tomllib
from pathlib import Path

import numba
import numpy as np
import pytest

from numba_lprun.internals import NUMBA_RANGE, USES, PrivateUse, installed_numba, line_tables_only, minor
from numba_lprun.internals import missing as missing_uses

ROOT = Path(__file__).resolve().parent.parent


def test_every_use_relied_on_with_this_numba_is_present():
    assert missing_uses() == []
    assert sum(use.applies() for use in USES) >= 100


def test_the_installed_numba_is_in_the_tested_range():
    low, high = (minor(v) for v in NUMBA_RANGE)
    assert low <= installed_numba() <= high, numba.__version__


def test_every_numba_use_names_releases_inside_the_range():
    low, high = (minor(v) for v in NUMBA_RANGE)
    for use in USES:
        if use.package == "numba":
            assert low <= minor(use.checked[0]) <= minor(use.checked[1]) <= high, use


def test_each_door_function_is_checked_on_every_release_in_the_range():
    """The uses of one function together cover the whole range: widening NUMBA_RANGE fails
    here until each use is checked on the new release (or gets a version-keyed successor)."""
    low, high = (minor(v) for v in NUMBA_RANGE)
    releases = [(0, m) for m in range(low[1], high[1] + 1)]
    by_function: dict[str, list[PrivateUse]] = {}
    for use in USES:
        if use.package == "numba":
            by_function.setdefault(use.function, []).append(use)
    for function, uses in by_function.items():
        for release in releases:
            assert any(use.applies(release) for use in uses), (function, release)


def test_a_use_that_moved_is_relied_on_only_where_it_exists():
    """GUFunc's kernel dispatcher moved in Numba 0.60: one entry per place, by release."""
    gufunc = {
        u.instance_attribute: u
        for u in USES
        if u.function == "kernels.ufunc_dispatcher" and u.path == "GUFunc"
    }
    old, new = gufunc["gufunc_builder"], gufunc["_dispatcher"]
    assert old.applies((0, 59)) and not old.applies((0, 60))
    assert not new.applies((0, 59)) and new.applies((0, 60))


def test_pyproject_allows_exactly_the_tested_range():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (spec,) = [d for d in project["dependencies"] if d.split(">")[0].split("<")[0].strip() == "numba"]
    low, high = NUMBA_RANGE
    assert spec.replace(" ", "") == f"numba>={low},<0.{minor(high)[1] + 1}", spec


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaDebugInfoWarning")
def test_line_tables_only_compiles_a_function_with_line_tables_and_no_variables():
    """The door's line-tables pipeline on this Numba: the code runs, and its object code has a
    line table for the function's lines but no variable records."""
    import io

    from elftools.elf.elffile import ELFFile

    from numba_lprun.internals import compiled_object, line_table_options, pipeline_class

    def total(a):
        s = 0.0
        for x in a:
            s += x
        return s

    plain = numba.njit(total)
    options = line_table_options(boundscheck=False)
    twin = numba.njit(pipeline_class=line_tables_only(pipeline_class(plain)), **options)(total)
    assert twin(np.array([1.0, 2.0])) == 3.0
    (cres,) = twin.overloads.values()
    dwarf = ELFFile(io.BytesIO(compiled_object(cres.library))).get_dwarf_info(relocate_dwarf_sections=False)
    assert dwarf.debug_line_sec is not None
    tags = {die.tag for cu in dwarf.iter_CUs() for die in cu.iter_DIEs()}
    assert "DW_TAG_variable" not in tags and "DW_TAG_formal_parameter" not in tags


def _add_one(x):
    return x + 1


def test_the_post_lowering_hook_runs_on_each_lowered_module_and_is_seen_by_the_codegen():
    """What the exit flushes stand on (instrument/exits.py): the hook gets each lowered module,
    and code generated inside a hooked pipeline can tell that it is (``runs_post_lowering``)."""
    from numba import types
    from numba.extending import intrinsic

    from numba_lprun.internals import pipeline_class, runs_post_lowering, with_post_lowering

    modules, hooked_here = [], []

    def hook(module, library):
        modules.append(module)

    @intrinsic
    def mark(typingctx):
        def codegen(context, builder, sig, args):
            hooked_here.append(runs_post_lowering(context, hook))
            return context.get_dummy_value()

        return types.none(), codegen

    def f(x):
        mark()
        return x + 1

    pipeline = with_post_lowering(pipeline_class(numba.njit(f)), hook, "Test")
    assert numba.njit(pipeline_class=pipeline)(f)(1) == 2
    assert modules and hooked_here == [True]
    plain = numba.njit(f)
    assert plain(1) == 2 and hooked_here == [True, False]


_FINAL_MODULES: list = []


def _record_final_module(library) -> None:
    from numba_lprun.internals import rewrite_final_module

    def rewrite(module):
        _FINAL_MODULES.append(str(module))
        return module

    rewrite_final_module(library, rewrite)


def test_the_final_module_is_handed_over_before_machine_code_is_made():
    """What unwinding stands on (instrument/unwind.py): a pass before native lowering gets the
    library, and the library's linked, optimized module goes through the rewrite once."""
    from numba_lprun.internals import line_tables_only, optimized_ir, pipeline_class

    pipeline = line_tables_only(pipeline_class(numba.njit(_add_one)), library_pass=_recording_pass())
    before = len(_FINAL_MODULES)
    twin = numba.njit(pipeline_class=pipeline)(_add_one)
    assert twin(1) == 2
    assert len(_FINAL_MODULES) == before + 1 and "_add_one" in _FINAL_MODULES[-1]
    (cres,) = twin.overloads.values()
    assert "define" in optimized_ir(cres.library)


def _recording_pass() -> type:
    """The test's library pass, registered once per process (Numba refuses a name twice)."""
    from numba_lprun.internals import library_pass

    if not hasattr(_recording_pass, "made"):
        _recording_pass.made = library_pass("test_nlp_record_final_module", _record_final_module, "record")
    return _recording_pass.made


def _steps_counted_in_arms(n):
    """A Collatz loop whose arms each add to a counter, as a counting twin's do."""
    total = evens = odds = 0
    for start in range(1, n):
        k = start
        while k != 1:
            if k % 2 == 0:
                evens += 1
                k //= 2
            else:
                odds += 1
                k = 3 * k + 1
            total += 1
    return total + evens + odds


def test_the_if_conversion_budget_folds_a_branch_and_is_put_back_after():
    """What the counting twins' branch budget stands on (instrument/branch_budget.py): LLVM's
    option, raised while one library is optimized, folds the arms into selects (a ``cmov`` on
    x86 with LLVM 20 and newer), and code compiled after is compiled as before it."""
    import platform

    from llvmlite import binding as ll

    from numba_lprun.internals import optimized_with_if_conversion_budget, pipeline_class, with_post_lowering
    from tests.conftest import own_machine_code

    before = numba.njit(_steps_counted_in_arms)
    assert before(50) == before.py_func(50)
    raised = []

    def hook(module, library):
        raised.append(optimized_with_if_conversion_budget(library, 2))

    pipeline = with_post_lowering(pipeline_class(before), hook, "TestBudget")
    budgeted = numba.njit(pipeline_class=pipeline)(_steps_counted_in_arms)
    assert budgeted(50) == before(50)
    after = numba.njit(_steps_counted_in_arms)
    assert after(50) == before(50)
    assert raised and all(r == (ll.llvm_version_info >= (15,)) for r in raised)
    assert own_machine_code(after) == own_machine_code(before)  # the option was put back
    if ll.llvm_version_info >= (20,) and platform.machine() in ("x86_64", "AMD64"):
        assert "cmov" in own_machine_code(budgeted) and "cmov" not in own_machine_code(before)


def _every_other(n):
    s = 0
    for i in range(n):
        s += i % 3 if i % 2 else i
    return s


def _calls_every_other(n):
    return _every_other_jit(n) + 1


_every_other_jit = numba.njit(_every_other)
_calls_every_other_jit = numba.njit(_calls_every_other)


def test_setting_llvm_options_for_twins_prints_nothing(capfd):
    """LLVM 14 refuses an option set a second time, on the process's stderr ("may only occur
    zero or one times!"), and keeps the first value: profiles there set none
    (``internals.llvm_options_settable``). Two twins made, each with the sampler's line maps."""
    import numba_lprun

    capfd.readouterr()
    prof = numba_lprun.LineProfiler(_every_other_jit, _calls_every_other_jit, timing=False)
    assert prof.runcall(_calls_every_other_jit, 100) == _calls_every_other(100)
    err = capfd.readouterr().err
    assert "may only occur" not in err and "option" not in err, err


@numba.njit
def _reads_first_writes_second(x, out):
    for i in range(out.size):
        out[i] = 2.0 * x[i]


@numba.njit
def _returns_a_view(x):
    return x[1:]


def test_the_arguments_a_call_only_reads_or_writes_are_found_in_this_llvms_attributes():
    """The replays save no copy of an array the call's code only reads or only writes
    (``run/replay.py``): LLVM's inferred parameter attributes say which, spelt by each LLVM in its
    own way (``nocapture readonly`` in LLVM 14, ``readonly captures(none)`` from 20). A view
    returned, or code not compiled for these types, is neither."""
    from numba_lprun.internals import READ, WRITTEN, argument_access

    x, out = np.ones(9), np.zeros(8)
    assert argument_access(_reads_first_writes_second, (x, out)) is None  # not compiled yet
    _reads_first_writes_second(x, out)
    _returns_a_view(x)
    assert argument_access(_reads_first_writes_second, (x, out)) == {0: READ, 1: WRITTEN}
    assert argument_access(_returns_a_view, (x,)) == {}


def test_the_registries_list_every_live_dispatcher_and_ufunc_where_the_heap_has_them():
    """A profile finds the callers of a profiled function among every live dispatcher and CPU
    ufunc (``run/reach.py``), read from Python's registry of finalizers and the CPU typing
    context instead of a search of the heap: each held only where no module names it (a list
    in a closure, a dict, an instance's attribute) is listed, with all the heap search finds,
    and one let go of is no longer."""
    import gc
    import weakref

    from numba_lprun.internals import CPUDispatcher, registered_callers, ufunc_classes
    from numba_lprun.run.reach import live_objects

    def made():
        @numba.njit
        def in_a_list(x):
            return x + 1

        @numba.vectorize
        def dynamic(x):
            return x * 2

        @numba.vectorize(["float64(float64)"])
        def listed(x):
            return x * 3

        @numba.guvectorize(["void(float64[:], float64[:])"], "(n)->(n)")
        def general(a, out):
            out[:] = a

        kept = [in_a_list]
        return (lambda: kept), {"dynamic": dynamic, "listed": listed}, general

    closure, table, general = made()
    holder = type("Holder", (), {})()
    holder.general = general
    found = registered_callers()
    if installed_numba() < (0, 60):  # a GUFunc installs no typing there: the heap is searched
        assert found is None
        return
    ids = {id(obj) for obj in found}
    held = [closure()[0], table["dynamic"], table["listed"], holder.general]
    assert [obj for obj in held if id(obj) not in ids] == []
    searched = live_objects((CPUDispatcher, *ufunc_classes()))
    assert [obj for obj in searched if id(obj) not in ids] == []
    gone = weakref.ref(closure()[0])
    del closure, table, general, holder, held, found, searched
    gc.collect()
    assert gone() is None  # nothing here kept it
