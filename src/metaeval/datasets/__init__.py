"""Example data: a small benchmark bundled with the package (:func:`load_example`) and
the Ranger paper's published data, fetched on demand (:func:`fetch_ranger`, which
imports pooch only when it downloads)."""

from __future__ import annotations

from importlib import resources

import pandas as pd

from ._ranger import fetch_ranger

__all__ = ["load_example", "fetch_ranger"]


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
