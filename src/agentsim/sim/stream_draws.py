"""The per-token random numbers of streams: chunk and sentence sizes, gap jitter, stall processes.

A call's stream needs random numbers whose count depends on its length (a jitter weight per gap, a
size per chunk or sentence, a place and a length per stall). They come from streams keyed like every
other draw, ``SeedSequence(seed, spawn_key=(block, node, purpose, instance slot))``, and are filled
**token-major**: row ``j`` holds the ``j``-th number of every run of the block. Drawing more rows never
changes the first ones, so a call's numbers depend neither on the other calls nor on how many rows a
batch needed (the DES asks for one call at a time, the fast path for all the runs of a slot at once,
and both read the same numbers).

A block keeps the rows it drew (``Block.stream_cache``, up to :data:`CACHE_BYTES`) for the engines'
repeated look-ups; beyond that they are drawn again, which gives the same numbers.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CACHE_BYTES", "columns", "group_sizes", "sizes", "token_rows"]

CACHE_BYTES = 128 << 20  # per-token draws kept per block for the engines' repeated look-ups (beyond: redrawn)


def token_rows(block, key_node: int, purpose: int, flat: int, rows: int, cache: bool) -> np.ndarray:
    """Standard normals ``(rows, block.n)`` of one instance slot, token-major (row j: j-th draw of each run)."""
    key = (key_node, purpose, flat)
    store = block.stream_cache
    z = store.get(key)
    if z is None or z.shape[0] < rows:
        seq = np.random.SeedSequence(block.seed, spawn_key=(block.index, key_node, purpose, flat))
        z = np.random.Generator(np.random.PCG64(seq)).standard_normal((max(rows, 1), block.n))
        if cache:  # the same numbers either way: the cache only saves drawing them again
            used = store.get("_bytes", 0) - (store[key].nbytes if key in store else 0)
            if used + z.nbytes <= CACHE_BYTES:
                store[key] = z
                store["_bytes"] = used + z.nbytes
    return z[:rows]


def columns(z: np.ndarray, runs: np.ndarray, n: int) -> np.ndarray:
    """``z[:, runs].T``, without a copy when ``runs`` is every run in order."""
    if len(runs) == n and (n == 0 or (runs[0] == 0 and runs[-1] == n - 1)):
        return z.T
    return z[:, runs].T


def sizes(sampler, block, key_node: int, purpose: int, flat: int, runs: np.ndarray, rows: int, cache: bool):
    """Group sizes (chunks or sentences), ``(len(runs), rows)`` whole numbers >= 1."""
    if sampler.is_constant:
        size = max(1, int(np.rint(sampler.constant_value)))
        return np.full((len(runs), rows), size, dtype=np.int64)
    z = columns(token_rows(block, key_node, purpose, flat, rows, cache), runs, block.n)
    return np.maximum(np.rint(sampler.transform(z)), 1).astype(np.int64)


def group_sizes(sampler, block, key_node, purpose, flat, runs, N, cache) -> np.ndarray:
    """Group sizes covering each call's ``N`` tokens: a first guess of rows from the mean, all rows if short."""
    width = max(int(N.max()) if len(N) else 1, 1)
    if not sampler.is_constant:
        guess = min(width, 2 * math.ceil(width / max(sampler.mean, 1.0)) + 8)
        got = sizes(sampler, block, key_node, purpose, flat, runs, guess, cache)
        if guess == width or bool(np.all(got.sum(axis=1) >= N)):
            return got
    return sizes(sampler, block, key_node, purpose, flat, runs, width, cache)
