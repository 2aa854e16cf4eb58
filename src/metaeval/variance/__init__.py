"""Where the uncertainty comes from (issue 42): variance components of the facets an LLM
score moves with (items, prompts, seeds, judges), the facet-aware standard errors of
systems' means and paired differences, and the G coefficients."""

from .components import facets
from .results import FacetPlan, FacetResult

__all__ = ["facets", "FacetResult", "FacetPlan"]
