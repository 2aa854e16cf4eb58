"""Readers and writers of other tools' formats, each giving or taking a tidy scores table.

- :mod:`~metaeval.io.trec`: TREC qrels and runs (plain or gzip).
- :mod:`~metaeval.io.judgments`: judgments and runs in any form as one checked table
  (:func:`as_qrels`, :func:`as_run`).
- :mod:`~metaeval.io.elinor`: elinor's true/pred JSONL, per-query CSVs, TREC ↔ JSONL.
- :mod:`~metaeval.io.ranger`: Ranger's ``config.yaml`` layouts and per-sample files.
- :mod:`~metaeval.io.ranx`: ranx per-query scores; ``Qrels``/``Run`` ⇄ the tables of
  :func:`as_qrels`/:func:`as_run`.
- :mod:`~metaeval.io.pyterrier`: PyTerrier per-query results.
- :mod:`~metaeval.io.lm_eval`: lm-evaluation-harness sample logs.
- :mod:`~metaeval.io.helm`: HELM run folders (per-instance stats).
- :mod:`~metaeval.io.lighteval`: lighteval per-sample details (Parquet).
- :mod:`~metaeval.io.inspect`: Inspect AI evaluation logs (``.eval``, ``.json``).
- :mod:`~metaeval.io.tidy`: tidy scores files (CSV, TSV, JSON lines, Parquet).
- :func:`scores_from_arrays`: per-sample arrays aligned by position.

Every reader checks its input and raises :class:`metaeval.FormatError` naming the
file, the line and the layout it expected. Text files are read one way by all of
them: UTF-8 (a byte-order mark and ``\\r\\n`` line ends are fine), plain or
gzip-compressed (recognised by their first bytes); bytes that are not UTF-8, a
damaged gzip file or a folder are a FormatError too. Judgments and runs (TREC or
JSON lines, files or tables) may list a document once per query.
"""

from __future__ import annotations

from .arrays import scores_from_arrays
from .elinor import jsonl_to_trec, read_jsonl, read_per_query_csv, trec_to_jsonl, write_jsonl
from .helm import read_helm
from .inspect import read_inspect
from .judgments import as_qrels, as_run
from .lighteval import read_lighteval
from .lm_eval import PRIMARY_METRICS, read_lm_eval
from .pyterrier import read_pyterrier
from .ranger import read_per_sample, read_ranger
from .ranx import from_ranx, from_ranx_scores, to_ranx
from .tidy import read_scores, write_scores
from .trec import read_qrels, read_run, write_qrels, write_run

__all__ = [
    "scores_from_arrays",
    "read_scores",
    "write_scores",
    "as_qrels",
    "as_run",
    "read_qrels",
    "read_run",
    "write_qrels",
    "write_run",
    "read_jsonl",
    "write_jsonl",
    "trec_to_jsonl",
    "jsonl_to_trec",
    "read_per_query_csv",
    "read_ranger",
    "read_per_sample",
    "from_ranx_scores",
    "to_ranx",
    "from_ranx",
    "read_pyterrier",
    "read_lm_eval",
    "PRIMARY_METRICS",
    "read_helm",
    "read_lighteval",
    "read_inspect",
]
