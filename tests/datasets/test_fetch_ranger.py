"""metaeval.datasets.fetch_ranger: the pinned registry, local copies, downloads with pooch.

No test here downloads: the registry is checked against the offline copy in ../shared (skipped
where it is absent), and pooch's downloads are served from that copy with the network refused.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from metaeval.datasets import fetch_ranger
from metaeval.datasets._ranger import BASE_URL, COMMIT, EXAMPLES, REGISTRY
from metaeval.errors import FormatError, OptionError

GLUE, RETRIEVAL = EXAMPLES


@pytest.fixture
def ranger(shared_data) -> Path:
    return shared_data / "ranger"


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection or resolve a name fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"the network was used: {args!r}")

    for name in ("socket", "create_connection", "getaddrinfo"):
        monkeypatch.setattr(socket, name, refuse)
    monkeypatch.delenv("RANGER_DATA", raising=False)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _skeleton(root: Path, folders=EXAMPLES) -> Path:
    """A local copy of empty files (fetch_ranger checks a local copy's files are there)."""
    for rel in REGISTRY:
        if rel.split("/", 1)[0] in folders:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).touch()
    return root


def test_registry_is_pinned_and_well_formed():
    assert re.fullmatch(r"[0-9a-f]{40}", COMMIT)
    assert BASE_URL == f"https://raw.githubusercontent.com/MeteSertkan/ranger/{COMMIT}/examples/"
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in REGISTRY.values())
    by_folder = {f: sum(p.startswith(f + "/") for p in REGISTRY) for f in EXAMPLES}
    # GLUE: 2 systems × 7 tasks + config; retrieval: 2 systems × 6 runs, 6 qrels, config
    assert by_folder == {GLUE: 15, RETRIEVAL: 19}
    assert not [p for p in REGISTRY if "robust04" in p]


def test_every_registry_hash_matches_the_offline_copy(ranger):
    """The offline copy is Ranger's files unchanged: each hash in the registry is its file's."""
    on_disk = {p.relative_to(ranger).as_posix() for p in ranger.rglob("*") if p.is_file()}
    assert on_disk == set(REGISTRY)
    wrong = {rel: h for rel, h in REGISTRY.items() if _sha256(ranger / rel) != h}
    assert not wrong
    assert len(REGISTRY) == 34


def test_a_local_copy_is_returned_without_pooch_or_network(
    ranger, tmp_path, monkeypatch, no_network
):
    monkeypatch.setitem(sys.modules, "pooch", None)  # importing pooch would fail
    monkeypatch.setenv("RANGER_DATA", str(ranger))
    assert fetch_ranger() == ranger
    assert fetch_ranger(GLUE) == ranger / GLUE
    assert fetch_ranger(name=RETRIEVAL) == ranger / RETRIEVAL
    # path= takes precedence over RANGER_DATA, and a relative path comes back absolute
    monkeypatch.setenv("RANGER_DATA", str(tmp_path / "elsewhere"))
    monkeypatch.chdir(ranger.parent)
    assert fetch_ranger(path=ranger.name).resolve() == ranger.resolve()  # relative: made absolute
    assert fetch_ranger(GLUE, path=Path(ranger.name)).is_absolute()


def test_an_incomplete_local_copy_is_refused_naming_what_is_missing(tmp_path, monkeypatch):
    copy = _skeleton(tmp_path / "copy")
    assert fetch_ranger(path=copy) == copy
    (copy / RETRIEVAL / "qrels" / "antique_qrels.txt").unlink()
    (copy / GLUE / "config.yaml").unlink()
    with pytest.raises(
        FormatError,
        match=r"lacks 2 of the 34 files of Ranger's example data: 'classification-glue-data/config.yaml', 'retrieval-colberter-data/qrels/antique_qrels.txt'\. Expected .*given by the `path` argument",
    ):
        fetch_ranger(path=copy)
    # only the files of the folder asked for are checked
    with pytest.raises(
        FormatError,
        match=r"lacks 1 of the 15 files of Ranger's example data: 'classification-glue-data/config.yaml'\.",
    ):
        fetch_ranger(GLUE, path=copy)
    for rel in list(REGISTRY)[16:]:
        (copy / rel).unlink(missing_ok=True)
    with pytest.raises(
        FormatError,
        match=r"lacks 18 of the 19 files of Ranger's example data: '[^']+'(, '[^']+')* and \d+ more\.",
    ):
        fetch_ranger(RETRIEVAL, path=copy)
    shutil.rmtree(copy / RETRIEVAL)
    with pytest.raises(FormatError, match=r"holds no 'retrieval-colberter-data' folder\."):
        fetch_ranger(path=copy)
    with pytest.raises(
        FormatError,
        match=r"classification-glue-data: holds no 'classification-glue-data' or 'retrieval-colberter-data' folder; it looks like one itself: pass the folder that holds it",
    ):
        fetch_ranger(path=copy / GLUE)
    monkeypatch.setenv("RANGER_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(
        FormatError, match=r"nowhere: does not exist\. .*RANGER_DATA; unset it to download the data"
    ):
        fetch_ranger()
    (tmp_path / "ranger.zip").touch()
    monkeypatch.setenv("RANGER_DATA", str(tmp_path / "ranger.zip"))
    with pytest.raises(FormatError, match=r"ranger\.zip: is not a folder\."):
        fetch_ranger()


def test_name_must_be_one_of_the_example_folders(tmp_path):
    with pytest.raises(
        OptionError,
        match=r"`name` must be one of \['classification-glue-data', 'retrieval-colberter-data'\], but 'glue'",
    ):
        fetch_ranger("glue", path=tmp_path)


def test_a_download_without_pooch_names_the_extra(monkeypatch, tmp_path, no_network):
    monkeypatch.setitem(sys.modules, "pooch", None)
    with pytest.raises(
        ImportError,
        match=r'needs pooch, which is not installed: pip install "metaeval\[datasets\]" \(or "metaeval\[notebooks\]"',
    ) as info:
        fetch_ranger(data_home=tmp_path)
    assert "RANGER_DATA" in str(info.value)


def test_importing_metaeval_and_its_datasets_does_not_import_pooch():
    code = (
        "import sys, json, metaeval, metaeval.datasets;"
        "from metaeval.datasets import fetch_ranger;"
        "print(json.dumps('pooch' in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) is False


@pytest.fixture
def served(ranger, monkeypatch, no_network):
    """pooch's HTTP downloads answered from the offline copy; the URLs asked for, in order."""
    pooch = pytest.importorskip("pooch")
    asked: list[str] = []
    corrupt: set[str] = set()

    def serve(self, url, output_file, pooch_obj, check_only=False):
        assert url.startswith(BASE_URL) and not check_only
        rel = url[len(BASE_URL) :]
        asked.append(rel)
        data = (ranger / rel).read_bytes() + (b"tampered" if rel in corrupt else b"")
        if hasattr(output_file, "write"):
            output_file.write(data)
        else:
            Path(output_file).write_bytes(data)

    monkeypatch.setattr(pooch.HTTPDownloader, "__call__", serve)
    monkeypatch.setattr(pooch.core.time, "sleep", lambda seconds: None)  # pooch's wait to retry
    return asked, corrupt


def test_a_download_is_hash_checked_and_cached(served, tmp_path, ranger):
    asked, corrupt = served
    root = fetch_ranger(data_home=tmp_path)
    assert root == tmp_path / f"ranger-{COMMIT[:7]}"
    assert sorted(asked) == sorted(REGISTRY)
    assert all((root / rel).read_bytes() == (ranger / rel).read_bytes() for rel in REGISTRY)
    asked.clear()
    assert fetch_ranger(GLUE, data_home=tmp_path) == root / GLUE  # cached: hashes checked only
    assert asked == []
    (root / GLUE / "config.yaml").write_text("changed")  # a damaged file is fetched again
    assert fetch_ranger(data_home=tmp_path) == root
    assert asked == [f"{GLUE}/config.yaml"]
    # a server giving other bytes than the pinned ones: pooch refuses them
    corrupt.add(f"{RETRIEVAL}/config.yaml")
    with pytest.raises(ValueError, match="hash"):
        fetch_ranger(RETRIEVAL, data_home=tmp_path / "fresh")
    assert not (tmp_path / "fresh" / f"ranger-{COMMIT[:7]}" / RETRIEVAL / "config.yaml").exists()


def test_a_failed_download_says_how_to_work_offline(served, tmp_path, monkeypatch):
    import pooch
    import requests

    def fail(self, url, output_file, pooch_obj, check_only=False):
        raise requests.ConnectionError("no route to host")

    monkeypatch.setattr(pooch.HTTPDownloader, "__call__", fail)
    with pytest.raises(
        OSError,
        match=r"Could not download https://raw\.githubusercontent\.com/.*no route to host\. Without network, .*set RANGER_DATA to it, or pass path=",
    ):
        fetch_ranger(GLUE, data_home=tmp_path)
