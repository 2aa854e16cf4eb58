"""benchmarks/run_all.py knows every benchmark, and every benchmark prints RESULT lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p.stem for p in BENCHMARKS.glob("bench_*.py"))


def test_run_all_lists_every_benchmark_script():
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "run_all.py"), "--list"],
        capture_output=True,
        text=True,
        check=True,
    )
    listed = sorted(line.split()[0] for line in done.stdout.splitlines() if line.strip())
    assert SCRIPTS and listed == SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_benchmark_reports_through_result(name):
    text = (BENCHMARKS / f"{name}.py").read_text()
    assert "from _result import result" in text and "result(" in text.split("def main", 1)[-1]


def test_results_are_read_and_judged(capsys):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from _result import result
        from run_all import parse_results, verdict
    finally:
        sys.path.remove(str(BENCHMARKS))
    result("a", "x / y, 'quoted' = text", 101.234, ">=100")
    result("b", "overhead", 1.25, "<=1.2")
    result("c", "information", float("nan"))
    rows = parse_results(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["a", "b", "c"]
    assert rows[0]["what"] == "x / y, 'quoted' = text" and rows[0]["ratio"] == "101.2"
    assert [verdict(r["ratio"], r["target"]) for r in rows] == ["PASS", "MISS", "-"]
    assert verdict("nan", ">=1") == "n/a" and verdict("1.2", "<=1.2") == "PASS"
    with pytest.raises(ValueError, match="target"):
        result("d", "bad", 1.0, "100")
