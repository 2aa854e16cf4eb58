"""The result of a plan: the table of what a comparison needs, and its power curves."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import pandas as pd

from .._results import Result

__all__ = ["PowerResult"]


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class PowerResult(Result):
    """A plan: ``table`` has one row per group (the answer: ``n`` or ``k``, ``mde``,
    ``power``, and what the pilot gave), ``curve`` the power of each group over a range
    of sizes (columns: the group keys, ``size`` — queries, clusters or tasks —, ``power``,
    and ``target``, the power the plan aims at, NaN where it solved for power), for
    :meth:`plot`; ``unit`` names the size (``"queries"``, ``"clusters"``, ``"tasks"``)."""

    curve: pd.DataFrame
    unit: str = "queries"
    kind: ClassVar[str] = "power"

    def plot(self, **kwargs: Any) -> Any:
        """Power curves: :func:`metaeval.plot.power_curves` of this plan."""
        from ..plot import power_curves

        return power_curves(self, **kwargs)
