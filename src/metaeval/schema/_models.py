"""pandera models of metaeval's tables (imported lazily by :mod:`metaeval.schema`).

No ``from __future__ import annotations`` here: pandera reads the annotations.
"""

from typing import Any

import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from ._columns import JUDGE, KEY_COLUMNS, empty_keys, is_key_dtype, non_string_keys


class Scores(pa.DataFrameModel):
    """A tidy table of per-query scores.

    Key columns are strings or categoricals (integer ids are converted to
    strings before validation); ``value`` is a finite float; the key
    ``(task, query, system, metric)`` is unique. Other columns are allowed.
    """

    task: Series[Any] = pa.Field(nullable=False)
    query: Series[Any] = pa.Field(nullable=False)
    system: Series[Any] = pa.Field(nullable=False)
    metric: Series[Any] = pa.Field(nullable=False)
    value: Series[float] = pa.Field(nullable=False)

    class Config:
        strict = False
        coerce = False
        unique = list(KEY_COLUMNS)

    @pa.check("task", "query", "system", "metric", name="string_or_categorical")
    def _key_dtype(cls, series: pd.Series) -> bool:
        return is_key_dtype(series.dtype)

    @pa.check("task", "query", "system", "metric", name="string_elements")
    def _key_elements(cls, series: pd.Series) -> pd.Series:
        if not is_key_dtype(series.dtype):  # reported by string_or_categorical
            return pd.Series(True, index=series.index)
        return pd.Series(~non_string_keys(series), index=series.index)

    @pa.check("task", "query", "system", "metric", name="not_empty")
    def _key_not_empty(cls, series: pd.Series) -> pd.Series:
        if not is_key_dtype(series.dtype) or non_string_keys(series).any():
            return pd.Series(True, index=series.index)  # reported by the checks above
        return pd.Series(~empty_keys(series), index=series.index)

    @pa.check("value", name="finite")
    def _finite(cls, series: pd.Series) -> pd.Series:
        if not pd.api.types.is_numeric_dtype(series.dtype):
            return pd.Series(True, index=series.index)
        return series.isna() | np.isfinite(series)


class Labels(Scores):
    """A scores table of labels: a ``judge`` column (strings or categoricals, like the
    other keys) and the key ``(task, query, system, metric, judge)`` unique."""

    judge: Series[Any] = pa.Field(nullable=False)

    class Config:
        strict = False
        coerce = False
        unique = [*KEY_COLUMNS, JUDGE]

    @pa.check("judge", name="string_or_categorical")
    def _judge_dtype(cls, series: pd.Series) -> bool:
        return is_key_dtype(series.dtype)

    @pa.check("judge", name="string_elements")
    def _judge_elements(cls, series: pd.Series) -> pd.Series:
        if not is_key_dtype(series.dtype):
            return pd.Series(True, index=series.index)
        return pd.Series(~non_string_keys(series), index=series.index)

    @pa.check("judge", name="not_empty")
    def _judge_not_empty(cls, series: pd.Series) -> pd.Series:
        if not is_key_dtype(series.dtype) or non_string_keys(series).any():
            return pd.Series(True, index=series.index)
        return pd.Series(~empty_keys(series), index=series.index)


class Effects(pa.DataFrameModel):
    """A table of effect sizes: ``effect`` and ``variance`` on the same scale.

    ``effect`` is finite or NaN; ``variance`` is positive and finite, or NaN
    (rows with NaN are left out of pooling with a warning).
    """

    effect: Series[float] = pa.Field(nullable=True)
    variance: Series[float] = pa.Field(nullable=True)

    class Config:
        strict = False
        coerce = False

    @pa.check("effect", name="finite")
    def _finite(cls, series: pd.Series) -> pd.Series:
        if not pd.api.types.is_numeric_dtype(series.dtype):
            return pd.Series(True, index=series.index)
        return series.isna() | np.isfinite(series)

    @pa.check("variance", name="positive_finite")
    def _positive(cls, series: pd.Series) -> pd.Series:
        if not pd.api.types.is_numeric_dtype(series.dtype):
            return pd.Series(True, index=series.index)
        return series.isna() | (np.isfinite(series) & (series > 0))


class Pooled(pa.DataFrameModel):
    """A pooled table: one row per group with the summary effect and heterogeneity."""

    method: Series[str]
    k: Series[int] = pa.Field(ge=0)
    effect: Series[float] = pa.Field(nullable=True)
    se: Series[float] = pa.Field(nullable=True, ge=0)
    ci_low: Series[float] = pa.Field(nullable=True)
    ci_high: Series[float] = pa.Field(nullable=True)
    p_value: Series[float] = pa.Field(nullable=True, ge=0, le=1)
    tau2: Series[float] = pa.Field(nullable=True, ge=0)
    i2: Series[float] = pa.Field(nullable=True, ge=0, le=100)
    h2: Series[float] = pa.Field(nullable=True, ge=0)
    q: Series[float] = pa.Field(nullable=True, ge=0)
    q_p_value: Series[float] = pa.Field(nullable=True, ge=0, le=1)
    pi_low: Series[float] = pa.Field(nullable=True)
    pi_high: Series[float] = pa.Field(nullable=True)
    prob_gain: Series[float] = pa.Field(nullable=True, ge=0, le=1)
    tau2_low: Series[float] = pa.Field(nullable=True, ge=0)
    tau2_high: Series[float] = pa.Field(nullable=True, ge=0)
    statistic: Series[float] = pa.Field(nullable=True)
    df: Series[float] = pa.Field(nullable=True, gt=0)

    class Config:
        strict = False
        coerce = False
