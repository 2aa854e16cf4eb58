"""Run a function right after a module is imported: registering an accessor on another
library's frames (dask's ``.meta``, polars' ``.metaeval``) without importing it first."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["after_import", "after_each_import"]


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then`` right after the module ``name`` is imported, once."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # find the real spec, once
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        then = self.then
        return _run_after(spec, lambda module: then())


def _run_after(spec: Any, then: Callable[[Any], None]) -> Any:
    """``spec`` with its loader running ``then(module)`` right after the module's code."""
    loader = spec.loader
    exec_module = loader.exec_module

    def exec_and_run(module: Any) -> None:
        exec_module(module)
        then(module)

    loader.exec_module = exec_and_run  # type: ignore[method-assign]
    return spec


def after_import(name: str, then: Callable[[], None]) -> None:
    """Call ``then()`` now if the module ``name`` is imported, else as soon as it is
    (one hook per module name, however often this is called)."""
    if name in sys.modules:
        then()
    else:
        _replace(_AfterImport(name, then), "name")


class _AfterEachImport(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` right after each module whose name starts with ``prefix`` is
    imported (the package itself included)."""

    def __init__(self, prefix: str, then: Callable[[Any], None]) -> None:
        self.prefix, self.then, self.busy = prefix, then, False

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if self.busy or not fullname.startswith(self.prefix):
            return None
        self.busy = True  # find the real spec without this finder
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        return _run_after(spec, self.then)


def after_each_import(prefix: str, then: Callable[[Any], None]) -> None:
    """Call ``then(module)`` for every module already imported whose name starts with
    ``prefix``, and for each such module as soon as it is imported (one hook per prefix)."""
    for name, module in list(sys.modules.items()):
        if name.startswith(prefix) and module is not None:
            then(module)
    _replace(_AfterEachImport(prefix, then), "prefix")


def _replace(finder: Any, key: str) -> None:
    """Put ``finder`` first on ``sys.meta_path`` in place of any finder of its kind with the
    same ``key``. Of its kind by the class's name, not ``isinstance``: a metaeval imported
    again (its modules deleted from ``sys.modules``) has new classes, and its finders would
    pile up beside the old ones, each wrapping the next module's loader once more."""
    kind, value = type(finder).__qualname__, getattr(finder, key)
    sys.meta_path[:] = [
        f
        for f in sys.meta_path
        if not (type(f).__qualname__ == kind and getattr(f, key, None) == value)
    ]
    sys.meta_path.insert(0, finder)
