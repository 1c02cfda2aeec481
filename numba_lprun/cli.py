"""``python -m numba_lprun script.py`` and the ``nlprun`` command.

Runs a script (or ``-m module``) with its own ``sys.argv`` and ``__main__``
semantics, profiling the jitted functions it defines (or those marked with
``@numba_lprun.profile``, or named with ``-f``), then prints the tables. The exit
status is the script's own; a profiling failure exits with 2 and says why, unless
``--keep-going`` asks to run the script unprofiled instead. CUDA kernels named with
``-f MODULE:KERNEL`` are bound, in their module, to stand-ins that profile their
launches while the script runs once (``numba_lprun.cuda``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import importlib.util
import linecache
import os
import sys
import traceback
from collections.abc import Callable, Iterator

from .cuda import CudaLineProfiler, bound_kernels, namespaces_of
from .decorator import kernprof_builtin
from .errors import NotProfilableError, TwinCompileError, without_profiler_frames
from .instrument.packages import imported_from, split_packages
from .instrument.profilable import (
    import_spec,
    may_be_compiled_later,
    profilable_in,
    resolve,
    templates_holding,
)
from .merge import merged
from .options import CLI, add_to_parser, cuda_profiler_kwargs, options_for, profiler_kwargs, value_flags
from .processes.ranks import gather_parts, job_rank
from .profiler import LineProfiler
from .session import (
    MainModule,
    RequestError,
    Selection,
    could_have_profiled,
    cut_short,
    nothing_ran,
    report,
    show_saved,
    split_cpu_cuda,
    version_text,
)
from .stats import ProfileStats

USAGE_ERROR = 2
#: Why a script is never run twice: what it writes outside its own namespace cannot be put back.
ONCE = "a script runs once (the files and state it changes cannot be put back)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nlprun",
        description="Line-profile the Numba jitted functions of a script or module.",
        epilog="By default every jitted function the script defines is profiled; if the script uses "
        "@numba_lprun.profile, only the marked ones. The script runs exactly once, on counting twins "
        "under the sampler: exact hits, and each line's time from its share of the samples. CUDA kernels "
        "and device functions named with -f MODULE:FUNC: the script runs once, each launch of the kernel "
        "profiled on a probed twin (hits, warps and active lanes per line, GPU cycles on a GPU).",
    )
    add_to_parser(parser, CLI)
    parser.add_argument("script", nargs="?", help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return parser


#: The file name of ``-c CODE``, as Python gives it (its source is put in ``linecache``).
CODE_FILENAME = "<string>"
#: Modules that run the script named among their arguments (``nlprun -m mpi4py sim.py``: mpi4py's
#: runner, which aborts the MPI job when a rank raises): what the script defines is what counts.
SCRIPT_RUNNERS = ("mpi4py",)


@contextlib.contextmanager
def _first_on_path(folder: str) -> Iterator[None]:
    """``folder`` first on ``sys.path`` inside the block, as python puts a script's (or, with
    ``-m``, the current) folder; ``sys.path`` as it was after it."""
    saved = sys.path[:]
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        sys.path[:] = saved


def _module_spec(module: str, folder: str | None = None) -> importlib.machinery.ModuleSpec | None:
    """``module``'s spec, found as ``python -m`` finds it: ``folder`` (the current one) first on
    ``sys.path`` (the ``nlprun`` console script starts without it, ``python -m numba_lprun`` with
    it); None where it, or a package it is in, is not there."""
    with _first_on_path(folder or os.getcwd()):
        try:
            return importlib.util.find_spec(module)
        except ModuleNotFoundError:  # a package it is in is missing
            return None


class _Program:
    """The script, module or ``-c`` code to run: its source, file name and argv."""

    def __init__(self, path: str | None, module: str | None, args: list[str], code: str | None = None):
        if code is not None:  # like python -c: argv[0] is "-c", the current folder first on sys.path
            self.filename, self.spec, self.argv, self.path_entry = (
                CODE_FILENAME,
                None,
                ["-c", *args],
                os.getcwd(),
            )
            self.source = code
            self.selected = CODE_FILENAME
            self.last_namespace: dict = {}
            lines = code.splitlines(keepends=True)
            linecache.cache[CODE_FILENAME] = (len(code), None, lines, CODE_FILENAME)  # for the twins' source
            return
        if module is not None:
            spec = _module_spec(module)
            if spec is None or spec.origin is None or not spec.has_location:
                raise SystemExit(f"nlprun: no module named {module!r} with a source file")
            if spec.submodule_search_locations is not None:  # a package: run its __main__
                spec = _module_spec(module + ".__main__")
                if spec is None or spec.origin is None:
                    raise SystemExit(f"nlprun: {module!r} is a package with no __main__ module")
            self.filename = os.path.abspath(spec.origin)
            self.spec = spec
            self.argv = [self.filename, *args]
            self.path_entry = os.getcwd()
        else:
            self.filename = os.path.abspath(path)
            self.spec = None
            self.argv = [path, *args]
            self.path_entry = os.path.dirname(self.filename)
        self.last_namespace: dict = {}  # the script's module namespace, once it ran
        try:
            with open(self.filename, encoding="utf-8") as handle:
                self.source = handle.read()
        except OSError as exc:
            raise SystemExit(f"nlprun: cannot read {self.filename}: {exc.strerror}") from None
        self.selected = self.filename  # the file whose functions count as the script's own
        if module in SCRIPT_RUNNERS:
            script = next((a for a in args if a.endswith(".py") and os.path.isfile(a)), None)
            if script is not None:
                self.selected = os.path.abspath(script)

    @property
    def main(self) -> MainModule:
        """Its ``__main__``, made fresh for each run."""
        return MainModule(self.filename, self.spec)

    def uses_decorator(self) -> bool:
        """Whether the source marks anything with ``profile``, as a decorator or called
        (``profile(f)``, kernprof's other habit): then only marked ones count."""
        source = self.source
        if self.selected != self.filename:  # the script a runner module runs
            with open(self.selected, encoding="utf-8") as handle:
                source = handle.read()
        for node in ast.walk(ast.parse(source)):
            marks = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                marks = [deco.func if isinstance(deco, ast.Call) else deco for deco in node.decorator_list]
            elif isinstance(node, ast.Call) and node.args:
                marks = [node.func]
            for target in marks:
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name == "profile":
                    return True
        return False


def _as_the_script_names_it(spec: str, program: _Program) -> str:
    """``spec`` with a ``module:`` that is the program itself left out (``-f selfref:kern
    selfref.py``): imported now, the script's body ran once as that module before it ran as
    ``__main__`` (its file appended to twice, its kernel "not called"). Its bare name is found
    in the script as it runs, as ``-f kern`` is."""
    module, sep, name = spec.partition(":")
    if sep and module == "__main__":  # what the script is when it runs
        return name
    if not sep or program.filename == CODE_FILENAME:
        return spec
    try:
        found = _module_spec(module, program.path_entry)  # imports the parent packages, as the run would
    except (ImportError, ValueError):
        return spec  # not the script: importing it says why
    origin = os.path.abspath(found.origin) if found is not None and found.origin else None
    return name if origin in (program.filename, program.selected) else spec


def _resolve(spec: str, program: _Program) -> Callable | None:
    """``module:func`` imported now, from where the script will import it (its folder first on
    ``sys.path``, as python puts it); a bare name (or one of the script's own module) is looked
    for in the script later."""
    if ":" not in _as_the_script_names_it(spec, program):
        return None
    with _first_on_path(program.path_entry):
        try:
            return import_spec(spec)
        except NotProfilableError as exc:
            raise NotProfilableError(f"-f {spec}: {exc}") from None


def _profile_run(
    opts: argparse.Namespace, program: _Program
) -> tuple[LineProfiler, int, BaseException | None, list[str]]:
    """Run the program under the profiler; its exit status, the exception it raised (shown
    after the profile, as python shows it last: its frames only), and the bare ``-f`` names
    that named nothing the script made."""
    specs = [_as_the_script_names_it(spec, program) for spec in opts.functions]
    explicit = [_resolve(spec, program) for spec in specs]
    named = {spec for spec, func in zip(specs, explicit, strict=True) if func is None}
    # a plain function a library jit-compiles during the run (pandas' engine="numba"): profiled as
    # Numba compiles it, said as unmatched if nothing did
    plain = {spec: f for spec, f in zip(specs, explicit, strict=True) if _compiled_later(f)}
    packages = split_packages(opts.source)
    profiled = [f for f in explicit if f is not None and not any(f is p for p in plain.values())]
    prof = LineProfiler(*profiled, **profiler_kwargs(opts))
    for func in imported_from(packages):
        prof.add_function(func)
    chosen = bool(opts.functions or packages)  # otherwise: what the script defines (or marks)
    selection = Selection(
        program.selected,
        packages,
        chosen,
        frozenset(named),
        program.uses_decorator(),
        find_marked=not chosen,
        # and what @overload/register_jitable implementations compile for types new to the run
        plain=tuple(plain.values()) + tuple(f.py_func for f in prof.functions if templates_holding(f)),
    )
    saved_argv, saved_main, saved_path = sys.argv[:], sys.modules.get("__main__"), sys.path[:]
    sys.argv = program.argv
    sys.path.insert(0, program.path_entry)
    status, error = 0, None
    try:
        with kernprof_builtin():
            prof.runsource(program.source, program.filename, program.main, selection, once=ONCE)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except (NotProfilableError, TwinCompileError):
        raise
    except BaseException as exc:  # the script's error, as python shows it: its frames only
        # (Ctrl-C: 130, the status a shell reads of python stopped by SIGINT)
        status, error = 130 if isinstance(exc, KeyboardInterrupt) else 1, without_profiler_frames(exc)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
        if prof.last_source is not None:
            program.last_namespace = prof.last_source.namespace
    unmatched = prof.last_source.names_unmatched if prof.last_source is not None else tuple(named)
    compiled = prof.last_source.plain_unmatched if prof.last_source is not None else tuple(plain.values())
    unmatched += tuple(spec for spec, f in plain.items() if any(f is c for c in compiled))
    said = [given for given, spec in zip(opts.functions, specs, strict=True) if spec in unmatched]
    return prof, status, error, said


def _compiled_later(func: object) -> bool:
    """Whether ``-f module:func`` named a plain Python function that Numba may compile during the
    run (not a jitted function's own ``py_func``), rather than something to refuse now."""
    if func is None or not may_be_compiled_later(func):
        return False
    try:
        resolve(func)
    except NotProfilableError:
        return True
    return False  # an @overload/register_jitable function already compiled: profiled as that


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _run_plain(program: _Program) -> int:
    """Run the program once, as Python would; its exit status."""
    saved_argv, saved_main = sys.argv[:], sys.modules.get("__main__")
    sys.argv = program.argv
    sys.path.insert(0, program.path_entry)
    try:
        with kernprof_builtin():
            program.last_namespace = program.main.make()
            exec(compile(program.source, program.filename, "exec", dont_inherit=True), program.last_namespace)
    except SystemExit as exc:
        return _exit_status(exc.code)
    except BaseException:
        traceback.print_exc()
        return 1
    finally:
        sys.argv = saved_argv
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    return 0


def _cuda_functions(opts: argparse.Namespace, program: _Program) -> list[object]:
    """The CUDA kernels and device functions ``-f MODULE:FUNC`` names (imported now), or none;
    ``RequestError`` where they come with CPU functions or options that mean nothing for them."""
    return split_cpu_cuda([(spec, _resolve(spec, program)) for spec in opts.functions], opts, CLI)[1]


def _cuda_run(
    opts: argparse.Namespace, program: _Program, functions: list[object]
) -> tuple[ProfileStats, int]:
    """Run the program once with the named kernels bound, in their modules, to stand-ins that
    profile their launches; the profile and the exit status."""
    prof = CudaLineProfiler(*functions, **cuda_profiler_kwargs(opts))
    modules = [vars(importlib.import_module(spec.partition(":")[0])) for spec in opts.functions]
    with bound_kernels(prof, namespaces_of(functions, modules)):
        status = _run_plain(program)
    return prof.profile, status


def split_module_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """nlprun's own arguments, and what follows ``-m MODULE`` or ``-c CODE`` (the program's, as
    ``python -m`` passes them: ``nlprun -m pytest --pyargs pkg -q`` gives ``--pyargs pkg -q`` to
    pytest)."""
    takes_value = value_flags(CLI)
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--" or not token.startswith("-"):
            break  # the script (or --): argparse's REMAINDER keeps what follows for it
        if token in ("-m", "-c"):
            return argv[: i + 2], argv[i + 2 :]
        if token[:2] in ("-m", "-c") and not token.startswith("--"):  # -mpytest
            return argv[: i + 1], argv[i + 1 :]
        i += 2 if token in takes_value else 1
    return argv, []


def _optional_values_filled(argv: list[str]) -> list[str]:
    """nlprun's own arguments with an option whose value may be left out (``--asm``) given its
    default where no number follows it: right before the script, argparse took the script's name
    for the number ("invalid int value: 'script.py'"). The program's arguments are left alone."""
    optional = [o for o in options_for(CLI) if o.optional_value is not None]
    defaults = {flag: o.optional_value for o in optional for flag in o.flags}
    takes_value = value_flags(CLI)
    out, i = [], 0
    while i < len(argv):
        token = argv[i]
        if token == "--" or not token.startswith("-") or token in ("-m", "-c"):
            return out + argv[i:]  # the program and its arguments
        if token in defaults and not (i + 1 < len(argv) and argv[i + 1].isdigit()):
            out.append(f"{token}={defaults[token]}")
            i += 1
            continue
        step = 2 if token in takes_value else 1
        out += argv[i : i + step]
        i += step
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["show"] and not os.path.exists("show"):  # python -m numba_lprun show FILE
        return _show_main(argv[1:])
    parser = build_parser()
    own, module_args = split_module_args(argv)
    opts = parser.parse_args(_optional_values_filled(own))
    if opts.version:
        print(version_text())
        return 0
    if opts.load is not None:  # a saved profile shown again: nothing runs
        return show_saved(opts, program=opts.script or opts.module or opts.code)
    if opts.module is not None and opts.code is not None:
        parser.error("give -m MODULE or -c CODE, not both")
    if opts.module is not None or opts.code is not None:  # every ARG after is the program's
        module_args = module_args[1:] if module_args[:1] == ["--"] else module_args
        opts.args = [*([opts.script] if opts.script is not None else []), *opts.args, *module_args]
        opts.script = None
    if opts.script is None and opts.module is None and opts.code is None:
        parser.error("give a script to run, -m MODULE or -c CODE")
    program = _Program(opts.script, opts.module, opts.args, opts.code)
    started_in = os.getpid()
    unnamed: list[str] = []
    try:
        kernels = _cuda_functions(opts, program)
        error = None
        if kernels:
            profile, status = _cuda_run(opts, program, kernels)
        else:
            prof, status, error, unnamed = _profile_run(opts, program)
            profile = prof.profile
    except RequestError as exc:
        print(f"nlprun: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except (NotProfilableError, TwinCompileError) as exc:
        print(f"nlprun: profiling failed: {exc}", file=sys.stderr)
        if not opts.keep_going:
            return USAGE_ERROR
        print("nlprun: --keep-going: running the script unprofiled", file=sys.stderr)
        return _run_plain(program)
    if os.getpid() != started_in:  # a process the script forked (os.fork): its counts went to the parent
        if error is not None:
            traceback.print_exception(error)
        return status
    job = job_rank()
    if job is not None:  # an MPI job: one profile of every rank, shown by rank 0
        gathered = gather_parts(profile, job)
        if gathered is None:  # another rank: its part went to rank 0, which prints and writes
            if error is not None:
                traceback.print_exception(error)
            return status
        profile = merged(profile, *gathered, ranks=job.size)
    sys.stdout.flush()
    report(profile, opts, cut_short(error, None, "script"))
    if error is None and not unnamed and nothing_ran(profile):
        print(_what_was_there(program, profile))
    if error is not None:
        sys.stdout.flush()
        traceback.print_exception(error)
    if unnamed:  # found out only once the script ran: it is not run again
        sys.stdout.flush()
        for spec in unnamed:
            print(_unnamed(spec, program), file=sys.stderr)
        if not opts.keep_going:
            return USAGE_ERROR
        print("nlprun: --keep-going: the script ran (once); its own exit status stands", file=sys.stderr)
    return status


def _show_main(argv: list[str]) -> int:
    """``python -m numba_lprun show FILE [options]``."""
    parser = argparse.ArgumentParser(
        prog="python -m numba_lprun show",
        description="Show a profile saved by -D (or ProfileStats.to_json) again, with its notes: the "
        "table as the run printed it, or line_profiler's text layout (-T -), or an HTML report (--html).",
    )
    parser.add_argument("load", metavar="FILE", help="the .lprof file that -D wrote, or a profile's JSON")
    add_to_parser(parser, CLI, on_load=True)
    return show_saved(parser.parse_args(argv))


def _profilable(program: _Program) -> list[str]:
    """What the script and the modules beside it hold that could be profiled, as ``-f`` names."""
    found = profilable_in(program.last_namespace, program.selected)
    root = os.getcwd() if program.selected == CODE_FILENAME else os.path.dirname(program.selected)
    for name, module in sorted(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if name != "__main__" and path.startswith(root + os.sep) and "site-packages" not in path:
            found += profilable_in(vars(module), path, name)
    return found


def _what_was_there(program: _Program, profile: ProfileStats | None = None) -> str:
    """Nothing profiled ran: what the script and the modules beside it hold that could be
    (less what ``profile`` holds already)."""
    found = _profilable(program)
    if not found:
        return (
            "nlprun: no profiled function ran, and the script and the modules beside it define no "
            "jitted function (@njit, @jitclass, @vectorize, @stencil): name one in an installed "
            "package with -f module:function"
        )
    return "nlprun: " + could_have_profiled(found, "the script", profile)


def _unnamed(spec: str, program: _Program) -> str:
    """``-f NAME`` named nothing the script made: what it made instead."""
    found = _profilable(program)
    made = "it made " + "; ".join(f"-f {f}" for f in found) if found else "it made none"
    return f"nlprun: profiling failed: -f {spec}: the script made no jitted function of that name ({made})"


if __name__ == "__main__":
    sys.exit(main())
