"""The Ranger paper's GLUE study (../shared/data; skipped where it is absent)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import metaeval

# Published in the Ranger notebooks (../shared/data/README.md); Ranger uses ddof=0.
PUBLISHED = {
    "mnli": (-0.067849, -0.085384, -0.050313),
    "qqp": (-0.037032, -0.045924, -0.028139),
    "summary": (-0.054860, -0.078603, -0.031118),
}


def _glue(root) -> pd.DataFrame:
    frames = []
    for folder, system in (("bert-base-cased", "bert"), ("distilbert-base-cased", "distilbert")):
        for path in sorted((root / "ranger" / "classification-glue-data" / folder).glob("*/*.txt")):
            values = np.loadtxt(path)
            frames.append(
                pd.DataFrame(
                    {
                        "task": path.parent.name,
                        "query": np.arange(len(values)),
                        "system": system,
                        "metric": "accuracy",
                        "value": values,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def test_glue_smd_dl_matches_published_table(shared_data):
    table = _glue(shared_data).meta.analyze(control="bert", **metaeval.RANGER)
    assert table["task"].tolist() == [
        "mnli",
        "mrpc",
        "qnli",
        "qqp",
        "rte",
        "sst2",
        "wnli",
        "summary",
    ]
    for task, expected in PUBLISHED.items():
        row = table[table["task"] == task].iloc[0]
        got = (row["effect"], row["ci_low"], row["ci_high"])
        np.testing.assert_allclose(got, expected, rtol=0.01, err_msg=task)
    assert table["weight"].iloc[:-1].sum() == pytest.approx(100)
