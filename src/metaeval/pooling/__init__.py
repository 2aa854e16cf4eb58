"""Pooling effects across tasks: common-effect and random-effects models.

Every group (by default one per ``effect_type, metric, treatment, control``) is
fitted at once. The effects are laid out as a ``(groups, tasks)`` batch (groups
of similar size share a batch, so padding stays small) and every estimator runs
along the task axis for all groups together — iterative ones in lockstep with a
convergence mask (see :mod:`metaeval.pooling._tau2`). No Python loop runs over
groups.

Definitions follow metafor's ``rma.uni()``, ``predict()``, ``confint()``,
``leave1out()`` and ``influence()`` for intercept-only models (Viechtbauer
2010). With k effects y_i, sampling variances v_i, an estimate τ̂² of the
between-task variance and weights w*_i = 1/(v_i + τ̂²):

- estimate μ̂ = Σ w*_i y_i / Σ w*_i with variance 1/Σw*_i; with
  ``test="knha"`` (Knapp & Hartung 2003) the variance is multiplied by
  s² = Σ w*_i (y_i − μ̂)²/(k − 1) and tests and intervals use t with k − 1 df;
- Cochran's Q = Σ w_i (y_i − ȳ_w)² with w_i = 1/v_i, df = k − 1;
- "typical" within-task variance ṽ = (k − 1)/(Σw_i − Σw_i²/Σw_i);
  I² = 100 τ̂²/(ṽ + τ̂²) and H² = τ̂²/ṽ + 1 for random-effects models,
  I² = max(0, 100 (Q − (k − 1))/Q) and H² = Q/(k − 1) for the common-effect model;
- prediction interval μ̂ ∓ c √(SE² + τ̂²), c the same normal or t quantile as
  the confidence interval (metafor's ``predict()``);
- ``prob_gain`` = F(μ̂ / √(SE² + τ̂²)), F the standard normal (``test="z"``) or t_{k−1}
  (``test="knha"``) distribution function: the probability that the true effect
  on a new task is positive under the predictive distribution whose central
  interval is the prediction interval;
- Q-profile confidence interval of τ² (and I² from it), metafor's
  ``confint()`` default for these models.

References
----------
DerSimonian, R., & Laird, N. (1986). Meta-analysis in clinical trials.
*Controlled Clinical Trials*, 7(3), 177–188. doi:10.1016/0197-2456(86)90046-2
Knapp, G., & Hartung, J. (2003). Improved tests for a random effects
meta-regression with a single covariate. *Statistics in Medicine*, 22(17),
2693–2710. doi:10.1002/sim.1482
Viechtbauer, W. (2005). Bias and efficiency of meta-analytic variance
estimators in the random-effects model. *Journal of Educational and Behavioral
Statistics*, 30(3), 261–293. doi:10.3102/10769986030003261
Viechtbauer, W. (2007). Confidence intervals for the amount of heterogeneity in
meta-analysis. *Statistics in Medicine*, 26(1), 37–52. doi:10.1002/sim.2514
Viechtbauer, W. (2010). Conducting meta-analyses in R with the metafor package.
*Journal of Statistical Software*, 36(3). doi:10.18637/jss.v036.i03
Borenstein, M., Hedges, L. V., Higgins, J. P. T., & Rothstein, H. R. (2009).
*Introduction to Meta-Analysis*, ch. 19. Wiley. doi:10.1002/9780470743386
"""

from __future__ import annotations

from typing import Any

from .._options import CI_METHODS, POOL_METHODS, RENAMED, renamed
from ._bayes import bayes_pool
from ._diagnostics import baujat, influence, leave_one_out

# the text of pool()'s warning that a Knapp–Hartung interval is narrower than the normal one,
# by which build_report() finds the rows to note. Not in __all__: a seam.
from ._engine import NARROW_KH_TEXT as NARROW_KH_TEXT

# pool()'s option check for callers that check before other work (the dask face checks
# before it computes the effects of every partition). Not in __all__: a seam.
from ._engine import pool_options as pool_options
from ._gosh import gosh
from ._grouping import GROUP_KEYS
from ._metareg import metareg
from ._permutest import permutest
from ._summary import pool, weights
from .results import BayesPoolResult, GoshResult, MetaRegResult

__all__ = [
    "pool",
    "weights",
    "leave_one_out",
    "influence",
    "gosh",
    "baujat",
    "metareg",
    "permutest",
    "MetaRegResult",
    "GoshResult",
    "bayes_pool",
    "BayesPoolResult",
    "POOL_METHODS",
    "CI_METHODS",
    "GROUP_KEYS",
]


def __getattr__(name: str) -> Any:
    if name in RENAMED:
        return renamed(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
