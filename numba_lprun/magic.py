"""The ``%nlprun`` line magic and ``%%nlprun`` cell magic.

Modelled on IPython's execution magics: the statement is compiled first so a
syntax error reads as one line, misuse raises ``UsageError``, whatever the
profiler swapped in is restored, and the profiler is returned only with ``-r``.
"""

from __future__ import annotations

import importlib
import re
import shlex
import shutil
import sys
from collections.abc import Callable

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from .cuda import CudaLineProfiler, bound_kernels, namespaces_of
from .errors import NotProfilableError, TwinCompileError, without_profiler_frames
from .instrument.packages import imported_from, split_packages
from .instrument.profilable import (
    evaluate_expression,
    is_dispatcher,
    may_be_compiled_later,
    overload_templates,
    profilable_in,
    resolve,
    templates_holding,
)
from .options import (
    MAGIC,
    cuda_profiler_kwargs,
    optional_value_flags,
    options_for,
    profiler_kwargs,
    run_options_given,
    value_flags,
)
from .profiler import LineProfiler
from .session import (
    RequestError,
    Selection,
    could_have_profiled,
    cut_short,
    load,
    names_made_by,
    nothing_ran,
    report,
    split_cpu_cuda,
)
from .stats import ProfileStats

_VALUE_OPTIONS = value_flags(MAGIC)
_OPTIONAL_VALUE_OPTIONS = optional_value_flags(MAGIC)
_OPTION_START = re.compile(r"-[A-Za-z]|--[A-Za-z]")


def _read_token(line: str, pos: int) -> tuple[str, int]:
    """One whitespace-delimited token at ``pos`` (quotes group and are removed)."""
    while pos < len(line) and line[pos].isspace():
        pos += 1
    if pos < len(line) and line[pos] in "'\"":
        end = line.find(line[pos], pos + 1)
        if end < 0:
            raise UsageError(f"nlprun: unterminated quote in options: {line[pos:]!r}")
        return line[pos + 1 : end], end + 1
    end = pos
    while end < len(line) and not line[end].isspace():
        end += 1
    return line[pos:end], end


def split_options(line: str) -> tuple[list[str], str]:
    """Options before the statement, and the statement text exactly as typed.

    Options end at the first token that is not an option (or after ``--``), so
    quotes and minus signs inside the statement are left alone.
    """
    tokens: list[str] = []
    pos = 0
    while True:
        while pos < len(line) and line[pos].isspace():
            pos += 1
        if line.startswith("-- ", pos) or line[pos:] == "--":
            return tokens, line[pos + 2 :].strip()
        if not _OPTION_START.match(line, pos):
            return tokens, line[pos:].strip()
        token, pos = _read_token(line, pos)
        tokens.append(token)
        glued = len(token) > 2 and not token.startswith("--")  # -fconv
        if token in _VALUE_OPTIONS and not glued:
            value, pos = _read_token(line, pos)
            if not value:
                raise UsageError(f"nlprun: option {token} needs a value")
            tokens.append(value)
        elif token in _OPTIONAL_VALUE_OPTIONS:  # --asm or --asm 5: a number right after is its value
            value, after = _read_token(line, pos)
            if value.isdigit():
                tokens.append(value)
                pos = after


def progress_line(message: str, width: int) -> str:
    """``message`` as one terminal line of at most ``width - 1`` characters: a longer one wraps,
    and erasing the line it ends on (``\\x1b[2K``) leaves the lines above it behind."""
    text = f"numba_lprun: {message} ..."
    return text if len(text) < width else text[: max(width - 2, 0)] + "…"


class _Progress:
    """Shows what is being compiled, and removes the message when done."""

    def __init__(self, in_kernel: bool):
        self.in_kernel = in_kernel
        self.handle = None
        self.shown = False

    def __call__(self, message: str) -> None:
        text = f"numba_lprun: {message} ..."
        if self.in_kernel:
            from IPython.display import DisplayHandle

            if self.handle is None:
                self.handle = DisplayHandle()
                self.handle.display({"text/plain": text}, raw=True)
            else:
                self.handle.update({"text/plain": text}, raw=True)
        elif sys.stderr.isatty():
            width = shutil.get_terminal_size().columns
            sys.stderr.write("\r\x1b[2K" + progress_line(message, width))
            sys.stderr.flush()
        self.shown = True

    def clear(self) -> None:
        if self.handle is not None:
            self.handle.update({"text/plain": ""}, raw=True)
        elif self.shown and sys.stderr.isatty():
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()

    def replace(self, report: object) -> None:
        """Show ``report`` where the progress line was (a notebook keeps no empty output for
        it), or below the cell's output when there was none."""
        if self.handle is not None:
            self.handle.update(report)
        else:
            display(report)


class ProfileReport:
    """What a notebook displays: HTML plus a line_profiler-style text fallback."""

    def __init__(self, html: str, text: str):
        self.html, self.text = html, text

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text


def _with_options(func):
    """The options of ``options.OPTIONS`` as IPython ``@argument`` decorators, in order, each
    with its one-line ``brief`` (``%nlprun?`` fits a screen; ``nlprun --help`` has the whole help)."""
    for opt in reversed(options_for(MAGIC)):
        func = argument(*opt.flags, **{**opt.argparse_kwargs(), "help": opt.brief or opt.help})(func)
    func = magic_arguments()(func)
    doc = func.__doc__.removeprefix("::\n\n")  # IPython's usage block, then the docstring, then options
    usage, _, rest = doc.partition("\n\n")
    said, _, listed = rest.partition("\noptions:\n")
    func.__doc__ = f"{said.rstrip()}\n\n{usage}\n\noptions:\n{listed}"  # the examples first
    return func


@magics_class
class NlprunMagics(Magics):
    """``%nlprun`` / ``%%nlprun``: line-profile Numba jitted functions."""

    @_with_options
    @line_cell_magic
    def nlprun(self, line: str, cell: str | None = None):
        """Line-profile Numba jitted functions while running a statement.

          %nlprun -f conv y = conv(x, k)       # conv's table, while the statement runs
          %%nlprun                             # a cell: the jitted functions it defines

        The statement runs once on twins of the functions that count each line's hits,
        under a sampler (each line's share of the time); where its state can be put
        back, plain runs follow (the overhead figure, more samples), and you keep one
        run's effects. @cuda.jit kernels: their launches. All of it: !nlprun --help
        """
        __tracebackhide__ = True
        tokens, statement = split_options(line)
        args = parse_argstring(self.nlprun, " ".join(shlex.quote(t) for t in tokens))
        if args.load is not None:
            return self._load(args, statement or cell)
        if cell is not None:
            if statement:
                raise UsageError(f"nlprun: unexpected text after the options of %%nlprun: {statement!r}")
            statement = self.shell.transform_cell(cell)
        elif not statement:
            raise UsageError("nlprun: no statement to profile (usage: %nlprun -f func statement)")
        filename = self.shell.compile.cache(statement, self.shell.execution_count)
        try:
            compile(statement, filename, "exec")
        except SyntaxError as exc:
            raise UsageError(f"nlprun: syntax error in the statement, line {exc.lineno}: {exc.msg}") from None
        later = names_made_by(args.functions, statement) if cell is not None else []
        try:
            functions, plain, kernels = self._functions(args, later)
        except RequestError as exc:
            raise UsageError(f"nlprun: {exc}") from None
        if kernels:
            return self._nlprun_cuda(args, statement, filename, functions, kernels)
        in_modules = self._module_functions(args)
        packages = split_packages(args.source)
        if cell is None and not functions and not plain and not in_modules and not packages:
            raise UsageError("nlprun: nothing to profile: give -f FUNC, -m MODULE or --source PKG")
        try:
            prof = LineProfiler(**profiler_kwargs(args))
            for func in functions:  # titled by the name -f gave it, where it is one
                named = (e for e in args.functions if self.shell.user_ns.get(e) is func)
                prof.add_function(func, next(named, None))
        except NotProfilableError as exc:
            raise UsageError(f"nlprun: {exc}") from None
        skipped = []
        for func in in_modules:
            try:
                prof.add_function(func)
            except NotProfilableError as exc:
                skipped.append(str(exc))
        if skipped:
            print("numba_lprun: skipped " + "; ".join(skipped))
        for func in imported_from(packages):
            prof.add_function(func)
        functions += in_modules
        chosen = bool(functions or packages or plain or later)
        # what Numba compiles during the run from the plain functions named, or from the functions
        # profiled @register_jitable implementations compile (for argument types new to the run)
        overloaded = tuple(f.py_func for f in functions if templates_holding(f))
        compiled = tuple(f for _, f, _ in plain) + overloaded
        selection = Selection(filename, packages, chosen=chosen, names=frozenset(later), plain=compiled)
        ns = self.shell.user_ns
        interrupted, error, progress = self._run(
            lambda progress: prof.runsource(
                statement, filename, ns, selection, progress=progress, flags=self.shell.compile.flags
            )
        )
        if prof.last_source is not None:
            for expr, func, why in (p for p in plain if p[1] in prof.last_source.plain_unmatched):
                # an @overload's implementation compiled during the statement is not one to be seen
                late = not overload_templates(func)
                said = "; nothing compiled it with Numba during the statement" if late else ""
                print(f"numba_lprun: -f {expr}: {why}{said}")
            for expr in (e for e in later if e in prof.last_source.names_unmatched):
                print(f"numba_lprun: -f {expr}: the cell made no jitted function of that name")
        return self._finish(prof, prof.profile, args, interrupted, error, progress)

    def _nlprun_cuda(self, args, statement: str, filename: str, functions: list, kernels: list):
        """A statement that launches CUDA kernels: run once, each named kernel bound to a
        stand-in that profiles its launches (``numba_lprun.cuda``), then put back."""
        prof = CudaLineProfiler(*kernels, **cuda_profiler_kwargs(args))
        ns = self.shell.user_ns
        code = compile(statement, filename, "exec", flags=self.shell.compile.flags, dont_inherit=True)

        def execute(progress) -> None:
            with bound_kernels(prof, namespaces_of(kernels, [ns])):
                exec(code, ns)

        interrupted, error, progress = self._run(execute)
        return self._finish(prof, prof.profile, args, interrupted, error, progress)

    def _finish(
        self, prof, profile: ProfileStats, args, interrupted: str | None, error: Exception | None, progress
    ):
        """Show the profile (why it was cut short, if it was), then raise the statement's error
        with the user's frames only (the profiler's whole traceback where it failed itself)."""
        __tracebackhide__ = True
        interrupted = cut_short(error, interrupted, "statement")
        self._show(profile, args, interrupted, error is not None, progress)
        if error is not None:
            raise without_profiler_frames(error)
        return prof if args.return_profiler else None

    def _load(self, args, statement: str | None) -> None:
        """``%nlprun --load FILE``: a saved profile shown again, as its run showed it."""
        refused = run_options_given(args, MAGIC) + (
            ["a statement"] if statement and statement.strip() else []
        )
        if refused:
            raise UsageError(
                f"nlprun: --load shows a saved profile: {refused[0]} is for a run, and none is made"
            )
        try:
            profile = load(args.load)
        except ValueError as exc:
            raise UsageError(f"nlprun: {exc}") from None
        self._show(
            profile, args, None, True, _Progress(in_kernel=getattr(self.shell, "kernel", None) is not None)
        )

    # -- pieces ----------------------------------------------------------------------
    def _functions(
        self, args, later: list[str]
    ) -> tuple[list[Callable], list[tuple[str, Callable, str]], list[object]]:
        """The CPU functions, the plain Python functions (expression, function, why it is not
        jitted now: profiled if Numba compiles it during the statement, as pandas'
        ``engine="numba"`` does) and the CUDA kernels and device functions ``-f`` names
        (``session.split_cpu_cuda`` tells them apart, and refuses both at once); not those
        the cell makes (``later``: matched by name as the cell runs)."""
        named = []
        for expr in (e for e in args.functions if e not in later):
            try:
                named.append((expr, evaluate_expression(expr, self.shell.user_ns)))
            except NotProfilableError as exc:
                raise UsageError(f"nlprun: -f {expr}: {exc}") from None
        others, cuda = split_cpu_cuda(named, args, MAGIC, args.modules)
        found: list[Callable] = []
        plain: list[tuple[str, Callable, str]] = []
        for expr, obj in others:
            try:
                found.extend(resolve(obj))
            except NotProfilableError as exc:
                if not may_be_compiled_later(obj):
                    raise UsageError(f"nlprun: -f {expr}: {exc}") from None
                plain.append((expr, obj, str(exc)))  # profiled if Numba compiles it during the run
        return found, plain, cuda

    def _module_functions(self, args) -> list[Callable]:
        found: list[Callable] = []
        for name in args.modules:
            try:
                module = sys.modules.get(name) or importlib.import_module(name)
            except Exception as exc:
                raise UsageError(f"nlprun: -m {name}: cannot import: {exc}") from None
            here = module.__name__
            mine = [v for v in vars(module).values() if is_dispatcher(v) and v.py_func.__module__ == here]
            if not mine:
                raise UsageError(f"nlprun: -m {name}: the module defines no Numba jitted function")
            found.extend(mine)
        return found

    def _run(
        self, execute: Callable[[Callable[[str], None]], None]
    ) -> tuple[str | None, Exception | None, _Progress]:
        """Run ``execute(progress)``: why it was cut short, if it was, the statement's own
        exception if any (profiling failures are one-line usage errors), and the progress line
        (in a notebook, the report takes its place)."""
        progress = _Progress(in_kernel=getattr(self.shell, "kernel", None) is not None)
        try:
            execute(progress)
        except (TwinCompileError, NotProfilableError) as exc:
            progress.clear()
            raise UsageError(f"nlprun: {exc}") from None
        except KeyboardInterrupt:
            return "interrupted by KeyboardInterrupt", None, progress
        except SystemExit as exc:
            return f"the statement called sys.exit({exc.code!r})", None, progress
        except Exception as exc:
            return None, exc, progress
        except BaseException:
            progress.clear()
            raise
        return None, None, progress

    def _show(self, profile: ProfileStats, args, interrupted: str | None, raised: bool, progress) -> None:
        show = None
        if getattr(self.shell, "kernel", None) is not None:
            show = lambda html, text: progress.replace(ProfileReport(html, text))  # noqa: E731
        else:
            progress.clear()
        report(profile, args, interrupted, show)
        if not raised and nothing_ran(profile):
            found = profilable_in(self.shell.user_ns, None)
            if found:
                print("numba_lprun: " + could_have_profiled(found, "the statement", profile))


def register(ipython) -> None:
    ipython.register_magics(NlprunMagics)
