"""Module paths that are not files: documented aliases and the old paths of moved modules.

``metaeval.ir`` (IR measures, :mod:`metaeval.measures.ir`) and
``metaeval.classification`` (:mod:`metaeval.measures.classification` with
:func:`~metaeval.bootstrap_effects`) are documented names. The old paths of
modules that moved when the package was split into one subpackage per stage
(``metaeval.stats``, ``metaeval.significance``, ``metaeval.analysis``) keep
working for one release and say where their contents went with a
:class:`FutureWarning`.

A finder on ``sys.meta_path`` makes ``import metaeval.ir``, ``from metaeval.ir
import evaluate`` and ``metaeval.ir`` (through the package's ``__getattr__``)
all work; the alias module forwards attribute access to the modules it stands
for and imports them on first use.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import Any

__all__ = ["ALIASES", "DEPRECATED", "install"]

ALIASES: dict[str, tuple[str, ...]] = {
    "metaeval.ir": ("metaeval.measures.ir", "metaeval.measures.columns"),
    "metaeval.classification": ("metaeval.measures.classification", "metaeval.paired.bootstrap"),
    "metaeval.stats": ("metaeval.paired.sufficient", "metaeval.paired._layout"),
    "metaeval.significance": (
        "metaeval.paired.significance",
        "metaeval.paired.anova",
        "metaeval.paired.means",
    ),
    "metaeval.analysis": ("metaeval.workflows.analysis", "metaeval.pooling.analysis"),
}
"""Alias module → the modules whose names it forwards, in order."""

DEPRECATED = {
    "metaeval.stats": "metaeval.paired",
    "metaeval.significance": "metaeval.paired",
    "metaeval.analysis": "metaeval.workflows",
}
"""Old module paths and where their public names are now (one release of FutureWarning)."""


class AliasModule(types.ModuleType):
    """A module whose attributes are those of the modules it stands for."""

    def __init__(self, name: str, targets: tuple[str, ...]) -> None:
        super().__init__(name, f"Alias of {', '.join(targets)}.")
        self.__targets = targets

    def _modules(self) -> list[types.ModuleType]:
        return [importlib.import_module(t) for t in self.__targets]

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        for module in self._modules():
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")

    def __dir__(self) -> list[str]:
        names: set[str] = set()
        for module in self._modules():
            names.update(
                getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")])
            )
        return sorted(names)


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name in DEPRECATED:
            warnings.warn(
                f"{spec.name} is deprecated and will be removed in the next release; its "
                f"functions are in {DEPRECATED[spec.name]} (and at the top level, metaeval.*).",
                FutureWarning,
                stacklevel=_user_level(),
            )
        return AliasModule(spec.name, ALIASES[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module forwards to its targets."""


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None):
        if fullname in ALIASES:
            return importlib.machinery.ModuleSpec(fullname, _Loader())
        return None


def _user_level() -> int:
    """``stacklevel`` of the first frame outside the import machinery and metaeval.

    ``warnings.warn`` does not count importlib's own frames, so neither does this.
    """
    frame: Any = sys._getframe(1)  # create_module, the caller of this function
    level = 1
    while frame is not None:
        name = frame.f_code.co_filename
        internal = "importlib" in name and "_bootstrap" in name  # not counted by warnings
        machinery = "importlib" in name or frame.f_globals.get("__name__", "").startswith(
            "metaeval"
        )
        if not internal and not machinery:
            return level
        frame = frame.f_back
        level += 0 if internal else 1
    return level


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
