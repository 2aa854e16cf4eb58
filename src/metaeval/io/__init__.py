"""Readers and writers of other tools' formats, each giving or taking a tidy scores table.

- :mod:`~metaeval.io.trec`: TREC qrels and runs (plain or gzip).
- :mod:`~metaeval.io.elinor`: elinor's true/pred JSONL, per-query CSVs, TREC ↔ JSONL.
- :mod:`~metaeval.io.ranger`: Ranger's ``config.yaml`` layouts and per-sample files.
- :mod:`~metaeval.io.ranx`: ranx per-query scores (``Qrels``/``Run`` go through
  :func:`metaeval.ir.evaluate`).
- :mod:`~metaeval.io.pyterrier`: PyTerrier per-query results.
- :mod:`~metaeval.io.lm_eval`: lm-evaluation-harness sample logs.
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

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import SchemaError
from .elinor import jsonl_to_trec, read_jsonl, read_per_query_csv, trec_to_jsonl, write_jsonl
from .lm_eval import read_lm_eval
from .pyterrier import read_pyterrier
from .ranger import read_per_sample, read_ranger
from .ranx import from_ranx_scores
from .tidy import read_scores, write_scores
from .trec import read_qrels, read_run, write_qrels, write_run

__all__ = [
    "scores_from_arrays", "read_scores", "write_scores",
    "read_qrels", "read_run", "write_qrels", "write_run",
    "read_jsonl", "write_jsonl", "trec_to_jsonl", "jsonl_to_trec", "read_per_query_csv",
    "read_ranger", "read_per_sample", "from_ranx_scores", "read_pyterrier", "read_lm_eval",
]  # fmt: skip


def scores_from_arrays(
    arrays: Mapping[str, Mapping[str, Sequence[float]]],
    *,
    metric: str,
    query: Mapping[str, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Per-sample arrays ``{system: {task: values}}`` as a scores table.

    Parameters
    ----------
    arrays
        For each system and task the per-sample values, position i being the
        same sample for every system.
    metric : str
        The metric's name.
    query : mapping, optional
        ``{task: ids}`` naming the samples; by default ``"0", "1", …``.

    Raises
    ------
    metaeval.SchemaError
        When the systems' arrays of a task differ in length, or ids do not
        match the arrays.

    Examples
    --------
    >>> import metaeval
    >>> metaeval.scores_from_arrays({"bert": {"rte": [1, 0]}, "distil": {"rte": [1, 1]}},
    ...                             metric="accuracy")
      task query  system    metric  value
    0  rte     0    bert  accuracy    1.0
    1  rte     1    bert  accuracy    0.0
    2  rte     0  distil  accuracy    1.0
    3  rte     1  distil  accuracy    1.0
    """
    lengths: dict[str, dict[str, int]] = {}
    frames = []
    for system, tasks in arrays.items():
        for task, given in tasks.items():
            values = np.asarray(given, dtype=float)
            lengths.setdefault(str(task), {})[str(system)] = len(values)
            ids = (
                [str(i) for i in range(len(values))]
                if query is None or task not in query
                else [str(q) for q in query[task]]
            )
            if len(ids) != len(values):
                raise SchemaError(
                    f"Task {task!r}: {len(ids)} query ids for {len(values)} values of {system!r}."
                )
            frames.append(
                pd.DataFrame(
                    {
                        "task": str(task),
                        "query": ids,
                        "system": str(system),
                        "metric": metric,
                        "value": values,
                    }
                )
            )
    uneven = {t: n for t, n in lengths.items() if len(set(n.values())) > 1}
    if uneven:
        raise SchemaError(
            f"Arrays aligned by position must have equal lengths per task; they differ: {uneven}."
        )
    return pd.concat(frames, ignore_index=True)
