"""Judges as a measured instrument (issue 41): how much judges agree, with intervals.

A scores table with a ``judge`` column (who labelled each row: a model judge, a human)
is a table of labels; :func:`agreement` gives Krippendorff's α, Cohen's and Fleiss' κ,
Gwet's AC1 and the ICCs per task and metric with bootstrap intervals over items (or
clusters of items), the coefficient of every two judges, and pools them over tasks;
:func:`judge_errors` measures each judge against a gold judge's labels (error rates, the
correlation of judges' errors, the effective number of independent judges, the
Rogan–Gladen prevalence); :func:`ppi` estimates means and paired differences from many
judge labels and a few gold ones (prediction-powered inference, PPI++).
"""

from ._units import JUDGE
from .agreement import agreement
from .judge_errors import judge_errors
from .ppi import ppi
from .results import AgreementResult, JudgeErrorsResult

__all__ = ["agreement", "judge_errors", "ppi", "AgreementResult", "JudgeErrorsResult", "JUDGE"]
