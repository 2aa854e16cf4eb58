"""The studentized range distribution, vectorized: Tukey's HSD and the Nemenyi test.

scipy's ``studentized_range`` integrates one point at a time (about 10 ms a point, and
its ``isf`` a root search over those), which made Tukey's HSD on a small table take
seconds. Here every point of a call is one set of quadrature nodes and matrix products,
as R's ``ptukey`` does it (an outer integral over the scale's χ distribution, an inner
one over the largest normal), with the nodes fixed in advance:

- :func:`range_sf`: P(R > q), R the range of k standard normals (infinite df);
- :func:`studentized_range_sf`: P(Q > q), Q = R / S, S² ~ χ²_df / df;
- :func:`studentized_range_isf`: its inverse, by a vectorized bracketing root search.

Checked against the exact k = 2 case (2 P(T_df > q/√2)), scipy and R's ``ptukey`` /
``qtukey`` (``tests/fixtures/distributions``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["range_sf", "studentized_range_sf", "studentized_range_isf"]

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(10)
_LOW_TAIL, _HIGH_TAIL = 1e-15, 1e-20  # S's quantiles the outer integral runs between
_OUTER_SDS, _OUTER_WIDTH = 2.0, 0.5  # its panels: 2 sds of log S wide, at most 0.5
_INNER_WIDTH = 1.5  # the inner integral's panels (10 nodes each), over √log k
_BLOCK = 4_000_000  # elements of the (points × nodes) matrix computed at once
_FAR = 75.0  # P(R > q) underflows to 0 for q beyond this (Φ(−75/√2) ≈ 1e−614)


def _largest_nodes(hi: float, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes z on [−8.5, hi], Φ(z) there and the weights k φ(z) Φ(z)^{k−1} (the density
    of the largest of k normals) times the Gauss–Legendre weights; zero weights left out.
    The largest of k normals has an sd near 1/√(2 log k): narrower panels for more means."""
    from scipy import special

    panels = int(np.ceil((hi + 8.5) * max(1.0, np.sqrt(np.log(k))) / _INNER_WIDTH))
    h = (hi + 8.5) / panels
    left = -8.5 + h * np.arange(panels)
    z = (left[:, None] + h * (_NODES[None, :] + 1) / 2).ravel()
    a = special.ndtr(z)
    log_phi = -(z**2) / 2 - 0.5 * np.log(2 * np.pi)
    dens = k * np.exp(log_phi) * a ** (k - 1) * np.tile(_WEIGHTS * h / 2, panels)
    keep = dens > 0
    return z[keep], a[keep], dens[keep]


def range_sf(q: np.ndarray, k: int) -> np.ndarray:
    """P(R > q) for the range R of k independent standard normals, for every q.

    P(R > q) = k ∫ φ(z) Φ(z)^{k−1} [1 − (1 − u)^{k−1}] dz, u = Φ(z − q)/Φ(z): the
    largest of the k is at z and another is below z − q. The bracket is computed as
    −expm1((k − 1) log1p(−u)), so that small tail probabilities keep their relative
    accuracy (scipy's studentized_range.sf, 1 − cdf, loses it below 1e-12). The
    integral is a composite 10-point Gauss–Legendre rule on panels of width
    1.5 / √(log k) (at most 1.5) over [−8.5, q/2 + 9] (where the integrand is not
    negligible; the upper end rounded up to an even number, at least 10), the same
    nodes for the points of one upper end: a matrix product per group. Absolute
    error below 1e-12 for k ≤ 1000 (checked against scipy and the closed form
    2Φ(−q/√2) for k = 2).
    """
    from scipy import special

    q = np.asarray(q, dtype=float)
    out = np.zeros(q.shape)
    near = q < _FAR
    if not near.any():
        return out
    qn = q[near]
    # each point's upper end, rounded up to an even number: points grouped by it share nodes
    reach = np.maximum(10.0, 2 * np.ceil((qn / 2 + 9.0) / 2))
    got = np.empty(len(qn))
    for hi in np.unique(reach):  # at most 37 groups (q < 75)
        z, a, dens = _largest_nodes(float(hi), k)
        at = np.flatnonzero(reach == hi)
        step = max(1, _BLOCK // len(z))
        for start in range(0, len(at), step):  # blocks of points: bounded memory
            rows = at[start : start + step]
            u = np.minimum(special.ndtr(z[None, :] - qn[rows, None]) / a[None, :], 1.0)
            with np.errstate(divide="ignore"):  # u = 1 at q = 0: log1p(−1) = −inf, bracket 1
                bracket = -np.expm1((k - 1) * np.log1p(-u))
            got[rows] = (bracket * dens).sum(axis=1)  # per row: the same sum in any call
    out[near] = np.clip(got, 0.0, 1.0)
    return out


def _stirling_remainder(x: np.ndarray) -> np.ndarray:
    """lgamma(x) − (x − ½) log x + x − ½ log 2π: its series from x = 10 on (error below
    1e-16 there), the direct difference below (no cancellation at such x)."""
    from scipy import special

    big = np.maximum(x, 10.0)
    series = (1 / 12 - (1 / 360 - (1 / 1260 - 1 / (1680 * big**2)) / big**2) / big**2) / big
    direct = special.gammaln(x) - (x - 0.5) * np.log(x) + x - 0.5 * np.log(2 * np.pi)
    return np.where(x >= 10, series, direct)


def _scale_range(df: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log S at its 1e-15 and 1 − 1e-20 quantiles, and the panels between them: 2 standard
    deviations of log S wide (1/√(2 df) each), at most 0.5 — a function of df alone."""
    from scipy import special

    lo = 0.5 * np.log(special.chdtri(df, 1 - _LOW_TAIL) / df)  # chdtri: the upper quantile
    hi = 0.5 * np.log(special.chdtri(df, _HIGH_TAIL) / df)
    wanted = np.minimum(_OUTER_WIDTH, _OUTER_SDS / np.sqrt(2 * df))
    return lo, hi, np.ceil((hi - lo) / wanted).astype(int)


def _scale_nodes(df: np.ndarray, panels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes s and weights w (one row per df) with Σ w g(s) ≈ E g(S), S² ~ χ²_df / df,
    and S's 1e-15 quantile, where the nodes start; every df of the call has ``panels``.

    The integral is over t = log s, where S's density is smooth and unimodal, by a
    composite Gauss–Legendre rule between the 1e-15 and 1 − 1e-20 quantiles of S (below
    the first, P(R > qS) is near 1: the caller adds 1e-15 times its value there), on
    :func:`_scale_range`'s panels.
    """

    lo, hi, _ = _scale_range(df)
    width = (hi - lo) / panels
    unit = (np.arange(panels)[:, None] + (_NODES[None, :] + 1) / 2).ravel()
    t = lo[:, None] + width[:, None] * unit[None, :]
    half = (df / 2)[:, None]
    # the density of t = log S: 2 (ν/2)^{ν/2} / Γ(ν/2) · exp(νt − ν e^{2t} / 2), written as
    # log 2 + ½ log(ν/2) − ½ log 2π − c(ν/2) + (ν/2)(2t − expm1(2t)), with c the remainder
    # of Stirling's series: the terms of size ν cancel before rounding, not after
    constant = np.log(2) + 0.5 * np.log(half / (2 * np.pi)) - _stirling_remainder(half)
    log_density = constant + half * (2 * t - np.expm1(2 * t))
    w = np.exp(log_density) * (width[:, None] / 2) * np.tile(_WEIGHTS, panels)[None, :]
    return np.exp(t), w, np.exp(lo)


def studentized_range_sf(q: Any, k: Any, df: Any) -> np.ndarray:
    """P(Q > q) for the studentized range with ``k`` means and ``df`` degrees of freedom.

    ``q``, ``k`` and ``df`` broadcast against each other; ``df`` may be ``inf`` (the
    range of k normals, :func:`range_sf`). P(Q > q) = E P(R > q S) over the scale S,
    integrated on fixed nodes (:func:`_scale_nodes`); each distinct (q, k, df) once.
    NaN where an argument is NaN, k < 2 or df ≤ 0.
    """
    q, k, df = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (q, k, df)))
    out = np.full(q.shape, np.nan)
    ok = np.isfinite(q) & (k >= 2) & (k == np.round(k)) & (df > 0) & ~np.isnan(df)
    if not ok.any():
        return out
    keys, inverse = np.unique(np.stack([k[ok], df[ok], q[ok]]), axis=1, return_inverse=True)
    got = np.empty(keys.shape[1])
    for kk in np.unique(keys[0]):  # one set of integrals per number of means
        at = keys[0] == kk
        d, x = keys[1][at], np.maximum(keys[2][at], 0.0)
        res = np.empty(len(d))
        inf = np.isinf(d)
        res[inf] = range_sf(x[inf], int(kk))
        if (~inf).any():
            dd, xx = d[~inf], x[~inf]
            count = _scale_range(dd)[2]
            part = np.empty(len(dd))
            for panels in np.unique(count):  # panels depend on df alone, so does each value
                on = count == panels
                s, w, low = _scale_nodes(dd[on], int(panels))
                inner = range_sf((xx[on][:, None] * s).ravel(), int(kk)).reshape(s.shape)
                below = _LOW_TAIL * range_sf(xx[on] * low, int(kk))  # S under its first node
                part[on] = np.clip((inner * w).sum(axis=1) + below, 0.0, 1.0)
            res[~inf] = part
        got[at] = res
    out[ok] = got[inverse.ravel()]
    return out


def studentized_range_isf(p: Any, k: Any, df: Any) -> np.ndarray:
    """The q with P(Q > q) = ``p``, for every broadcast (p, k, df): Chandrupatla's root
    search (scipy's elementwise ``find_root``) on :func:`studentized_range_sf` in
    log q, every point at once, between two t quantiles that bracket it; each distinct
    (p, k, df) once."""
    from scipy.optimize import elementwise

    p, k, df = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (p, k, df)))
    out = np.full(p.shape, np.nan)
    ok = (p > 0) & (p < 1) & (k >= 2) & (k == np.round(k)) & (df > 0)
    if not ok.any():
        return out
    keys, inverse = np.unique(np.stack([p[ok], k[ok], df[ok]]), axis=1, return_inverse=True)
    pp, kk, dd = keys

    def gap(log_q: np.ndarray, pp: np.ndarray, kk: np.ndarray, dd: np.ndarray) -> np.ndarray:
        sf = studentized_range_sf(np.exp(log_q), kk, dd)
        return np.log(np.maximum(sf, 1e-300)) - np.log(pp)

    # a bracket from two t quantiles: the range exceeds q at least as often as one pair's
    # difference does, and at most k(k − 1)/2 times as often (Bonferroni)
    from scipy import special

    low = np.sqrt(2) * special.stdtrit(dd, 1 - pp / 2)
    high = np.sqrt(2) * special.stdtrit(dd, 1 - pp / (kk * (kk - 1)))
    low = np.where(np.isinf(dd), np.sqrt(2) * special.ndtri(1 - pp / 2), low)
    high = np.where(np.isinf(dd), np.sqrt(2) * special.ndtri(1 - pp / (kk * (kk - 1))), high)
    found = elementwise.find_root(
        gap,
        (np.log(np.maximum(low * 0.999, 1e-6)), np.log(high * 1.001)),
        args=(pp, kk, dd),
        tolerances={"xatol": 1e-13, "xrtol": 1e-13},
    )
    q = np.where(found.success, np.exp(found.x), np.nan)
    out[ok] = q[inverse.ravel()]
    return out
