"""The NAME=VALUE options of ``metaeval meta`` (--primary, --constant, --columns): values
with commas (lm-eval's metric names), repeated options, and no silent overrides."""

from __future__ import annotations

import argparse

import pytest
from _helpers import parse_raw

import metaeval
from metaeval_cli import build_parser, main
from metaeval_cli._parser import mapping


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("task=dataset,query=qid", {"task": "dataset", "query": "qid"}),  # as before
        (" task = dataset , query=qid ", {"task": "dataset", "query": "qid"}),
        ("gsm8k=exact_match,flexible-extract", {"gsm8k": "exact_match,flexible-extract"}),
        (
            "gsm8k=exact_match,flexible-extract,arc_easy=acc",
            {"gsm8k": "exact_match,flexible-extract", "arc_easy": "acc"},
        ),
        (
            "arc_easy=acc,gsm8k=exact_match,strict-match",
            {"arc_easy": "acc", "gsm8k": "exact_match,strict-match"},
        ),
        ("metric=AP(rel=2)", {"metric": "AP(rel=2)"}),  # '=' inside a value
        ("metric=nDCG(cutoff=10,rel=2),task=t", {"metric": "nDCG(cutoff=10,rel=2)", "task": "t"}),
        ("metric=nDCG@10", {"metric": "nDCG@10"}),
    ],
)
def test_values_may_hold_commas_and_equals_signs(text, expected):
    assert mapping(text) == expected


@pytest.mark.parametrize("text", ["", ",", "acc", "=acc", "task=", "acc,task=t", "a=1,a=2"])
def test_malformed_pairs_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match=repr(text).replace("(", r"\(")):
        mapping(text)


def _meta(*extra: str) -> argparse.Namespace:
    return build_parser().parse_args(["meta", "out", "--control", "a", *extra])


def test_primary_is_repeatable_and_merges():
    assert _meta("--primary").primary is True
    assert _meta().primary is None
    both = _meta("--primary", "gsm8k=exact_match,flexible-extract", "--primary", "arc_easy=acc")
    assert both.primary == {"gsm8k": "exact_match,flexible-extract", "arc_easy": "acc"}
    # a bare --primary means "the defaults"; named tasks override theirs either way
    assert _meta("--primary", "--primary", "arc_easy=acc_norm").primary == {"arc_easy": "acc_norm"}
    assert _meta("--primary", "arc_easy=acc_norm", "--primary").primary == {"arc_easy": "acc_norm"}
    assert _meta("--primary", "arc_easy=acc", "--primary", "arc_easy=acc").primary == {
        "arc_easy": "acc"
    }


@pytest.mark.parametrize("option", ["--primary", "--constant", "--columns"])
def test_a_name_given_two_values_is_a_usage_error(option, capsys):
    with pytest.raises(SystemExit) as exit_:
        _meta(option, "metric=acc", option, "metric=acc_norm")
    assert exit_.value.code == 2
    assert "metric is given twice (acc and acc_norm)" in capsys.readouterr().err


def test_constant_takes_an_lm_eval_metric_name(tmp_path, capsys):
    example = metaeval.load_example().query("metric == 'accuracy'")
    path = tmp_path / "scores.csv"
    example.drop(columns="metric").to_csv(path, index=False)
    code = main(
        [
            "meta",
            str(path),
            "--control",
            "naive_bayes",
            "--constant",
            "metric=exact_match,flexible-extract",
            "--print-mode",
            "raw",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    heterogeneity = parse_raw(captured.out)["Heterogeneity of the summaries"]
    assert set(heterogeneity["metric"]) == {"exact_match,flexible-extract"}
