"""Run a function right after a module is imported: registering an accessor on another
library's frames (dask's ``.meta``, polars' ``.metaeval``) without importing it first."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["after_import"]


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
        loader = spec.loader
        exec_module = loader.exec_module
        then = self.then

        def exec_and_run(module: Any) -> None:
            exec_module(module)
            then()

        loader.exec_module = exec_and_run  # type: ignore[method-assign]
        return spec


def after_import(name: str, then: Callable[[], None]) -> None:
    """Call ``then()`` now if the module ``name`` is imported, else as soon as it is
    (one hook per module name, however often this is called)."""
    if name in sys.modules:
        then()
    elif not any(isinstance(f, _AfterImport) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(name, then))
