"""The studentized range distribution (Tukey's HSD, Nemenyi) against exact values, R's
ptukey/qtukey (tests/fixtures/distributions, with the R script that wrote them) and scipy."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special
from scipy import stats as ss

from metaeval._distributions import range_sf, studentized_range_isf, studentized_range_sf

FIXTURES = Path(__file__).parent / "fixtures" / "distributions"


def test_the_range_of_two_normals_is_exact_far_into_the_tail():
    q = np.array([0.0, 0.5, 2.0, 5.0, 10.0, 20.0, 30.0])
    exact = 2 * special.ndtr(-q / np.sqrt(2))  # |X − Y| ~ |N(0, 2)|, to 1e-99 at q = 30
    np.testing.assert_allclose(range_sf(q, 2), exact, rtol=1e-12)


@pytest.mark.parametrize("k", [3, 10, 100, 1000])
def test_the_range_of_k_normals_matches_scipy(k):
    grid = np.linspace(0, 9, 60)
    ref = ss.studentized_range.sf(grid, k, np.inf)
    np.testing.assert_allclose(range_sf(grid, k), ref, rtol=0, atol=1e-11)


@pytest.mark.parametrize("df", [1, 2, 3, 7, 30, 300, 3000, 24000, 1e6])
def test_two_means_give_the_t_distribution(df):
    # Q = |X − Y| / S with k = 2: P(Q > q) = 2 P(T_df > q/√2) exactly
    q = np.linspace(0.01, 40, 200)
    exact = 2 * ss.t.sf(q / np.sqrt(2), df)
    got = studentized_range_sf(q, 2, df)
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-12)
    far = exact > 1e-11  # relative accuracy down to p = 1e-11
    np.testing.assert_allclose(got[far], exact[far], rtol=1e-6)


def test_agrees_with_r_where_r_is_accurate_and_with_scipy_everywhere():
    ref = pd.read_csv(FIXTURES / "ptukey.csv")
    got = studentized_range_sf(ref["q"], ref["k"], ref["df"])
    # R's ptukey loses digits at small df and with 100 means (2.6e-5 at k = 2, df = 2
    # against the exact t value; 1.0 for 0.99593 at k = 100, df = 2, q = 2, and for
    # 0.999995 at df = 10, where scipy agrees with us): compared where it holds
    good = (ref["df"] >= 10) & (ref["k"] <= 50)
    np.testing.assert_allclose(got[good], ref["sf"][good], rtol=0, atol=2e-6)
    exact = ref["k"] == 2
    t = 2 * ss.t.sf(ref["q"][exact] / np.sqrt(2), ref["df"][exact])
    assert np.abs(ref["sf"][exact] - t).max() > 1e-5  # R's own error at df = 2, seen
    np.testing.assert_allclose(got[exact], t, rtol=0, atol=1e-12)
    rows = ref.sample(40, random_state=0)  # scipy integrates one point at a time: 40 of them
    sp = [ss.studentized_range.sf(r.q, r.k, r.df) for r in rows.itertuples()]
    np.testing.assert_allclose(got[rows.index], sp, rtol=0, atol=1e-9)


def test_large_df_is_not_rounded_to_infinity():
    # R (df > 25000) and scipy return the infinite-df value there; the true one lies
    # between df = 1e4 and ∞, and matches a direct adaptive integral over S
    q, k, df = 4.0, 3, 1e5
    got = studentized_range_sf(q, k, df)[()]
    lo, hi = studentized_range_sf(q, k, np.inf)[()], studentized_range_sf(q, k, 1e4)[()]
    assert lo < got < hi

    def integrand(s):
        return range_sf(np.array([q * s]), k)[0] * ss.chi.pdf(s * np.sqrt(df), df) * np.sqrt(df)

    direct = integrate.quad(integrand, 0.97, 1.03, epsabs=1e-15, epsrel=1e-12)[0]
    assert got == pytest.approx(direct, rel=1e-9)
    assert abs(got - lo) > 1e-6  # the difference is visible, not rounding


def test_quantiles_invert_the_tail_and_match_qtukey():
    ref = pd.read_csv(FIXTURES / "qtukey.csv")
    # R's qtukey stops its search at eps = 1e-4 (1.8e-4 off at p = 0.001, k = 50, df = 10)
    # and is far off at small df (75.4 for scipy's and our 143.7 at p = 0.001, k = 50, df = 2)
    good = ref["df"] >= 10
    got = studentized_range_isf(ref["p"], ref["k"], ref["df"])
    np.testing.assert_allclose(got[good], ref["q"][good], rtol=5e-4)
    rows = ref.sample(6, random_state=1)
    sp = [ss.studentized_range.isf(r.p, r.k, r.df) for r in rows.itertuples()]
    np.testing.assert_allclose(got[rows.index], sp, rtol=1e-7)
    back = studentized_range_sf(got, ref["k"], ref["df"])
    np.testing.assert_allclose(back, ref["p"], rtol=1e-9)
    sp = ss.studentized_range.isf(0.001, 50, 2)
    assert got[(ref["p"] == 0.001) & (ref["k"] == 50) & (ref["df"] == 2)].item() == pytest.approx(
        sp, rel=1e-7
    )


def test_broadcasting_and_undefined_arguments_give_nan():
    got = studentized_range_sf([[1.0], [2.0]], [2, 3, 1], [10, np.nan, 10])
    assert got.shape == (2, 3)
    assert np.isfinite(got[:, 0]).all() and np.isnan(got[:, 1:]).all()
    assert np.isnan(studentized_range_sf(np.nan, 3, 10)).all()
    assert np.isnan(studentized_range_isf([0.0, 1.0, 0.05], 3, [10, 10, 0])).all()
    assert studentized_range_sf(0.0, 5, 10)[()] == pytest.approx(1.0, abs=1e-15)
    assert studentized_range_sf(1e4, 5, np.inf)[()] == 0.0


def test_a_value_depends_on_its_own_arguments_alone():
    # a dask partition and the whole table must give the same bits: the nodes of a point
    # may not depend on the other points of the call
    q = np.array([0.7, 3.1, 5.2, 12.0])
    alone = np.array([studentized_range_sf(x, 4, 57.0)[()] for x in q])
    together = studentized_range_sf(
        np.r_[q, 40.0, 2.0, 2.0], np.r_[[4] * 4, 4, 30, 4], np.r_[[57.0] * 4, 3.0, 2.0, 1e5]
    )[:4]
    np.testing.assert_array_equal(together, alone)
    crit = studentized_range_isf([0.05, 0.05], [4, 9], [57.0, 2.0])
    assert crit[0] == studentized_range_isf(0.05, 4, 57.0)[()]
