"""``metaeval judges``: the tables equal agreement, judge_errors and ppi; bad options exit 2,
an unreadable file 1."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import parse_raw

import metaeval
from metaeval_cli import main


def _labels(rng) -> pd.DataFrame:
    rows = []
    for task in ("t1", "t2"):
        gold_items = rng.random(80) < 0.3
        for system, skill in (("base", 0.5), ("new", 0.65)):
            truth = rng.random(80) < skill
            query = [f"{task}-q{i}" for i in range(80)]
            for judge, accuracy in (("gpt", 0.9), ("llama", 0.75)):
                label = np.where(rng.random(80) < accuracy, truth, ~truth)
                rows.append(
                    pd.DataFrame(
                        {
                            "task": task,
                            "query": query,
                            "system": system,
                            "metric": "correct",
                            "judge": judge,
                            "passage": np.arange(80) // 4,
                            "value": label * 1.0,
                        }
                    )
                )
            rows.append(
                pd.DataFrame(
                    {
                        "task": task,
                        "query": np.array(query)[gold_items],
                        "system": system,
                        "metric": "correct",
                        "judge": "human",
                        "passage": np.arange(80)[gold_items] // 4,
                        "value": truth[gold_items] * 1.0,
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_tables_are_the_library_s(capsys, tmp_path, rng):
    labels = _labels(rng)
    path = tmp_path / "labels.csv"
    labels.to_csv(path, index=False)
    code, out, err = _run(
        capsys,
        "judges",
        path,
        "--judge",
        "gpt",
        "--control",
        "base",
        "--cluster",
        "passage",
        "--n-resamples",
        100,
        "--seed",
        4,
        "--print-mode",
        "raw",
    )
    assert code == 0, err
    tables = parse_raw(out)
    agree = metaeval.agreement(
        labels, ["gpt", "llama"], cluster="passage", n_resamples=100, seed=4
    ).table
    got = tables["Agreement of the judges (Krippendorff's alpha)"]
    np.testing.assert_allclose(got["agreement"], agree["agreement"], rtol=1e-10)
    np.testing.assert_allclose(got["ci_low"], agree["ci_low"], rtol=1e-10)
    errors = metaeval.judge_errors(labels, "human", cluster="passage", n_resamples=100, seed=4)
    got = tables["Judges against 'human'"]
    np.testing.assert_allclose(got["sensitivity"], errors.table["sensitivity"], rtol=1e-10)
    got = tables["Effective number of independent judges"]
    np.testing.assert_allclose(got["n_eff"], errors.panel["n_eff"], rtol=1e-10)
    got = tables["Paired differences: the judge alone, gold alone, PPI++"]
    ppi = metaeval.ppi(labels, "human", "gpt", "base", cluster="passage")
    mine = got[got["estimator"] == "ppi++"].reset_index(drop=True)
    np.testing.assert_allclose(mine["effect"], ppi["effect"], rtol=1e-10)
    assert set(got["estimator"]) == {"judge", "classical", "ppi++"}


def test_bad_options_exit_2_and_bad_files_1(capsys, tmp_path, rng):
    path = tmp_path / "labels.csv"
    _labels(rng).to_csv(path, index=False)
    code, _, err = _run(capsys, "judges", path, "--gold", "nobody")
    assert code == 2 and "--gold 'nobody' is not a judge" in err
    code, _, err = _run(capsys, "judges", path, "--control", "zz")
    assert code == 2 and "--control 'zz'" in err
    code, _, err = _run(capsys, "judges", path, "--cluster", "chapter")
    assert code == 2 and "chapter" in err
    code, _, err = _run(capsys, "judges", path, "--control", "base", "--n-resamples", 10)
    assert code == 2 and "--judge" in err
    code, _, err = _run(capsys, "judges", tmp_path / "missing.csv")
    assert code == 1 and "no such file" in err
    (tmp_path / "bad.csv").write_text("task,query\nt,q\n")
    code, _, err = _run(capsys, "judges", tmp_path / "bad.csv")
    assert code == 1 and "judge" in err and "Traceback" not in err


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", ".tsv"])
def test_other_formats(capsys, tmp_path, rng, suffix):
    labels = _labels(rng)
    path = tmp_path / f"labels{suffix}"
    if suffix == ".parquet":
        labels.to_parquet(path)
    elif suffix == ".jsonl":
        labels.to_json(path, orient="records", lines=True)
    else:
        labels.to_csv(path, sep="\t", index=False)
    code, out, err = _run(capsys, "judges", path, "--n-resamples", 20, "--seed", 1)
    assert code == 0, err
    assert "Effective number of independent judges" in out
