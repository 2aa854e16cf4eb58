"""Example data: a small benchmark bundled with the package (:func:`load_example`),
Demšar's (2006) published table of four classifiers on 14 data sets
(:func:`load_demsar`) and the Ranger paper's published data, fetched on demand (:func:`fetch_ranger`, which
imports pooch only when it downloads)."""

from __future__ import annotations

from importlib import resources

import pandas as pd

from ._ranger import fetch_ranger

__all__ = ["load_example", "load_demsar", "fetch_ranger"]


def load_example() -> pd.DataFrame:
    """A small real multi-task benchmark as a tidy scores table.

    Five scikit-learn classifiers (``logistic_regression``, ``random_forest``,
    ``gradient_boosting``, ``knn``, ``naive_bayes``) on the four classification
    data sets that ship with scikit-learn (``iris``, ``wine``,
    ``breast_cancer``, ``digits``), scored per sample by 5-fold stratified
    cross-validation with the same folds for every classifier. Metrics:
    ``accuracy`` (0/1 per sample) and ``p_true_class`` (the predicted
    probability of the true class). 26,940 rows; made by
    ``scripts/make_example_data.py``. Loading needs no scikit-learn.

    Returns
    -------
    pandas.DataFrame
        Columns ``task, query, system, metric`` (str) and ``value`` (float).

    Examples
    --------
    >>> import metaeval
    >>> scores = metaeval.load_example()
    >>> scores.groupby(["task", "system"]).size().unstack().iloc[:, :2]
    system         gradient_boosting   knn
    task
    breast_cancer               1138  1138
    digits                      3594  3594
    iris                         300   300
    wine                         356   356
    """
    source = resources.files(__name__).joinpath("example.csv.gz")
    with resources.as_file(source) as path:
        return pd.read_csv(
            path,
            dtype={"task": str, "query": str, "system": str, "metric": str, "value": float},
        )


_DEMSAR_SYSTEMS = ("C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf")
_DEMSAR_AUC = {
    "adult (sample)": (0.763, 0.768, 0.771, 0.798),
    "breast cancer": (0.599, 0.591, 0.590, 0.569),
    "breast cancer wisconsin": (0.954, 0.971, 0.968, 0.967),
    "cmc": (0.628, 0.661, 0.654, 0.657),
    "ionosphere": (0.882, 0.888, 0.886, 0.898),
    "iris": (0.936, 0.931, 0.916, 0.931),
    "liver disorders": (0.661, 0.668, 0.609, 0.685),
    "lung cancer": (0.583, 0.583, 0.563, 0.625),
    "lymphography": (0.775, 0.838, 0.866, 0.875),
    "mushroom": (1.000, 1.000, 1.000, 1.000),
    "primary tumor": (0.940, 0.962, 0.965, 0.962),
    "rheum": (0.619, 0.666, 0.614, 0.669),
    "voting": (0.972, 0.981, 0.975, 0.975),
    "wine": (0.957, 0.978, 0.946, 0.970),
}


def load_demsar() -> pd.DataFrame:
    """Demšar's (2006) worked example: the AUC of four C4.5 variants on 14 UCI data sets.

    Table 6 of Demšar (2006), the example of his Friedman, Nemenyi and
    Bonferroni–Dunn tests: C4.5 with its default settings, with the minimal
    number of examples in a leaf ``m`` tuned (``C4.5+m``), with the confidence
    level of pruning ``cf`` tuned (``C4.5+cf``) and with both (``C4.5+m+cf``).
    One value per (data set, classifier): a scores table without per-query rows.

    The AUCs are printed with three decimals, which tie C4.5+cf and C4.5+m+cf
    on ``voting`` (0.975 each); the paper's ranks, from the unrounded values,
    put C4.5+cf second there. Ranked from this table, their average ranks are
    2.929 and 1.929 instead of the paper's 2.893 and 1.964 (and Friedman's
    χ²_F without the tie correction 9.86, not 9.28); with the paper's ranks the
    paper's numbers come out exactly (``tests/ranking/test_many_systems.py``).

    Returns
    -------
    pandas.DataFrame
        56 rows; columns ``task, query`` (``"all"``), ``system``, ``metric``
        (``"AUC"``) and ``value``.

    References
    ----------
    Demšar, J. (2006). Statistical comparisons of classifiers over multiple data
    sets. *Journal of Machine Learning Research*, 7, 1–30.

    Examples
    --------
    >>> import metaeval
    >>> auc = metaeval.datasets.load_demsar()
    >>> auc.pivot(index="task", columns="system", values="value").iloc[:2]
    system          C4.5  C4.5+cf  C4.5+m  C4.5+m+cf
    task
    adult (sample)  0.763    0.771   0.768      0.798
    breast cancer   0.599    0.590   0.591      0.569
    """
    tasks = list(_DEMSAR_AUC)
    return pd.DataFrame(
        {
            "task": [t for t in tasks for _ in _DEMSAR_SYSTEMS],
            "query": "all",
            "system": list(_DEMSAR_SYSTEMS) * len(tasks),
            "metric": "AUC",
            "value": [v for t in tasks for v in _DEMSAR_AUC[t]],
        }
    )
