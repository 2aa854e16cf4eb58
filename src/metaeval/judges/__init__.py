"""Judges as a measured instrument (issue 41): how much judges agree, with intervals.

A scores table with a ``judge`` column (who labelled each row: a model judge, a human)
is a table of labels; :func:`agreement` gives Krippendorff's α, Cohen's and Fleiss' κ,
Gwet's AC1 and the ICCs per task and metric with bootstrap intervals over items (or
clusters of items), the coefficient of every two judges, and pools them over tasks.
"""

from ._units import JUDGE
from .agreement import agreement
from .results import AgreementResult

__all__ = ["agreement", "AgreementResult", "JUDGE"]
