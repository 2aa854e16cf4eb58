"""The paired statistics of a dask scores table, a partition at a time, and the dask
face's entries (``ddf.meta.<method>``: :data:`metaeval.accessor.ACCESSOR_METHODS`).

The sufficient statistics (``effects``, ``analyze``, ``sufficient_statistics``) need no
first pass: each partition is laid out on its own tasks, systems and metrics
(:func:`statistics_piece`), and the partitions' arrays are aligned on the names as they
are joined by :func:`metaeval.engines.dask.map_reduce` (:func:`_join_statistics`). The
per-task tests and tables (``compare``, ``anova``, ``tukey``, ``means``) run the in-memory
function on every partition through the one per-task driver
(:func:`metaeval.engines.per_task`). Each entry takes the table and the options of the
method's call, bound to the function's signature (``options``): the dask face declares no
signature of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import xarray as xr

from .._options import DEFAULT_EFFECT, EffectType
from ..engines import Survey, per_task
from ..engines.dask import (
    Piece,
    check_columns,
    concat_frames,
    dask_survey,
    key_order,
    map_reduce,
    partition,
)
from ..engines.per_task import run_piece
from ..engines.survey import no_rows_error
from ..schema import SCORE_COLUMNS

__all__ = [
    "Partial",
    "statistics_piece",
    "dask_statistics",
    "dask_effects",
    "statistics_on_dask",
    "effects_on_dask",
    "compare_on_dask",
    "anova_on_dask",
    "means_on_dask",
    "tukey_on_dask",
]


# ------------------------------------------------------------- the statistics
# The sufficient statistics need no first pass: each partition is laid out with its own
# tasks, systems and metrics (what it would be in memory on its own), and the arrays are
# aligned on the names as they are joined. A system or metric absent from a partition is
# absent from its tasks: no queries, sums 0, shift 0, scale 1, as the whole table's layout
# gives them (its sums for a pair do not depend on the other systems: issue 25).
_FILL = {"scale": 1}
"""Where an array lacks a name, the value the whole table's layout has: 0 but for these."""


class Partial(NamedTuple):
    """Sufficient statistics of some partitions (see :func:`statistics_piece`)."""

    names: dict[str, list[str]]  # task, metric, treatment, control: the names along each dim
    data: dict[str, np.ndarray]  # the variables of STATISTICS_DIMS, as numpy arrays
    systems: frozenset[str]  # every system with rows there, selected or not
    attrs: pd.DataFrame  # task-level columns, by task
    varying: frozenset[str]  # extra columns not constant within a task


def _selected(wanted: str | Sequence[str] | None, systems: np.ndarray) -> np.ndarray | None:
    """The indices in ``systems`` of the ``wanted`` systems that are there (None: all); the
    client checks ``wanted`` against the whole table's systems."""
    if wanted is None:
        return None
    lookup = {str(name): i for i, name in enumerate(systems)}
    found = [
        lookup[str(w)]
        for w in ([wanted] if isinstance(wanted, str) else wanted)
        if str(w) in lookup
    ]
    return np.array(list(dict.fromkeys(found)), dtype=np.intp)


def statistics_piece(part: pd.DataFrame, control: Any, treatment: Any) -> Piece:
    """One partition's statistics (:class:`Partial`), laid out on its own names; its
    warnings are dropped (the client warns once, for the whole table)."""
    from ..errors import MetaEvalError, collected_warnings
    from ._layout import layout
    from .effect_size import task_attributes
    from .sufficient import statistics_arrays

    if part.empty:
        return Piece(None, [], frozenset(), False)
    try:
        with collected_warnings():
            lay = layout(part)
            left, right = _selected(treatment, lay.systems), _selected(control, lay.systems)
            names, data = statistics_arrays(lay, left, right)
            attrs = task_attributes(part)
    except MetaEvalError as err:  # travels to the client alone: not with pandera's context
        err.__context__ = err.__cause__ = None
        raise err
    varying = {str(c) for c in part.columns if c not in SCORE_COLUMNS and c not in attrs.columns}
    systems = frozenset(str(s) for s in lay.systems)
    result = Partial(names, data, systems, attrs, frozenset(varying))
    return Piece(result, [], frozenset(names["task"]), False)


def _aligned(part: Partial, names: dict[str, list[str]]) -> dict[str, np.ndarray]:
    """``part``'s arrays on ``names`` (its tasks: the first axis, kept), filled where it
    lacks a name (see :data:`_FILL`)."""
    from .sufficient import STATISTICS_DIMS

    if all(part.names[d] == names[d] for d in ("metric", "treatment", "control")):
        return part.data
    where = {d: pd.Index(part.names[d]) for d in ("metric", "treatment", "control")}
    into = {d: pd.Index(names[d]).get_indexer(where[d]) for d in where}
    out = {}
    for name, dims in STATISTICS_DIMS.items():
        arr = part.data[name]
        full = np.full(
            (arr.shape[0], *(len(names[d]) for d in dims[1:])), _FILL.get(name, 0), dtype=arr.dtype
        )
        full[(slice(None), *np.ix_(*(into[d] for d in dims[1:])))] = arr
        out[name] = full
    return out


def _join_statistics(parts: list[Partial]) -> Partial:
    """Partitions' statistics as one: their tasks one after the other, the other names'
    union (sorted; the client puts them in the in-memory order)."""
    from .sufficient import STATISTICS_DIMS

    if len(parts) == 1:
        return parts[0]
    names = {"task": [t for p in parts for t in p.names["task"]]}
    for dim in ("metric", "treatment", "control"):
        names[dim] = sorted({n for p in parts for n in p.names[dim]})
    aligned = [_aligned(p, names) for p in parts]
    data = {name: np.concatenate([a[name] for a in aligned]) for name in STATISTICS_DIMS}
    attrs = [p.attrs for p in parts if len(p.attrs.columns)]
    return Partial(
        names,
        data,
        frozenset().union(*(p.systems for p in parts)),
        pd.concat(attrs) if attrs else pd.DataFrame(),
        frozenset().union(*(p.varying for p in parts)),
    )


def _in_order(partial: Partial, ddf: Any, control: Any, treatment: Any) -> xr.Dataset:
    """The joined statistics as the in-memory dataset: names in the in-memory order, and
    its errors for unknown or repeated systems (against the whole table's systems)."""
    from .sufficient import select_systems, statistics_dataset

    systems = np.array(key_order(ddf, "system", set(partial.systems)), dtype=object)
    right = select_systems(systems, control, "control")
    left = select_systems(systems, treatment, "treatment")
    names = {
        "task": key_order(ddf, "task", set(partial.names["task"])),
        "metric": key_order(ddf, "metric", set(partial.names["metric"])),
        "treatment": [str(s) for s in (systems if left is None else systems[left])],
        "control": [str(s) for s in (systems if right is None else systems[right])],
    }
    rows = pd.Index(partial.names["task"]).get_indexer(names["task"])
    data = {k: v[rows] for k, v in _aligned(partial, names).items()}
    return statistics_dataset(names, data)


def dask_statistics(
    ddf: Any,
    control: str | Sequence[str] | None = None,
    treatment: str | Sequence[str] | None = None,
    survey: Survey | None = None,
) -> tuple[xr.Dataset, pd.DataFrame]:
    """The sufficient statistics of a dask scores table, and its task-level columns
    (``survey``: the first pass's result, where the caller has it already; none is
    needed)."""
    from .sufficient import select_systems, warn_unpaired

    ddf = survey.frame if survey is not None else ddf
    check_columns(ddf)
    for wanted, role in ((control, "control"), (treatment, "treatment")):
        if wanted is not None and not isinstance(wanted, str) and not list(wanted):
            select_systems(np.array([]), wanted, role)  # its error for an empty list, at once
    root, _ = map_reduce(ddf, statistics_piece, (control, treatment), _join_statistics)
    if root.result is None:
        raise no_rows_error([])
    partial: Partial = root.result
    stats = _in_order(partial, ddf, control, treatment)
    warn_unpaired(stats)  # once, for the whole table (the partitions' warnings are dropped)
    # task-level columns: those constant within every task of every partition
    attrs = partial.attrs.drop(
        columns=[c for c in partial.attrs.columns if str(c) in partial.varying]
    )
    if len(attrs.columns):
        attrs = attrs.loc[[t for t in stats["task"].values if t in attrs.index]]
    return stats, attrs


def dask_effects(
    ddf: Any,
    control: str | Sequence[str] | None,
    *,
    treatment: str | Sequence[str] | None = None,
    effect: EffectType = DEFAULT_EFFECT,
    alpha: float = 0.05,
    correct: bool = True,
    cv: tuple[float, float] | None = None,
    cluster: str | None = None,
    survey: Survey | None = None,
) -> pd.DataFrame:
    """``ddf.meta.effects()``; ``survey``: the first pass's result, if the caller has it.

    With ``cluster=`` the clustered variances are a function of each task's rows (the
    clusters are within a task): a second pass computes them partition by partition
    (:func:`metaeval.paired.clusters.cluster_terms`), the client applies them to the
    table of the summed statistics, as in memory."""
    from .clusters import (
        check_cluster_options,
        cluster_ids,
        cluster_terms,
        clustered_effects,
    )
    from .effect_size import (
        check_extra_columns,
        checked_options,
        cv_corrected,
        effects_table,
    )
    from .replicates import pair_variances

    effect, alpha = checked_options(effect, alpha)
    if cluster is not None:
        check_cluster_options(cluster, effect, cv)
        if cluster not in ddf.columns:  # the in-memory error, before any pass over the data
            cluster_ids(ddf._meta, cluster)
    check_extra_columns(
        list((survey.frame if survey is not None else ddf).columns), cluster=cluster is not None
    )
    if cluster is not None:
        survey = survey or dask_survey(ddf)
    stats, attrs = dask_statistics(ddf, control, treatment, survey)
    if cluster is not None:
        attrs = attrs.drop(columns=[cluster], errors="ignore")
    table = effects_table(stats, attrs, effect=effect, alpha=alpha, correct=correct)
    if cluster is not None:
        assert survey is not None
        kwargs = {
            "pairs": table[["metric", "treatment", "control", "task"]],
            "cluster": cluster,
            "effect": effect,
        }
        names = (survey.systems, survey.metrics)
        root, _ = map_reduce(
            survey.frame, partition, (cluster_terms, kwargs, names, run_piece), concat_frames
        )
        return clustered_effects(
            table,
            root.result,
            pair_variances(stats),
            cluster=cluster,
            effect=effect,
            alpha=alpha,
            correct=correct,
        )
    if cv is not None:  # one row per fold: the same correction as in memory
        table = cv_corrected(table, cv, effect=effect, replicates=False, alpha=alpha)
    return table


# ------------------------------------------------------ the dask face's entries
# ``<name>_on_dask(ddf, options)``: ``ddf.meta.<name>(...)``, its arguments bound to the
# function's signature with the defaults applied (the ``dask`` field of the accessor's
# entries names these).
def statistics_on_dask(ddf: Any, options: dict[str, Any]) -> xr.Dataset:
    """:func:`metaeval.sufficient_statistics` of the whole table, reduced per partition."""
    return dask_statistics(ddf, options["control"], options["treatment"])[0]


def effects_on_dask(ddf: Any, options: dict[str, Any]) -> pd.DataFrame:
    """:func:`metaeval.effects` of the whole table: a pandas effects table."""
    from .._options import REPLICATE_DESIGNS
    from ..errors import OptionError, check_option

    replicates = options.pop("replicates")
    if replicates is not None:
        check_columns(ddf)  # a replicate column: the in-memory path's error
        check_option("replicates", replicates, REPLICATE_DESIGNS)
        raise OptionError(
            f"replicates={replicates!r} describes a 'replicate' column, which the scores "
            "table does not have."
        )
    return dask_effects(ddf, **options)


def compare_on_dask(ddf: Any, options: dict[str, Any]) -> pd.DataFrame:
    """:func:`metaeval.compare` of the whole table: the same p-values, resampled ones too
    (each task's random numbers depend on the seed and the task's name only)."""
    from ..errors import resolve_seed
    from .significance import adjust_family, compare, compare_options
    from .sufficient import select_systems

    kwargs = dict(options)
    test, adjust, family = kwargs["test"], kwargs["adjust"], kwargs.pop("family")
    if test == "bootstrap" or (test == "randomization" and not kwargs["exact"]):
        kwargs["seed"] = resolve_seed(kwargs["seed"])
    # one task at a time: families across tasks are adjusted on the whole result
    kwargs.update(adjust=adjust if adjust == "maxt" else None, progress=False)
    compare_options(
        test,
        kwargs["alternative"],
        adjust,
        kwargs["alpha"],
        kwargs["n_resamples"],
        kwargs["exact"],
        family,
    )
    control, treatment = kwargs["control"], kwargs["treatment"]
    survey = dask_survey(ddf)
    names = np.array(survey.systems, dtype=object)
    select_systems(names, control, "control")  # the in-memory errors, against the whole table
    select_systems(names, treatment, "treatment")
    frame = per_task(
        ddf,
        compare,
        kwargs,
        pairs=("treatment", "control"),
        control=control,
        treatment=treatment,
        survey=survey,
    )
    return adjust_family(frame, adjust, family)


def anova_on_dask(ddf: Any, options: dict[str, Any]) -> pd.DataFrame:
    """:func:`metaeval.anova` of the whole table."""
    from .anova import anova

    return per_task(ddf, anova, {}, pairs=None)


def means_on_dask(ddf: Any, options: dict[str, Any]) -> pd.DataFrame:
    """:func:`metaeval.means` of the whole table (clusters are within a task)."""
    from .._options import MEANS_INTERVALS
    from ..errors import check_alpha, check_option
    from .means import means

    check_option("interval", options["interval"], MEANS_INTERVALS)
    check_alpha(options["alpha"])
    return per_task(ddf, means, options, pairs=None)


def tukey_on_dask(ddf: Any, options: dict[str, Any]) -> pd.DataFrame:
    """:func:`metaeval.tukey` of the whole table (the randomized version with the same
    p-values for the same seed)."""
    from ..errors import check_alpha, check_resamples, resolve_seed
    from .anova import tukey

    kwargs = dict(options, progress=False)
    if kwargs["randomized"]:
        kwargs["seed"] = resolve_seed(kwargs["seed"])
    check_alpha(kwargs["alpha"])
    check_resamples(kwargs["n_resamples"])
    return per_task(ddf, tukey, kwargs, pairs=None)
