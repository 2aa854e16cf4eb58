"""Reproducible resampling for many paired tests at once.

The random numbers for task *t* and resamples ``128·j … 128·j + 127`` come from
their own Philox stream, seeded by ``SeedSequence(seed, spawn_key=(crc32(t), j))``.
A resample is therefore a function of the seed, the task's name and its number
only — not of the chunk it is computed in, the thread that computes it, the
process, or the other tasks in the table — and the same ``seed`` gives the same
p-values however the work is split.

Tasks are laid out as ``(tasks, queries)`` batches (tasks of similar size share a
batch), so that one batched matrix product of random signs or resample counts
(``tasks × resamples × queries``) with the differences (``tasks × queries ×
pairs``) gives the statistics of every resample for every pair of every task.
Work is split into chunks of bounded memory; a progress bar on stderr reports
long runs.

The randomization test's sign flips are evaluated per task and chunk of resamples
(:func:`sign_bits`, :func:`run_items`): each work item is one single-threaded BLAS
product, and the items run on as many Python threads as BLAS had (numpy releases
the GIL in them). OpenBLAS's own threads split every product in two and wait for
each other, which on a busy machine (other processes on the other core) made a
product 3–5× slower than one thread alone; an item that a free thread picks up
waits for nothing. The counts of every item are summed in a fixed order, so the
p-values do not depend on the number of threads. Limiting BLAS takes threadpoolctl
(``pip install 'metaeval[speed]'``; scikit-learn brings it too); without it the items
run one after the other on BLAS's own threads, with the same p-values.
"""

from __future__ import annotations

import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._layout import BLOCK, Layout

RES_BLOCK = 128
"""Resamples per random stream (and the granularity of resample chunks)."""

CHUNK_BYTES = 64 * 2**20


def chunks(n_resamples: int, bytes_per_resample: int) -> list[tuple[int, int]]:
    """Ranges ``(b0, b1)`` of resamples whose arrays take about :data:`CHUNK_BYTES`.

    Every range but the last is a multiple of :data:`RES_BLOCK` long, so ranges
    start at stream boundaries (see :func:`draws`).
    """
    step = max(1, CHUNK_BYTES // max(bytes_per_resample, 1) // RES_BLOCK) * RES_BLOCK
    return [(b, min(n_resamples, b + step)) for b in range(0, n_resamples, step)]


def _generator(seed: int, task: str, block: int) -> np.random.Generator:
    key = zlib.crc32(task.encode("utf-8"))
    return np.random.Generator(
        np.random.Philox(np.random.SeedSequence(seed, spawn_key=(key, block)))
    )


def _block(kind: str, seed: int, task: str, block: int, n: int) -> np.ndarray:
    """RES_BLOCK resamples of a task with n queries: 0/1 signs or bootstrap counts."""
    gen = _generator(seed, task, block)
    if kind == "signs":
        words = -(-n // 64)
        raw = gen.bit_generator.random_raw(RES_BLOCK * words).astype("<u8")
        bits = np.unpackbits(
            raw.view(np.uint8).reshape(RES_BLOCK, words * 8), axis=1, bitorder="little"
        )
        return bits[:, :n]
    picks = gen.integers(0, n, size=(RES_BLOCK, n))
    flat = picks + (np.arange(RES_BLOCK) * n)[:, None]
    return np.bincount(flat.ravel(), minlength=RES_BLOCK * n).reshape(RES_BLOCK, n)


def sign_bits(seed: int, task: str, n: int, b0: int, b1: int, out: np.ndarray) -> np.ndarray:
    """Sign bits of resamples ``b0 … b1 − 1`` of one task with n queries, written into ``out``.

    ``out`` is a float ``(b1 − b0, n)`` array (reused between calls, so that no page is
    allocated per chunk); the bits are those of :func:`draws` ``("signs", ...)`` for the task,
    without its padding. ``b0`` is a multiple of :data:`RES_BLOCK`.
    """
    words = -(-n // 64)
    for j in range(b0 // RES_BLOCK, -(-b1 // RES_BLOCK)):
        lo, hi = j * RES_BLOCK, min(b1, (j + 1) * RES_BLOCK)
        raw = _generator(seed, task, j).bit_generator.random_raw(RES_BLOCK * words).astype("<u8")
        bytes_ = raw.view(np.uint8).reshape(RES_BLOCK, words * 8)[: hi - lo]
        bits = np.unpackbits(bytes_, axis=1, count=n, bitorder="little")
        np.copyto(out[lo - b0 : hi - b0], bits)
    return out


def item_chunks(total: int, n: int) -> list[tuple[int, int]]:
    """Ranges of resamples for one work item of a task with n queries: a float array of
    their signs takes about :data:`ITEM_BYTES` (at least :data:`RES_BLOCK` resamples)."""
    step = max(1, ITEM_BYTES // max(8 * n, 1) // RES_BLOCK) * RES_BLOCK
    return [(b, min(total, b + step)) for b in range(0, total, step)]


ITEM_BYTES = 8 * 2**20
"""The float sign array of one work item (resamples × queries × 8 bytes): cache-sized."""


def _blas_threads() -> tuple[Any, int]:
    """Limit BLAS to one thread; return the limiter (None when that did not take) and how
    many threads BLAS had (the most of any BLAS library loaded)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # optional (the "speed" extra): BLAS keeps its own threads
        return None, 1
    blas = ThreadpoolController().select(user_api="blas")
    before = max((lib.num_threads for lib in blas.lib_controllers), default=0)
    if before <= 1:
        return None, 1
    limiter = blas.limit(limits=1)
    if any(lib.get_num_threads() != 1 for lib in blas.lib_controllers):
        limiter.restore_original_limits()  # e.g. a BLAS that ignores the call
        return None, 1
    return limiter, before


@contextmanager
def single_threaded_blas() -> Iterator[int]:
    """BLAS on one thread for the duration; yields how many threads it had before (1 where
    it was not limited).

    Only from the main thread: OpenBLAS ignores a thread count set on another thread
    once the main thread has set one (seen with 0.3.31), so a limit set there might
    not be restorable. Elsewhere (a dask worker's thread, say) BLAS is left as it is
    and 1 is yielded: the items then run one after the other, on BLAS's own threads.
    """
    if threading.current_thread() is not threading.main_thread():
        yield 1
        return
    limiter, threads = _blas_threads()
    try:
        yield threads
    finally:
        if limiter is not None:
            limiter.restore_original_limits()


class Scratch(threading.local):
    """Float buffers owned by one thread of :func:`run_items`, reused while large enough."""

    def buffer(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        size = int(np.prod(shape))
        held = self.__dict__.get(name)
        if held is None or held.size < size:
            held = self.__dict__[name] = np.empty(size)
        return held[:size].reshape(shape)


def run_items(
    work: Callable[[Any, Scratch], Any], items: Iterable[Any], done: Callable[[], None]
) -> list:
    """``[work(item, scratch) for item in items]`` on single-threaded BLAS and as many
    Python threads as BLAS had (see :func:`single_threaded_blas`); ``done()`` is called on
    the calling thread after each item.

    ``scratch`` holds the buffers of the thread that runs the item (freed when the run
    ends); results come back in the order of ``items``, so that sums over them do not
    depend on the threads.
    """
    items = list(items)
    scratch = Scratch()
    with single_threaded_blas() as threads:
        threads = min(threads, len(items))
        if threads <= 1:
            out = []
            for item in items:
                out.append(work(item, scratch))
                done()
            return out
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(threads, thread_name_prefix="metaeval") as pool:
            futures = [pool.submit(work, item, scratch) for item in items]
            try:
                for future in futures:
                    future.result()
                    done()
            except BaseException:  # an item's error, or Ctrl-C: drop the items not started
                pool.shutdown(cancel_futures=True)
                raise
        return [future.result() for future in futures]


def draws(
    kind: str, seed: int, tasks: list[str], n: np.ndarray, width: int, b0: int, b1: int
) -> np.ndarray:
    """Resamples ``b0 … b1 − 1`` of every task as a ``(tasks, b1 − b0, width)`` float array.

    Task i uses its first ``n[i]`` columns; the rest are 0. ``b0`` is a multiple
    of :data:`RES_BLOCK`.
    """
    out = np.zeros((len(tasks), b1 - b0, width))
    for i, (task, size) in enumerate(
        zip(tasks, n, strict=True)
    ):  # one random stream per task block
        for j in range(b0 // RES_BLOCK, -(-b1 // RES_BLOCK)):
            lo, hi = j * RES_BLOCK, min(b1, (j + 1) * RES_BLOCK)
            out[i, lo - b0 : hi - b0, :size] = _block(kind, seed, task, j, int(size))[: hi - lo]
    return out


def permutations(
    seed: int, tasks: list[str], n: np.ndarray, width: int, k: int, b0: int, b1: int
) -> np.ndarray:
    """Random permutations of k items for every query of every task and resample.

    Returns ``(tasks, b1 − b0, width, k)`` indices (the order of random keys from
    the task's stream for each resample block). ``b0`` is a multiple of
    :data:`RES_BLOCK`; queries past a task's end get the identity.
    """
    out = np.broadcast_to(np.arange(k), (len(tasks), b1 - b0, width, k)).copy()
    for i, (task, size) in enumerate(zip(tasks, n, strict=True)):
        for j in range(b0 // RES_BLOCK, -(-b1 // RES_BLOCK)):
            lo, hi = j * RES_BLOCK, min(b1, (j + 1) * RES_BLOCK)
            keys = _generator(seed, task, j).random((RES_BLOCK, int(size), k))[: hi - lo]
            out[i, lo - b0 : hi - b0, :size] = np.argsort(keys, axis=-1)
    return out


@dataclass
class TaskBatch:
    """Tasks of similar size, their queries as rows of the layout (−1: padding)."""

    tasks: np.ndarray  # task indices into the layout
    rows: np.ndarray  # (tasks, width) layout row of every query, −1 past the task's end
    n: np.ndarray  # queries of each task


def task_batches(lay: Layout) -> Iterator[TaskBatch]:
    """The tasks' query rows, tasks grouped by power-of-two size classes."""
    row_task = np.repeat(lay.block_task, BLOCK)  # the task of every layout row
    real = np.flatnonzero(lay.mask.any(axis=(0, 1)))  # rows holding a score; tasks contiguous
    n = np.bincount(row_task[real], minlength=len(lay.tasks))
    first = np.r_[0, np.cumsum(n)[:-1]]
    size_class = np.ceil(np.log2(np.maximum(n, 1)))
    for cls in np.unique(size_class[n > 0]):
        tasks = np.flatnonzero((size_class == cls) & (n > 0))
        width = int(n[tasks].max())
        column = np.arange(width)[None, :]
        inside = column < n[tasks][:, None]
        rows = np.full((len(tasks), width), -1)
        rows[inside] = real[(first[tasks][:, None] + column)[inside]]
        yield TaskBatch(tasks, rows, n[tasks])


class Progress:
    """A progress bar on stderr (rich) for runs longer than a few seconds.

    ``enabled=None`` shows it once the run has taken 3 s and only when stderr
    is a terminal; True always shows it (on a non-terminal, one final line);
    False never.
    """

    def __init__(self, total: int, label: str, enabled: bool | None):
        self.total, self.label, self.done = max(total, 1), label, 0
        self.start = time.perf_counter()
        self.enabled = enabled
        self.bar: Any = None

    def step(self, amount: int = 1) -> None:
        self.done += amount
        if self.bar is None:
            elapsed = time.perf_counter() - self.start
            show = (
                self.enabled if self.enabled is not None else (elapsed > 3 and sys.stderr.isatty())
            )
            if not show:
                return
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=self.total)
        self.bar.update(self.task, completed=self.done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
