"""Past one process: ``.meta`` on dask DataFrames (needs the ``dask`` extra).

Every statistic metaeval computes from a scores table is a function of one task's
rows at a time (sums over its queries, its system means, its resamples drawn from
streams keyed by the seed and the task's name). So a dask table is analysed as:

1. **every partition** is validated and computed by the in-memory code, in the task
   that reads it;
2. **a tree reduction** on the workers joins the partitions' results
   (``SPLIT_EVERY`` a node) — statistics per task × metric × pair, or result rows,
   small whatever the number of queries — and tells whether any task had rows in two
   partitions, in which case the table is shuffled on ``task`` and the work done again
   (one Parquet file per task, the common layout, moves nothing);
3. **the client** puts the results in the in-memory order and issues the warnings once,
   merged.

The sufficient statistics (``effects``, ``analyze``, ``sufficient_statistics``) need
nothing more: each partition is laid out on its own tasks, systems and metrics, and
the partitions' arrays are aligned on the names as they are joined
(:func:`_statistics_piece`, :func:`_join_statistics`). The per-task tests and tables
(``compare``, ``anova``, ``tukey``, ``means``) and clustered effects lay every
partition out with the whole table's systems and metrics as its axes (see
:func:`metaeval.paired._layout.whole_table_names`), so that each task gets what it
gets in memory: **a first pass** (:class:`Survey`) over the ``task``, ``system`` and
``metric`` columns gives those names, and the table shuffled on ``task`` first where a
task has rows in two partitions; their warnings are held as data
(:func:`metaeval.errors.collected_warnings`).

Errors are the in-memory ones, raised on a worker and re-raised by dask on the
client; but a :class:`~metaeval.PairingError` of a partition without a pair to compare
travels up the tree as data, raised only if no partition has a pair (as in memory). ``import metaeval`` does not import dask: the accessor is registered on
``dask.dataframe.DataFrame`` when dask.dataframe is imported (see :func:`install`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import xarray as xr

from ._after_import import after_import
from ._options import (
    DEFAULT_CI,
    DEFAULT_EFFECT,
    DEFAULT_POOL_METHOD,
    MEANS_CIS,
    REPLICATE_DESIGNS,
    AdjustFamily,
    Adjustment,
    Alternative,
    CIMethod,
    CompareTest,
    EffectType,
    MeansCI,
    PoolMethod,
    ReplicateDesign,
)
from .accessor import with_methods
from .errors import OptionError, SchemaError, check_alpha, check_option, check_resamples, quote_list
from .schema import KEY_COLUMNS, SCORE_COLUMNS
from .schema.lazy import no_rows_error

__all__ = ["DaskMetaAccessor", "install", "register", "validate"]

SPLIT_EVERY = 8
"""Partial results combined per node of the reduction tree."""


# ------------------------------------------------------------------ first pass
def _names(part: pd.DataFrame) -> tuple[list[str], list[str], list[str]]:
    """A partition's tasks, systems and metrics (as the strings the layout will use)."""
    return tuple(  # type: ignore[return-value]
        [str(v) for v in pd.unique(part[c].dropna())] for c in ("task", "system", "metric")
    )


def _check_columns(ddf: Any) -> None:
    missing = [c for c in SCORE_COLUMNS if c not in ddf.columns]
    if missing:
        raise SchemaError(
            f"The scores table has 1 problem:\n- column(s) {missing} missing; the dask "
            f"DataFrame has columns {quote_list([str(c) for c in ddf.columns])}."
        )
    if "replicate" in ddf.columns:
        raise SchemaError(
            "Repeated runs (a 'replicate' column) need the in-memory path: the variance "
            "between replicates is estimated per system across partitions. Compute on "
            "ddf.compute(), or average the replicates first (groupby task, query, system, "
            "metric; mean) and drop the column, knowing that this ignores their variance."
        )


def _key_order(ddf: Any, column: str, found: set[str]) -> list[str]:
    """The in-memory order of a key column's values: categories where the dask frame
    declares them, else sorted."""
    dtype = ddf._meta[column].dtype
    if isinstance(dtype, pd.CategoricalDtype) and dtype.categories is not None:
        known = [str(c) for c in dtype.categories]
        if "__UNKNOWN_CATEGORIES__" not in known:
            return [c for c in known if c in found]
    return sorted(found)


class Survey:
    """What the first pass learns: the table with whole tasks in each partition, and
    the order of its tasks, systems and metrics (for the per-task methods; the
    statistics need no first pass)."""

    def __init__(self, ddf: Any):
        import dask

        _check_columns(ddf)
        names = ddf[["task", "system", "metric"]].map_partitions(
            _names, meta=pd.Series(dtype=object), enforce_metadata=False
        )  # in the task that reads the three columns
        parts = dask.compute(*names.to_delayed())
        seen: set[str] = set()
        aligned = True
        for tasks, _, _ in parts:
            aligned = aligned and seen.isdisjoint(tasks)
            seen.update(tasks)
        self.ddf = ddf if aligned else ddf.shuffle(on="task")
        self.shuffled = not aligned
        self.tasks = _key_order(ddf, "task", seen)
        self.systems = _key_order(ddf, "system", {s for _, found, _ in parts for s in found})
        self.metrics = _key_order(ddf, "metric", {m for _, _, found in parts for m in found})


def whole_tasks(ddf: Any) -> Any:
    """``ddf`` with every task's rows in one partition: as it is, or shuffled on ``task``."""
    return Survey(ddf).ddf


# --------------------------------------------------------------- the partitions
def _as_in_memory(part: pd.DataFrame, systems: list[str], metrics: list[str]) -> pd.DataFrame:
    """A partition, validated as in memory, with the systems and metrics of the whole
    table as categories: its layout then has every system and metric, in the order the
    in-memory layout of the whole table has them."""
    from .schema import prepare_scores

    part = prepare_scores(part)
    return part.assign(
        system=_categorical(part["system"], systems), metric=_categorical(part["metric"], metrics)
    )


def _categorical(column: pd.Series, names: list[str]) -> pd.Categorical:
    """``column`` (validated strings) as a categorical of ``names``: the column's few
    distinct values are looked up, not every row."""
    codes, uniques = pd.factorize(column)
    lookup = pd.Index(names).get_indexer(np.asarray(uniques, dtype=object).astype(str))
    return pd.Categorical.from_codes(np.where(codes < 0, -1, lookup[codes]), categories=names)


class Piece(NamedTuple):
    """A partition's result, or several joined: what travels up the reduction tree."""

    result: Any  # None: no rows, or no pair to compare
    held: list[Any]  # warnings, issued by the client
    tasks: frozenset[str]  # the tasks whose rows were there
    split: bool  # a task's rows were in two of the joined partitions
    unpaired: Any = None  # a PairingError: no pair to compare in any of them


def _partition(
    part: pd.DataFrame, func: Any, kwargs: dict[str, Any], names: tuple[list[str], list[str]]
) -> Piece:
    """``func`` of one partition, with the warnings it held and the tasks it saw;
    ``names``: the whole table's systems and metrics, to lay the partition out with.

    A :class:`~metaeval.PairingError` — no pair of systems shares a query in the
    partition (a task with only the control, say) — is held, not raised: in memory it
    is raised only when no task of the whole table has a pair (see :func:`_combine`).
    Its message is the whole table's, as the partition is laid out with the whole
    table's systems; the warnings issued before it are kept, as in memory.
    """
    from .errors import MetaEvalError, PairingError, collected_warnings
    from .paired import whole_table_names

    if part.empty:
        return Piece(None, [], frozenset(), False)
    tasks = frozenset(str(t) for t in pd.unique(part["task"]))
    try:
        with collected_warnings() as held, whole_table_names():
            out = func(_as_in_memory(part, *names), **kwargs)
    except MetaEvalError as err:  # travels to the client alone: not with pandera's context
        err.__context__ = err.__cause__ = None
        if isinstance(err, PairingError):
            return Piece(None, held, tasks, False, err)
        raise err
    return Piece(out, held, tasks, False)


def _combine(pieces: list[Piece], join: Any) -> Piece:
    """One node of the reduction tree: the pieces' results joined, their warnings kept,
    and whether two of them had rows of the same task; a held PairingError is kept
    only while no piece has a result."""
    results = [p.result for p in pieces if p.result is not None]
    tasks: frozenset[str] = frozenset().union(*(p.tasks for p in pieces))
    split = any(p.split for p in pieces) or len(tasks) < sum(len(p.tasks) for p in pieces)
    if split:  # the result is thrown away: save the work
        return Piece(None, [], tasks, True)
    held = [w for p in pieces for w in p.held]
    if results:
        return Piece(join(results), held, tasks, False)
    return Piece(None, held, tasks, False, next((p.unpaired for p in pieces if p.unpaired), None))


def _concat_frames(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _reduce(ddf: Any, piece: Any, args: tuple[Any, ...], join: Any) -> tuple[Piece, Any]:
    """``piece(partition, *args)`` of every partition (:func:`_partition`, or
    :func:`_statistics_piece`), the results joined by a tree reduction on the workers
    (:data:`SPLIT_EVERY` pieces a node), the root brought to the client; and the table
    as computed.

    Should a task's rows turn out to be in two partitions — a table not laid out by
    task (found here where no first pass looked), or dask reading a file otherwise for
    the first pass's three columns than for all of them — the work is done again on the
    table shuffled on ``task``.
    """
    import dask

    def tree(ddf: Any) -> Piece:
        # map_partitions: each piece in the task that reads its partition (fused), which
        # then never waits in a worker's memory or travels
        pieces = ddf.map_partitions(
            piece,
            *args,
            meta=pd.Series(dtype=object),
            enforce_metadata=False,
            align_dataframes=False,
        )
        nodes = pieces.to_delayed()
        while len(nodes) > 1:
            nodes = [
                dask.delayed(_combine)(nodes[i : i + SPLIT_EVERY], join)
                for i in range(0, len(nodes), SPLIT_EVERY)
            ]
        (root,) = dask.compute(nodes[0])
        return root

    root = tree(ddf)
    if root.split:
        ddf = ddf.shuffle(on="task")
        root = tree(ddf)
    return root, ddf


def _select(survey: Survey, control: Any, treatment: Any) -> None:
    """The in-memory errors for unknown or repeated systems, against the whole table."""
    from .paired.sufficient import select_systems

    names = np.array(survey.systems, dtype=object)
    select_systems(names, control, "control")
    select_systems(names, treatment, "treatment")


def _order(wanted: str | Sequence[str] | None, systems: list[str]) -> list[str]:
    """The systems of a treatment/control dim in the in-memory order."""
    if wanted is None:
        return systems
    return [str(s) for s in ([wanted] if isinstance(wanted, str) else wanted)]


def _sorted(frame: pd.DataFrame, orders: dict[str, list[str]]) -> pd.DataFrame:
    """Rows in the in-memory order: by each column's position in ``orders``, stably."""
    positions = [
        frame[c].map({v: i for i, v in enumerate(order)}).to_numpy() for c, order in orders.items()
    ]
    return frame.iloc[np.lexsort(positions[::-1])].reset_index(drop=True)


def _nothing() -> SchemaError:
    return no_rows_error([])


# ------------------------------------------------------------- the statistics
# The sufficient statistics need no first pass: each partition is laid out with its own
# tasks, systems and metrics (what it would be in memory on its own), and the arrays are
# aligned on the names as they are joined. A system or metric absent from a partition is
# absent from its tasks: no queries, sums 0, shift 0, scale 1, as the whole table's layout
# gives them (its sums for a pair do not depend on the other systems: issue 25).
_FILL = {"scale": 1}
"""Where an array lacks a name, the value the whole table's layout has: 0 but for these."""


class Partial(NamedTuple):
    """Sufficient statistics of some partitions (see :func:`_statistics_piece`)."""

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


def _statistics_piece(part: pd.DataFrame, control: Any, treatment: Any) -> Piece:
    """One partition's statistics (:class:`Partial`), laid out on its own names; its
    warnings are dropped (the client warns once, for the whole table)."""
    from .errors import MetaEvalError, collected_warnings
    from .paired import layout
    from .paired.effect_size import task_attributes
    from .paired.sufficient import statistics_arrays

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
    from .paired.sufficient import STATISTICS_DIMS

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
    from .paired.sufficient import STATISTICS_DIMS

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
    from .paired.sufficient import select_systems, statistics_dataset

    systems = np.array(_key_order(ddf, "system", set(partial.systems)), dtype=object)
    right = select_systems(systems, control, "control")
    left = select_systems(systems, treatment, "treatment")
    names = {
        "task": _key_order(ddf, "task", set(partial.names["task"])),
        "metric": _key_order(ddf, "metric", set(partial.names["metric"])),
        "treatment": [str(s) for s in (systems if left is None else systems[left])],
        "control": [str(s) for s in (systems if right is None else systems[right])],
    }
    rows = pd.Index(partial.names["task"]).get_indexer(names["task"])
    data = {k: v[rows] for k, v in _aligned(partial, names).items()}
    return statistics_dataset(names, data)


def statistics(
    ddf: Any,
    control: str | Sequence[str] | None = None,
    treatment: str | Sequence[str] | None = None,
    survey: Survey | None = None,
) -> tuple[xr.Dataset, pd.DataFrame]:
    """The sufficient statistics of a dask scores table, and its task-level columns
    (``survey``: the first pass's result, where the caller has it already; none is
    needed)."""
    from .paired.sufficient import select_systems, warn_unpaired

    ddf = survey.ddf if survey is not None else ddf
    _check_columns(ddf)
    for wanted, role in ((control, "control"), (treatment, "treatment")):
        if wanted is not None and not isinstance(wanted, str) and not list(wanted):
            select_systems(np.array([]), wanted, role)  # its error for an empty list, at once
    root, _ = _reduce(ddf, _statistics_piece, (control, treatment), _join_statistics)
    if root.result is None:
        raise _nothing()
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


def effects(
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
    (:func:`metaeval.paired.effect_size.cluster_terms`), the client applies them to the
    table of the summed statistics, as in memory."""
    from .paired.effect_size import (
        check_cluster_options,
        check_extra_columns,
        checked_options,
        cluster_terms,
        clustered_effects,
        cv_corrected,
        effects_table,
    )
    from .paired.replicates import pair_variances
    from .paired.twoway import cluster_ids

    effect, alpha = checked_options(effect, alpha)
    if cluster is not None:
        check_cluster_options(cluster, effect, cv)
        if cluster not in ddf.columns:  # the in-memory error, before any pass over the data
            cluster_ids(ddf._meta, cluster)
    check_extra_columns(
        list((survey.ddf if survey is not None else ddf).columns), cluster=cluster is not None
    )
    if cluster is not None:
        survey = survey or Survey(ddf)
    stats, attrs = statistics(ddf, control, treatment, survey)
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
        root, _ = _reduce(survey.ddf, _partition, (cluster_terms, kwargs, names), _concat_frames)
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


# ---------------------------------------------------- per-task tests and tables
def _per_task(
    ddf: Any,
    func: Any,
    kwargs: dict[str, Any],
    *,
    pairs: tuple[str, str] | None,
    control: Any = None,
    treatment: Any = None,
) -> pd.DataFrame:
    """An in-memory function that treats each task on its own, run partition by partition.

    ``pairs`` names the two system columns of a pairwise result (sorted by the
    treatment and control orders, as in memory); other results are sorted by metric
    and task, stably, which keeps each group's rows in their in-memory order.
    """
    from .errors import reissue

    survey = Survey(ddf)
    if pairs is not None:
        _select(survey, control, treatment)
    names = (survey.systems, survey.metrics)
    root, _ = _reduce(survey.ddf, _partition, (func, kwargs, names), _concat_frames)
    frame, held = root.result, root.held
    orders: dict[str, list[str]] = {"metric": survey.metrics}
    # the systems' order for the warnings' groups, whichever system columns they have
    named = ("system", "system_a", "system_b", "treatment", "control")
    systems = {column: survey.systems for column in named}
    if pairs is not None:
        systems = {
            pairs[0]: _order(treatment, survey.systems),
            pairs[1]: _order(control, survey.systems),
        }
        orders.update(systems)
    orders["task"] = survey.tasks
    if frame is None:
        if root.unpaired is None:
            raise _nothing()
        # no pair anywhere: the in-memory warnings, then its error
        reissue(held, {"task": survey.tasks, "metric": survey.metrics, **systems})
        raise root.unpaired
    attrs = dict(frame.attrs)
    frame = _sorted(frame, orders)
    frame.attrs = attrs
    reissue(held, {"task": survey.tasks, "metric": survey.metrics, **systems})
    return frame


@with_methods(per_task=True, hide=("progress",))
class DaskMetaAccessor:
    """``.meta`` on a dask DataFrame of scores: the same results as in memory.

    Its methods are the pandas accessor's that work per task (those marked
    ``per_task`` in ``metaeval.accessor.ACCESSOR_METHODS``), with their functions'
    signatures and docstrings, but ``progress`` (dask's diagnostics show progress).
    Each computes (the results are small: per task, metric and pair) and returns what
    the pandas method returns; see :mod:`metaeval.scale` for how.
    """

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def _call(self, method: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A method's call: its arguments bound as the function takes them, to the dask
        way of computing it (``_<name>``)."""
        bound = method.signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = {k: v for k, v in bound.arguments.items() if k != "self"}
        return getattr(self, f"_{method.name}")(**arguments)

    def _sufficient_statistics(
        self,
        control: str | Sequence[str] | None = None,
        *,
        treatment: str | Sequence[str] | None = None,
    ) -> xr.Dataset:
        """:func:`metaeval.sufficient_statistics` of the whole table, reduced per partition."""
        return statistics(self._obj, control, treatment)[0]

    def _effects(
        self,
        control: str | Sequence[str] | None,
        *,
        treatment: str | Sequence[str] | None = None,
        effect: EffectType = DEFAULT_EFFECT,
        alpha: float = 0.05,
        correct: bool = True,
        cv: tuple[float, float] | None = None,
        replicates: ReplicateDesign | None = None,
        cluster: str | None = None,
    ) -> pd.DataFrame:
        """:func:`metaeval.effects` of the whole table: a pandas effects table."""
        if replicates is not None:
            _check_columns(self._obj)  # a replicate column: the in-memory path's error
            check_option("replicates", replicates, REPLICATE_DESIGNS)
            raise OptionError(
                f"replicates={replicates!r} describes a 'replicate' column, which the scores "
                "table does not have."
            )
        return effects(
            self._obj,
            control,
            treatment=treatment,
            effect=effect,
            alpha=alpha,
            correct=correct,
            cv=cv,
            cluster=cluster,
        )

    def _analyze(
        self,
        control: str | Sequence[str] | None,
        *,
        treatment: str | Sequence[str] | None = None,
        effect: EffectType = DEFAULT_EFFECT,
        method: PoolMethod = DEFAULT_POOL_METHOD,
        ci: CIMethod | None = DEFAULT_CI,
        alpha: float = 0.05,
    ) -> pd.DataFrame:
        """:func:`metaeval.analyze` of the whole table: effects per task and their summary."""
        from .paired.effect_size import checked_options
        from .pooling import pool_options
        from .pooling.analysis import analysis_table

        checked_options(effect, alpha)
        pool_options(method, ci, alpha)  # before the work, not after
        eff = self._effects(control, treatment=treatment, effect=effect, alpha=alpha)
        return analysis_table(eff, method=method, test=ci, alpha=alpha, effect=effect)

    def _compare(
        self,
        control: str | Sequence[str] | None = None,
        *,
        treatment: str | Sequence[str] | None = None,
        test: CompareTest = "t",
        alternative: Alternative = "two-sided",
        n_resamples: int = 10_000,
        exact: bool = False,
        seed: int | None = None,
        adjust: Adjustment | None = None,
        family: AdjustFamily = "pairs",
        alpha: float = 0.05,
        cluster: str | None = None,
    ) -> pd.DataFrame:
        """:func:`metaeval.compare` of the whole table: the same p-values, resampled ones too
        (each task's random numbers depend on the seed and the task's name only)."""
        from .errors import resolve_seed
        from .paired.significance import adjust_family, compare, compare_options

        if test == "bootstrap" or (test == "randomization" and not exact):
            seed = resolve_seed(seed)
        # one task at a time: families across tasks are adjusted on the whole result
        kwargs = dict(
            control=control,
            treatment=treatment,
            test=test,
            alternative=alternative,
            n_resamples=n_resamples,
            exact=exact,
            seed=seed,
            adjust=adjust if adjust == "maxt" else None,
            alpha=alpha,
            progress=False,
            cluster=cluster,
        )
        compare_options(test, alternative, adjust, alpha, n_resamples, exact, family)
        frame = _per_task(
            self._obj,
            compare,
            kwargs,
            pairs=("treatment", "control"),
            control=control,
            treatment=treatment,
        )
        return adjust_family(frame, adjust, family)

    def _anova(self) -> pd.DataFrame:
        """:func:`metaeval.anova` of the whole table."""
        from .paired.twoway import anova

        return _per_task(self._obj, anova, {}, pairs=None)

    def _means(
        self, *, ci: MeansCI = "t", alpha: float = 0.05, cluster: str | None = None
    ) -> pd.DataFrame:
        """:func:`metaeval.means` of the whole table (clusters are within a task)."""
        from .paired.twoway import means

        check_option("ci", ci, MEANS_CIS)
        check_alpha(alpha)
        kwargs = {"ci": ci, "alpha": alpha, "cluster": cluster}
        return _per_task(self._obj, means, kwargs, pairs=None)

    def _tukey(
        self,
        *,
        randomized: bool = False,
        n_resamples: int = 10_000,
        seed: int | None = None,
        alpha: float = 0.05,
    ) -> pd.DataFrame:
        """:func:`metaeval.tukey` of the whole table (the randomized version with the same
        p-values for the same seed)."""
        from .errors import resolve_seed
        from .paired.twoway import tukey

        if randomized:
            seed = resolve_seed(seed)
        kwargs = dict(
            randomized=randomized, n_resamples=n_resamples, seed=seed, alpha=alpha, progress=False
        )
        check_alpha(alpha)
        check_resamples(n_resamples)
        return _per_task(self._obj, tukey, kwargs, pairs=None)

    def validate(self) -> Any:
        """:func:`metaeval.validate_scores` of the whole table; see :func:`validate`."""
        return validate(self._obj)


# ------------------------------------------------------------------ validation
SHOWN_PARTITIONS = 5
"""Partitions whose problems the message of :func:`validate` spells out."""


def _problems(part: pd.DataFrame, number: int) -> tuple[int, tuple[list[str], pd.DataFrame] | None]:
    """The in-memory validation of one partition: its number of rows, and its report's
    lines and failure cases (None when it has none)."""
    from .schema import validate_scores

    if part.empty:
        return 0, None
    try:
        validate_scores(part)
    except SchemaError as err:
        lines = [f"- partition {number}: {line[2:]}" for line in str(err).splitlines()[1:]]
        return len(part), (lines, err.failure_cases.assign(partition=number))
    return len(part), None


def _key_hashes(part: pd.DataFrame) -> pd.Series:
    """64-bit hashes of a partition's distinct (task, query, system, metric) keys."""
    keys = part[list(KEY_COLUMNS)].astype(str).drop_duplicates()
    return pd.Series(pd.util.hash_pandas_object(keys, index=False).to_numpy(), dtype="uint64")


def _rows_with(part: pd.DataFrame, hashes: set[int], number: int) -> pd.DataFrame:
    keys = part[list(KEY_COLUMNS)].astype(str)
    hit = pd.util.hash_pandas_object(keys, index=False).isin(hashes).to_numpy()
    return keys[hit].assign(partition=number, row=part.index[hit])


def _shared_keys(ddf: Any) -> tuple[list[str], pd.DataFrame]:
    """Keys that rows in two or more partitions share (the partitions' own duplicates are
    found by their validation): a count of key hashes, then the rows behind the repeats."""
    import dask

    counts = ddf.map_partitions(_key_hashes, meta=pd.Series(dtype="uint64")).value_counts()
    repeated = {int(h) for h in counts[counts > 1].index.compute()}
    if not repeated:
        return [], pd.DataFrame()
    parts = ddf[list(KEY_COLUMNS)].to_delayed()
    rows = pd.concat(
        dask.compute(*[dask.delayed(_rows_with)(p, repeated, i) for i, p in enumerate(parts)])
    )
    spread = rows.groupby(list(KEY_COLUMNS), sort=True)["partition"].agg(["nunique", "unique"])
    spread = spread[spread["nunique"] > 1]  # (not a 64-bit hash collision)
    if spread.empty:
        return [], pd.DataFrame()
    key, where = spread.index[0], sorted(int(p) for p in spread["unique"].iloc[0])
    line = (
        f"- {len(spread)} (task, query, system, metric) key(s) have rows in more than one "
        f"partition, e.g. key {key} in partitions {where}"
    )
    shared = rows.set_index(list(KEY_COLUMNS)).loc[spread.index].reset_index()
    cases = pd.DataFrame(
        {
            "problem": "duplicate keys",
            "column": ", ".join(KEY_COLUMNS),
            "row": shared["row"].to_numpy(),
            "value": None,
            "partition": shared["partition"].to_numpy(),
        }
    )
    return [line], cases


def validate(ddf: Any) -> Any:
    """Validate a dask scores table as :func:`metaeval.validate_scores` does a pandas one.

    Each partition gets the in-memory checks (types, missing and non-finite values,
    duplicate keys within it); keys repeated across partitions are found by a count of
    key hashes. Every problem is reported at once, by partition number and row label
    within the partition.

    Returns
    -------
    dask.dataframe.DataFrame
        The table, with the lossless conversions of the in-memory validation applied
        lazily where its dtypes call for them.

    Raises
    ------
    metaeval.SchemaError
        Listing the problems of the first few partitions that have any;
        ``.failure_cases`` has every offending cell, with a ``partition`` column.
    """
    import dask

    from .schema import coerce_scores

    _check_columns(ddf)
    if ddf.columns.duplicated().any():
        dup = list(ddf.columns[ddf.columns.duplicated()])
        raise SchemaError(f"The scores table has duplicated column names {dup}; rename them.")
    checked = dask.compute(*[dask.delayed(_problems)(p, i) for i, p in enumerate(ddf.to_delayed())])
    if not sum(rows for rows, _ in checked):  # as in memory: a table without rows is an error
        raise no_rows_error([])
    found = [f for _, f in checked if f is not None]
    lines = [line for f in found[:SHOWN_PARTITIONS] for line in f[0]]
    if len(found) > SHOWN_PARTITIONS:
        lines.append(
            f"- ... and problems in {len(found) - SHOWN_PARTITIONS} more partition(s); "
            "see .failure_cases"
        )
    cases = [f[1] for f in found]
    count = sum(len(f[0]) for f in found)
    shared, shared_cases = _shared_keys(ddf)
    if shared:
        lines, cases, count = lines + shared, [*cases, shared_cases], count + 1
    if count:
        raise SchemaError(
            f"The scores table has {count} problem{'s' if count != 1 else ''}:\n"
            + "\n".join(lines),
            pd.concat(cases, ignore_index=True),
        )
    meta = coerce_scores(ddf._meta)
    if meta is ddf._meta:
        return ddf
    return ddf.map_partitions(coerce_scores, meta=meta)


def register() -> None:
    """Register :class:`DaskMetaAccessor` as ``.meta`` on dask DataFrames."""
    from dask.dataframe.extensions import register_dataframe_accessor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "registration ... overriding"
        register_dataframe_accessor("meta")(DaskMetaAccessor)


def install() -> None:
    """Register now if dask.dataframe is imported, else as soon as it is."""
    after_import("dask.dataframe", register)
