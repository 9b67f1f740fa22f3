"""Pieces of work in this process and in a local process pool come back in the order of the items.

``ordered_chunks`` hands consecutive chunks back with their results; whatever the executor, the
chunks laid end to end are the items, and ``ordered_map`` flattens them in order. The expected
values are computed here (powers of 2), independently of the executors.
"""

from __future__ import annotations

import pytest

from agentsim.sim.executors import MAX_CHUNK, ordered_chunks, ordered_map


def _powers(base: int, chunk: list[int]) -> list[int]:
    return [base**i for i in chunk]


@pytest.mark.parametrize("workers", [1, 2])
def test_chunks_are_consecutive_and_their_results_in_order(workers):
    items = list(range(100))
    got = list(ordered_chunks(_powers, 2, items, workers=workers))
    assert [i for chunk, _ in got for i in chunk] == items
    assert all(out == [2**i for i in chunk] for chunk, out in got)
    sizes = {len(chunk) for chunk, _ in got[:-1]}
    if workers == 1:  # one process: one item a chunk
        assert sizes == {1}
    else:  # a pool: at least TASKS_PER_THREAD (8) chunks per worker, at most MAX_CHUNK items each
        assert max(sizes) <= MAX_CHUNK and len(got) >= 2 * 8


@pytest.mark.parametrize("workers", [1, 2])
def test_ordered_map_flattens_the_chunks_in_order(workers):
    assert list(ordered_map(pow, 3, list(range(20)), workers=workers)) == [pow(3, i) for i in range(20)]
