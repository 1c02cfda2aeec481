"""Write the CLI and magic option reference from ``numba_lprun.options.OPTIONS``.

Each option is declared once, for both front ends, in ``numba_lprun/options.py``; at
build time (``builder-inited``) this extension writes ``docs/_generated/options.md``, a
table of flag, ``%nlprun`` form, ``nlprun`` form, default and help, which
``docs/reference.md`` includes. Nothing here is hand-written about an option.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

GENERATED = Path(__file__).resolve().parent.parent / "_generated" / "options.md"


def _code(text: str) -> str:
    return f"`{text}`"


def _form(opt: Any, front_end: str) -> str:
    """How the option is written in one front end, or a dash where it does not exist."""
    if front_end not in opt.front_ends:
        return "—"
    flag = " / ".join(opt.flags)
    if opt.action not in ("store", "append"):
        return _code(flag)
    metavar = opt.metavar or opt.dest.upper()
    value = f"[{metavar}]" if opt.optional_value is not None else metavar
    return _code(f"{flag} {value}")


def _default(opt: Any) -> str:
    if opt.optional_value is not None:
        return f"off; {opt.optional_value!r} when given without a value"
    value = opt.default_value
    if opt.action == "store_true":
        return "off"
    if opt.action == "store_false":
        return "on (the flag turns it off)"
    if opt.action == "append":
        return "none"
    if value is None:
        return "—"
    return _code(f"{value:g}" if isinstance(value, float) else repr(value))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def options_table() -> str:
    """The reference table, as MyST markdown (one row per declared option)."""
    from numba_lprun.options import CLI, MAGIC, OPTIONS

    rows = [
        "| flag | `%nlprun` | `nlprun` | default | help |",
        "|---|---|---|---|---|",
    ]
    for opt in OPTIONS:
        help_text = opt.help
        if opt.not_for_cuda:
            help_text += f" Not for CUDA kernels: {opt.not_for_cuda}."
        cells = [
            _code(" / ".join(opt.flags)),
            _form(opt, MAGIC),
            _form(opt, CLI),
            _default(opt),
            help_text,
        ]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(rows) + "\n"


def write_reference(app: Any = None) -> Path:
    """Write the table where ``reference.md`` includes it (only when it changed)."""
    text = (
        "<!-- generated from numba_lprun/options.py by docs/_ext/options_reference.py: do not edit -->\n\n"
        + options_table()
    )
    GENERATED.parent.mkdir(exist_ok=True)
    if not GENERATED.exists() or GENERATED.read_text(encoding="utf-8") != text:
        GENERATED.write_text(text, encoding="utf-8")
    return GENERATED


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", write_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
