"""A call as soon as a named module has been imported, while a block runs.

Why: what a profile must reach may be imported only after it began: a script that
imports ``distributed`` and then makes its ``Client`` (the client must be reached as it
connects), or a Dask worker whose kernel's module arrives later (a task imports it, or
``Client.upload_file`` ships it). Python has no event for "module imported", so for the
few module names asked for, a finder placed first on ``sys.meta_path`` finds the module
as the other finders would and has its loader call back once the module's code has run.
The loader's own ``exec_module`` is wrapped on that one loader object only for that one
import; the module, its spec and its loader are as Python made them; the finder is
removed when the block ends.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from importlib.machinery import ModuleSpec
from types import ModuleType

Callback = Callable[[ModuleType], None]


class _AfterImport:
    """The finder: for a watched name, the spec the other finders give, its loader told to call back."""

    def __init__(self, callbacks: dict[str, Callback]) -> None:
        self.callbacks = callbacks
        self.busy = threading.local()  # this thread is asking the other finders already

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        callback = self.callbacks.get(name)
        if callback is None or getattr(self.busy, "on", False):
            return None
        self.busy.on = True
        try:
            spec = _spec_from_others(self, name, path, target)
        finally:
            self.busy.on = False
        loader = getattr(spec, "loader", None)
        if loader is None or isinstance(loader, type) or not hasattr(loader, "exec_module"):
            return spec  # a built-in or frozen module (a class as loader): never one to watch
        own = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            try:
                own(module)
            finally:
                with contextlib.suppress(AttributeError):
                    del loader.exec_module  # the loader's own method again
            with contextlib.suppress(Exception):  # never let the profile break the user's import
                callback(module)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):  # a loader that takes no attribute: not watched
            pass
        return spec


def _spec_from_others(finder: object, name: str, path: object, target: object) -> ModuleSpec | None:
    for other in list(sys.meta_path):
        find = getattr(other, "find_spec", None)
        if other is finder or find is None:
            continue
        spec = find(name, path, target)
        if spec is not None:
            return spec
    return None


@contextlib.contextmanager
def after_import(callbacks: dict[str, Callback]) -> Iterator[None]:
    """While the block runs, ``callbacks[name](module)`` is called once the module ``name`` has
    been imported (in the importing thread, before the import returns; never for a module
    already imported when the block began: look in ``sys.modules`` for those)."""
    if not callbacks:
        yield
        return
    finder = _AfterImport(dict(callbacks))
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)
