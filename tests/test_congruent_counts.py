"""Counts read from the program's own counts (``instrument/congruent_counts.py``), on random loops.

The differential fuzzer (test_fuzz.py) never reaches this rewrite: its loops run on bounded
counters, whose trip counts LLVM computes, so LLVM folds their counts itself. Here the loops
run for as long as the data says (Collatz steps from random starts), and the program keeps
counts of its own (``c``, from 0 or 1, counted first thing, in an arm, or last; ``d`` in the
odd arm), beside ``break``, ``continue`` and ``raise`` on random conditions: the exits where a
count read from a program value could go wrong. Each program is profiled hits only (the twins
that count in registers, which the rewrite serves) and its hits compared with line_profiler's
on the Python function, its result (or exception) with CPython's. A fixed seed: the same
programs every run; the merge fires in more than half of them on Numba 0.68's LLVM.
"""

import importlib.util
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import line_profiler
import numpy as np

import numba_lprun
from numba_lprun.instrument import branch_budget, congruent_counts
from tests.conftest import hits_of

PROGRAMS = 30
SEED = 34


def _program(rng: random.Random) -> str:
    body = ["c += 1"] if rng.random() < 0.7 else []
    body += ["if k % 2 == 0:", "    k //= 2", "else:", "    k = 3 * k + 1"]
    if rng.random() < 0.6:
        body.append("    d += 1")
    if rng.random() < 0.4:
        body.append(rng.choice(["c += 1", "d += 1"]))
    for chance, text in ((0.5, "if k == stop:\n    break"), (0.4, "if k % 5 == 1:\n    continue")):
        if rng.random() < chance:
            body.append(text)
    if rng.random() < 0.5:
        body.append("if k < 0:\n    raise ValueError('a negative step')")
    if rng.random() < 0.3:
        body.append("c += 1")
    inner = textwrap.indent("\n".join(body), " " * 12)
    start = rng.choice([0, 0, 1])
    return (
        "from numba import njit\n\n\n@njit\ndef f(vals, stop):\n"
        f"    c = {start}\n    d = 0\n    for v in vals:\n        k = v\n        while k > 1:\n{inner}\n"
        "    return c, d\n"
    )


def _outcome(call, *args):
    try:
        return "returned", call(*args)
    except ValueError as exc:
        return "raised", str(exc)


def _profiled_programs(rng: random.Random, folder: Path, programs: int):
    """(source, module, args) of ``programs`` random loops, written to ``folder``."""
    for n in range(programs):
        source = _program(rng)
        path = folder / f"loops_{n}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(f"loops_{n}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        starts = [rng.randint(2, 60) for _ in range(rng.randint(1, 6))]
        vals = np.array(starts + ([-3] if rng.random() < 0.3 else []))
        yield source, module, (vals, rng.choice([0, 16, 5, 4]))


def test_counts_read_from_the_programs_counts_stay_line_profilers(tmp_path, monkeypatch):
    merges = []
    rewrite = branch_budget.merge_congruent_counts

    def counted(text):  # the real rewrite, its merges counted
        out = rewrite(text)
        merges.append(out[1])
        return out

    monkeypatch.setattr(branch_budget, "merge_congruent_counts", counted)
    rng = random.Random(SEED)
    merged_in = 0
    for source, module, args in _profiled_programs(rng, tmp_path, PROGRAMS):
        reference = line_profiler.LineProfiler(module.f.py_func)
        expected = _outcome(reference.runcall, module.f.py_func, *args)
        before = sum(merges)
        prof = numba_lprun.LineProfiler(module.f, timing=False)
        assert _outcome(prof.runcall, module.f, *args) == expected, source
        assert hits_of(prof.get_stats(), "f") == hits_of(reference.get_stats(), "f"), source
        merged_in += sum(merges) > before
    assert merged_in > PROGRAMS // 3  # the rewrite met these loops (not only the exactness checked)


def _every_count_paired(values, counts, uses, blocks):
    """A congruence gone wrong: each count paired with the first program value of its kind in
    its block (where it may stand), whether or not the two are equal."""
    phis = {value.line for value in values.values() if value.key[0] == "phi"}
    paired = {}
    for name in counts:
        for other, value in values.items():
            same_kind = other not in counts and (value.key, value.block) == (
                values[name].key,
                values[name].block,
            )
            if same_kind and (
                value.key[0] == "phi"
                or congruent_counts._reads_after(uses.get(name, ()), value, blocks, phis)
            ):
                paired[name] = other
                break
    return paired


def wrong_outcomes_with_every_count_paired(programs: int, folder: str) -> None:
    """(Run in a child) the random loops profiled with ``_every_count_paired`` in place of the
    congruence; prints how many results and how many hits differ from CPython's."""
    congruent_counts._congruent = _every_count_paired
    wrong = {"results": 0, "hits": 0}
    for _source, module, args in _profiled_programs(random.Random(SEED), Path(folder), programs):
        reference = line_profiler.LineProfiler(module.f.py_func)
        expected = _outcome(reference.runcall, module.f.py_func, *args)
        prof = numba_lprun.LineProfiler(module.f, timing=False)
        wrong["results"] += _outcome(prof.runcall, module.f, *args) != expected
        wrong["hits"] += hits_of(prof.get_stats(), "f") != hits_of(reference.get_stats(), "f")
    print(json.dumps(wrong))


def test_a_wrong_congruence_could_make_only_counts_wrong(tmp_path):
    """Only values the program never reads are replaced (each use a count or the flush): with
    the congruence broken on purpose (every count paired, equal or not), the counts go wrong and
    the programs still compute CPython's results (before the rule, some looped for ever). In a
    child, with a time limit: a program that loops for ever is this test failing."""
    root = Path(__file__).resolve().parent.parent
    code = (
        "from tests.test_congruent_counts import wrong_outcomes_with_every_count_paired as run; run(12, {!r})"
    )
    env = {
        **os.environ,
        "NUMBA_LPRUN_CACHE_DIR": str(tmp_path / "twins"),
        "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
    }
    done = subprocess.run(
        [sys.executable, "-c", code.format(str(tmp_path))],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    wrong = json.loads(done.stdout.strip().splitlines()[-1])
    assert wrong["results"] == 0
    assert wrong["hits"] > 0  # the broken congruence was in place
