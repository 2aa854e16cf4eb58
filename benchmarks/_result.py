"""The machine-readable last lines of every benchmark, read by ``benchmarks/run_all.py``.

``result(name, what, ratio, target)`` prints one line::

    RESULT name=ir_dicts ratio=1.14 target=<=1.2 what="metaeval.ir.evaluate / ir_measures.iter_calc, dict inputs"

``target`` is ``">=N"`` (the ratio must reach N: a speed-up), ``"<=N"`` (it must stay
under N: an overhead or a memory ratio) or ``""`` (no target: printed for information).
"""

from __future__ import annotations

import math
import shlex


def result(name: str, what: str, ratio: float, target: str = "") -> None:
    """Print a ``RESULT`` line (see the module docstring)."""
    if target and not (target.startswith((">=", "<=")) and _number(target[2:])):
        raise ValueError(f"target {target!r}: '>=N', '<=N' or ''")
    shown = f"{ratio:.4g}" if math.isfinite(ratio) else "nan"
    print(f"RESULT name={name} ratio={shown} target={target or '-'} what={shlex.quote(what)}")


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
