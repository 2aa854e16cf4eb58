"""The machine-readable last lines of every benchmark, read by ``benchmarks/run_all.py``.

``result(name, what, ratio, target)`` prints one line::

    RESULT name=ir_dicts ratio=1.14 target=<=1.2 what="metaeval.ir.evaluate / ir_measures.iter_calc, dict inputs"

``target`` is ``">=N"`` (the ratio must reach N: a speed-up), ``"<=N"`` (it must stay
under N: an overhead or a memory ratio) or ``""`` (no target: printed for information).

A ratio against a package metaeval does not install (statsmodels, ranx, baycomp, ...)
names it (the module imported): ``result(..., needs="statsmodels")`` adds
``needs=statsmodels`` to the line.
Where that package is missing (``optional(...)`` returned None) the benchmark skips the
comparison and prints the ratio as ``nan``: run_all.py shows ``n/a``, and
tests/test_benchmarks.py accepts a ``nan`` only on a line whose package is missing.
"""

from __future__ import annotations

import importlib
import math
import shlex
from types import ModuleType


def result(name: str, what: str, ratio: float, target: str = "", needs: str = "") -> None:
    """Print a ``RESULT`` line (see the module docstring)."""
    if target and not (target.startswith((">=", "<=")) and _number(target[2:])):
        raise ValueError(f"target {target!r}: '>=N', '<=N' or ''")
    shown = f"{ratio:.4g}" if math.isfinite(ratio) else "nan"
    extra = f" needs={needs}" if needs else ""
    print(
        f"RESULT name={name} ratio={shown} target={target or '-'}{extra} what={shlex.quote(what)}"
    )


def optional(module: str, install: str = "") -> ModuleType | None:
    """``module`` imported, or None (with a note) when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        print(
            f"{module.split('.')[0]} is not installed (pip install {install or module.split('.')[0]}): "
            "its comparison is skipped, its ratio printed as nan"
        )
        return None


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
