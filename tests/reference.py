"""A plain, loop-based reference implementation used only by the tests.

It pairs queries with a pandas merge and computes each effect with numpy and
scipy from the paired vectors, one (metric, treatment, control, task) at a time —
deliberately the obvious way, independent of the vectorized code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special, stats


def paired(scores: pd.DataFrame, metric, treatment, control, task) -> tuple[np.ndarray, np.ndarray]:
    sel = scores[(scores["metric"] == metric) & (scores["task"] == task)]
    x = sel[sel["system"] == treatment][["query", "value"]]
    y = sel[sel["system"] == control][["query", "value"]]
    both = x.merge(y, on="query", suffixes=("_x", "_y"))
    return both["value_x"].to_numpy(float), both["value_y"].to_numpy(float)


def c_m(m: float) -> float:
    return float(
        np.exp(special.gammaln(m / 2) - np.log(np.sqrt(m / 2)) - special.gammaln((m - 1) / 2))
    )


def effect(x: np.ndarray, y: np.ndarray, kind: str, correct: bool = True) -> tuple[float, float]:
    """(effect, variance) on the analysis scale, by the textbook formulas."""
    n = len(x)
    d = x - y
    mx, my = x.mean(), y.mean()
    sx, sy, sd = x.std(ddof=1), y.std(ddof=1), d.std(ddof=1)
    r = np.corrcoef(x, y)[0, 1]
    if kind == "md":
        return d.mean(), sd**2 / n
    if kind == "smd":  # Borenstein et al. (2009) eqs. 4.25-4.28 / Ranger eqs. 2-5
        s_within = sd / np.sqrt(2 * (1 - r))
        dd = d.mean() / s_within
        vd = (1 / n + dd**2 / (2 * n)) * 2 * (1 - r)
        j = 1 - 3 / (4 * (n - 1) - 1) if correct else 1.0
        return j * dd, j**2 * vd
    if kind == "smcc":
        g = (c_m(n - 1) if correct else 1.0) * d.mean() / sd
        return g, 1 / n + g**2 / (2 * n)
    if kind == "smcrp":
        m = 2 * (n - 1) / (1 + r**2)
        g = (c_m(m) if correct else 1.0) * (mx - my) / np.sqrt((sx**2 + sy**2) / 2)
        return g, 2 * (1 - r) / n + g**2 * (1 + r**2) / (4 * n)
    if kind == "rom":
        y_ = np.log(mx / my)
        if correct:
            y_ += 0.5 * (sx**2 / (n * mx**2) - sy**2 / (n * my**2))
        v = sx**2 / (n * mx**2) + sy**2 / (n * my**2) - 2 * r * sx * sy / (n * mx * my)
        return y_, v
    if kind == "corr":
        return np.arctanh(r), 1 / (n - 3)
    raise ValueError(kind)


def effects_loop(
    scores: pd.DataFrame, control: str, kind: str, alpha: float = 0.05
) -> pd.DataFrame:
    rows = []
    systems = sorted(scores["system"].unique())
    for metric in sorted(scores["metric"].unique()):
        for treatment in systems:
            if treatment == control:
                continue
            for task in sorted(scores["task"].unique()):
                x, y = paired(scores, metric, treatment, control, task)
                if len(x) == 0:
                    continue
                est, var = effect(x, y, kind)
                se = np.sqrt(var)
                crit = stats.norm.ppf(1 - alpha / 2)
                rows.append(
                    dict(
                        metric=metric,
                        treatment=treatment,
                        control=control,
                        task=task,
                        n=len(x),
                        mean_treatment=x.mean(),
                        mean_control=y.mean(),
                        effect=est,
                        variance=var,
                        se=se,
                        ci_low=est - crit * se,
                        ci_high=est + crit * se,
                        p_value=2 * stats.norm.sf(abs(est / se)),
                    )
                )
    return pd.DataFrame(rows)


def pool_loop(y: np.ndarray, v: np.ndarray, method: str, alpha: float = 0.05) -> dict[str, float]:
    """One random/common-effect model, the way Borenstein et al. (2009) ch. 12 write it."""
    w = 1 / v
    k = len(y)
    q = np.sum(w * y**2) - np.sum(w * y) ** 2 / np.sum(w)
    c = np.sum(w) - np.sum(w**2) / np.sum(w)
    tau2 = max(0.0, (q - (k - 1)) / c) if method == "DL" else 0.0
    ws = 1 / (v + tau2)
    m = np.sum(ws * y) / np.sum(ws)
    se = np.sqrt(1 / np.sum(ws))
    crit = stats.norm.ppf(1 - alpha / 2)
    return dict(
        effect=m,
        se=se,
        ci_low=m - crit * se,
        ci_high=m + crit * se,
        tau2=tau2,
        q=q,
        weights=100 * ws / ws.sum(),
    )


def clustered_variance_loop(z: np.ndarray, g: np.ndarray) -> float:
    """V_cl(z̄) = C/(C−1) · Σ_c (Σ_{i∈c} (z_i − z̄))² / n², one cluster at a time (Miller
    2024, App. A; Inspect's ``stderr(cluster=)`` squared)."""
    n, mean = len(z), z.mean()
    labels = sorted(set(g.tolist()))
    c = len(labels)
    total = 0.0
    for label in labels:
        s = sum(zi - mean for zi, gi in zip(z, g, strict=True) if gi == label)
        total += s * s
    return c / (c - 1) * total / n**2
