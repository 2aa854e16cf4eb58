"""Classification metrics from labels and predictions, and correlations with intervals.

Three building blocks for corpus-level evaluation of classifiers and regressors:

- :func:`per_sample` turns labels and the predictions of several systems into a
  scores table of per-sample correctness (1.0 or 0.0), the input of
  :func:`metaeval.effects` and :func:`metaeval.pool`;
- :func:`metrics` gives accuracy, precision, recall, F1 and the Matthews
  correlation of one system from scikit-learn, with a warning wherever
  scikit-learn's ``zero_division`` convention replaced an undefined value by 0;
- :func:`correlation` gives Pearson's r, Spearman's ρ or Kendall's τ-b with a
  Fisher-z confidence interval.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._options import CORRELATIONS, Correlation, literal_signature
from ..errors import (
    DegenerateWarning,
    MetaEvalError,
    OptionError,
    PairingError,
    SchemaError,
    check_alpha,
    check_option,
    excerpt,
    quote_list,
    warn,
)
from ..paired.correlation import fisher_z_variance

__all__ = ["AVERAGES", "per_sample", "metrics", "confusion_matrix", "correlation"]

AVERAGES = ("binary", "macro", "micro")
"""Averages of :func:`metrics`: the positive class only, the unweighted mean over
classes, or the counts pooled over classes."""


# -------------------------------------------------------------------- helpers
def _labels(values: Any, name: str) -> np.ndarray:
    """A 1-D object array of labels; SchemaError if empty, not 1-D or with missing values."""
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise SchemaError(f"`{name}` must be one-dimensional, but it has shape {arr.shape}.")
    if arr.size == 0:
        raise SchemaError(f"`{name}` is empty; it needs at least one label.")
    missing = np.flatnonzero(pd.isna(arr))
    if missing.size:
        raise SchemaError(
            f"`{name}` has {missing.size} missing values (None/NaN) of {arr.size}, "
            f"at positions {quote_list(missing.tolist(), limit=10)}; drop or fill them first."
        )
    return arr


def _check_name(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise OptionError(f"`{name}` must be a non-empty string, but {value!r} was passed.")
    return value


# ----------------------------------------------------------------- per sample
def per_sample(
    y_true: Any,
    predictions: Mapping[Any, Any],
    *,
    task: str,
    queries: Sequence[Any] | None = None,
    metric: str = "accuracy",
) -> pd.DataFrame:
    """Per-sample correctness of several systems as a scores table.

    Parameters
    ----------
    y_true : array-like, shape (n,)
        The true label of every sample (any hashable labels: integers,
        strings, ...), taken by position.
    predictions : mapping
        ``{system: predicted labels}``, each array-like of length ``n`` and
        aligned with ``y_true`` by position.
    task : str
        The task (dataset) the samples belong to.
    queries : sequence, optional
        One id per sample, converted to strings and unique; by default
        ``"0", "1", ..., "n-1"``.
    metric : str, default "accuracy"
        The name in the ``metric`` column.

    Returns
    -------
    pandas.DataFrame
        A scores table with one row per system and sample, systems in the
        order of ``predictions``:

        - ``task`` : str, ``task``;
        - ``query`` : str, the sample's id;
        - ``system`` : str, the system (converted with ``str``);
        - ``metric`` : str, ``metric``;
        - ``value`` : float, 1.0 where the prediction equals the label, else 0.0.

    Raises
    ------
    metaeval.SchemaError
        When ``y_true`` or a system's predictions are empty, not 1-D or have
        missing values (None/NaN), or when ``queries`` has the wrong length or
        duplicates.
    metaeval.PairingError
        When ``predictions`` is empty or a system's predictions do not have the
        length of ``y_true`` (the message names the system and both lengths).
    metaeval.OptionError
        When ``task`` or ``metric`` is not a non-empty string, or
        ``predictions`` is not a mapping.

    Notes
    -----
    Labels are compared with Python's ``==``, so ``1`` equals ``1.0`` and
    ``True`` but not ``"1"``. The mean of ``value`` over a system's rows is its
    accuracy; :func:`metaeval.effects` then compares systems sample by sample.

    References
    ----------
    Sertkan, M., Althammer, S., & Hofstätter, S. (2023). Ranger: A toolkit for
    effect-size based multi-task evaluation. *ACL 2023 (System
    Demonstrations)*, 581–587. doi:10.18653/v1/2023.acl-demo.56

    Examples
    --------
    >>> from metaeval.classification import per_sample
    >>> per_sample(["pos", "neg", "pos"], {"bert": ["pos", "pos", "pos"],
    ...                                    "bow": ["pos", "neg", "neg"]}, task="sst2")
       task query system    metric  value
    0  sst2     0   bert  accuracy    1.0
    1  sst2     1   bert  accuracy    0.0
    2  sst2     2   bert  accuracy    1.0
    3  sst2     0    bow  accuracy    1.0
    4  sst2     1    bow  accuracy    1.0
    5  sst2     2    bow  accuracy    0.0
    """
    task = _check_name("task", task)
    metric = _check_name("metric", metric)
    if not isinstance(predictions, Mapping):
        raise OptionError(
            "`predictions` must be a mapping {system: predicted labels}, "
            f"not {type(predictions).__name__}."
        )
    if not predictions:
        raise PairingError(
            "`predictions` is empty; pass {system: predicted labels} for at least one system."
        )
    truth = _labels(y_true, "y_true")
    n = truth.size
    if queries is None:
        ids = np.arange(n).astype(str).astype(object)
    else:
        ids = np.asarray([str(q) for q in queries], dtype=object)
        if ids.size != n:
            raise SchemaError(f"`queries` has {ids.size} ids for {n} labels in `y_true`.")
        dup = pd.Index(ids)[pd.Index(ids).duplicated()].unique()
        if len(dup):
            raise SchemaError(f"`queries` has duplicated ids {quote_list(list(dup), limit=10)}.")
    systems = [str(s) for s in predictions]
    if len(set(systems)) != len(systems):
        raise PairingError(f"System names {systems} are not unique once converted to strings.")
    preds = []
    for system, given in zip(systems, predictions.values(), strict=True):
        pred = _labels(given, f"predictions[{system!r}]")
        if pred.size != n:
            raise PairingError(
                f"System {system!r} has {pred.size} predictions but `y_true` has {n} labels; "
                "predictions are paired with labels by position."
            )
        preds.append(pred)
    correct = np.stack(preds) == truth[None, :]  # (systems, n)
    return pd.DataFrame(
        {
            "task": task,
            "query": np.tile(ids, len(systems)),
            "system": np.repeat(np.asarray(systems, dtype=object), n),
            "metric": metric,
            "value": correct.astype(float).ravel(),
        }
    )


# -------------------------------------------------------------------- metrics
def _observed(truth: np.ndarray, pred: np.ndarray) -> list[Any]:
    """The sorted classes of ``y_true`` and ``y_pred``; SchemaError if they mix types."""
    both = np.concatenate([truth, pred])
    try:
        return list(np.unique(both).tolist())
    except TypeError:
        kinds = sorted({type(v).__name__ for v in both})
        raise SchemaError(
            f"Labels and predictions mix types {kinds}; use one type (all int or all str)."
        ) from None


def _with(observed: list[Any], extra: list[Any]) -> list[Any]:
    """``observed`` with ``extra`` (``labels``, ``pos_label``) added, sorted."""
    try:
        return sorted(set(observed) | set(extra))
    except TypeError:
        raise OptionError(
            f"`labels`/`pos_label` {extra!r} cannot be sorted with the classes {observed!r}; "
            "give them the classes' type."
        ) from None


def _undefined(cm: np.ndarray, classes: list[Any], counted: list[Any], average: str) -> list[str]:
    """Messages for the precision/recall/F1 values that zero_division set to 0."""
    idx = [classes.index(c) for c in counted]
    tp = np.diag(cm)[idx]
    predicted = cm.sum(axis=0)[idx]  # tp + fp
    actual = cm.sum(axis=1)[idx]  # tp + fn
    if average == "micro":  # counts pooled over the counted classes
        tp, predicted, actual = (v.sum(keepdims=True) for v in (tp, predicted, actual))
    messages = []
    for name, zero, why in (
        ("precision", predicted == 0, "no sample was predicted as {}"),
        ("recall", actual == 0, "no true label is {}"),
        ("f1", predicted + actual - tp == 0, "neither y_true nor y_pred contains {}"),
    ):
        if not zero.any():
            continue
        if average == "micro":
            what = f"any of {counted!r}"
            messages.append(f"{name} (counts pooled over the classes): {why.format(what)}")
            continue
        bad = [c for c, z in zip(counted, zero, strict=True) if z]
        what = " or ".join(repr(c) for c in bad)
        if average == "macro":
            messages.append(
                f"{name} of class(es) {bad!r} (entering the macro average as 0): {why.format(what)}"
            )
        else:
            messages.append(f"{name}: {why.format(what)}")
    return messages


def metrics(
    y_true: Any,
    y_pred: Any,
    *,
    average: str = "binary",
    pos_label: Any = 1,
    labels: Sequence[Any] | None = None,
) -> pd.Series:
    """Accuracy, precision, recall, F1 and the Matthews correlation of predictions.

    Parameters
    ----------
    y_true, y_pred : array-like, shape (n,)
        True and predicted class labels, paired by position.
    average : {"binary", "macro", "micro"}, default "binary"
        How precision, recall and F1 combine classes: ``"binary"`` reports the
        class ``pos_label`` only (at most two classes allowed), ``"macro"`` the
        unweighted mean of the per-class values, ``"micro"`` the values of the
        counts pooled over classes (with all classes, all three equal the
        accuracy). The MCC does not depend on ``average``.
    pos_label : label, default 1
        The positive class for ``average="binary"``.
    labels : sequence, optional
        The classes that precision, recall and F1 average over for
        ``average="macro"`` or ``"micro"`` (default: every class in ``y_true``
        or ``y_pred``); ignored by those metrics for ``"binary"``, as in
        scikit-learn. Classes listed here also get a row and a column in the
        confusion matrix even when they never occur.

    Returns
    -------
    pandas.Series
        Float values with the index

        - ``accuracy`` : share of samples with ``y_pred == y_true``;
        - ``precision`` : TP / (TP + FP);
        - ``recall`` : TP / (TP + FN);
        - ``f1`` : 2 TP / (2 TP + FP + FN);
        - ``mcc`` : Matthews correlation coefficient (Gorodkin's multi-class
          form for more than two classes).

        The counts behind them are :func:`confusion_matrix` of the same
        arguments (``attrs`` hold no tables: two results concatenate).

    Raises
    ------
    metaeval.SchemaError
        When an input is empty, not 1-D, has missing labels (None/NaN) or
        mixes label types, or scikit-learn refuses the labels (continuous
        values, say).
    metaeval.PairingError
        When ``y_true`` and ``y_pred`` differ in length.
    metaeval.OptionError
        For an unknown ``average``, more than two classes with
        ``average="binary"``, or a ``pos_label`` that is not one of the two
        classes.
    metaeval.MetaEvalError
        When scikit-learn is not installed.

    Warns
    -----
    metaeval.DegenerateWarning
        Whenever a value is undefined (0/0) and scikit-learn's convention
        (``zero_division=0``; 0 for the MCC) reported 0 instead, naming the
        metric and the reason. scikit-learn's own ``UndefinedMetricWarning``
        is suppressed.

    Notes
    -----
    When each value is undefined (0/0), and the MCC's multi-class form:
    :ref:`classification-formulas`.

    References
    ----------
    Matthews, B. W. (1975). Comparison of the predicted and observed secondary
    structure of T4 phage lysozyme. *Biochimica et Biophysica Acta*, 405(2),
    442–451. doi:10.1016/0005-2795(75)90109-9
    Gorodkin, J. (2004). Comparing two K-category assignments by a K-category
    correlation coefficient. *Computational Biology and Chemistry*, 28(5–6),
    367–374. doi:10.1016/j.compbiolchem.2004.09.006
    Chicco, D., & Jurman, G. (2020). The advantages of the Matthews
    correlation coefficient (MCC) over F1 score and accuracy in binary
    classification evaluation. *BMC Genomics*, 21, 6.
    doi:10.1186/s12864-019-6413-7

    Examples
    --------
    >>> from metaeval.classification import metrics
    >>> m = metrics([1, 0, 1, 0, 1], [1, 0, 1, 1, 0])
    >>> m.round(4)
    accuracy     0.6000
    precision    0.6667
    recall       0.6667
    f1           0.6667
    mcc          0.1667
    dtype: float64
    >>> from metaeval.classification import confusion_matrix
    >>> confusion_matrix([1, 0, 1, 0, 1], [1, 0, 1, 1, 0])
    predicted  0  1
    true
    0          1  1
    1          1  2

    The majority-class predictor of an imbalanced set:

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     m = metrics([1] * 9 + [0], [1] * 10)
    >>> m.round(4).tolist()
    [0.9, 0.9, 1.0, 0.9474, 0.0]
    >>> print(caught[0].message)
    mcc was set to 0 by scikit-learn's convention: it is undefined (0/0) because y_pred has a single class (1).
    """
    truth_arr, pred_arr, classes, observed = _checked(y_true, y_pred, average, pos_label, labels)
    import sklearn.metrics as skm
    from sklearn.exceptions import UndefinedMetricWarning

    sk_labels = None if labels is None or average == "binary" else list(labels)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            warnings.filterwarnings("ignore", "A single label was found", UserWarning)
            accuracy = skm.accuracy_score(truth_arr, pred_arr)
            precision, recall, f1, _ = skm.precision_recall_fscore_support(
                truth_arr,
                pred_arr,
                average=average,
                pos_label=pos_label,
                labels=sk_labels,
                zero_division=0,
            )
            mcc = skm.matthews_corrcoef(truth_arr, pred_arr)
            cm = skm.confusion_matrix(truth_arr, pred_arr, labels=classes)
    except ValueError as err:
        raise SchemaError(f"scikit-learn refused the labels: {err}") from None

    counted = (
        [pos_label] if average == "binary" else (list(labels) if labels is not None else observed)
    )
    messages = _undefined(cm, classes, counted, average)
    single = [
        f"{name} has a single class ({excerpt(values[0])})"
        for name, values in (
            ("y_true", np.unique(truth_arr).tolist()),
            ("y_pred", np.unique(pred_arr).tolist()),
        )
        if len(values) == 1
    ]
    for message in messages:
        warn(
            f"{message}, so it is undefined (0/0) and was set to 0 by scikit-learn's "
            "zero_division=0 convention.",
            DegenerateWarning,
        )
    if single:
        warn(
            "mcc was set to 0 by scikit-learn's convention: it is undefined (0/0) because "
            + " and ".join(single)
            + ".",
            DegenerateWarning,
        )
    out = pd.Series(
        [accuracy, precision, recall, f1, mcc],
        index=["accuracy", "precision", "recall", "f1", "mcc"],
        dtype=float,
    )
    return out


def confusion_matrix(
    y_true: Any,
    y_pred: Any,
    *,
    average: str = "binary",
    pos_label: Any = 1,
    labels: Sequence[Any] | None = None,
) -> pd.DataFrame:
    """The confusion matrix behind :func:`metrics`: counts of (true, predicted) classes.

    Parameters
    ----------
    y_true, y_pred, average, pos_label, labels
        As for :func:`metrics`, which checks them the same way; the classes are
        those observed plus ``labels`` and, for ``"binary"``, ``pos_label``.

    Returns
    -------
    pandas.DataFrame
        Counts with the true classes as rows (index named ``"true"``) and the
        predicted ones as columns (named ``"predicted"``), both sorted.

    Raises
    ------
    metaeval.SchemaError, metaeval.PairingError, metaeval.OptionError
        As :func:`metrics`.

    Examples
    --------
    >>> from metaeval.classification import confusion_matrix
    >>> confusion_matrix([1, 0, 1, 0, 1], [1, 0, 1, 1, 0])
    predicted  0  1
    true
    0          1  1
    1          1  2
    """
    truth_arr, pred_arr, classes, _ = _checked(y_true, y_pred, average, pos_label, labels)
    import sklearn.metrics as skm

    try:
        cm = skm.confusion_matrix(truth_arr, pred_arr, labels=classes)
    except ValueError as err:
        raise SchemaError(f"scikit-learn refused the labels: {err}") from None
    return pd.DataFrame(
        cm, index=pd.Index(classes, name="true"), columns=pd.Index(classes, name="predicted")
    )


def _checked(
    y_true: Any, y_pred: Any, average: str, pos_label: Any, labels: Sequence[Any] | None
) -> tuple[np.ndarray, np.ndarray, list[Any], list[Any]]:
    """The labels and predictions as arrays, the confusion matrix's classes and the observed
    ones, after the checks :func:`metrics` and :func:`confusion_matrix` share."""
    check_option("average", average, AVERAGES)
    truth, pred = _labels(y_true, "y_true"), _labels(y_pred, "y_pred")
    if truth.size != pred.size:
        raise PairingError(
            f"`y_true` has {truth.size} labels but `y_pred` has {pred.size} predictions; "
            "they are paired by position."
        )
    try:
        import sklearn.metrics  # noqa: F401
    except ImportError:  # pragma: no cover - scikit-learn is a test dependency
        raise MetaEvalError(
            "metaeval.classification.metrics needs scikit-learn: pip install 'metaeval[classification]'"
        ) from None
    observed = _observed(truth, pred)
    if average == "binary":
        if len(observed) > 2:
            raise OptionError(
                f"`average='binary'` needs at most two classes, but there are {len(observed)}: "
                f"{quote_list(observed)}; use average='macro' or 'micro'."
            )
        if len(observed) == 2 and pos_label not in observed:
            raise OptionError(
                f"The value for `pos_label` must be one of {observed}, but {pos_label!r} was passed."
            )
    extra = list(labels) if labels is not None else []
    classes = _with(observed, extra + [pos_label] if average == "binary" else extra)
    # sklearn wants a homogeneous dtype; the object arrays have been checked
    return np.asarray(truth.tolist()), np.asarray(pred.tolist()), classes, observed


# ---------------------------------------------------------------- correlation
def _finite(values: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise SchemaError(f"`{name}` must be numbers.") from None
    if arr.ndim != 1:
        raise SchemaError(f"`{name}` must be one-dimensional, but it has shape {arr.shape}.")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise SchemaError(
            f"`{name}` has {bad.size} non-finite values (NaN/±inf) at positions "
            f"{quote_list(bad.tolist(), limit=10)}; drop the pairs first."
        )
    return arr


@literal_signature
def correlation(
    x: Any, y: Any, *, correlation: Correlation = "pearson", alpha: float = 0.05
) -> pd.Series:
    """A correlation coefficient with its Fisher-z confidence interval and p-value.

    Parameters
    ----------
    x, y : array-like, shape (n,)
        Paired finite observations.
    correlation : {"pearson", "spearman", "kendall"}, default "pearson"
        Pearson's r, Spearman's ρ or Kendall's τ-b.
    alpha : float, default 0.05
        The interval has confidence level 1 − ``alpha``.

    Returns
    -------
    pandas.Series
        Named ``correlation``, with the float values

        - ``r`` : the coefficient;
        - ``ci_low``, ``ci_high`` : the Fisher-z confidence interval;
        - ``p_value`` : two-sided p-value of r = 0, from :mod:`scipy.stats`;
        - ``n`` : the number of pairs;
        - ``se_z`` : the standard error of z = atanh(r).

    Raises
    ------
    metaeval.SchemaError
        When ``x`` or ``y`` is empty, not 1-D, or has NaN or ±inf.
    metaeval.PairingError
        When ``x`` and ``y`` differ in length.
    metaeval.OptionError
        For an unknown ``correlation`` or an ``alpha`` outside (0, 1).

    Warns
    -----
    metaeval.DegenerateWarning
        When ``x`` or ``y`` is constant or n < 2 (everything but ``n`` is NaN),
        or n is too small for the interval (n ≤ 3; n ≤ 4 for Kendall: r and the
        p-value are reported, the interval and ``se_z`` are NaN).

    Notes
    -----
    r and the p-value come from :func:`scipy.stats.pearsonr` (exact p under
    bivariate normality), :func:`scipy.stats.spearmanr` (t approximation) or
    :func:`scipy.stats.kendalltau` (τ-b; exact p for small samples without
    ties). The interval is

    .. math:: \\tanh\\left(\\operatorname{atanh}(r) \\pm z_{1-\\alpha/2}\\sqrt{v}\\right),

    with v = 1/(n − 3) for Pearson (Fisher 1921), 1.06/(n − 3) for Spearman
    and 0.437/(n − 4) for Kendall (Fieller, Hartley & Pearson 1957); see
    :func:`fisher_z_variance`. For Pearson it equals
    ``scipy.stats.pearsonr(x, y).confidence_interval(1 - alpha)``. The rank
    variances were derived without ties; with many ties they are approximate.
    For r = ±1 the interval is the point ±1.

    References
    ----------
    Fisher, R. A. (1921). On the "probable error" of a coefficient of
    correlation deduced from a small sample. *Metron*, 1, 3–32.
    Fieller, E. C., Hartley, H. O., & Pearson, E. S. (1957). Tests for rank
    correlation coefficients. I. *Biometrika*, 44(3/4), 470–481.
    doi:10.1093/biomet/44.3-4.470
    Bonett, D. G., & Wright, T. A. (2000). Sample size requirements for
    estimating Pearson, Kendall and Spearman correlations. *Psychometrika*,
    65(1), 23–28. doi:10.1007/BF02294183

    Examples
    --------
    >>> from metaeval.classification import correlation
    >>> x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    >>> y = [1.2, 1.9, 3.5, 3.1, 5.6, 5.0, 7.7, 7.1]
    >>> correlation(x, y).round(4)
    r          0.9554
    ci_low     0.7671
    ci_high    0.9921
    p_value    0.0002
    n          8.0000
    se_z       0.4472
    Name: pearson, dtype: float64
    >>> correlation(x, y, correlation="kendall").round(4)
    r          0.7857
    ci_low     0.3904
    ci_high    0.9364
    p_value    0.0055
    n          8.0000
    se_z       0.3305
    Name: kendall, dtype: float64
    """
    from scipy import special
    from scipy import stats as sps

    check_option("correlation", correlation, CORRELATIONS)
    alpha = check_alpha(alpha)
    xs, ys = _finite(x, "x"), _finite(y, "y")
    if xs.size != ys.size:
        raise PairingError(
            f"`x` has {xs.size} values but `y` has {ys.size}; they are paired by position."
        )
    n = xs.size
    if n == 0:
        raise SchemaError("`x` and `y` are empty; a correlation needs at least two pairs.")
    index = ["r", "ci_low", "ci_high", "p_value", "n", "se_z"]
    constant = [name for name, v in (("x", xs), ("y", ys)) if np.ptp(v) == 0]
    if n < 2 or constant:
        why = (
            f"n={n} pair"
            if n < 2
            else " and ".join(constant) + f" {'is' if len(constant) == 1 else 'are'} constant"
        )
        warn(f"The {correlation} correlation is undefined (NaN): {why}.", DegenerateWarning)
        return pd.Series([np.nan] * 4 + [float(n), np.nan], index=index, name=correlation)
    func = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}[
        correlation
    ]
    res = func(xs, ys)
    r, p = float(res.statistic), float(res.pvalue)
    variance = fisher_z_variance(n, correlation)
    se = float(np.sqrt(variance))
    if np.isnan(se):
        need = 5 if correlation == "kendall" else 4
        warn(
            f"The Fisher-z interval of the {correlation} correlation needs n >= {need} pairs, "
            f"but n={n}; ci_low, ci_high and se_z are NaN.",
            DegenerateWarning,
        )
    crit = special.ndtri(1 - alpha / 2)
    with np.errstate(divide="ignore"):
        z = np.arctanh(r)
    low, high = np.tanh(z - crit * se), np.tanh(z + crit * se)
    return pd.Series([r, low, high, p, float(n), se], index=index, name=correlation, dtype=float)
