"""Where the uncertainty comes from: variance components of items, prompts, seeds and
judges, and the facet-aware standard errors of systems' means and paired differences.

:func:`facets` fits, per task and metric, a linear mixed model with the system as a fixed
effect and each named facet as a crossed random effect, plus the system × facet
interactions the design identifies (:mod:`metaeval.variance._mixed`; REML or ML, as lme4).
The systems' means and differences get their standard errors from the model's covariance
of the fixed effects (lme4's ``vcov``) with Satterthwaite degrees of freedom, shown beside
the item-only standard error a harness reports.

References
----------
Bates, D., Mächler, M., Bolker, B., & Walker, S. (2015). Fitting linear mixed-effects
models using lme4. *Journal of Statistical Software*, 67(1), 1–48. doi:10.18637/jss.v067.i01

Brennan, R. L. (2001). *Generalizability Theory*. Springer. doi:10.1007/978-1-4757-3456-0

Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance
components. *Biometrics Bulletin*, 2(6), 110–114. doi:10.2307/3002019
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._options import FACET_METHODS, FacetMethod, literal_signature
from ..engines import any_frame
from ..errors import (
    DegenerateWarning,
    OptionError,
    SchemaError,
    check_alpha,
    check_option,
    excerpt,
    quote_list,
    warn_groups,
)
from ..schema import prepare_scores
from .results import FacetResult

if TYPE_CHECKING:  # scipy loads with the first fit, not with metaeval
    from ._mixed import CrossedDesign, Fit

__all__ = ["facets"]

SYSTEM_BY = "system:"
"""The prefix of a system × facet interaction's component name (``system:query``)."""


@any_frame
@literal_signature
def facets(
    scores: pd.DataFrame,
    random: str | Sequence[str] = ("query",),
    *,
    interactions: Sequence[tuple[str, str]] = (),
    method: FacetMethod = "REML",
    control: str | None = None,
    alpha: float = 0.05,
) -> FacetResult:
    """Variance components of a scores table's facets, and facet-aware standard errors.

    Parameters
    ----------
    scores : pandas.DataFrame
        A scores table whose rows are one observation each: with a column per random
        facet besides ``query`` (``prompt``, ``seed``, ``judge``, ...), so that the key
        ``(task, query, system, metric)`` repeats once per combination of the facets.
    random : str or sequence of str, default ("query",)
        The random facets, each a column: ``("query", "prompt", "seed")``.
    interactions : sequence of (str, str), optional
        Facet × facet interactions to add as components (``[("query", "prompt")]``); the
        system × facet interactions the design identifies (several systems, and cells of
        a system and a facet level holding several observations) are always in.
    method : {"REML", "ML", "ANOVA"}, default "REML"
        Restricted or full maximum likelihood (lme4's ``REML=TRUE`` / ``FALSE``), or
        expected mean squares (Brennan 2001) on a balanced, fully crossed design (one
        observation per system and level of every facet; another is a SchemaError): every
        group of one shape in one vectorized pass, an estimate below 0 set to 0 with a
        warning, each component with a Satterthwaite interval (``ci_low, ci_high``). On a
        balanced design with no estimate below 0, ANOVA and REML coincide.
    control : str, optional
        Compare every other system with this one (default: every pair).
    alpha : float, default 0.05
        1 − the confidence level of the intervals.

    Returns
    -------
    FacetResult
        ``components`` (per task, metric and component: ``variance``, ``sd``, ``share``,
        ``boundary``, ``n_levels``; with ANOVA ``ci_low, ci_high``), ``table`` (per system: the model's ``mean``, its facet-aware ``se``
        and the item-only ``naive_se``), ``pairs`` (paired differences: ``effect``,
        ``se``, ``df`` (Satterthwaite), ``ci_low, ci_high``, ``naive_se``), ``g`` (the G
        coefficients) and ``.plot()``.

    Examples
    --------
    >>> import numpy as np, pandas as pd, metaeval
    >>> rng = np.random.default_rng(0)
    >>> rows = [(q, p, s) for q in range(30) for p in range(4) for s in ("a", "b")]
    >>> t = pd.DataFrame(rows, columns=["query", "prompt", "system"]).assign(
    ...     task="qa", metric="acc")
    >>> q_eff, p_eff = rng.normal(0, 1, 30), rng.normal(0, 0.5, 4)
    >>> t["value"] = (q_eff[t["query"]] + p_eff[t["prompt"]] + 0.3 * (t["system"] == "b")
    ...               + rng.normal(0, 0.3, len(t)))
    >>> res = metaeval.facets(t, ["query", "prompt"])
    >>> res.components["component"].tolist()
    ['query', 'prompt', 'system:query', 'system:prompt', 'residual']
    """
    check_option("method", method, FACET_METHODS)
    alpha = check_alpha(alpha)
    named = [random] if isinstance(random, str) else list(random)
    if not named:
        raise OptionError("facets() needs at least one random facet (random=['query', ...]).")
    table, factors = _checked(scores, named, interactions)
    keys = ["task", "metric"]
    if method == "ANOVA":
        comp, mean, pair, g = _by_anova(table, factors, named, interactions, control, alpha)
        result = FacetResult(mean, components=comp, pairs=pair, g=g)
        result.table.attrs.update(random=named, method=method, alpha=alpha, control=control)
        return result
    comps, means, pairs, gs = [], [], [], []
    # one fit per (task, metric): each is an iterative REML optimization of its own
    for group, rows in table.groupby(keys, sort=False, observed=True):
        out = _fit_group(
            dict(zip(keys, group, strict=True)), rows, named, interactions, method, control, alpha
        )
        comps.append(out[0])
        means.append(out[1])
        pairs.append(out[2])
        gs.append(out[3])
    result = FacetResult(
        pd.concat(means, ignore_index=True),
        components=pd.concat(comps, ignore_index=True),
        pairs=pd.concat(pairs, ignore_index=True),
        g=pd.concat(gs, ignore_index=True),
    )
    result.table.attrs.update(random=named, method=method, alpha=alpha, control=control)
    return result


def _checked(
    scores: pd.DataFrame, named: list[str], interactions: Sequence[tuple[str, str]]
) -> pd.DataFrame:
    """The rows, checked: the facet columns exist and have no missing value, each facet
    varies, and every row is one observation (its key with the facets unique)."""
    missing = [c for c in named if c not in scores.columns]
    if missing:
        raise SchemaError(
            f"facets(random=...) names {quote_list(missing)}, which the table lacks; its "
            f"columns are {quote_list(list(scores.columns))}."
        )
    for a, b in interactions:
        if a not in named or b not in named:
            raise OptionError(
                f"interactions=[({excerpt(a)}, {excerpt(b)})]: both must be random facets "
                f"({quote_list(named)})."
            )
    for c in named:
        if scores[c].isna().any():
            raise SchemaError(f"The facet column {c!r} has missing values.")
    # the key columns and the values as every method checks them, on one row per
    # observation's key (the facets repeat it) — a table of the key's distinct rows
    key = ["task", "metric", "system", *dict.fromkeys(["query", *named])]
    absent = [c for c in ["task", "metric", "system", "value"] if c not in scores.columns]
    if absent:
        raise SchemaError(f"facets() needs the column(s) {quote_list(absent)}.")
    factors = {c: pd.factorize(scores[c]) for c in key}  # reused by the ANOVA path
    codes = [factors[c][0] for c in key]
    sizes = [int(c.max()) + 2 for c in codes]
    if np.prod(np.asarray(sizes, dtype=float)) < 2.0**62:  # one int64 key per row
        flat = np.zeros(len(scores), dtype=np.int64)
        for c, size in zip(codes, sizes, strict=True):
            flat = flat * size + c + 1
        keyed = pd.factorize(flat)[0]
    else:
        keyed = pd.factorize(pd.MultiIndex.from_arrays(codes))[0]
    # codes come in order of first appearance: a row is a key's first where its code is new
    seen = np.maximum.accumulate(keyed)
    first = np.concatenate([[True], keyed[1:] > seen[:-1]]) if len(keyed) else keyed > 0
    repeated = np.bincount(keyed)[keyed] > 1
    # the key columns as every method checks them, on one row per observation's key
    prepare_scores(scores.loc[first, ["task", "query", "system", "metric", "value"]])
    values = scores["value"]
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        raise SchemaError(f"facets() needs numeric scores in 'value', not {values.dtype}.")
    bad = ~np.isfinite(values.to_numpy(float))
    if bad.any():
        at = scores[bad].iloc[0]
        raise SchemaError(
            f"{int(bad.sum())} score(s) are NaN or infinite (first: task {excerpt(at['task'])}, "
            f"query {excerpt(at['query'])}, system {excerpt(at['system'])})."
        )
    dup = repeated
    if dup.any():
        rows = scores[dup]
        first = rows[key].astype(str).iloc[0].to_dict()
        varying = [
            c
            for c in scores.columns
            if c not in (*key, "value") and rows.groupby(key, observed=True)[c].nunique().max() > 1
        ]
        hint = f" (columns that vary among them: {quote_list(varying)})" if varying else ""
        raise SchemaError(
            f"{int(dup.sum())} rows share their ({', '.join(key)}) with another row, e.g. "
            f"{excerpt(first, 200)}: every row must be one observation, "
            f"so a column that tells them apart is a facet to add to random={hint}."
        )
    return scores, factors


def _joined(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    """The columns' values as one string key per row."""
    out = frame[columns[0]].astype(str)
    for c in columns[1:]:
        out = out + "\x1f" + frame[c].astype(str)
    return out


def _fit_group(where, rows, named, interactions, method, control, alpha):  # noqa: ANN001, ANN202
    """One (task, metric)'s model: components, means, pairs and G coefficients."""
    y = rows["value"].to_numpy(float)
    sys_codes, systems = pd.factorize(rows["system"].astype(str))
    x = np.zeros((len(y), len(systems)))
    x[np.arange(len(y)), sys_codes] = 1.0
    names, codes = [], []
    for c in named:
        code, levels = pd.factorize(rows[c])
        if len(levels) < 2:
            raise SchemaError(
                f"The facet {c!r} has one level in task {excerpt(where['task'])} (metric "
                f"{excerpt(where['metric'])}): a facet needs two levels to have a variance."
            )
        names.append(c)
        codes.append(code)
    for a, b in interactions:
        names.append(f"{a}:{b}")
        codes.append(pd.factorize(_joined(rows, [a, b]))[0])
    if len(systems) > 1:
        for c in named:
            cell = pd.factorize(_joined(rows, ["system", c]))[0]
            if len(y) > cell.max() + 1:  # a cell holds several observations: identified
                names.append(SYSTEM_BY + c)
                codes.append(cell)
    from ._mixed import CrossedDesign, fit

    design = CrossedDesign.of(y, x, codes)
    model = fit(design, reml=method == "REML")
    counts = [int(c.max()) + 1 for c in codes]
    for i, name in enumerate(names):  # a system × facet term: the facet's own levels
        if name.startswith(SYSTEM_BY):
            counts[i] = int(rows[name[len(SYSTEM_BY) :]].nunique())
    comps = _components(where, names, model, counts)
    df = _satterthwaite_setup(design, model)
    means = _means(where, rows, systems, model, df, alpha)
    pairs = _pairs(where, rows, systems, model, df, control, alpha)
    g = _g(where, rows, named, names, model, systems)
    return comps, means, pairs, g


def _components(where: dict, names: list[str], model: Fit, counts: list[int]) -> pd.DataFrame:
    variance = np.append(model.variances, model.sigma2)
    total = variance.sum()
    return pd.DataFrame(
        {
            **where,
            "component": [*names, "residual"],
            "variance": variance,
            "sd": np.sqrt(variance),
            "share": variance / total if total > 0 else np.nan,
            "boundary": np.append(model.theta <= 1e-6, False),
            "n_levels": [*counts, np.nan],
        }
    )


def _psi_model(design: CrossedDesign, reml: bool):  # noqa: ANN202 - closures over the design
    """The deviance and the fixed effects' covariance as functions of the variances ψ
    (the components, then the residual): not profiled, as the Satterthwaite
    approximation differentiates them."""
    from ._mixed import chol_solve, cholesky, logdet, solve_parts

    n, p = design.n, design.p

    def parts(psi: np.ndarray) -> tuple[float, np.ndarray]:
        sigma2 = psi[-1]
        theta = np.sqrt(np.clip(psi[:-1], 0.0, None) / sigma2)
        logdet_a, quad = solve_parts(design, theta)
        xtx = design.xtx - quad[1:, 1:]
        rhs = design.xty - quad[1:, 0]
        chol = cholesky(xtx)
        beta = chol_solve(chol, rhs)
        r2 = design.yty - quad[0, 0] - rhs @ beta
        dev = logdet_a + r2 / sigma2 + (n - p if reml else n) * np.log(2 * np.pi * sigma2)
        if reml:
            dev += logdet(chol)
        vcov = sigma2 * chol_solve(chol, np.eye(p))
        return float(dev), vcov

    return parts


def _satterthwaite_setup(design: CrossedDesign, model: Fit) -> dict[str, Any]:
    """What every contrast's Satterthwaite df needs: the fixed effects' covariance V, its
    derivatives in the variances not at the boundary, and their asymptotic covariance
    A = 2 H⁻¹ (H the deviance's Hessian; central differences)."""
    parts = _psi_model(design, model.reml)
    psi = np.append(model.variances, model.sigma2)
    # components at (or within 1e-3 σ of) the bound are held fixed, as lmerTest does at
    # the bound: the deviance's curvature there is not a variance's
    free = np.flatnonzero(np.append(model.theta > 1e-3, True))
    steps = 1e-4 * psi[free]
    m = len(free)

    def shifted(moves: dict[int, float]) -> np.ndarray:
        out = psi.copy()
        for i, d in moves.items():
            out[free[i]] += d
        return out

    f0 = parts(psi)[0]
    hess = np.empty((m, m))
    dv = np.empty((m, design.p, design.p))
    for i in range(m):  # a few variance components: 2m² + 1 deviances
        h = steps[i]
        (fp, vp), (fm, vm) = parts(shifted({i: h})), parts(shifted({i: -h}))
        dv[i] = (vp - vm) / (2 * h)
        hess[i, i] = (fp - 2 * f0 + fm) / h**2
        for j in range(i):
            k = steps[j]
            hess[i, j] = hess[j, i] = (
                parts(shifted({i: h, j: k}))[0]
                - parts(shifted({i: h, j: -k}))[0]
                - parts(shifted({i: -h, j: k}))[0]
                + parts(shifted({i: -h, j: -k}))[0]
            ) / (4 * h * k)
    try:
        cov = 2.0 * np.linalg.inv(hess)
        values, vectors = np.linalg.eigh((cov + cov.T) / 2)
        cov = (vectors * np.clip(values, 0.0, None)) @ vectors.T  # a covariance: PSD
    except np.linalg.LinAlgError:
        cov = np.full((m, m), np.nan)
    return {"vcov": model.vcov, "dv": dv, "cov": cov}


def _df(setup: dict[str, Any], c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The variance c'Vc of each contrast (rows of ``c``) and its Satterthwaite df,
    2 (c'Vc)² / (g'Ag), g the gradient of c'Vc in the variances."""
    var = np.einsum("ij,jk,ik->i", c, setup["vcov"], c)
    grad = np.einsum("ij,mjk,ik->im", c, setup["dv"], c)
    spread = np.einsum("im,mn,in->i", grad, setup["cov"], grad)
    with np.errstate(invalid="ignore", divide="ignore"):
        return var, np.where(spread > 0, 2.0 * var**2 / spread, np.nan)


def _query_means(rows: pd.DataFrame) -> pd.DataFrame:
    """Each system's mean per query (over the other facets): the items a harness counts."""
    return rows.pivot_table(
        index="query", columns="system", values="value", aggfunc="mean", observed=True
    )


def _means(where, rows, systems, model, setup, alpha):  # noqa: ANN001, ANN202
    from scipy import stats

    var, df = _df(setup, np.eye(len(systems)))
    se = np.sqrt(var)
    crit = stats.t.isf(alpha / 2, df)
    per_query = _query_means(rows).reindex(columns=list(systems))
    naive = per_query.std(ddof=1) / np.sqrt(per_query.count())
    return pd.DataFrame(
        {
            **where,
            "system": list(systems),
            "mean": model.beta,
            "se": se,
            "df": df,
            "ci_low": model.beta - crit * se,
            "ci_high": model.beta + crit * se,
            "n_queries": per_query.count().to_numpy(),
            "naive_se": naive.to_numpy(),
        }
    )


def _pairs(where, rows, systems, model, setup, control, alpha):  # noqa: ANN001, ANN202
    from scipy import stats

    names = list(systems)
    if control is not None and str(control) not in names:
        raise SchemaError(
            f"control {excerpt(control)} has no scores in task {excerpt(where['task'])}; its "
            f"systems are {quote_list(names)}."
        )
    if control is not None:
        base = names.index(str(control))
        pick = [(t, base) for t in range(len(names)) if t != base]
    else:
        pick = [(t, c) for c in range(len(names)) for t in range(c + 1, len(names))]
    if not pick:
        return pd.DataFrame()
    c = np.zeros((len(pick), len(names)))
    for r, (t, b) in enumerate(pick):  # display: one row per pair
        c[r, t], c[r, b] = 1.0, -1.0
    var, df = _df(setup, c)
    se = np.sqrt(var)
    effect = c @ model.beta
    crit = stats.t.isf(alpha / 2, df)
    per_query = _query_means(rows).reindex(columns=names)
    diffs = (
        per_query.to_numpy()[:, [t for t, _ in pick]]
        - per_query.to_numpy()[:, [b for _, b in pick]]
    )
    count = np.isfinite(diffs).sum(axis=0)
    naive = np.nanstd(diffs, axis=0, ddof=1) / np.sqrt(count)
    return pd.DataFrame(
        {
            **where,
            "treatment": [names[t] for t, _ in pick],
            "control": [names[b] for _, b in pick],
            "effect": effect,
            "se": se,
            "variance": var,
            "df": df,
            "ci_low": effect - crit * se,
            "ci_high": effect + crit * se,
            "naive_se": naive,
            "se_ratio": se / naive,
        }
    )


def _g(where, rows, named, names, model, systems):  # noqa: ANN001, ANN202
    """Brennan's G coefficients with the systems as the object of measurement: the
    systems' universe-score variance over itself plus the relative error (Eρ²) or the
    absolute error (Φ), each component divided by the facet levels it is averaged over."""
    if len(systems) < 2:
        return pd.DataFrame({**where, "g_relative": [np.nan], "g_absolute": [np.nan]})
    comp = dict(zip(names, model.variances, strict=True))
    levels = {c: rows[c].nunique() for c in named}
    m = len(systems)
    v = model.vcov
    spread = float(np.var(model.beta, ddof=1)) - (np.trace(v) - v.sum() / m) / (m - 1)
    universe = max(spread, 0.0)
    relative = sum(comp.get(SYSTEM_BY + c, 0.0) / levels[c] for c in named)
    cells = len(rows) / m
    relative += model.sigma2 / cells
    absolute = relative + sum(comp[c] / levels[c] for c in named)
    absolute += sum(
        comp[n] / (levels[n.split(":")[0]] * levels[n.split(":")[1]])
        for n in names
        if ":" in n and not n.startswith(SYSTEM_BY)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.DataFrame(
            {
                **where,
                "universe_variance": [universe],
                "relative_error": [relative],
                "absolute_error": [absolute],
                "g_relative": [universe / (universe + relative)],
                "g_absolute": [universe / (universe + absolute)],
            }
        )


def _group_codes(factors: dict, keys: list[str]) -> tuple[np.ndarray, pd.MultiIndex]:
    """Each row's (task, metric) group code, in order of first appearance, and the groups,
    from the columns' factorizations."""
    parts = [factors[k] for k in keys]
    flat = parts[0][0].astype(np.int64)
    for code, labels in parts[1:]:
        flat = flat * len(labels) + code
    gcode, uniq = pd.factorize(flat)
    index, rest = [], uniq
    for _code, labels in reversed(parts[1:]):
        index.append(np.asarray(labels)[rest % len(labels)])
        rest = rest // len(labels)
    index.append(np.asarray(parts[0][1])[rest])
    return gcode, pd.MultiIndex.from_arrays(index[::-1], names=keys)


def _within(gcode: np.ndarray, factor: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's level code of a factorized column (``factor``: codes and levels) within
    its group (the levels in the order they first appear in the whole table), each group's
    number of levels, and a (groups, most levels) array of the levels' names."""
    code, labels = factor
    width, n_groups = len(labels), int(gcode.max()) + 1
    present = np.zeros((n_groups, width), dtype=bool)  # groups × levels: a small grid
    present[gcode, code] = True
    rank = np.cumsum(present, axis=1) - 1
    count = present.sum(axis=1)
    names = np.full((n_groups, int(count.max())), None, dtype=object)
    owner, level = np.nonzero(present)
    names[owner, rank[owner, level]] = np.asarray(labels.astype(str), dtype=object)[level]
    return rank[gcode, code], count, names


def _by_anova(table, factors, named, interactions, control, alpha):  # noqa: ANN001, ANN202
    """Every (task, metric) group by expected mean squares: the groups of one shape
    (systems × levels of each facet) stacked in one array and fitted at once."""
    from ._anova import anova_fit

    keys = ["task", "metric"]
    gcode, groups = _group_codes(factors, keys)
    columns = ["system", *named]
    coded = [_within(gcode, factors[c]) for c in columns]
    codes, counts = [c[0] for c in coded], [c[1] for c in coded]
    system_names = coded[0][2]
    shape = np.column_stack(counts)  # (groups, 1 + facets)
    cells = shape.prod(axis=1)
    rows = np.bincount(gcode, minlength=len(groups))
    short = np.flatnonzero(rows != cells)
    if len(short):
        task, metric = groups[short[0]]
        raise SchemaError(
            f"method='ANOVA' needs a balanced, fully crossed design (one observation per "
            f"system and level of every facet), but task {excerpt(task)} (metric "
            f"{excerpt(metric)}) has {rows[short[0]]} rows for {cells[short[0]]} cells "
            f"({len(short)} such group(s)): pass method='REML', which takes missing cells."
        )
    values = table["value"].to_numpy(float)
    shapes, which = np.unique(shape, axis=0, return_inverse=True)
    parts = []
    for s, dims in enumerate(shapes):  # one vectorized fit per distinct shape (a few)
        members = np.flatnonzero(which == s)
        pos = np.full(len(groups), -1)
        pos[members] = np.arange(len(members))
        mine = pos[gcode] >= 0
        cell = np.ravel_multi_index([c[mine] for c in codes], tuple(dims))
        cube = np.empty(len(members) * int(np.prod(dims)))
        cube[pos[gcode[mine]] * int(np.prod(dims)) + cell] = values[mine]
        cube = cube.reshape(len(members), *dims)
        names, terms = _anova_terms(named, interactions, dims)
        fit = anova_fit(cube, terms)
        where = groups[members].to_frame(index=False)
        where.columns = keys
        systems = system_names[members, : dims[0]]
        parts.append(
            _anova_tables(where, names, terms, dims, fit, cube, systems, named, control, alpha)
        )
    return [pd.concat([p[i] for p in parts], ignore_index=True) for i in range(4)]


def _anova_terms(named, interactions, dims):  # noqa: ANN001, ANN202
    """The model's terms as axes of the cube, named as the REML path names them."""
    axis = {c: i + 1 for i, c in enumerate(named)}
    names = list(named)
    terms = [(axis[c],) for c in named]
    for a, b in interactions:
        names.append(f"{a}:{b}")
        terms.append(tuple(sorted((axis[a], axis[b]))))
    if dims[0] > 1 and len(named) > 1:  # several observations per system × facet cell
        for c in named:
            names.append(SYSTEM_BY + c)
            terms.append((0, axis[c]))
    return names, terms


def _anova_tables(where, names, terms, dims, fit, cube, systems, named, control, alpha):  # noqa: ANN001, ANN202, PLR0913
    """The components, means, pairs and G tables of groups fitted together."""
    from scipy import stats

    g, m = len(where), len(terms)
    variance = np.column_stack([fit.variances, fit.sigma2])
    total = variance.sum(1, keepdims=True)
    df_comp = np.column_stack([fit.satterthwaite(np.eye(m + 1)[j]) for j in range(m + 1)])
    with np.errstate(invalid="ignore", divide="ignore"):
        low = df_comp * variance / stats.chi2.isf(alpha / 2, df_comp)
        high = df_comp * variance / stats.chi2.isf(1 - alpha / 2, df_comp)
        share = variance / total
    level_count = [*(float(np.prod([dims[a] for a in t if a != 0])) for t in terms), np.nan]
    comps = (
        where.loc[where.index.repeat(m + 1)]
        .reset_index(drop=True)
        .assign(
            component=np.tile([*names, "residual"], g),
            variance=variance.ravel(),
            sd=np.sqrt(variance.ravel()),
            share=share.ravel(),
            boundary=np.column_stack(
                [fit.negative | (fit.raw[:, :-1] == 0), np.zeros(g, bool)]
            ).ravel(),
            n_levels=np.tile(level_count, g),
            ci_low=low.ravel(),
            ci_high=high.ravel(),
        )
    )
    if fit.negative.any():
        bad = comps[np.column_stack([fit.negative, np.zeros(g, bool)]).ravel()]
        warn_groups(
            "{n} ANOVA variance estimate(s) came out below 0 and are set to 0 (Brennan "
            "2001): a component too small to tell from the noise",
            bad[["task", "metric", "component"]],
            DegenerateWarning,
        )
    s = dims[0]
    shared, own = fit.shared_weights, fit.own_weights
    mean_df = fit.satterthwaite(shared + own)
    var_mean = variance @ (shared + own)
    query = named.index("query") + 1 if "query" in named else None
    per_query = None
    if query is not None:  # each system's mean per query, over the other facets
        other = tuple(a + 1 for a in range(1, len(dims)) if a != query)
        per_query = cube.mean(axis=other) if other else cube  # (g, s, n_query)
    naive = (
        per_query.std(axis=2, ddof=1) / np.sqrt(per_query.shape[2])
        if per_query is not None
        else np.full((g, s), np.nan)
    )
    crit = stats.t.isf(alpha / 2, mean_df)
    se = np.sqrt(var_mean)
    means = (
        where.loc[where.index.repeat(s)]
        .reset_index(drop=True)
        .assign(
            system=systems.ravel(),
            mean=fit.beta.ravel(),
            se=np.repeat(se, s),
            df=np.repeat(mean_df, s),
            ci_low=(fit.beta - (crit * se)[:, None]).ravel(),
            ci_high=(fit.beta + (crit * se)[:, None]).ravel(),
            n_queries=np.repeat(per_query.shape[2] if per_query is not None else np.nan, g * s),
            naive_se=naive.ravel(),
        )
    )
    if control is not None:
        hit = systems == str(control)
        if not hit.any(axis=1).all():
            lacking = where[~hit.any(axis=1)].iloc[0]
            raise SchemaError(
                f"control {excerpt(control)} has no scores in task {excerpt(lacking['task'])} "
                f"(metric {excerpt(lacking['metric'])})."
            )
        base = hit.argmax(axis=1)
        c_idx = np.repeat(base[:, None], s - 1, axis=1)
        t_idx = np.array([[t for t in range(s) if t != b] for b in base], dtype=int).reshape(
            g, s - 1
        )
    else:
        both = [(t, c) for c in range(s) for t in range(c + 1, s)]
        t_idx = np.tile([t for t, _ in both], (g, 1)).astype(int)
        c_idx = np.tile([c for _, c in both], (g, 1)).astype(int)
    if t_idx.shape[1]:
        k = t_idx.shape[1]
        diff_w = 2 * own
        var_d = variance @ diff_w
        df_d = fit.satterthwaite(diff_w)
        rows_g = np.arange(g)[:, None]
        effect = fit.beta[rows_g, t_idx] - fit.beta[rows_g, c_idx]
        se_d = np.sqrt(var_d)[:, None] * np.ones(k)
        crit_d = stats.t.isf(alpha / 2, df_d)[:, None]
        if per_query is not None:
            d = per_query[rows_g, t_idx, :] - per_query[rows_g, c_idx, :]
            naive_d = d.std(axis=2, ddof=1) / np.sqrt(d.shape[2])
        else:
            naive_d = np.full(effect.shape, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = se_d / naive_d
        pairs = (
            where.loc[where.index.repeat(k)]
            .reset_index(drop=True)
            .assign(
                treatment=systems[rows_g, t_idx].ravel(),
                control=systems[rows_g, c_idx].ravel(),
                effect=effect.ravel(),
                se=se_d.ravel(),
                variance=(se_d**2).ravel(),
                df=np.repeat(df_d, k),
                ci_low=(effect - crit_d * se_d).ravel(),
                ci_high=(effect + crit_d * se_d).ravel(),
                naive_se=naive_d.ravel(),
                se_ratio=ratio.ravel(),
            )
        )
    else:
        pairs = pd.DataFrame()
    g_table = _anova_g(where, names, terms, dims, fit, variance)
    return comps, means, pairs, g_table


def _anova_g(where, names, terms, dims, fit, variance):  # noqa: ANN001, ANN202
    """Brennan's G coefficients, as :func:`_g` computes them, for groups fitted together."""
    s = dims[0]
    if s < 2:
        return where.assign(g_relative=np.nan, g_absolute=np.nan)
    n = float(np.prod(dims))
    relative = variance[:, -1] / (n / s)
    absolute = relative.copy()
    for j, t in enumerate(terms):  # a few terms: their error contributions
        facet_cells = float(np.prod([dims[a] for a in t if a != 0]))
        if 0 in t:
            relative = relative + variance[:, j] / facet_cells
        absolute = absolute + variance[:, j] / facet_cells
    v = fit.vcov
    spread = fit.beta.var(axis=1, ddof=1) - (np.trace(v, axis1=1, axis2=2) - v.sum((1, 2)) / s) / (
        s - 1
    )
    universe = np.clip(spread, 0.0, None)
    with np.errstate(invalid="ignore", divide="ignore"):
        return where.assign(
            universe_variance=universe,
            relative_error=relative,
            absolute_error=absolute,
            g_relative=universe / (universe + relative),
            g_absolute=universe / (universe + absolute),
        )
