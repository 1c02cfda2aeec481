"""The cache directory: what numba_lprun keeps between processes, and when it is stale.

Each ``nlprun`` used to calibrate the clock (0.2 s), time its probes (0.1 s) and
compile every twin (0.2-0.5 s each) afresh. What does not change between runs is
kept here, the way Numba's ``cache=True`` keeps compiled code:

* where: ``NUMBA_LPRUN_CACHE_DIR`` when set, else the user's cache directory
  (``$XDG_CACHE_HOME/numba_lprun``, ``~/.cache/numba_lprun``; ``~/Library/Caches``
  on macOS, ``%LOCALAPPDATA%`` on Windows). ``NUMBA_LPRUN_CACHE=0`` turns it off.
  A directory that cannot be written means no cache, never an error (as Numba).
* what invalidates: every record is keyed by the versions of Python, Numba,
  llvmlite and of numba_lprun's own code generation (``code_version``: the sources of
  ``instrument/`` and ``internals/``), so an
  upgrade or an edit of the probes starts afresh; the CPU (``cpu_identity``) and,
  for measured figures, the boot (``machine_key``) are part of their keys.
* a record that cannot be read (truncated, corrupt, written by another version)
  counts as absent and is written again; writes go to a temporary file renamed
  into place, so a reader never sees half a record.

Compiled twins live under ``twins/`` in Numba's own format (``twin_cache``); the
per-machine figures are small JSON files under ``machine/`` (``load_record``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

from .. import settings
from ..internals import host_cpu_identity

ENV_DIR = settings.CACHE_DIR
ENV_SWITCH = settings.CACHE
_INSTRUMENT_DIR = Path(__file__).resolve().parent
#: The code that generates twins' code: the instrumenting modules and the door to Numba's
#: internals (pipelines, line tables, the post-lowering and final-module hooks).
_CODE_DIRS = (_INSTRUMENT_DIR, _INSTRUMENT_DIR.parent / "internals")


def default_root() -> Path:
    """The per-user cache directory, as each platform names it (no directory is made)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "numba_lprun"
    if os.name == "nt":
        base = settings.platform_folder("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "numba_lprun" / "Cache"
    base = settings.platform_folder("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "numba_lprun"


def cache_root() -> Path | None:
    """The cache directory for this process, or None when caching is off or impossible.

    Read from the environment at each call (tests and long sessions may change it);
    the directory is made and checked for writing once per path.
    """
    if not settings.switch(ENV_SWITCH, True):
        return None
    chosen = settings.text(ENV_DIR)
    root = Path(chosen).expanduser() if chosen else default_root()
    return root if writable(str(root)) else None


@functools.lru_cache(maxsize=16)
def writable(path: str) -> bool:
    """Whether ``path`` is (or can be made) a directory this process can write files in.

    Numba's locators make the same check: create the directory, then a temporary
    file in it. Remembered per path, so a read-only cache costs one failed try.
    """
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


def subdir(name: str) -> Path | None:
    """``cache_root() / name``, made if needed; None when there is no usable cache."""
    root = cache_root()
    if root is None:
        return None
    path = root / name
    return path if writable(str(path)) else None


@functools.cache
def code_version() -> str:
    """A digest of numba_lprun's code generation (instrument/*.py, internals/*.py) and the versions of Python,
    Numba, llvmlite and NumPy (whose functions Numba compiles in).

    A twin compiled by other probe code, another Numba or another Python is not the
    same program, so all of it keys every record. Hashing the sources (about
    100 kB, under a millisecond) also catches edits in a development checkout that
    leave the package version alone.
    """
    import llvmlite
    import numba
    import numpy

    digest = hashlib.sha256()
    for part in (sys.version, platform.machine(), numba.__version__, llvmlite.__version__, numpy.__version__):
        digest.update(part.encode() + b"\0")
    for folder in _CODE_DIRS:
        for path in sorted(folder.glob("*.py")):
            digest.update(f"{folder.name}/{path.name}".encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@functools.cache
def cpu_identity() -> str:
    """The CPU as code generation sees it: LLVM's host CPU name and features.

    This is what Numba keys its own cache with (``codegen.magic_tuple()``), read
    through the door (``internals.host_cpu_identity``: llvmlite's binding).
    """
    return host_cpu_identity()


def boot_id() -> str | None:
    """This boot of this machine (Linux), or None where there is no such identifier."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def machine_key() -> str | None:
    """The key of figures measured on this machine since it booted, or None (do not keep them).

    The TSC's rate is fixed for a CPU but set up by the kernel at each boot, and a
    virtual machine may come back on another host after a reboot: keying by the
    boot id (plus the CPU and the code versions) recalibrates once per boot, which
    costs 0.2 s, and never applies a figure measured on other hardware. Without a
    boot id nothing is kept.
    """
    boot = boot_id()
    if boot is None:
        return None
    text = "|".join((boot, platform.node(), cpu_identity(), code_version()))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load_record(kind: str, key: str) -> dict:
    """The JSON record ``kind/key.json``, or {} when absent, unreadable or not a JSON object."""
    folder = subdir(kind)
    if folder is None:
        return {}
    try:
        with open(folder / f"{key}.json", encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def update_record(kind: str, key: str, **values: object) -> bool:
    """Merge ``values`` into the record ``kind/key.json``; False when it could not be written."""
    folder = subdir(kind)
    if folder is None:
        return False
    data = load_record(kind, key)
    data.update(values)
    return write_atomically(folder / f"{key}.json", json.dumps(data, sort_keys=True).encode())


def write_atomically(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through a temporary file renamed into place (readers never see
    half a file); False when the directory refused."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True
