"""Regenerate the bundled example benchmark (src/metaeval/datasets/example.csv.gz).

A small but real multi-task benchmark: five scikit-learn classifiers on the four
classification data sets that ship inside scikit-learn (no download), evaluated
by 5-fold stratified cross-validation with the same folds for every classifier,
so that every sample is a paired "query". Two per-sample metrics:

- ``accuracy``: 1 if the predicted class (highest predicted probability) is the
  true class, else 0;
- ``p_true_class``: the predicted probability of the true class (rounded to 6
  decimals).

Needs scikit-learn (``pip install -e ".[examples]"``); run from the repository root:

    python scripts/make_example_data.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn import datasets
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

OUT = Path(__file__).resolve().parents[1] / "src" / "metaeval" / "datasets" / "example.csv.gz"

TASKS = {
    "iris": datasets.load_iris,
    "wine": datasets.load_wine,
    "breast_cancer": datasets.load_breast_cancer,
    "digits": datasets.load_digits,
}

SYSTEMS = {
    "logistic_regression": lambda: make_pipeline(
        StandardScaler(), LogisticRegression(max_iter=5000)
    ),
    "random_forest": lambda: RandomForestClassifier(n_estimators=200, random_state=0),
    "gradient_boosting": lambda: GradientBoostingClassifier(random_state=0),
    "knn": lambda: make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=5)),
    "naive_bayes": lambda: GaussianNB(),
}


def main() -> None:
    frames = []
    for task, load in TASKS.items():
        X, y = load(return_X_y=True)
        folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
        for system, make in SYSTEMS.items():
            proba = cross_val_predict(make(), X, y, cv=folds, method="predict_proba")
            p_true = proba[np.arange(len(y)), y]
            correct = (proba.argmax(axis=1) == y).astype(float)
            for metric, values in (("accuracy", correct), ("p_true_class", p_true.round(6))):
                frames.append(
                    pd.DataFrame(
                        {
                            "task": task,
                            "query": np.arange(len(y)).astype(str),
                            "system": system,
                            "metric": metric,
                            "value": values,
                        }
                    )
                )
            print(f"{task:14s} {system:20s} accuracy {correct.mean():.4f}")
    table = pd.concat(frames, ignore_index=True)
    table.to_csv(OUT, index=False, compression={"method": "gzip", "mtime": 0})
    print(f"wrote {len(table)} rows to {OUT} ({OUT.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
