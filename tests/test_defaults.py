"""One set of defaults everywhere: the functions, the accessor, the command, the demo and the
notebooks use REML with Knapp–Hartung intervals and ``smcrp``; Ranger's procedure is
``metaeval.RANGER``. Result tables put the answer first."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

import metaeval
import metaeval_cli
from metaeval import _options, leaderboard
from metaeval_cli._parser import DEFAULTS, RANGER, resolve_model

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"


def _default(func, name):
    return inspect.signature(func).parameters[name].default


@pytest.mark.parametrize(
    "func",
    [
        metaeval.pool,
        metaeval.weights,
        metaeval.leave_one_out,
        metaeval.influence,
        metaeval.analyze,
        metaeval.forest_plot,
        metaeval.leaderboard,
        metaeval.rank_intervals,
    ],
)
def test_every_pooling_function_defaults_to_reml_with_knapp_hartung(func):
    assert _default(func, "method") == "REML" == _options.DEFAULT_POOL_METHOD
    assert _default(func, "test") is None  # Knapp–Hartung, z for the common-effect model
    assert _options.resolve_ci("REML", None) == "knha"
    assert _options.resolve_ci("EE", None) == _options.resolve_ci("FE", None) == "z"


def test_effect_type_defaults_and_the_ranger_preset():
    for func in (metaeval.effects, metaeval.analyze):
        assert _default(func, "effect") == "smcrp" == _options.DEFAULT_EFFECT
    assert _default(leaderboard, "effect") == "smcrp"
    assert _default(leaderboard, "method") == "REML" and _default(leaderboard, "test") is None
    assert metaeval.RANGER == {"effect": "smd", "method": "DL", "test": "z"}


def test_the_default_fit_is_reml_knapp_hartung(scores):
    eff = scores.meta.effects("ctrl")
    assert set(eff["effect_type"]) == {"smcrp"}
    pooled = eff.meta.pool()
    assert set(pooled["method"]) == {"REML"} and set(pooled["test"]) == {"knha"}
    assert (pooled["df"] == pooled["k"] - 1).all()
    assert set(eff.meta.pool(method="EE")["test"]) == {"z"}  # no Knapp–Hartung warning


@pytest.mark.parametrize("command", [["demo"], ["meta", "scores.csv", "--control", "c"]])
def test_the_command_has_the_librarys_defaults_and_the_ranger_preset(command):
    parser = metaeval_cli.build_parser()
    args = parser.parse_args(command)
    resolve_model(parser, args)
    assert (args.effect, args.method, args.ci) == ("smcrp", "REML", None)
    args = parser.parse_args([*command, "--ranger"])
    resolve_model(parser, args)
    # the command's --ci is the library's test= (--test is compare's and plan's test)
    library = {("test" if k == "ci" else k): v for k, v in RANGER.items()}
    assert library == metaeval.RANGER
    assert vars(args) | RANGER == vars(args)
    assert DEFAULTS == {
        "effect": _options.DEFAULT_EFFECT,
        "method": _options.DEFAULT_POOL_METHOD,
        "ci": _options.DEFAULT_CI,
    }
    args = parser.parse_args([*command, "--ranger", "--method", "DL"])  # agrees: fine
    resolve_model(parser, args)
    with pytest.raises(SystemExit) as stop:
        args = parser.parse_args([*command, "--ranger", "--effect", "md"])
        resolve_model(parser, args)
    assert stop.value.code == 2
    with pytest.raises(SystemExit):
        parser.parse_args([*command, "--effect", "md", "--effect", "smd"])  # once only


def test_notebooks_spell_out_options_that_differ_from_the_defaults():
    """A notebook that reproduces Ranger names Ranger's options in every analysis call."""
    for path in sorted(NOTEBOOKS.glob("ranger_*.ipynb")):
        code = "\n".join(
            "".join(cell["source"])
            for cell in json.loads(path.read_text())["cells"]
            if cell["cell_type"] == "code"
        )
        for call in ("analyze(", "forest("):
            for chunk in code.split(call)[1:]:
                args = chunk.split(")")[0]
                assert "method" in args or "RANGER" in args, (path.name, call, args)


def test_result_tables_put_the_answer_first(scores):
    eff = scores.meta.effects("ctrl")
    keys = ["metric", "treatment", "control", "task", "effect_type"]
    assert list(eff.columns[:9]) == [*keys, "effect", "ci_low", "ci_high", "p_value"]
    pooled = eff.meta.pool(adjust="holm")
    first = [
        "k",
        "k_total",
        "effect",
        "ci_low",
        "ci_high",
        "p_value",
        "p_adjusted",
        "pi_low",
        "pi_high",
        "prob_gain",
        "tau2",
        "i2",
    ]
    assert list(pooled.columns) == [
        "effect_type",
        "metric",
        "treatment",
        "control",
        *first,
        "method",
        "test",
        "se",
        "statistic",
        "df",
        "tau",
        "tau2_low",
        "tau2_high",
        "i2_low",
        "i2_high",
        "h2",
        "q",
        "q_df",
        "q_p_value",
    ]
    compared = scores.meta.compare("ctrl", adjust="holm")
    assert list(compared.columns[:10]) == [
        "metric",
        "treatment",
        "control",
        "task",
        "diff",
        "ci_low",
        "ci_high",
        "p_value",
        "p_adjusted",
        "effect_size",
    ]
