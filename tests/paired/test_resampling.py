"""The resampling machinery: sign bits per task, work items on threads, BLAS limits."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from metaeval.paired import _resampling as rs


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.mark.parametrize("n", [1, 63, 64, 65, 300])
@pytest.mark.parametrize(("b0", "b1"), [(0, 128), (0, 1), (128, 300), (256, 1000)])
def test_sign_bits_are_the_tasks_rows_of_draws(n, b0, b1):
    # draws() lays out several tasks, padded to the widest; sign_bits() one task, unpadded
    tasks, sizes = ["a", "Ünïcode task", "c"], np.array([n, 5, n + 7])
    want = rs.draws("signs", 11, tasks, sizes, n + 7, b0, b1)
    out = np.full((b1 - b0, n), 7.0)
    got = rs.sign_bits(11, "Ünïcode task", 5, b0, b1, np.full((b1 - b0, 5), 7.0))
    np.testing.assert_array_equal(got, want[1, :, :5])
    np.testing.assert_array_equal(rs.sign_bits(11, "a", n, b0, b1, out), want[0, :, :n])
    assert set(np.unique(out)) <= {0.0, 1.0} and 0.3 < out.mean() < 0.7 or out.size < 50


def test_item_chunks_cover_the_resamples_in_whole_streams(monkeypatch):
    for total, n in [(10_000, 5000), (10_000, 3), (100, 10**6), (1, 1)]:
        chunks = rs.item_chunks(total, n)
        assert chunks[0][0] == 0 and chunks[-1][1] == total
        assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:], strict=False))
        assert all(b0 % rs.RES_BLOCK == 0 for b0, _ in chunks)
        assert all(
            (b1 - b0) * n * 8 <= max(rs.ITEM_BYTES, rs.RES_BLOCK * n * 8) for b0, b1 in chunks
        )
    monkeypatch.setattr(rs, "ITEM_BYTES", 1)
    assert rs.item_chunks(300, 10) == [(0, 128), (128, 256), (256, 300)]


def test_run_items_keeps_the_order_limits_blas_and_restores_it():
    with threadpool_limits(limits=2, user_api="blas"):
        seen_limits, threads = [], set()

        def work(item, scratch):
            seen_limits.append(_blas_threads())
            threads.add(threading.get_ident())
            buf = scratch.buffer("x", (item % 5 + 1, 3))
            buf[:] = item
            return item * item, float(buf.sum())

        steps = []
        out = rs.run_items(work, range(40), lambda: steps.append(1))
        assert out == [(i * i, 3.0 * i * (i % 5 + 1)) for i in range(40)]
        assert len(steps) == 40
        assert all(limits and set(limits) == {1} for limits in seen_limits)
        assert set(_blas_threads()) == {2}  # restored
        assert len(threads) <= 2
    with threadpool_limits(limits=1, user_api="blas"):  # BLAS had one thread: no pool
        threads.clear()
        rs.run_items(work, range(10), lambda: None)
        assert threads == {threading.get_ident()}


def test_without_threadpoolctl_the_items_run_in_turn_on_blas_threads(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # import threadpoolctl fails
    with threadpool_limits(limits=2, user_api="blas"):
        seen, threads = [], set()

        def work(item, scratch):
            seen.append(_blas_threads())
            threads.add(threading.get_ident())
            return item + 1

        assert rs.run_items(work, range(12), lambda: None) == list(range(1, 13))
        assert threads == {threading.get_ident()}  # no pool: one after the other
        assert all(set(limits) == {2} for limits in seen)  # BLAS left as it was


def test_runs_on_other_threads_leave_blas_alone_and_nested_runs_keep_the_limit():
    with threadpool_limits(limits=2, user_api="blas"):
        seen, inner, ran_on = [], [], set()

        def work(item, scratch):
            seen.append(_blas_threads())
            ran_on.add(threading.get_ident())
            if item == 0:  # a run inside a run: on a worker thread, inline, BLAS still at 1
                rs.run_items(lambda i, s: i, range(3), lambda: None)
                inner.append(_blas_threads())
            return item

        rs.run_items(work, range(8), lambda: None)
        assert {n for x in seen for n in x} == {1} and {n for x in inner for n in x} == {1}
        assert set(_blas_threads()) == {2}
        # from another thread: OpenBLAS would ignore (and never undo) a limit set there
        seen.clear(), inner.clear(), ran_on.clear()
        caller = threading.Thread(target=rs.run_items, args=(work, range(8), lambda: None))
        caller.start()
        caller.join()
        assert {n for x in seen for n in x} == {2} and ran_on == {caller.ident}
        assert set(_blas_threads()) == {2}


def test_an_error_in_an_item_propagates_drops_the_rest_and_restores_blas():
    ran = []

    def work(item, scratch):
        ran.append(item)
        if item == 3:
            raise ValueError("item 3")
        time.sleep(0.002)  # 1000 items take 1 s on two threads: far longer than cancelling
        return item

    with threadpool_limits(limits=2, user_api="blas"):
        with pytest.raises(ValueError, match="item 3"):
            rs.run_items(work, range(1000), lambda: None)
        assert set(_blas_threads()) == {2}
        assert 3 in ran and len(ran) < 1000  # the items not started were cancelled
