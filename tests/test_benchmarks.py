"""Every benchmark runs: each ``benchmarks/bench_*.py`` at its tiny size (seconds), in a
subprocess, exits 0 and prints well-formed ``RESULT`` lines with finite ratios; a ratio
against a package that is not installed is skipped (``nan``), not a failure."""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p.stem for p in BENCHMARKS.glob("bench_*.py"))

sys.path.insert(0, str(BENCHMARKS))
try:
    import run_all
    from _result import result
finally:
    sys.path.remove(str(BENCHMARKS))

#: The tiny runs that are not seconds: bench_scale starts a dask LocalCluster (slow, as the
#: LocalCluster tests of tests/test_scale.py are).
SLOW = {"bench_scale"}

#: Each benchmark's comparisons against packages metaeval does not install, blocked by
#: test_a_missing_baseline_is_skipped_not_failed.
PEERS = {
    "bench_pooling": ["statsmodels"],
    "bench_metareg": ["statsmodels"],
    "bench_many_systems": ["baycomp", "scikit_posthocs"],
    "bench_significance": ["ranx", "threadpoolctl"],
    "bench_ir": ["ir_measures"],
    "bench_judges": ["krippendorff"],
    "bench_scale": ["dask"],
}


def run_tiny(name: str, tmp_path: Path, blocked: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """Run ``name`` at its tiny size; its RESULT lines, checked for their form."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "MPLBACKEND": "Agg"}
    if blocked:  # a package on the path before the real one that fails to import
        for module in blocked:
            (tmp_path / "blocked" / module).mkdir(parents=True)
            (tmp_path / "blocked" / module / "__init__.py").write_text(
                f"raise ImportError('{module} blocked by tests/test_benchmarks.py')\n"
            )
        paths = [str(tmp_path / "blocked"), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    command = [sys.executable, str(BENCHMARKS / f"{name}.py"), *run_all.BENCHMARKS[name].tiny]
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=BENCHMARKS, env=env, timeout=600
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    rows = run_all.parse_results(done.stdout)
    assert rows, f"{name} printed no RESULT line:\n{done.stdout[-2000:]}"
    names = [row.get("name") for row in rows]
    assert len(set(names)) == len(names), names
    for row in rows:
        assert {"name", "ratio", "target", "what"} <= set(row), row
        assert row["name"] and row["what"], row
        target = row["target"]
        assert target == "-" or (target[:2] in (">=", "<=") and float(target[2:]) > 0), row
        ratio = float(row["ratio"])
        needs = [m for m in row.get("needs", "").split(",") if m]
        missing = [m for m in needs if m in blocked or importlib.util.find_spec(m) is None]
        if missing:
            assert math.isnan(ratio), f"{name}: {row} without {missing}"
        else:
            assert math.isfinite(ratio) and ratio > 0, f"{name}: {row}"
    return rows


def test_run_all_lists_every_benchmark_script():
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run_all.py"), "--list"],
        capture_output=True,
        text=True,
        check=True,
    )
    listed = sorted(line.split()[0] for line in done.stdout.splitlines() if line.strip())
    assert SCRIPTS and listed == SCRIPTS


def test_every_benchmark_has_a_tiny_size():
    assert sorted(run_all.BENCHMARKS) == SCRIPTS
    for name, sizes in run_all.BENCHMARKS.items():
        assert sizes.tiny, f"{name}: a tiny size is not the script's defaults"
    assert set(PEERS) <= set(SCRIPTS) and SLOW <= set(SCRIPTS)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in SCRIPTS]
)
def test_every_benchmark_runs_at_its_tiny_size(name, tmp_path):
    run_tiny(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PEERS))
def test_a_missing_baseline_is_skipped_not_failed(name, tmp_path):
    rows = run_tiny(name, tmp_path, blocked=tuple(PEERS[name]))
    skipped = [r for r in rows if set(r.get("needs", "").split(",")) & set(PEERS[name])]
    assert skipped and all(r["ratio"] == "nan" for r in skipped)


def test_results_are_read_and_judged(capsys):
    result("a", "x / y, 'quoted' = text", 101.234, ">=100")
    result("b", "overhead", 1.25, "<=1.2")
    result("c", "information", float("nan"))
    result("d", "against a peer", 2.0, needs="statsmodels")
    rows = run_all.parse_results(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["a", "b", "c", "d"]
    assert rows[0]["what"] == "x / y, 'quoted' = text" and rows[0]["ratio"] == "101.2"
    assert rows[3]["needs"] == "statsmodels" and "needs" not in rows[0]
    assert [run_all.verdict(r["ratio"], r["target"]) for r in rows] == ["PASS", "MISS", "-", "-"]
    assert run_all.verdict("nan", ">=1") == "n/a" and run_all.verdict("1.2", "<=1.2") == "PASS"
    with pytest.raises(ValueError, match="target"):
        result("e", "bad", 1.0, "100")
