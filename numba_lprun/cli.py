"""``python -m numba_lprun script.py`` and the ``nlprun`` command.

Runs a script (or ``-m module``) with its own ``sys.argv`` and ``__main__``
semantics, profiling the jitted functions it defines (or those marked with
``@numba_lprun.profile``, or named with ``-f``), then prints the tables. The exit
status is the script's own; a profiling failure exits with 2 and says why, unless
``--keep-going`` asks to run the script unprofiled instead.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterable

from .decorator import is_marked
from .errors import NotProfilableError, TwinCompileError
from .instrument.kinds import import_spec
from .options import CLI, add_to_parser, asm_lines, profiler_kwargs, write_reports
from .profiler import LineProfiler, defined_in
from .renderers import print_profile, profile_text

USAGE_ERROR = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nlprun",
        description="Line-profile the Numba jitted functions of a script or module.",
        epilog="By default every jitted function the script defines is profiled; if the script uses "
        "@numba_lprun.profile, only the marked ones. The script runs on the plain twins, is "
        "repeated there under the sampler, then runs on the instrumented twins (only this last run's "
        "output is shown); --once runs it once.",
    )
    add_to_parser(parser, CLI)
    parser.add_argument("script", nargs="?", help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return parser


class _Program:
    """The script or module to run: its source, file name and argv."""

    def __init__(self, path: str | None, module: str | None, args: list[str]):
        if module is not None:
            spec = importlib.util.find_spec(module)
            if spec is None or spec.origin is None or not spec.has_location:
                raise SystemExit(f"nlprun: no module named {module!r} with a source file")
            if spec.submodule_search_locations is not None:  # a package: run its __main__
                spec = importlib.util.find_spec(module + ".__main__")
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
        try:
            with open(self.filename, encoding="utf-8") as handle:
                self.source = handle.read()
        except OSError as exc:
            raise SystemExit(f"nlprun: cannot read {self.filename}: {exc.strerror}") from None

    def namespace(self) -> dict:
        module = types.ModuleType("__main__")
        module.__file__ = self.filename
        module.__builtins__ = __builtins__
        module.__spec__ = self.spec
        if self.spec is not None:
            module.__package__ = self.spec.parent
        sys.modules["__main__"] = module
        return module.__dict__

    def uses_decorator(self) -> bool:
        """Whether the source decorates anything with ``profile`` (then only marked ones count)."""
        for node in ast.walk(ast.parse(self.source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for deco in node.decorator_list:
                    target = deco.func if isinstance(deco, ast.Call) else deco
                    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                    if name == "profile":
                        return True
        return False


def _resolve(spec: str) -> Callable | None:
    """``module:func`` imported now; a bare name is looked for in the script later."""
    if ":" not in spec:
        return None
    try:
        return import_spec(spec)
    except NotProfilableError as exc:
        raise NotProfilableError(f"-f {spec}: {exc}") from None


class _MarkedFinder:
    """Functions marked with ``@profile`` in modules imported since the last look."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self) -> Iterable[Callable]:
        found = []
        for name, module in list(sys.modules.items()):
            if name in self.seen or name == "__main__":
                continue
            self.seen.add(name)
            for value in list(getattr(module, "__dict__", {}).values()):
                if is_marked(value):
                    found.append(value)
        return found


def _profile_run(opts: argparse.Namespace, program: _Program) -> tuple[LineProfiler, int]:
    """Run the program under the profiler; its exit status."""
    explicit = [_resolve(spec) for spec in opts.functions]
    named = {spec for spec, func in zip(opts.functions, explicit, strict=True) if func is None}
    prof = LineProfiler(*[f for f in explicit if f is not None], **profiler_kwargs(opts))
    in_script = defined_in(program.filename)
    marked_only = program.uses_decorator()

    def pick(value: object) -> bool:
        if not in_script(value):
            return False
        if named:
            return value.py_func.__name__ in named
        return not opts.functions and (is_marked(value) or not marked_only)

    discover = _MarkedFinder() if not opts.functions else None
    saved_argv, saved_main, saved_path = sys.argv[:], sys.modules.get("__main__"), sys.path[:]
    sys.argv = program.argv
    sys.path.insert(0, program.path_entry)
    status = 0
    try:
        prof.runsource(program.source, program.filename, program.namespace, pick, discover)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except (NotProfilableError, TwinCompileError):
        raise
    except BaseException:
        traceback.print_exc()
        status = 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    return prof, status


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _run_unprofiled(program: _Program) -> int:
    saved_argv, saved_main = sys.argv[:], sys.modules.get("__main__")
    sys.argv = program.argv
    sys.path.insert(0, program.path_entry)
    try:
        exec(compile(program.source, program.filename, "exec"), program.namespace())
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


def _report(prof: LineProfiler, opts: argparse.Namespace) -> None:
    profile = prof.profile
    lines = asm_lines(opts)
    text = profile_text(profile, opts.unit, opts.stripzeros, width=0, asm_lines=lines)
    said = write_reports(prof, profile, opts, text)
    print_profile(profile, opts.unit, opts.stripzeros, asm_lines=lines)
    for sentence in said:
        print(sentence)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    opts = parser.parse_args(argv)
    if opts.module is not None and opts.script is not None:  # -m MODULE ARG...: ARG is the module's
        opts.args, opts.script = [opts.script, *opts.args], None
    if opts.script is None and opts.module is None:
        parser.error("give a script to run, or -m MODULE")
    program = _Program(opts.script, opts.module, opts.args)
    try:
        prof, status = _profile_run(opts, program)
    except (NotProfilableError, TwinCompileError) as exc:
        print(f"nlprun: profiling failed: {exc}", file=sys.stderr)
        if not opts.keep_going:
            return USAGE_ERROR
        print("nlprun: --keep-going: running the script unprofiled", file=sys.stderr)
        return _run_unprofiled(program)
    sys.stdout.flush()
    _report(prof, opts)
    return status


if __name__ == "__main__":
    sys.exit(main())
