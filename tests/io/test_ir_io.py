"""Getting scores in: metaeval.ir on ir_measures, and the readers of metaeval.io."""

from __future__ import annotations

import gzip
import json
import re
import warnings
from functools import partial

import metaeval.ir
import numpy as np
import pandas as pd
import pytest

import metaeval
from metaeval import FormatError, PairingWarning, SchemaError
from metaeval import io as mio
from metaeval.io.trec import read_nested

pytest.importorskip("ir_measures")

# the per-task mean nDCG@10 differences (Uni-ColBERTer - TAS-B) of the Ranger paper's BEIR figure
PAPER_MD = {
    "trec-covid": 0.184815,
    "tripclick": 0.008639,
    "nfcorpus": 0.007292,
    "dbpedia-entity": 0.031409,
    "antique": 0.122602,
    "trec-podcast": 0.025695,
}


@pytest.fixture
def beir(shared_data):
    return shared_data / "ranger" / "retrieval-colberter-data"


def test_beir_study_reproduces_the_paper(beir):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = mio.read_ranger(beir / "config.yaml", missing_files="skip")
    messages = [str(w.message) for w in caught if issubclass(w.category, PairingWarning)]
    assert len(messages) == len(caught) == 2
    assert any("robust04" in m for m in messages)  # listed in the config, absent here
    # runs of trec_podcast and tripclick return queries without judgments: left out, counted
    unjudged = next(m for m in messages if m.startswith("Queries a run returned"))
    assert "task='tripclick', system='tasb_dim768_hf', queries=32" in unjudged
    assert "task='trec-podcast', system='colberter_dim1', queries=2" in unjudged
    assert scores.attrs["display_names"]["trec-covid"] == "TREC Covid"
    ndcg = scores[scores["metric"] == "nDCG@10"]
    eff = ndcg.meta.effects(control="tasb_dim768_hf", effect="md")
    got = dict(zip(eff["task"], eff["effect"], strict=True))
    assert got.keys() == PAPER_MD.keys()
    for task, value in PAPER_MD.items():
        assert got[task] == pytest.approx(value, abs=1e-6), task
    means = scores.groupby(["task", "system", "metric"])["value"].mean()
    assert means["trec-covid", "tasb_dim768_hf", "nDCG@10"] == pytest.approx(
        0.494, abs=5e-4
    )  # "0.494 → 0.679"
    assert means["trec-covid", "colberter_dim1", "nDCG@10"] == pytest.approx(0.679, abs=5e-4)
    assert means["trec-covid", "colberter_dim1", "Judged@10"] == pytest.approx(0.876, abs=1e-12)


def test_per_query_values_equal_pytrec_eval(beir):
    import pytrec_eval

    qrels = mio.read_qrels(beir / "qrels" / "nfcorpus_qrels.txt")
    run = mio.read_run(beir / "tasb_dim768_hf" / "nfcorpus_top10.txt")
    ours = metaeval.ir.evaluate(qrels, {"tasb": run}, ["nDCG@10", "P@5"], task="nfcorpus")
    q = {
        k: dict(zip(g["doc_id"], g["relevance"].astype(int), strict=True))
        for k, g in qrels.groupby("query_id")
    }
    r = {k: dict(zip(g["doc_id"], g["score"], strict=True)) for k, g in run.groupby("query_id")}
    ref = pytrec_eval.RelevanceEvaluator(q, {"ndcg_cut.10", "P.5"}).evaluate(r)
    for metric, key in (("nDCG@10", "ndcg_cut_10"), ("P@5", "P_5")):
        part = ours[ours["metric"] == metric].set_index("query")["value"]
        assert len(part) == qrels["query_id"].nunique()
        for qid, value in part.items():  # judged queries the run misses: 0, as trec_eval -c
            assert value == pytest.approx(ref[qid][key] if qid in ref else 0.0, abs=1e-12)


def test_elinor_sample_per_query_values(shared_data):
    d = shared_data / "elinor-sample"
    qrels = mio.read_jsonl(d / "true.jsonl", rel_type="true")
    runs = {f"pred_{i}": mio.read_jsonl(d / f"pred_{i}.jsonl") for i in (1, 2, 3)}
    ours = metaeval.ir.evaluate(qrels, runs, ["P@3", "AP", "RR", "nDCG@3"], task="sample")
    ref = mio.read_per_query_csv(
        {f"pred_{i}": d / f"pred_{i}.csv" for i in (1, 2, 3)}, task="sample"
    )
    names = {"precision@3": "P@3", "ap": "AP", "rr": "RR", "ndcg@3": "nDCG@3"}
    both = ours.merge(
        ref.assign(metric=ref["metric"].map(names)), on=["task", "query", "system", "metric"]
    )
    assert len(both) == len(ref) == 3 * 8 * 4
    np.testing.assert_allclose(both["value_x"], both["value_y"], rtol=1e-12)


def _files(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d4 1\n")
    (tmp_path / "run6.txt").write_text(
        "q1 Q0 d1 1 3.0 x\nq1 Q0 d2 2 2.0 x\nq2 Q0 d9 1 1.0 x\nq9 Q0 d1 1 1.0 x\n"
    )
    with gzip.open(tmp_path / "run4.gz", "wt") as f:
        f.write("q1 d2 1 5\nq2 d3 1 4\n")
    return tmp_path


def test_evaluate_input_forms_and_missing_queries(tmp_path):
    import ir_measures

    d = _files(tmp_path)
    runs = {"six": d / "run6.txt", "four": d / "run4.gz"}
    unjudged = (
        r"returned that the qrels do not judge were left out:\n  task='t', system='six', queries=1$"
    )
    lacking = (
        "system='six', missing=1, judged=3, coverage=0.6667\n  task='t', system='four', missing=1"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        zero = metaeval.ir.evaluate(d / "qrels.txt", runs, "P@1", task="t")
    assert [w.category for w in caught] == [PairingWarning, PairingWarning]
    assert re.search(unjudged, str(caught[0].message))
    assert "did not return score 0 (missing='zero', as trec_eval -c)" in str(caught[1].message)
    assert lacking in str(caught[1].message)
    table = zero.set_index(["system", "query"])["value"]
    assert table["six", "q1"] == 1.0 and table["four", "q2"] == 1.0
    assert table["six", "q3"] == 0.0 and table["four", "q3"] == 0.0  # judged, not returned: 0
    assert "q9" not in zero["query"].values  # returned, not judged: out, with the warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drop = metaeval.ir.evaluate(d / "qrels.txt", runs, "P@1", task="t", missing="drop")
    assert [w.category for w in caught] == [PairingWarning, PairingWarning]
    assert "did not return were left out (missing='drop') in 2 run(s)" in str(caught[1].message)
    assert lacking in str(caught[1].message)
    assert len(drop) == len(zero) - 2 and "q3" not in drop["query"].values  # q3: neither run has it
    # the same judgments as a DataFrame, a dict and ir_measures tuples; runs as dicts
    qrels = mio.read_qrels(d / "qrels.txt")
    as_dict = {
        q: dict(zip(g["doc_id"], g["relevance"], strict=True)) for q, g in qrels.groupby("query_id")
    }
    tuples = [ir_measures.Qrel(*row) for row in qrels.itertuples(index=False)]
    run_dict = {
        "six": {"q1": {"d1": 3.0, "d2": 2.0}, "q2": {"d9": 1.0}, "q9": {"d1": 1.0}},
        "four": {"q1": {"d2": 5.0}, "q2": {"d3": 4.0}},
    }
    for form in (qrels, as_dict, tuples):
        with (
            pytest.warns(PairingWarning, match=unjudged),
            pytest.warns(PairingWarning, match=lacking),
        ):
            other = metaeval.ir.evaluate(form, run_dict, "P@1", task="t")
        pd.testing.assert_frame_equal(other, zero)

    class RanxLike:  # ranx's Qrels/Run expose to_dict()
        def __init__(self, d):
            self.d = d

        def to_dict(self):
            return self.d

    with pytest.warns(PairingWarning, match=unjudged), pytest.warns(PairingWarning, match=lacking):
        other = metaeval.ir.evaluate(
            RanxLike(as_dict), {k: RanxLike(v) for k, v in run_dict.items()}, "P@1", task="t"
        )
    pd.testing.assert_frame_equal(other, zero)
    with (
        pytest.warns(PairingWarning, match="task='u', system='six', queries=1"),
        pytest.warns(PairingWarning, match="task='u', system='four', missing=1, judged=3"),
    ):
        multi = metaeval.ir.evaluate(
            {"t": as_dict, "u": as_dict}, {s: {"t": r, "u": r} for s, r in run_dict.items()}, "P@1"
        )
    assert set(multi["task"]) == {"t", "u"} and len(multi) == 2 * len(zero)


def test_evaluate_errors(tmp_path):
    d = _files(tmp_path)
    with pytest.raises(
        metaeval.OptionError, match=r"not a measure name .* did you mean \['nDCG@10'\]"
    ):
        metaeval.ir.evaluate(d / "qrels.txt", {"a": d / "run6.txt"}, "nDCG@ten", task="t")
    with pytest.raises(metaeval.OptionError, match="Name the task"):
        metaeval.ir.evaluate(d / "qrels.txt", {"a": d / "run6.txt"}, "P@1")
    with pytest.raises(SchemaError, match="without qrels"):
        metaeval.ir.evaluate({"t": d / "qrels.txt"}, {"a": {"u": d / "run6.txt"}}, "P@1")


@pytest.mark.parametrize(
    ("text", "reader", "line", "problem"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", mio.read_qrels, 2, "too few columns"),
        ("q1 0 d1 1\nq1 0 d2 x\n", mio.read_qrels, 2, "not an integer"),
        ("q1 0 d1 1\nq1 0 d2 1.5\n", mio.read_qrels, 2, "not an integer"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 nan t\n", mio.read_run, 2, "not a number"),
        ("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t extra\n", mio.read_run, 2, "wrong number of columns"),
        ("q1 d1 1\n", mio.read_run, 1, "3 columns"),
    ],
)
def test_trec_errors_name_file_and_line(tmp_path, text, reader, line, problem):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    nested = partial(read_nested, kind="qrels" if reader is mio.read_qrels else "run")
    for read in (reader, nested):  # evaluate() reads files with read_nested
        with pytest.raises(FormatError, match=problem) as info:
            read(path)
        assert info.value.line == line and str(path) in str(info.value)
        assert "Expected" in str(info.value)


def test_elinor_jsonl_roundtrips_and_errors(tmp_path):
    d = _files(tmp_path)
    mio.trec_to_jsonl(d / "qrels.txt", d / "true.jsonl", rel_type="true")
    mio.trec_to_jsonl(d / "run6.txt", d / "pred.jsonl", rel_type="pred")
    assert json.loads((d / "true.jsonl").read_text().splitlines()[0]) == {
        "query_id": "q1",
        "doc_id": "d1",
        "score": 1,
    }
    mio.jsonl_to_trec(d / "true.jsonl", d / "back_qrels.txt", rel_type="true")
    mio.jsonl_to_trec(d / "pred.jsonl", d / "back_run.txt", rel_type="pred")
    pd.testing.assert_frame_equal(
        mio.read_qrels(d / "back_qrels.txt"), mio.read_qrels(d / "qrels.txt")
    )
    back = mio.read_run(d / "back_run.txt")
    orig = mio.read_run(d / "run6.txt")
    pd.testing.assert_frame_equal(
        back.sort_values(["query_id", "doc_id"]).reset_index(drop=True),
        orig.sort_values(["query_id", "doc_id"]).reset_index(drop=True),
    )
    (d / "bad.jsonl").write_text(
        '{"query_id": "q", "doc_id": "d", "score": 1}\n{"query_id": "q", "score": 2}\n'
    )
    with pytest.raises(FormatError, match=r"line 2: bad record \('doc_id'\)"):
        mio.read_jsonl(d / "bad.jsonl")
    (d / "dup.jsonl").write_text('{"query_id": "q", "doc_id": "d", "score": 1}\n' * 2)
    with pytest.raises(FormatError, match="line 2: .* appears twice"):
        mio.read_jsonl(d / "dup.jsonl", rel_type="true")


def test_per_query_csv_and_pyterrier(tmp_path):
    (tmp_path / "a.csv").write_text("query_id,ap,rr\nq1,0.5,1\nq2,0.25,0.5\n")
    (tmp_path / "b.csv").write_text("query_id,ap,rr\nq1,0.6,1\nq2,oops,0.5\n")
    good = mio.read_per_query_csv([tmp_path / "a.csv"], task="t")
    assert len(good) == 4 and set(good["system"]) == {"a"} and set(good["metric"]) == {"ap", "rr"}
    with pytest.raises(FormatError, match="line 3: ap='oops' is not a number"):
        mio.read_per_query_csv({"b": tmp_path / "b.csv"})
    pt = pd.DataFrame(
        {
            "name": ["BM25", "BM25"],
            "qid": ["1", "2"],
            "measure": ["map", "map"],
            "value": [0.5, 0.1],
        }
    )
    pt.to_csv(tmp_path / "pt.csv", index=False)
    scores = mio.read_pyterrier(tmp_path / "pt.csv", task="robust")
    assert (
        scores.columns.tolist() == ["task", "query", "system", "metric", "value"]
        and len(scores) == 2
    )
    with pytest.raises(FormatError, match="aggregate row"):
        mio.read_pyterrier(pd.concat([pt, pt.head(1).assign(qid="all")]))


def test_ranx_scores():
    scores = mio.from_ranx_scores(
        {"bm25": {"ndcg@10": {"q1": 0.5, "q2": 0.1}}, "dense": {"ndcg@10": {"q1": 0.7, "q2": 0.2}}}
    )
    assert len(scores) == 4 and scores["value"].sum() == pytest.approx(1.5)
    with pytest.raises(SchemaError, match="not ranx per-query scores"):
        mio.from_ranx_scores({"bm25": {}})


@pytest.mark.slow
def test_ranx_objects_when_installed():
    ranx = pytest.importorskip("ranx")
    qrels = ranx.Qrels({"q1": {"d1": 1}, "q2": {"d2": 1}})
    run = ranx.Run({"q1": {"d1": 0.9, "d3": 0.5}, "q2": {"d3": 0.4, "d2": 0.3}}, name="r")
    ours = metaeval.ir.evaluate(qrels, {"r": run}, "RR@10", task="t").set_index("query")["value"]
    # ranx's own per-query MRR@10 (it also stores them in the run, for from_ranx_scores)
    theirs = ranx.evaluate(qrels, run, "mrr@10", return_mean=False)
    np.testing.assert_array_equal(ours[["q1", "q2"]].to_numpy(), theirs)
    assert ours["q1"] == 1.0 and ours["q2"] == 0.5  # by hand: d1 first, d2 second
    assert mio.from_ranx_scores({"r": run}).set_index("query")["value"].to_dict() == {
        "q1": 1.0,
        "q2": 0.5,
    }


def _lm_eval_folder(root, model, task_records, stamp="2024-05-13T12-34-56.123456", gz=False):
    folder = root / model / "pretrained__x"
    folder.mkdir(parents=True)
    for task, records in task_records.items():
        name = f"samples_{task}_{stamp}.jsonl" + (".gz" if gz else "")
        opener = gzip.open if gz else open
        with opener(folder / name, "wt") as f:
            f.write("".join(json.dumps(r) + "\n" for r in records))
    return root / model


def test_lm_eval_sample_logs(tmp_path):
    arc = [
        {
            "doc_id": i,
            "doc": {"q": "?"},
            "target": "A",
            "resps": [["x"]],
            "filtered_resps": ["x"],
            "doc_hash": "h",
            "prompt_hash": "p",
            "target_hash": "t",
            "acc": float(i % 2),
            "acc_norm": 1.0,
        }
        for i in range(3)
    ]
    gsm = [
        {"doc_id": i, "filter": f, "metrics": ["exact_match"], "exact_match": i == 0, "target": "4"}
        for i in range(2)
        for f in ("strict-match", "flexible-extract")
    ]
    a = _lm_eval_folder(tmp_path, "model_a", {"arc_easy": arc, "gsm8k": gsm})
    b = _lm_eval_folder(tmp_path, "model_b", {"arc_easy": arc, "gsm8k": gsm}, gz=True)
    scores = mio.read_lm_eval([a, b])
    assert set(scores["system"]) == {"model_a", "model_b"}
    assert set(scores["metric"]) == {
        "acc",
        "acc_norm",
        "exact_match,strict-match",
        "exact_match,flexible-extract",
    }
    assert len(scores) == 2 * (3 * 2 + 2 * 2)
    metaeval.validate_scores(scores)
    assert scores.query("metric == 'acc' and system == 'model_a'")["value"].tolist() == [
        0.0,
        1.0,
        0.0,
    ]
    bad = tmp_path / "bad"
    _lm_eval_folder(bad, "m", {"arc": [{"doc_id": 0, "target": "A", "filtered_resps": ["A"]}]})
    with pytest.raises(FormatError, match="line 1: no per-sample metric value"):
        mio.read_lm_eval({"m": bad / "m"})
    dup = tmp_path / "dup"
    _lm_eval_folder(dup, "m", {"arc": arc[:1] * 2})
    with pytest.raises(FormatError, match="line 2: doc_id 0 .* appears twice"):
        mio.read_lm_eval({"m": dup / "m"})
    (tmp_path / "model_a" / "empty").mkdir()
    with pytest.raises(SchemaError, match="no samples_"):
        mio.read_lm_eval({"m": tmp_path / "model_a" / "empty"})
    with pytest.raises(FormatError, match="missing: no such folder"):  # was "no samples_" too
        mio.read_lm_eval({"m": tmp_path / "model_a" / "missing"})


def test_ranger_classification_config_and_missing_files(tmp_path, shared_data):
    glue = shared_data / "ranger" / "classification-glue-data" / "config.yaml"
    with pytest.raises(metaeval.OptionError, match="pass metric="):
        mio.read_ranger(glue)
    scores = mio.read_ranger(glue, metric="accuracy")
    assert set(scores["system"]) == {"bert", "distilbert"} and scores["task"].nunique() == 7
    assert len(scores[(scores["task"] == "wnli") & (scores["system"] == "bert")]) == 71
    table = scores.meta.analyze(control="bert", **metaeval.RANGER)
    assert table["effect"].iloc[-1] == pytest.approx(-0.054861, abs=1e-6)
    (tmp_path / "config.yaml").write_text("eval_metrics:\n  s:\n    t: ./nothing.txt\n")
    with pytest.raises(FormatError, match="does not exist"):
        mio.read_ranger(tmp_path / "config.yaml", metric="acc")
    (tmp_path / "x.txt").write_text("1\n0\nmaybe\n")
    with pytest.raises(FormatError, match="line 3: 'maybe' is not a number"):
        mio.read_per_sample(tmp_path / "x.txt")
    (tmp_path / "other.yaml").write_text("runs: {}\n")
    with pytest.raises(FormatError, match="top-level keys"):
        mio.read_ranger(tmp_path / "other.yaml")


def test_scores_from_arrays():
    scores = metaeval.scores_from_arrays(
        {"a": {"t": [1, 0, 1]}, "b": {"t": [0, 0, 1]}}, metric="acc", query={"t": ["x", "y", "z"]}
    )
    assert scores["query"].tolist()[:3] == ["x", "y", "z"]
    assert scores.meta.effects(control="a", effect="md")["effect"].iloc[0] == pytest.approx(-1 / 3)
    with pytest.raises(SchemaError, match="equal lengths"):
        metaeval.scores_from_arrays({"a": {"t": [1, 0]}, "b": {"t": [1]}}, metric="acc")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metaeval.scores_from_arrays({"a": {"t": [1.0]}}, metric="acc")


# ------------------------------------------------------- one reader path for text files
def test_open_text_decodes_utf8_with_bom_crlf_and_names_bad_bytes(tmp_path):
    from metaeval.io.trec import open_text

    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfq1 0 d1 1\r\nq2 0 d2 0\r\n")
    with open_text(tmp_path / "bom.txt") as handle:
        assert handle.read() == "q1 0 d1 1\nq2 0 d2 0\n"
    (tmp_path / "latin1.txt").write_bytes(
        "q1 0 d1 1\nq2 0 d2 1\nq3 0 caf\xe9 1\n".encode("latin-1")
    )
    for reader in (mio.read_qrels, lambda p: mio.read_jsonl(p), mio.read_per_sample):
        with pytest.raises(FormatError) as err:
            reader(tmp_path / "latin1.txt")
        assert str(err.value).startswith(
            f"{tmp_path / 'latin1.txt'}, line 3: not UTF-8 text (byte 0xe9)."
        )
    with gzip.open(tmp_path / "run.gz", "wb") as f:
        f.write(b"q1 Q0 d1 1 1.0 r\n" * 5000)
    data = (tmp_path / "run.gz").read_bytes()
    (tmp_path / "run.gz").write_bytes(data[:-30])
    with pytest.raises(FormatError, match=r"run\.gz: a truncated or damaged gzip file"):
        mio.read_run(tmp_path / "run.gz")
    with pytest.raises(FormatError, match="is a directory, not a file"):
        mio.read_qrels(tmp_path)
    with pytest.raises(FormatError, match="is a directory, not a file"):
        mio.read_per_query_csv({"a": tmp_path})


def test_trec_files_with_an_extra_column_on_every_line_are_refused(tmp_path):
    # pandas read these as 'index + 4 columns': query '0', document '1', relevance 2
    (tmp_path / "q.txt").write_text("q1 0 d1 1 2\nq2 0 d2 1 2\n")
    with pytest.raises(
        FormatError, match=r"line 1: wrong number of columns \(5, not 4\): 'q1 0 d1 1 2'"
    ):
        mio.read_qrels(tmp_path / "q.txt")
    (tmp_path / "r.txt").write_text("q1 d1 1 2.0 x\n")
    with pytest.raises(FormatError, match=r"line 1: 5 columns, not 6 or 4"):
        mio.read_run(tmp_path / "r.txt")


def test_per_query_csv_field_counts_and_repeated_queries(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("query_id,ap,rr\nx,q1,0.5,1\nx,q2,0.25,0.5\n")  # pandas: 'x' the index
    with pytest.raises(
        FormatError, match=r"b\.csv, line 2: 4 comma-separated fields where the header has 3"
    ):
        mio.read_per_query_csv({"b": path})
    path.write_text('query_id,ap,rr\n"q,1",0.5,1\nq2,0.25,0.5\n')  # a quoted comma is fine
    assert set(mio.read_per_query_csv({"b": path})["query"]) == {"q,1", "q2"}
    path.write_text("query_id,ap,rr\nq1,0.5,1\nq2,0.25,0.5\n\nq1,0.1,0\n")
    with pytest.raises(FormatError) as err:
        mio.read_per_query_csv({"b": path})
    assert str(err.value).startswith(
        f"{path}, line 5: query_id 'q1' appears twice (first on line 2)"
    )


@pytest.mark.parametrize(
    ("text", "reader", "line", "first"),
    [
        ("q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 0\n", mio.read_qrels, 3, 1),
        ("q1 Q0 d1 1 2.0 t\nq2 Q0 d1 1 2.0 t\n\nq1 Q0 d1 2 1.0 t\n", mio.read_run, 4, 1),
        ("q1 d1 1 2\nq1 d2 2 1\nq1 d2 3 0\n", mio.read_run, 3, 2),
        (
            '{"query_id": "q1", "doc_id": "d1", "score": 1}\n{"query_id": "q1", "doc_id": "d1", "score": 2}\n',
            mio.read_jsonl,
            2,
            1,
        ),
    ],
)
def test_a_document_listed_twice_for_a_query_is_refused_alike(tmp_path, text, reader, line, first):
    path = tmp_path / "dup.txt"
    path.write_text(text)
    readers = [reader]
    if reader in (mio.read_qrels, mio.read_run):
        readers.append(partial(read_nested, kind="qrels" if reader is mio.read_qrels else "run"))
    for read in readers:
        with pytest.raises(FormatError) as err:
            read(path)
        assert err.value.line == line
        assert f"of query 'q1' appears twice (first on line {first})" in str(err.value)


def _by_hand(text: str, doc: int, value: int, kind: type) -> dict:
    """{query: {doc: value}} of whitespace-separated lines, blank ones skipped."""
    out: dict = {}
    for line in text.lstrip("\ufeff").splitlines():
        if line.strip():
            fields = line.split()
            out.setdefault(fields[0], {})[fields[doc]] = kind(float(fields[value]))
    return out


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("q2 0 d7 2\nq1 0 d1 1\nq2 0 d1 0\n", "qrels"),  # the typed route
        ("q2 0 d7 2.0\nq1 0 d1 +1\n\nq2 0 d1 0\n", "qrels"),  # "2.0", a blank line: checked route
        ("\ufeffq1 0 nan 1\r\nq1 0 NA 3\r\n", "qrels"),  # BOM, CRLF, ids like missing values
        ("q1 0 d1 9007199254740993\n", "qrels"),  # past 2^53: the checked route's float
        ("q1 Q0 d2 1 0.9 t\nq1 Q0 d1 2 1e-3 t\nq2 Q0 d7 1 -3 t\n", "run"),
        ("q1 d2 1 0.30000000000000004\nq1 d1 2.0 0.1\n", "run"),  # rank "2.0": checked route
        ("q1\tQ0\td2\t1\t1.7976931348623157e308\tt\n\n", "run"),
    ],
)
def test_read_nested_equals_the_readers_and_a_parse_by_hand(tmp_path, text, kind):
    path = tmp_path / "file.txt"
    path.write_bytes(text.encode("utf-8"))
    width = len(text.lstrip("\ufeff").split("\n")[0].split())
    doc, value = (2, 3) if kind == "qrels" else ((2, 4) if width == 6 else (1, 3))
    want = _by_hand(text, doc, value, int if kind == "qrels" else float)
    got = read_nested(path, kind)
    assert got == want and list(got) == list(want)
    assert all(
        type(v) is (int if kind == "qrels" else float) for d in got.values() for v in d.values()
    )
    table = (mio.read_qrels if kind == "qrels" else mio.read_run)(path)
    assert {
        q: dict(zip(g["doc_id"], g.iloc[:, -1], strict=True))
        for q, g in table.groupby("query_id", sort=False)
    } == want
    gz = tmp_path / "file.txt.gz"
    gz.write_bytes(gzip.compress(text.encode("utf-8")))
    assert read_nested(gz, kind) == want


def test_in_memory_judgments_and_runs_with_a_repeated_pair_are_refused():
    qrels = pd.DataFrame(
        {"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d1", "d2"], "relevance": [1, 0, 1]},
        index=[10, 11, 12],
    )
    with pytest.raises(
        SchemaError, match=r"lists document 'd1' twice for query 'q1' \(rows 10 and 11\)"
    ):
        metaeval.io.as_qrels(qrels)
    run = qrels.rename(columns={"relevance": "score"})
    with pytest.raises(SchemaError, match="twice for query 'q1'"):
        metaeval.io.as_run(run)
    import ir_measures

    with pytest.raises(SchemaError, match=r"score records lists document 'd1' twice"):
        metaeval.io.as_run([ir_measures.ScoredDoc("q1", "d1", 1.0)] * 2)


def test_evaluate_refuses_runs_that_share_no_query_with_the_qrels(tmp_path):
    d = _files(tmp_path)
    other = {"1": {"d1": 1}, "2": {"d3": 2}}  # ids written 1, 2 instead of q1, q2
    with pytest.raises(SchemaError) as err:
        metaeval.ir.evaluate(other, {"bm25": d / "run6.txt"}, "P@1", task="robust")
    message = str(err.value)
    assert message.startswith("Task 'robust': the run of 'bm25' shares no query with the qrels")
    assert "Run queries: ['q1', 'q2', 'q9']; judged queries: ['1', '2']" in message
    many = {f"x{i}": {"d": 1} for i in range(40)}
    with pytest.raises(
        SchemaError,
        match=r"judged queries: \['x0', 'x1', 'x10', 'x11', 'x12', \.\.\. \(35 more\)\]",
    ):
        metaeval.ir.evaluate(many, {"bm25": d / "run6.txt"}, "P@1", task="robust")


def test_evaluate_input_errors_and_warnings(tmp_path):
    d = _files(tmp_path)
    with pytest.raises(
        SchemaError, match=r"`runs` must be a mapping \{system: run\}, not a PosixPath"
    ):
        metaeval.ir.evaluate(d / "qrels.txt", d / "run6.txt", "P@1", task="t")
    with pytest.raises(SchemaError, match=r"`runs` must be a mapping \{system: run\}, not a str"):
        metaeval.ir.evaluate(d / "qrels.txt", str(d / "run6.txt"), "P@1", task="t")
    with pytest.raises(SchemaError, match="looks like one run"):
        metaeval.ir.evaluate(d / "qrels.txt", {"q1": {"d1": 1.0}}, "P@1", task="t")
    (d / "empty.txt").write_text("\n\n")
    with pytest.raises(FormatError, match=r"empty\.txt: the file has no records, only blank lines"):
        metaeval.ir.evaluate(d / "empty.txt", {"a": d / "run4.gz"}, "P@1", task="t")
    empty = pd.DataFrame({"query_id": [], "doc_id": [], "relevance": []})
    with pytest.raises(SchemaError, match="The qrels of task 't' are empty"):
        metaeval.ir.evaluate(empty, {"a": d / "run4.gz"}, "P@1", task="t")
    nothing_relevant = {"q1": {"d2": 0}, "q2": {"d3": 0}}
    with pytest.warns(
        metaeval.DegenerateWarning, match="The qrels of task 't' judge no document relevant"
    ):
        scores = metaeval.ir.evaluate(
            nothing_relevant, {"a": d / "run4.gz"}, ["P@1", "Judged@1"], task="t"
        )
    assert scores.groupby("metric")["value"].mean().to_dict() == {"Judged@1": 1.0, "P@1": 0.0}


def test_read_lm_eval_takes_one_folder_as_a_str_or_path(tmp_path):
    records = [{"doc_id": i, "acc": float(i % 2)} for i in range(3)]
    folder = _lm_eval_folder(tmp_path, "results", {"arc": records})
    for given in (str(folder), folder):  # lm-eval's --output_path: a system per model folder
        scores = mio.read_lm_eval(given)
        assert set(scores["system"]) == {"pretrained__x"} and len(scores) == 3
    assert set(mio.read_lm_eval([folder])["system"]) == {"results"}
    assert set(mio.read_lm_eval({"mine": str(folder)})["system"]) == {"mine"}


def _config(tmp_path, text):
    for name in ("a_t1.txt", "b_t1.txt"):
        (tmp_path / name).write_text("1\n0\n1\n")
    (tmp_path / "config.yaml").write_text(text)
    return tmp_path / "config.yaml"


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        (
            "eval_metrics:\n  - a\n",
            2,
            "eval_metrics: found list ['a'] where a mapping {system: {task: file}} belongs",
        ),
        (
            "eval_metrics: {a: [1, 2]}\n",
            1,
            "eval_metrics.a: found list [1, 2] where a mapping {task: file} belongs",
        ),
        (
            "eval_metrics:\n  a:\n    t1: [a_t1.txt]\n",
            3,
            "eval_metrics.a.t1: found list ['a_t1.txt'] where a file path belongs",
        ),
        (
            "qrels: [x]\navailable_rankings: {}\n",
            1,
            "qrels: found list ['x'] where a mapping {task: file} belongs",
        ),
        (
            "qrels: {t1: a_t1.txt}\navailable_rankings:\n  s: [a_t1.txt]\n",
            3,
            "available_rankings.s: found list",
        ),
        (
            "eval_metrics: {a: {t1: a_t1.txt}}\ndisplay_names: [x]\n",
            2,
            "display_names: found list ['x']",
        ),
        (
            "eval_metrics:\n  a: {t1: a_t1.txt}\n  a: {t1: b_t1.txt}\n",
            3,
            "the key 'a' appears twice in one mapping (first on line 2)",
        ),
    ],
)
def test_ranger_config_structure_errors_name_the_key_path(tmp_path, text, line, problem):
    config = _config(tmp_path, text)
    with pytest.raises(FormatError) as err:
        mio.read_ranger(config, metric="acc")
    assert str(err.value).startswith(f"{config}, line {line}: {problem}"), str(err.value)


def test_ranger_messages_quote_only_an_excerpt_of_a_named_file(tmp_path):
    secret = tmp_path / "other" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:" + "r" * 300 + "\nsecond:line\n")
    config = _config(tmp_path, f"eval_metrics:\n  a: {{t1: a_t1.txt}}\n  b: {{t1: '{secret}'}}\n")
    with pytest.raises(FormatError) as err:
        mio.read_ranger(config, metric="acc")
    message = str(err.value)
    assert message.startswith(f"{secret}, line 1: 'root:x:0:0:rrr")
    assert "r" * 70 not in message and "second" not in message and len(message) < 300


def test_pyterrier_csv_field_counts_and_lines(tmp_path):
    path = tmp_path / "pt.csv"
    path.write_text("name,qid,measure,value\nBM25,1,map,0.5\n\nBM25,2,map,0.1,0.7\n")
    with pytest.raises(
        FormatError, match=r"pt\.csv, line 4: 5 comma-separated fields where the header has 4"
    ):
        mio.read_pyterrier(path)
    path.write_text("name,qid,measure,value\nBM25,1,map,0.5\n\nBM25,2,map,high\n")
    with pytest.raises(FormatError, match=r"pt\.csv, line 4: value 'high' is not a number"):
        mio.read_pyterrier(path)


def test_to_and_from_ranx_round_trip(tmp_path):
    ranx = pytest.importorskip("ranx")
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq2 0 d4 1\n")
    (tmp_path / "r.trec").write_text(
        "q1 Q0 d2 1 2.0 r\nq1 Q0 d1 2 1.0 r\nq2 Q0 d4 1 3.0 r\nq2 Q0 d3 2 2.5 r\n"
    )
    judged = mio.read_qrels(tmp_path / "q.txt")  # pandas' str columns: ranx.Qrels.from_df refuses
    qrels = mio.to_ranx(judged, "qrels")
    run = mio.to_ranx(tmp_path / "r.trec", "run", name="r")
    assert isinstance(qrels, ranx.Qrels) and isinstance(run, ranx.Run) and run.name == "r"
    key = ["query_id", "doc_id"]
    back = mio.from_ranx(qrels).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(
        back, metaeval.io.as_qrels(judged).sort_values(key).reset_index(drop=True)
    )
    run_back = mio.from_ranx(run).sort_values(key).reset_index(drop=True)
    assert run_back["score"].tolist() == [1.0, 2.0, 2.5, 3.0]
    ours = metaeval.ir.evaluate(judged, {"r": tmp_path / "r.trec"}, ["ndcg@10", "mrr"], task="t")
    means = ours.groupby("metric")["value"].mean()
    assert ranx.evaluate(qrels, run, "ndcg@10") == pytest.approx(means["nDCG@10"], rel=1e-12)
    assert ranx.evaluate(qrels, run, "mrr") == pytest.approx(means["RR"], rel=1e-12)
    with pytest.raises(metaeval.OptionError, match="kind"):
        mio.to_ranx(judged, "judgments")
    with pytest.raises(SchemaError, match="Qrels or Run"):
        mio.from_ranx(judged)


def test_to_ranx_refuses_fractional_and_missing_grades_and_empty_input():
    pytest.importorskip("ranx")
    table = pd.DataFrame(
        {"query_id": ["q1", "q1", "q2"], "doc_id": ["d1", "d2", "d3"], "relevance": [1, 1.7, 2]},
        index=[10, 11, 12],
    )
    with pytest.raises(SchemaError) as err:  # was: relevance 1 in the Qrels
        mio.to_ranx(table, "qrels")
    assert str(err.value).startswith(
        "Column 'relevance' of the qrels table, row 11 (query 'q1', document 'd2'): 1.7 is not "
        "an integer; relevance grades are integers"
    )
    assert err.value.failure_cases.to_dict("list") == {
        "problem": ["not an integer"],
        "column": ["relevance"],
        "row": [11],
        "value": [1.7],
    }
    with pytest.raises(SchemaError, match=r"the qrels table, row 11 .* 1\.7 is not an integer"):
        metaeval.ir.evaluate(table, {"r": {"q1": {"d1": 1.0}}}, "P@1", task="t")  # was: 1
    with pytest.raises(SchemaError) as err:
        mio.to_ranx({"q1": {"d1": 1, "d2": np.nan}, "q2": {"d3": "high"}}, "qrels")
    assert str(err.value).startswith(
        "Column 'relevance' of the qrels dict (query 'q1', document 'd2'): nan is missing (NaN) "
        "(1 more row(s) in `failure_cases`)"
    )
    assert err.value.failure_cases["problem"].tolist() == ["missing (NaN)", "not a number"]
    run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [0.5, np.nan]})
    with pytest.raises(
        SchemaError,
        match=r"^Column 'score' of the run table, row 1 \(query 'q1', "
        r"document 'd2'\): nan is missing \(NaN\); a run ranks documents by finite",
    ):
        mio.to_ranx(run, "run")  # was: a Run holding NaN
    with pytest.raises(SchemaError, match=r"\(query .q1., document .d1.\): inf is not finite;"):
        mio.to_ranx({"q1": {"d1": np.inf}}, "run")
    for empty, kind in (
        ({}, "qrels"),
        ({"q1": {}}, "qrels"),
        ({}, "run"),
        (pd.DataFrame(columns=["query_id", "doc_id", "score"]), "run"),
    ):
        with pytest.raises(
            SchemaError,
            match=rf"to_ranx\(\) was given {kind} without any "
            r"\(query, document\) pair \(an empty (dict|DataFrame)",
        ):
            mio.to_ranx(empty, kind)  # was: ValueError: max() arg is an empty sequence
