"""Measure names of every dialect (ir_measures, trec_eval, ranx, elinor) map to ir_measures'."""

from __future__ import annotations

import pandas as pd
import pytest

import metaeval
from metaeval.errors import OptionError

ir_measures = pytest.importorskip("ir_measures")
from metaeval.ir import MEASURE_ALIASES, measure_name  # noqa: E402

# trec_eval's names, as trec_eval -m, pytrec_eval and PyTerrier write them
TREC = [
    "P_10",
    "P.5",
    "ndcg_cut_10",
    "ndcg_cut.10",
    "map",
    "map_cut_100",
    "recip_rank",
    "recall_100",
    "recall.1000",
    "ndcg",
    "Rprec",
    "bpref",
    "success_10",
    "num_rel_ret",
    "num_ret",
    "set_P",
    "iprec_at_recall_0.10",
    "infAP",
]

# ranx's names and what they are in ir_measures (ranx's documentation of each metric)
RANX = {
    "ndcg@10": "nDCG@10",
    "map@100": "AP@100",
    "map": "AP",
    "mrr@10": "RR@10",
    "mrr": "RR",
    "precision@10": "P@10",
    "recall@100": "R@100",
    "hits@10": "NumRelRet@10",
    "hit_rate@5": "Success@5",
    "r-precision": "Rprec",
    "bpref": "Bpref",
    "ndcg": "nDCG",
}

# elinor's (the metaeval command's earlier table; checked against elinor's output in tests/cli)
ELINOR = {
    "precision@3": "P@3",
    "recall@5": "R@5",
    "ap": "AP",
    "rr": "RR",
    "mrr": "RR",
    "ndcg@10": "nDCG@10",
    "success@1": "Success@1",
    "hit_rate@1": "Success@1",
}


def canonical(name: str) -> str:
    return str(ir_measures.parse_measure(name))


@pytest.mark.parametrize("name", TREC)
def test_trec_eval_names_are_ir_measures_own_reading(name):
    (expected,) = ir_measures.parse_trec_measure(name)
    assert measure_name(name) == str(expected)


@pytest.mark.parametrize(("name", "expected"), [*RANX.items(), *ELINOR.items()])
def test_ranx_and_elinor_names(name, expected):
    assert measure_name(name) == canonical(expected)
    assert measure_name(name.upper()) == canonical(expected)  # any case


@pytest.mark.parametrize(("alias", "target"), sorted(MEASURE_ALIASES.items()))
def test_every_alias_entry_is_an_ir_measures_measure(alias, target):
    assert measure_name(alias) == canonical(target)
    try:
        with_cutoff = canonical(f"{target}@7")
    except Exception:  # noqa: BLE001 - a measure without a cutoff
        return
    assert measure_name(f"{alias}@7") == with_cutoff


@pytest.mark.parametrize("name", ["nDCG@10", "AP(rel=2)", "Judged@10", "P(rel=2)@5", "ERR@20"])
def test_ir_measures_names_are_kept(name):
    assert measure_name(name) == canonical(name)


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [("ndcg@ten", "nDCG@10"), ("nDGC@10", "nDCG@10"), ("prec@10", "P@10"), ("mrrr@10", "RR@10")],
)
def test_unknown_names_get_the_closest_valid_ones(typed, suggested):
    with pytest.raises(OptionError, match="did you mean") as err:
        measure_name(typed)
    assert repr(suggested) in str(err.value).split("Valid names")[0]


def test_evaluate_and_the_command_take_every_dialect(tmp_path, capsys):
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
    runs = {
        "a": {"q1": {"d1": 1.0, "d2": 0.5}, "q2": {"d3": 0.3}},
        "b": {"q1": {"d2": 0.9}, "q2": {"d9": 0.1}},
    }  # every judged query: no warning
    ours = metaeval.ir.evaluate(qrels, runs, ["ndcg@10", "P_1", "map@100", "MRR@10"], task="t")
    ref = metaeval.ir.evaluate(qrels, runs, ["nDCG@10", "P@1", "AP@100", "RR@10"], task="t")
    pd.testing.assert_frame_equal(ours, ref)
    assert set(ours["metric"]) == {"nDCG@10", "P@1", "AP@100", "RR@10"}

    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 1.0 a\nq1 Q0 d2 2 0.5 a\nq2 Q0 d3 1 0.3 a\n")
    out = tmp_path / "s.tsv"
    from metaeval_cli import main

    code = main(
        [
            "evaluate",
            "--qrels",
            str(tmp_path / "qrels.txt"),
            "--run",
            str(tmp_path / "a.run"),
            "--measures",
            "ndcg_cut.10",
            "map@100",
            "--task",
            "t",
            "--output",
            str(out),
            "--print-mode",
            "raw",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert set(metaeval.io.read_scores(out)["metric"]) == {"nDCG@10", "AP@100"}
