"""Corpus-level statistics (F1, MCC, accuracy, Pearson, Spearman) as pooled effects.

Ranger had to leave out GLUE's CoLA (MCC) and STS-B (Pearson) because those
metrics are not averages of per-sample scores. :func:`bootstrap_effects` gives
them an effect size all the same: on every task, the difference of the
statistic between treatment and control, with its variance from the paired
bootstrap (the same resampled samples for both systems), as an effects table
that :func:`metaeval.pool` accepts.

Every statistic is computed for all resamples at once from the resample count
matrix C (resamples × samples): confusion matrices are C @ one-hot(label, prediction),
correlations weighted moments, Spearman's ranks cumulative counts along the
sorted order (ties get average ranks, as in :func:`scipy.stats.spearmanr`).
Resamples come from the same seeded streams as :func:`metaeval.compare`.

Also here: :func:`per_sample` (labels and predictions → a scores table of
per-sample correctness, for ``effects()``/``pool()``), :func:`metrics` (accuracy,
precision, recall, F1, MCC and the confusion matrix of one system, by
scikit-learn, with a warning wherever its zero-division convention replaced an
undefined value) and :func:`correlation` (Pearson, Spearman or Kendall with a
Fisher-z interval).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from .._docs import fill_doc
from .._options import (
    DEFAULT_RESAMPLES,
    EFFECTS_FIRST,
    STATISTICS,
    Statistic,
    answer_first,
    literal_signature,
)
from ..engines import any_frame
from ..errors import (
    PairingError,
    PairingWarning,
    SchemaError,
    check_alpha,
    check_option,
    check_resamples,
    format_groups,
    quote_list,
    resolve_seed,
    warn_groups,
)
from ..schema import coerce_keys
from . import _resampling as rs
from .effect_size import normal_inference

__all__ = ["bootstrap_effects"]

# The ready statistics (STATISTICS): ``f1`` is binary (positive class: the larger label),
# ``f1_macro`` averages the classes of the task's labels and predictions, ``mcc`` is the
# multi-class Matthews correlation (binary MCC for two classes), ``pearson`` and
# ``spearman`` correlate predictions with labels.

_COLUMNS = ("task", "query", "system", "prediction", "label")


# ----------------------------------------------------------------- statistics
def _confusion(label: np.ndarray, pred: np.ndarray, counts: np.ndarray, k: int) -> np.ndarray:
    """Weighted confusion matrices, ``(..., resamples, k, k)`` [true, predicted]."""
    cell = (label * k + pred).astype(np.intp)  # (..., n)
    onehot = np.zeros((*cell.shape, k * k))
    np.put_along_axis(onehot, cell[..., None], 1.0, axis=-1)
    cm = np.matmul(counts, onehot)
    return cm.reshape(*cm.shape[:-1], k, k)


def _f1(cm: np.ndarray, cls: int) -> np.ndarray:
    tp = cm[..., cls, cls]
    fp = cm[..., :, cls].sum(axis=-1) - tp
    fn = cm[..., cls, :].sum(axis=-1) - tp
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0)


def _mcc(cm: np.ndarray) -> np.ndarray:
    """Gorodkin's multi-class MCC (as scikit-learn's ``matthews_corrcoef``; 0 if undefined)."""
    s = cm.sum(axis=(-2, -1))
    c = np.trace(cm, axis1=-2, axis2=-1)
    t, p = cm.sum(axis=-1), cm.sum(axis=-2)
    num = c * s - (t * p).sum(axis=-1)
    den = np.sqrt((s**2 - (p * p).sum(axis=-1)) * (s**2 - (t * t).sum(axis=-1)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, 0.0)


def _weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson r of x and y with weights w along the last axis (x, y broadcast to w)."""
    sw = w.sum(axis=-1)
    mx = (w * x).sum(axis=-1) / sw
    my = (w * y).sum(axis=-1) / sw
    dx, dy = x - mx[..., None], y - my[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w * dx * dy).sum(axis=-1) / np.sqrt(
            (w * dx * dx).sum(axis=-1) * (w * dy * dy).sum(axis=-1)
        )


def _resampled_ranks(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Average ranks of every sample within each resample (multiplicities = counts).

    The order of the values does not change under resampling, only the counts, so
    the rank of a tie group is (count before it) + (its count + 1)/2.
    """
    counts = np.broadcast_to(counts, (*values.shape[:-1], *counts.shape[-2:]))
    order = np.argsort(values, axis=-1, kind="stable")
    v = np.take_along_axis(values, order, axis=-1)
    n = v.shape[-1]
    new_group = np.concatenate(
        [np.ones((*v.shape[:-1], 1), bool), v[..., 1:] != v[..., :-1]], axis=-1
    )
    idx = np.broadcast_to(np.arange(n), v.shape)
    start = np.maximum.accumulate(np.where(new_group, idx, 0), axis=-1)
    end = np.flip(
        np.minimum.accumulate(
            np.flip(np.where(np.roll(new_group, -1, axis=-1) | (idx == n - 1), idx, n), axis=-1),
            axis=-1,
        ),
        axis=-1,
    )
    resamples = counts.shape[-2]

    def per_resample(index: np.ndarray) -> np.ndarray:  # (tasks, n) -> (tasks, resamples, n)
        return np.repeat(index[..., None, :], resamples, axis=-2)

    c = np.take_along_axis(counts, per_resample(order), axis=-1)  # counts in sorted order
    cum = np.cumsum(c, axis=-1)
    before = np.where(
        per_resample(start) > 0,
        np.take_along_axis(cum, per_resample(np.maximum(start - 1, 0)), axis=-1),
        0.0,
    )
    through = np.take_along_axis(cum, per_resample(end), axis=-1)
    rank_sorted = before + (through - before + 1) / 2  # the tie group's average rank
    ranks = np.empty_like(rank_sorted)
    np.put_along_axis(ranks, per_resample(order), rank_sorted, axis=-1)
    return ranks


def _statistic(
    name: str, label: np.ndarray, pred: np.ndarray, counts: np.ndarray, k: int
) -> np.ndarray:
    """A ready statistic of every system, task and resample.

    ``label`` is ``(tasks, n)``, ``pred`` ``(systems, tasks, n)``, ``counts``
    ``(tasks, resamples, n)``; the result is ``(systems, tasks, resamples)``.
    """
    if name == "accuracy":
        correct = (label == pred).astype(float)[..., None]
        return np.matmul(counts, correct)[..., 0] / counts.sum(axis=-1)
    if name in ("f1", "f1_macro", "mcc"):
        cm = _confusion(np.broadcast_to(label, pred.shape), pred, counts, k)
        if name == "mcc":
            return _mcc(cm)
        if name == "f1":
            return _f1(cm, k - 1)
        return np.mean([_f1(cm, c) for c in range(k)], axis=0)  # classes: a handful
    x, y = pred[..., None, :], label[:, None, :]
    if name == "pearson":
        return _weighted_pearson(x, y, counts)
    return _weighted_pearson(
        _resampled_ranks(pred, counts), _resampled_ranks(label, counts), counts
    )


# --------------------------------------------------------------------- public
@any_frame
@literal_signature
@fill_doc
def bootstrap_effects(
    scores: pd.DataFrame,
    control: str,
    statistic: Statistic | Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    *,
    treatment: str | Sequence[str] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = None,
    alpha: float = 0.05,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Per-task effects of a corpus-level statistic by the paired bootstrap.

    Parameters
    ----------
    scores : pandas.DataFrame
        Per-sample predictions: ``task, query`` (the sample id), ``system``,
        ``prediction`` and ``label`` (the same label for every system). For
        ``accuracy``, ``f1``, ``f1_macro`` and ``mcc`` predictions and labels
        are class labels (any values); for ``pearson`` and ``spearman``
        numbers.
        Any frame: pandas, polars (DataFrame or LazyFrame), a pyarrow Table or a DuckDB
        relation, converted to pandas once (a lazy one collected).
    {control_one}
    statistic : str or callable
        One of :data:`STATISTICS`, or ``f(label, prediction, counts)`` with
        1-d ``label`` and ``prediction`` of a task and ``counts`` (resamples
        × samples) returning the statistic of every resample (counts of ones
        give the statistic of the data).
    {treatment}
    {n_resamples}
    {seed}
    {alpha}
        ``ci_low, ci_high`` are normal, effect ∓ z₁₋α/₂·se; ``boot_ci_low, boot_ci_high``
        the percentile interval.
    {progress}

    Returns
    -------
    pandas.DataFrame
        An effects table, one row per ``(metric, treatment, control, task)``
        (``metric`` is the statistic's name), with ``effect_type``
        ("bootstrap"), then, as in :func:`metaeval.effects`, the answer:
        ``effect`` = statistic(treatment) − statistic(control) on the data,
        ``ci_low, ci_high, p_value`` (normal), then ``n`` (samples),
        ``statistic_treatment, statistic_control``, ``variance`` = the
        variance (ddof = 1) of the difference over the paired resamples,
        ``se, z`` and the percentile interval ``boot_ci_low, boot_ci_high``.
        Ready for :func:`metaeval.pool`.

    Raises
    ------
    metaeval.SchemaError
        Missing columns, duplicate samples, labels that differ between
        systems, non-numeric values for a correlation, or ``f1`` on more than
        two classes.
    metaeval.PairingError
        Unknown systems.

    Warns
    -----
    metaeval.PairingWarning
        Samples missing for some of the systems are left out of that task.

    Examples
    --------
    Predictions of two classifiers on three binary tasks (``new`` errs on 20%
    of the samples, ``old`` on 30%), the F1 difference per task and pooled:

    >>> import numpy as np, pandas as pd, metaeval
    >>> rng = np.random.default_rng(1)
    >>> frames = []
    >>> for task in ["a", "b", "c"]:
    ...     label = rng.integers(0, 2, 200)
    ...     for system, error in [("old", 0.3), ("new", 0.2)]:
    ...         wrong = rng.random(200) < error
    ...         frames.append(pd.DataFrame({"task": task, "query": range(200), "system": system,
    ...                                     "prediction": np.where(wrong, 1 - label, label),
    ...                                     "label": label}))
    >>> data = pd.concat(frames, ignore_index=True)
    >>> eff = metaeval.bootstrap_effects(data, "old", "f1", n_resamples=1000, seed=0)
    >>> eff[["task", "statistic_treatment", "statistic_control", "effect", "ci_low", "ci_high"]].round(3)
      task  statistic_treatment  statistic_control  effect  ci_low  ci_high
    0    a                0.825              0.680   0.145   0.059    0.231
    1    b                0.833              0.703   0.130   0.054    0.207
    2    c                0.800              0.738   0.062  -0.020    0.144
    >>> eff.meta.pool()[["k", "effect", "ci_low", "ci_high", "p_value"]].round(3)
       k  effect  ci_low  ci_high  p_value
    0  3   0.112   0.004    0.221    0.047
    """
    alpha = check_alpha(alpha)
    name: str
    if isinstance(statistic, str):
        check_option("statistic", statistic, STATISTICS)
        name = statistic
    else:
        name = str(getattr(statistic, "__name__", "statistic"))
    n_resamples = check_resamples(n_resamples, minimum=2)
    seed = resolve_seed(seed)
    wide, systems, treatments = _prepare(scores, control, treatment, statistic)
    numeric = name in ("pearson", "spearman") or callable(statistic)
    wide, k = (wide, 0) if numeric else _class_codes(wide, systems, name)
    tasks = wide.index.get_level_values("task").unique()
    lengths = wide.groupby(level="task", sort=False).size().reindex(tasks).to_numpy()
    label, preds = _padded(wide, tasks, systems, int(lengths.max()))

    def stat(counts: np.ndarray) -> np.ndarray:  # (systems, tasks, resamples)
        if callable(statistic):  # a user's function: one call per system and task
            return np.stack(
                [
                    np.stack(
                        [
                            statistic(label[i, :m], p[i, :m], counts[i, :, :m])
                            for i, m in enumerate(lengths)
                        ]
                    )
                    for p in preds
                ]
            )
        lab, prd = (label, preds) if numeric else (label.astype(int), preds.astype(int))
        return _statistic(name, lab, prd, counts, k)

    inside = np.arange(label.shape[1])[None, :] < lengths[:, None]
    full = stat(inside[:, None, :].astype(float))[:, :, 0]
    diffs = _resampled_differences(
        stat,
        [str(t) for t in tasks],
        lengths,
        label.shape[1],
        len(systems),
        name,
        n_resamples,
        seed,
        progress,
    )
    out = pd.concat(
        [
            _effects_frame(name, t, control, tasks, lengths, full[1 + i], full[0], diffs[i], alpha)
            for i, t in enumerate(treatments)
        ],
        ignore_index=True,
    )
    out = answer_first(out, EFFECTS_FIRST, BOOTSTRAP_RESULTS)  # as effects(): the answer first
    out.attrs.update(seed=seed, n_resamples=n_resamples)
    return out


#: The columns bootstrap_effects() writes besides its keys.
BOOTSTRAP_RESULTS = (
    "n",
    "statistic_treatment",
    "statistic_control",
    "effect",
    "variance",
    "se",
    "z",
    "ci_low",
    "ci_high",
    "p_value",
    "boot_ci_low",
    "boot_ci_high",
)


def _class_codes(wide: pd.DataFrame, systems: list[str], name: str) -> tuple[pd.DataFrame, int]:
    """Labels and predictions as class codes 0..k-1 (one coding for all tasks), and k."""
    classes = pd.unique(pd.concat([wide[c] for c in ["label", *systems]], ignore_index=True))
    code = {v: i for i, v in enumerate(sorted(classes, key=str))}
    if name == "f1" and len(code) != 2:
        raise SchemaError(
            f"`f1` is binary but the labels and predictions have {len(code)} classes; use "
            "f1_macro or mcc."
        )
    return wide.apply(lambda col: col.map(code)), len(code)


def _padded(
    wide: pd.DataFrame, tasks: pd.Index, systems: list[str], width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Labels ``(tasks, width)`` and predictions ``(systems, tasks, width)``, control first,
    padded with zeros past each task's samples (where the resample counts are 0)."""
    pos = wide.groupby(level="task", sort=False).cumcount().to_numpy()
    t_idx = pd.Index(tasks).get_indexer(wide.index.get_level_values("task"))

    def padded(col: str) -> np.ndarray:
        out = np.zeros((len(tasks), width))
        out[t_idx, pos] = wide[col].to_numpy(dtype=float)
        return out

    return padded("label"), np.stack([padded(s) for s in systems])


def _resampled_differences(
    stat, names, lengths, width, n_systems, name, n_resamples, seed, progress
) -> np.ndarray:
    """statistic(treatment) − statistic(control) of every resample: (treatments, tasks, B)."""
    diffs = np.empty((n_systems - 1, len(names), n_resamples))
    per_resample = n_systems * len(names) * width * 8 * (6 if name == "spearman" else 2)
    chunks = rs.chunks(n_resamples, per_resample)
    tracker = rs.Progress(len(chunks), f"bootstrap {name}", progress)
    for b0, b1 in chunks:
        values = stat(rs.draws("counts", seed, names, lengths, width, b0, b1))
        diffs[:, :, b0:b1] = values[1:] - values[:1]
        tracker.step()
    tracker.close()
    return diffs


def _effects_frame(
    name, treatment, control, tasks, lengths, stat_t, stat_c, diffs, alpha
) -> pd.DataFrame:
    """One treatment's rows: the difference on the data, its bootstrap variance, intervals."""
    effect = stat_t - stat_c
    var = diffs.var(axis=1, ddof=1)
    se = np.sqrt(var)
    low, high = np.quantile(diffs, [alpha / 2, 1 - alpha / 2], axis=1)
    return pd.DataFrame(
        {
            "metric": name,
            "treatment": treatment,
            "control": control,
            "task": [str(x) for x in tasks],
            "effect_type": "bootstrap",
            "n": lengths,
            "statistic_treatment": stat_t,
            "statistic_control": stat_c,
            "effect": effect,
            "variance": var,
            "se": se,
            **normal_inference(effect, se, alpha),
            "boot_ci_low": low,
            "boot_ci_high": high,
        }
    )


def _prepare(
    data: pd.DataFrame, control: str, treatment, statistic
) -> tuple[pd.DataFrame, list[str], list[str]]:
    """Wide per-task table: index (task, query), columns label and one per system."""
    missing = [c for c in _COLUMNS if c not in data.columns]
    if missing:
        raise SchemaError(
            f"bootstrap_effects() needs the column(s) {missing}; the table has {quote_list(list(data.columns))}."
        )
    df = coerce_keys(data, ["task", "query", "system"], table="predictions")
    dup = df.duplicated(["task", "query", "system"], keep=False)
    if dup.any():
        raise SchemaError(
            f"{int(dup.sum())} rows repeat a (task, query, system), e.g.:\n"
            + format_groups(df.loc[dup, ["task", "query", "system"]].head(4))
        )
    if df[["prediction", "label"]].isna().any().any():
        rows = df.index[df[["prediction", "label"]].isna().any(axis=1)][:5].tolist()
        raise SchemaError(f"prediction or label is missing in rows {rows}.")
    if isinstance(statistic, str) and statistic in ("pearson", "spearman"):
        for col in ("prediction", "label"):
            if (
                not pd.api.types.is_numeric_dtype(df[col])
                or not np.isfinite(df[col].to_numpy(float)).all()
            ):
                raise SchemaError(f"`{statistic}` needs finite numbers in {col!r}.")
    systems_all = sorted(df["system"].unique())
    wanted = [control] + ([treatment] if isinstance(treatment, str) else list(treatment or []))
    unknown = [s for s in wanted if s not in systems_all]
    if unknown:
        raise PairingError(
            f"The system(s) {unknown} are not in the data; its systems are {quote_list(systems_all)}."
        )
    treatments = [s for s in systems_all if s != control] if treatment is None else wanted[1:]
    systems = [control, *treatments]
    df = df[df["system"].isin(systems)]
    labels = df.groupby(["task", "query"])["label"].nunique()
    if (labels > 1).any():
        raise SchemaError(
            "The label of a sample differs between systems, e.g. for (task, query) "
            f"{quote_list(list(labels[labels > 1].index[:3]))}."
        )
    wide = df.pivot(index=["task", "query"], columns="system", values="prediction")
    wide["label"] = df.drop_duplicates(["task", "query"]).set_index(["task", "query"])["label"]
    incomplete = wide[systems].isna().any(axis=1)
    if incomplete.any():
        lost = incomplete.groupby(level="task").sum()
        lost = lost[lost > 0].rename("samples_left_out").reset_index()
        warn_groups("Samples that some of the systems lack were left out", lost, PairingWarning)
        wide = wide[~incomplete]
    return wide.sort_index(), systems, treatments
