"""Per-sample arrays aligned by position, as a scores table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import SchemaError

__all__ = ["scores_from_arrays"]


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
