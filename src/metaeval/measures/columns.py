"""Text columns of per-task means for a figure: the IR columns of Ranger's BEIR figure.

:func:`ir_columns` computes each task's mean of a metric for the control and a treatment
and writes them as ``"control → treatment"`` text, the columns :func:`metaeval.plot.forest`
draws beside a panel (``forest(columns=...)``). The figure draws them as given; the means
are computed here, from the scores table.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .._options import format_number
from ..engines import any_frame
from ..errors import SchemaError, quote_list

__all__ = ["ir_columns"]


def _fmt(x: float, digits: int, bound: bool = False) -> str:
    return format_number(x, digits, to="unicode", keep_sign=bound)


@any_frame
def ir_columns(
    scores: pd.DataFrame,
    control: str,
    *,
    treatment: str | Sequence[str] | None,
    metric: str = "nDCG@10",
    judged: str | None = "Judged@10",
    digits: int = 3,
) -> pd.DataFrame | dict[str, pd.DataFrame]:
    """The IR columns of the Ranger paper's BEIR figure, for ``forest(columns=...)``.

    Parameters
    ----------
    scores : pandas.DataFrame
        The scores table the effects were computed from.
    control : str
        The control system.
    treatment : str, list of str or None
        One treatment: a DataFrame, drawn beside that treatment's panel. A list,
        or None for every system of the scores but the control: a mapping of
        treatment to its DataFrame, one set of columns per panel.
    metric : str
        The metric whose means are shown.
    judged : str or None
        A judged-rate metric (``Judged@10``) shown in percent; None leaves it out.
    digits : int
        Decimals of the metric's means.

    Returns
    -------
    pandas.DataFrame or dict of str to pandas.DataFrame
        Indexed by task, with the metric's means as ``"control → treatment"``
        (e.g. ``0.494 → 0.679``) and, when ``judged`` is given, the judged rates
        the same way, in percent; ``attrs["treatment"]`` names the treatment, so
        that :func:`forest` draws the columns beside its panel.

    Examples
    --------
    >>> import pandas as pd
    >>> from metaeval.measures import ir_columns
    >>> scores = pd.DataFrame({"task": "scifact", "query": ["1", "2"] * 4,
    ...                        "system": ["bm25"] * 4 + ["tasb"] * 4,
    ...                        "metric": ["nDCG@10", "nDCG@10", "Judged@10", "Judged@10"] * 2,
    ...                        "value": [0.6, 0.4, 0.9, 0.7, 0.7, 0.5, 0.8, 0.6]})
    >>> ir_columns(scores, control="bm25", treatment="tasb")
                   nDCG@10       J@10
    task
    scifact  0.500 → 0.600  80% → 70%

    Any metric's means, beside a forest plot:

    >>> import metaeval
    >>> example = metaeval.load_example()
    >>> columns = ir_columns(example, control="logistic_regression", treatment="knn",
    ...                      metric="accuracy", judged=None)
    >>> columns.loc[["iris", "digits"]]
                 accuracy
    task
    iris    0.960 → 0.953
    digits  0.969 → 0.977
    >>> eff = example.meta.effects("logistic_regression", treatment="knn")
    >>> fig = eff.query("metric == 'accuracy'").meta.forest(columns=columns)
    >>> "0.969 → 0.977" in [text.get_text() for text in fig.texts]
    True
    """
    if treatment is None or not isinstance(treatment, str):
        names = (
            [s for s in pd.unique(scores["system"]) if s != control]
            if treatment is None
            else list(treatment)
        )
        return {
            str(t): ir_columns(
                scores,
                control=control,
                treatment=str(t),
                metric=metric,
                judged=judged,
                digits=digits,
            )
            for t in names
        }
    systems = set(scores["system"])
    for role, name in (("control", control), ("treatment", treatment)):
        if name not in systems:
            raise SchemaError(
                f"ir_columns(): the scores have no system {name!r} (the {role}); they have "
                f"{quote_list(sorted(map(str, systems)))}."
            )
    means = scores.groupby(["task", "system", "metric"], observed=True)["value"].mean()
    out = {}
    wanted = [(metric, metric, lambda v: _fmt(v, digits))]
    if judged is not None:
        short = judged.replace("Judged", "J")
        wanted.append((judged, short, lambda v: _fmt(100 * v, 0) + "%"))
    for name, header, fmt in wanted:
        if name not in set(scores["metric"]):
            raise SchemaError(
                f"ir_columns(): the scores have no metric {name!r}; they have {quote_list(sorted(set(scores['metric'])))}."
            )
        col = {}
        for task in pd.unique(scores["task"]):
            try:
                c, t = means[task, control, name], means[task, treatment, name]
            except KeyError:
                continue
            col[str(task)] = f"{fmt(c)} → {fmt(t)}"
        out[header] = col
    frame = pd.DataFrame(out).rename_axis("task")
    frame.attrs.update(treatment=treatment, control=control)
    return frame
