"""A decision study (Brennan 2001): the standard error of a paired difference for other
numbers of items, prompts, seeds and judges, and the cheapest allocation that reaches a
target, from :func:`metaeval.facets`' variance components.

Two systems compared on the same n_f levels of every facet f (crossed, balanced) differ by
their system × facet effects and the residual; the facets' own effects and facet × facet
interactions are shared and cancel. So

    SE²(n) = 2 (Σ_f σ²_{system:f} / n_f + σ²_residual / Π_f n_f),

which at the observed counts of a balanced design is the model's own variance of the
difference. The cost of a design is Σ_f cost_f · n_f (a level of a facet — a query to
write and grade, a prompt template, a seed's run — costs what ``costs`` says; a facet
without a cost costs 0), and the plan searches the integer grid of counts for the cheapest
design whose SE reaches the target (``target_se``, or the SE at which a two-sided z test
of level ``alpha`` detects ``mde`` with ``power``), or the smallest SE within ``budget``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..errors import DegenerateWarning, OptionError, excerpt, quote_list, warn_groups

__all__ = ["plan"]

_QUERY_STEPS = 40
"""Candidate numbers of queries: this many, log-spaced from a quarter of the observed
count to eight times it."""
_MAX_LEVELS = 24
"""Candidate numbers of levels of the other facets: 1 to this many."""


def plan(
    components: pd.DataFrame,
    facets: list[str],
    *,
    n: Mapping[str, int] | None = None,
    costs: Mapping[str, float] | None = None,
    target_se: float | None = None,
    mde: float | None = None,
    power: float = 0.8,
    budget: float | None = None,
    alpha: float = 0.05,
) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """The D study of :meth:`FacetResult.plan` (see the module's docstring): its table,
    its curve and the target SE (NaN: none)."""
    from scipy import stats

    costs = dict(costs or {})
    unknown = sorted(set(costs) - set(facets)) + sorted(set(n or {}) - set(facets))
    if unknown:
        raise OptionError(
            f"{quote_list(unknown)} are not facets of the fit ({quote_list(facets)})."
        )
    if any((not np.isfinite(v)) or v < 0 for v in costs.values()):
        raise OptionError(f"costs must be finite and ≥ 0, but {excerpt(costs)} was passed.")
    z = stats.norm.isf(alpha / 2)
    if target_se is None and mde is not None:
        target_se = float(mde) / (z + stats.norm.ppf(power))
    if n is None and target_se is None and budget is None:
        raise OptionError(
            "plan() needs what to aim at: n= (the counts to project), target_se=, mde= "
            "(with power=) or budget=."
        )
    keys = ["task", "metric"]
    comp = components.pivot_table(index=keys, columns="component", values="variance", sort=False)
    levels = components.pivot_table(index=keys, columns="component", values="n_levels", sort=False)
    inter = np.column_stack(
        [comp.get(f"system:{f}", pd.Series(0.0, index=comp.index)).to_numpy() for f in facets]
    )
    resid = comp["residual"].to_numpy()
    observed = levels[facets].to_numpy()
    grid = (
        _grid(observed, facets) if n is None else np.array([[n.get(f, 0) for f in facets]], float)
    )
    if n is not None:
        grid = np.where(grid > 0, grid, observed.mean(axis=0))
    price = np.array([costs.get(f, 0.0) for f in facets])
    se_obs = _se(inter, resid, observed[:, None, :])[:, 0] if len(observed) else np.array([])
    se = _se(inter, resid, grid[None, :, :])  # (groups, designs)
    cost = grid @ price
    rows, curve = [], []
    index = comp.index.to_frame(index=False)
    for name, values in (("observed", observed),):  # the observed design, one row per group
        rows.append(_rows(index, facets, name, values, values @ price, se_obs, mde, z))
    if n is not None:
        rows.append(
            _rows(
                index,
                facets,
                "given",
                np.repeat(grid, len(index), 0),
                np.repeat(cost, len(index)),
                se[:, 0],
                mde,
                z,
            )
        )
    else:
        pick = _choose(se, cost, target_se, budget)
        ok = pick >= 0
        if not ok.all():
            warn_groups(
                "no design of the searched grid (queries up to 8 times the observed number, "
                f"the other facets up to {_MAX_LEVELS} levels) reaches the target in {{n}} "
                "(task, metric) group(s): their planned row is NaN (the curve shows the best "
                "they reach)",
                index[~ok],
                DegenerateWarning,
            )
        chosen = np.where(ok[:, None], grid[np.clip(pick, 0, None)], np.nan)
        rows.append(
            _rows(
                index,
                facets,
                "planned",
                chosen,
                np.where(ok, cost[np.clip(pick, 0, None)], np.nan),
                np.where(ok, se[np.arange(len(se)), np.clip(pick, 0, None)], np.nan),
                mde,
                z,
            )
        )
        curve.append(_frontier(index, facets, grid, se, cost))
    table = pd.concat(rows, ignore_index=True)
    order = {k: i for i, k in enumerate(map(tuple, index.to_numpy()))}
    table = table.iloc[
        np.argsort([order[k] for k in map(tuple, table[keys].to_numpy())], kind="stable")
    ]
    table = table.reset_index(drop=True)
    table.attrs.update(
        costs=costs, target_se=target_se, mde=mde, power=power, budget=budget, alpha=alpha
    )
    frontier = pd.concat(curve, ignore_index=True) if curve else pd.DataFrame()
    return table, frontier, float("nan") if target_se is None else float(target_se)


def _grid(observed: np.ndarray, facets: list[str]) -> np.ndarray:
    """Every combination of candidate counts: queries log-spaced around the observed
    number, the other facets 1 … 24 (a facet at 1 level has no system × facet average)."""
    axes = []
    for j, f in enumerate(facets):
        seen = float(np.nanmax(observed[:, j])) if len(observed) else 1.0
        if f == "query":
            lo, hi = max(2.0, seen / 4), max(seen * 8, 10.0)
            axes.append(np.unique(np.round(np.geomspace(lo, hi, _QUERY_STEPS))))
        else:
            axes.append(np.arange(1.0, _MAX_LEVELS + 1))
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.column_stack([m.ravel() for m in mesh])


def _se(inter: np.ndarray, resid: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """SE of a paired difference, groups × designs: counts is (groups or 1, designs, F)."""
    return np.sqrt(2.0 * ((inter[:, None, :] / counts).sum(-1) + resid[:, None] / counts.prod(-1)))


def _choose(
    se: np.ndarray, cost: np.ndarray, target: float | None, budget: float | None
) -> np.ndarray:
    """Per group, the design index: the cheapest with se ≤ target (ties: the smaller se),
    or the smallest se with cost ≤ budget; −1 where none qualifies."""
    if target is not None:
        ok = se <= target
        if budget is not None:
            ok &= cost[None, :] <= budget
        key = np.where(ok, cost[None, :] + 1e-12 * se, np.inf)
    else:
        ok = np.broadcast_to(cost[None, :] <= budget, se.shape)
        key = np.where(ok, se + 1e-15 * cost[None, :], np.inf)
    best = np.argmin(key, axis=1)
    return np.where(ok.any(axis=1), best, -1)


def _frontier(
    index: pd.DataFrame, facets: list[str], grid: np.ndarray, se: np.ndarray, cost: np.ndarray
) -> pd.DataFrame:
    """The designs no cheaper design beats, per group: the smallest SE at each cost."""
    order = np.lexsort((se.min(axis=0), cost))
    s = se[:, order]
    running = np.minimum.accumulate(s, axis=1)
    better = np.concatenate(
        [np.ones((len(s), 1), bool), running[:, 1:] < running[:, :-1] * (1 - 1e-12)], axis=1
    )
    g, d = np.nonzero(better & (s == running))
    out = index.iloc[g].reset_index(drop=True)
    counts = grid[order[d]]
    for j, f in enumerate(facets):
        out[f"n_{f}"] = counts[:, j].astype(int)
    return out.assign(cost=cost[order[d]], se=s[g, d])


def _rows(index, facets, design, counts, cost, se, mde, z):  # noqa: ANN001, ANN202
    from scipy import stats

    out = index.copy()
    out.insert(len(out.columns), "design", design)
    counts = np.asarray(counts, float)
    for j, f in enumerate(facets):  # whole numbers; missing where no design qualifies
        out[f"n_{f}"] = pd.array(
            np.where(np.isfinite(counts[:, j]), counts[:, j], np.nan), dtype="Int64"
        )
    out["cost"] = cost
    out["se"] = se
    if mde is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            shift = float(mde) / np.asarray(se, float)
        out["power"] = stats.norm.sf(z - shift) + stats.norm.cdf(-z - shift)
    else:
        out["power"] = np.nan
    return out
