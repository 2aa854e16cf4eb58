"""What a user sees of the package itself: its version, citation and changelog."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

import metaeval

ROOT = Path(__file__).parents[1]


def test_version_citation_and_changelog_agree():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert metaeval.__version__ in (version, "0+unknown")  # "0+unknown": not installed
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert {"cff-version", "message", "title", "authors", "version", "license"} <= set(cff)
    assert str(cff["version"]) == version and cff["license"] == "MIT"
    for ref in cff["references"]:
        assert re.fullmatch(r"10\.\d{4,9}/\S+", ref["doi"]), ref
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"({version})" in changelog
    for default in ('`effect="smcrp"`', '`method="REML"`', "`metaeval.RANGER`"):
        assert default in changelog
