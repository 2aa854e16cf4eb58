"""Ranger's published example data: the pinned commit, its files' hashes and the fetcher.

The data are those of the Ranger toolkit's repository (Sertkan, Althammer and
Hofstätter 2023; github.com/MeteSertkan/ranger, folder ``examples/``, Apache
License 2.0), as files, unchanged. ``REGISTRY`` lists every file
:func:`fetch_ranger` provides with its SHA-256 at ``COMMIT``; the test suite
checks each hash against an offline copy.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import get_args

from .._options import RangerExample, literal_signature
from ..errors import MESSAGE_LIMIT, FormatError, check_option

__all__ = ["RangerExample", "EXAMPLES", "COMMIT", "BASE_URL", "REGISTRY", "fetch_ranger"]

EXAMPLES: tuple[str, ...] = get_args(RangerExample)

COMMIT = "171134191cfa76255492893508ae7c089dc3d448"
"""The commit of github.com/MeteSertkan/ranger the files are fetched from."""
BASE_URL = f"https://raw.githubusercontent.com/MeteSertkan/ranger/{COMMIT}/examples/"

#: Path below ``examples/`` → SHA-256 of the file at ``COMMIT``. Left out: Robust04
#: (its runs; its qrels are too large for the copy the hashes were checked against, and
#: runs without qrels cannot be evaluated), GLUE's training scripts, Ranger's notebooks
#: and figures. The retrieval ``config.yaml`` still names Robust04 (and Touché, whose
#: files the repository never had): read it with ``read_ranger(..., missing_files="skip")``,
#: which leaves those collections out with a warning naming them.
REGISTRY: dict[str, str] = {
    "classification-glue-data/bert-base-cased/mnli/eval_results_mnli_accuracy.txt": "50efa56f6da7408d6d0f8084336c726b5fab35df97a32f52b480df74c981efea",
    "classification-glue-data/bert-base-cased/mrpc/eval_results_mrpc_accuracy.txt": "298879ee7f4ed1de48d52e7f2214110eaf1b6f46121e58f78faa93ff240fadad",
    "classification-glue-data/bert-base-cased/qnli/eval_results_qnli_accuracy.txt": "bb87c51accc435d05ffec14d06943eeda71532ee4f867fa8b5c474b32c6e6676",
    "classification-glue-data/bert-base-cased/qqp/eval_results_qqp_accuracy.txt": "7b499e74a7354c7fca91b25d2581c27f45394b868806686738c527bbaee37a64",
    "classification-glue-data/bert-base-cased/rte/eval_results_rte_accuracy.txt": "4d61282e0b4d14fe66c22d8e076c90e47281e1a806d798f101c5ccc985a1c2ef",
    "classification-glue-data/bert-base-cased/sst2/eval_results_sst2_accuracy.txt": "23f629b0aafd3898e60f5fc579b74fabe7945b233e893e189872d19e30eef1a3",
    "classification-glue-data/bert-base-cased/wnli/eval_results_wnli_accuracy.txt": "c070543d35e0a926104fa694404086a5c06bb4fc76c478ed882d94d5a806017c",
    "classification-glue-data/config.yaml": "5f6c7323993d0596ad3bba98c3323f5d274a1d1a9b3c7602330241255c6e2b9d",
    "classification-glue-data/distilbert-base-cased/mnli/eval_results_mnli_accuracy.txt": "9914b5ec41ae01324106499d2c20d29fe71ef6fb0fe1d00c871fa0c34abbe3c8",
    "classification-glue-data/distilbert-base-cased/mrpc/eval_results_mrpc_accuracy.txt": "710a3258b00199e3896bcc195df492ea99eb5427122e9f1f550e567c45b82d8f",
    "classification-glue-data/distilbert-base-cased/qnli/eval_results_qnli_accuracy.txt": "3c06d2dba3a7eb2a921b6e1a3730e9980853e11700fc11bf0708e8378fd62525",
    "classification-glue-data/distilbert-base-cased/qqp/eval_results_qqp_accuracy.txt": "0274705d3eedbd986ce200b066d1ff55afcf7d6a59c09b353af267d935985f5e",
    "classification-glue-data/distilbert-base-cased/rte/eval_results_rte_accuracy.txt": "b147bec4b8441d5ce49069fb6892f730c05908a4d06850d628ef6a43bb2ea0d6",
    "classification-glue-data/distilbert-base-cased/sst2/eval_results_sst2_accuracy.txt": "a1e2e81ad74789de304b73a4ed9b3e63ad967ac6cf356b903ea6474d9cae6e34",
    "classification-glue-data/distilbert-base-cased/wnli/eval_results_wnli_accuracy.txt": "d4aebb1a648b8c747f9f3dcaecc0a1c0b51081a2fd4aa8ded3d2ea59addd0dc6",
    "retrieval-colberter-data/colberter_dim1_stopwords/antique_top10.txt": "3297f50a9fc5a87a7fe4acc999fb6f80f49f47aaadc737bfc03532a86e32ffcb",
    "retrieval-colberter-data/colberter_dim1_stopwords/dbpedia-entity_top10.txt": "12279186dac19e47409d650c2b875f6bc1162c87e1e37ebc02157b9df48429c5",
    "retrieval-colberter-data/colberter_dim1_stopwords/nfcorpus_top10.txt": "4d62e35c9ba4a510836bfb8606f81b7905dacff5ecdeb3fd75e0f3075c8cbef7",
    "retrieval-colberter-data/colberter_dim1_stopwords/trec-covid_top10.txt": "5e75f2120fe1a002dd27c947b9bcf3ab8d12b47dcc63adc2e14a8405546d9c77",
    "retrieval-colberter-data/colberter_dim1_stopwords/trec_podcast_top10.txt": "8df69e5a8ed22e00d7a5e83e081b9b2139c9906dbd7e2249e1a0a13a87c32b62",
    "retrieval-colberter-data/colberter_dim1_stopwords/tripclick_top10.txt": "4a50c01de6edb9c050736c65f45115555908c4e186e5f9a0dd1640ff677e50d6",
    "retrieval-colberter-data/config.yaml": "b254610dfb8f4b442a2380300429f29a1b056da8361564a0a64ec3392761843b",
    "retrieval-colberter-data/qrels/antique_qrels.txt": "ae0e0e62199ed70315a2966c66d454b24b5ab28bbd8cb42951870a2eb9c88b73",
    "retrieval-colberter-data/qrels/dbpedia-entity_qrels.txt": "6067703f9071933c8c8259e8ad37f2f0512bd2144e907cf5f32b37bfa2b88154",
    "retrieval-colberter-data/qrels/nfcorpus_qrels.txt": "ceb973365df4830d3d588c5741020831068e244db5f6b80af38ca11f93a1f0b3",
    "retrieval-colberter-data/qrels/trec-covid_qrels.txt": "682ef9caf5150a54ed74031656c60144128b9203f77bc0e7d30dcbdcf55e66eb",
    "retrieval-colberter-data/qrels/trec_podcast_qrels.txt": "852f2ceb18d9a065339e2ae796c9ebc213d159f92f32559c311d7ec7e4c07bc3",
    "retrieval-colberter-data/qrels/tripclick_qrels.txt": "4b76367e55b69458eb6db79b193431ac11155f33076be21caa8573e1168213a1",
    "retrieval-colberter-data/tasb_dim768_hf/antique_top10.txt": "75c5a7da0dc6ac65cfd104941b14c76a7099b2b534952cf8f197fb9c35582b0c",
    "retrieval-colberter-data/tasb_dim768_hf/dbpedia-entity_top10.txt": "aa9305c8b6f9241f05502af45a12374050ff8d949674df473432e3b73307dd80",
    "retrieval-colberter-data/tasb_dim768_hf/nfcorpus_top10.txt": "212e916834f7f546d5d01a9123b04cff2d470b9ee86078808e26acb3042ccdf3",
    "retrieval-colberter-data/tasb_dim768_hf/trec-covid_top10.txt": "ea0be4cdabbc322ba54ecbcbb714cd820d467eef47e34be218bcb754dfe143a1",
    "retrieval-colberter-data/tasb_dim768_hf/trec_podcast_top10.txt": "16df7c02deead00b141d06e388e778ff1a978bc415e075a1dc02b3533eb7ac78",
    "retrieval-colberter-data/tasb_dim768_hf/tripclick_top10.txt": "88f08de53082ecabaec954e98ef3603c4726a57332a5be946a9f7effc9f9e64d",
}


@literal_signature
def fetch_ranger(
    name: RangerExample | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    data_home: str | os.PathLike[str] | None = None,
    progressbar: bool = False,
) -> Path:
    """The folder of Ranger's published example data, downloaded once if need be.

    Ranger's repository (github.com/MeteSertkan/ranger) publishes the per-query
    data of its paper's two studies in ``examples/``:
    ``classification-glue-data`` (per-example accuracy of BERT and DistilBERT
    on seven GLUE tasks, with Ranger's ``config.yaml``) and
    ``retrieval-colberter-data`` (TREC runs of TAS-B and Uni-ColBERTer and the
    qrels of six collections, with its ``config.yaml``). Where they come from,
    in this order:

    1. ``path``, a local copy: a folder holding those two sub-folders (a clone
       of the repository's ``examples/``, say). Nothing is downloaded.
    2. The environment variable ``RANGER_DATA``, naming such a folder. Nothing
       is downloaded.
    3. Otherwise the files (8.4 MB in all) are downloaded with pooch from the
       repository at the pinned commit ``COMMIT``, each checked against
       its SHA-256 in ``REGISTRY``, into ``data_home`` (by default pooch's
       cache folder for metaeval, e.g. ``~/.cache/metaeval`` on Linux), under
       ``ranger-1711341/``. A later call finds them there, checks their hashes
       and downloads nothing; a file whose hash differs is downloaded again.
       Needs pooch: ``pip install "metaeval[datasets]"`` (or
       ``"metaeval[notebooks]"``, which installs everything the notebooks need).

    Parameters
    ----------
    name : {"classification-glue-data", "retrieval-colberter-data"}, optional
        One example folder: only its files are fetched or checked, and its path
        is returned. By default both, and the folder holding them is returned.
    path : path, optional
        A local copy to use instead of downloading (takes precedence over
        ``RANGER_DATA``).
    data_home : path, optional
        Where downloads are kept; by default pooch's cache folder for metaeval.
    progressbar : bool, default False
        Show a download progress bar per file (needs tqdm).

    Returns
    -------
    pathlib.Path
        The absolute path of the folder holding ``classification-glue-data/``
        and ``retrieval-colberter-data/``, or with ``name`` of that folder.
        Read its ``config.yaml`` with :func:`metaeval.io.read_ranger`.

    Raises
    ------
    metaeval.FormatError
        When the local copy (``path`` or ``RANGER_DATA``) is not a folder or
        lacks files of the example data; the message names them.
    metaeval.OptionError
        For a ``name`` that is not one of the two folders.
    ImportError
        When a download is needed and pooch is not installed.
    OSError
        When a download fails (no network, say): the message tells how to
        use a local copy instead.
    ValueError
        From pooch, when a downloaded file's SHA-256 is not the pinned one
        (the file is not kept).

    Notes
    -----
    Robust04, the seventh collection of the paper's retrieval study, is left
    out: its qrels are not among the files whose hashes metaeval checks, and
    its runs cannot be evaluated without them. The retrieval ``config.yaml``
    names it, and the qrels of Touché, which the repository never had: read it
    with ``read_ranger(..., missing_files="skip")``, which leaves both out with
    a warning naming them. A local copy is checked for the files' presence only (a clone
    may have other line endings); other files in it (Robust04's) are read as
    any others.

    The data are unchanged copies of the repository's files, published under
    the Apache License 2.0 by Sertkan, Althammer and Hofstätter (2023).

    References
    ----------
    Sertkan, M., Althammer, S. & Hofstätter, S. (2023). Ranger: A toolkit for
    effect-size based multi-task evaluation. In *Proceedings of the 61st Annual
    Meeting of the ACL (Volume 3: System Demonstrations)*, 581–587.
    https://doi.org/10.18653/v1/2023.acl-demo.56

    Examples
    --------
    With ``RANGER_DATA`` naming a local copy nothing is downloaded (that is how
    these examples run offline); without it the first call downloads.

    >>> from metaeval.datasets import fetch_ranger
    >>> from metaeval.io import read_ranger
    >>> root = fetch_ranger()
    >>> sorted(p.name for p in root.iterdir() if p.is_dir())
    ['classification-glue-data', 'retrieval-colberter-data']

    The paper's GLUE table: DistilBERT against BERT, the paired SMD pooled by
    DerSimonian–Laird with normal intervals (the paper publishes
    −0.054860 [−0.078603, −0.031118]):

    >>> glue = fetch_ranger("classification-glue-data")
    >>> scores = read_ranger(glue / "config.yaml", metric="accuracy")
    >>> table = scores.meta.analyze(control="bert", effect="smd", method="DL", test="z")
    >>> table.loc[table["task"] == "summary", ["effect", "ci_low", "ci_high"]].round(4)
       effect  ci_low  ci_high
    7 -0.0549 -0.0786  -0.0312

    A local copy can be named directly too; one that is not a copy is refused:

    >>> fetch_ranger(path=glue)
    Traceback (most recent call last):
    ...
    metaeval.errors.FormatError: ...classification-glue-data: holds no 'classification-glue-data' or 'retrieval-colberter-data' folder; it looks like one itself: pass the folder that holds it. Expected ...
    """
    if name is not None:
        check_option("name", name, EXAMPLES)
    folders = EXAMPLES if name is None else (name,)
    files = [f for f in REGISTRY if f.split("/", 1)[0] in folders]
    if path is not None:
        root = _local_copy(path, files, folders, "path")
    elif os.environ.get("RANGER_DATA"):
        root = _local_copy(os.environ["RANGER_DATA"], files, folders, "RANGER_DATA")
    else:
        root = _download(files, data_home, progressbar)
    return root if name is None else root / name


LAYOUT = (
    "a folder holding classification-glue-data/ and retrieval-colberter-data/ as in the "
    f"examples/ folder of github.com/MeteSertkan/ranger at commit {COMMIT[:7]}"
)


def _local_copy(
    folder: str | os.PathLike[str], files: list[str], folders: tuple[str, ...], origin: str
) -> Path:
    """``folder`` as an absolute path, or FormatError naming what it lacks of ``files``."""
    root = Path(os.path.abspath(os.path.expanduser(folder)))
    given = (
        "the `path` argument"
        if origin == "path"
        else "the environment variable RANGER_DATA; unset it to download the data"
    )
    expected = f"{LAYOUT} (given by {given})"
    if not root.is_dir():
        problem = "does not exist" if not root.exists() else "is not a folder"
        raise FormatError(root, None, problem, expected)
    absent = [f for f in folders if not (root / f).is_dir()]
    if absent:
        problem = f"holds no {' or '.join(map(repr, absent))} folder"
        if len(absent) == len(folders) and (
            root.name in EXAMPLES or (root / "config.yaml").is_file()
        ):
            problem += "; it looks like one itself: pass the folder that holds it"
        raise FormatError(root, None, problem, expected)
    missing = [f for f in files if not (root / f).is_file()]
    if missing:  # as many as a message holds, then how many more
        head = f"lacks {len(missing)} of the {len(files)} files of Ranger's example data: "
        shown: list[str] = []
        for i, f in enumerate(missing):
            rest = len(missing) - i - 1
            more = f" and {rest} more" if rest else ""
            if shown and len(head + ", ".join([*shown, repr(f)]) + more) > MESSAGE_LIMIT:
                break
            shown.append(repr(f))
        rest = len(missing) - len(shown)
        more = f" and {rest} more" if rest else ""
        raise FormatError(root, None, head + ", ".join(shown) + more, expected)
    return root


def _download(
    files: list[str], data_home: str | os.PathLike[str] | None, progressbar: bool
) -> Path:
    """Fetch ``files`` with pooch (hash-checked; cached files are only checked) into the cache."""
    try:
        import pooch
    except ImportError:
        raise ImportError(
            "Downloading Ranger's example data needs pooch, which is not installed: "
            'pip install "metaeval[datasets]" (or "metaeval[notebooks]" for everything the '
            "notebooks need). Or set RANGER_DATA to a local copy of the examples/ folder of "
            "github.com/MeteSertkan/ranger (or pass path=...), which needs no download."
        ) from None
    home = pooch.os_cache("metaeval") if data_home is None else os.path.expanduser(data_home)
    root = Path(os.path.abspath(home)) / f"ranger-{COMMIT[:7]}"
    fetcher = pooch.create(
        path=root,
        base_url=BASE_URL,
        registry={f: f"sha256:{REGISTRY[f]}" for f in files},
        retry_if_failed=2,
    )
    downloader = pooch.HTTPDownloader(progressbar=progressbar, timeout=60)
    with _quiet(pooch.get_logger()):  # one line per file would drown a notebook's output
        for f in files:
            try:
                fetcher.fetch(f, downloader=downloader)
            except OSError as err:
                raise OSError(
                    f"Could not download {BASE_URL}{f} into {root}: {err}. Without network, "
                    "copy the examples/ folder of github.com/MeteSertkan/ranger (at commit "
                    f"{COMMIT[:7]}) and set RANGER_DATA to it, or pass path=..."
                ) from err
    return root


@contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """Only warnings and errors from ``logger`` for the duration."""
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)
