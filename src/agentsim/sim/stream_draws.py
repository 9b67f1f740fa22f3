"""The per-token random numbers of streams: chunk and sentence sizes, gap jitter, stall processes.

A call's stream needs random numbers whose count depends on its length (a jitter weight per gap, a
size per chunk or sentence, a place and a length per stall). They come from streams keyed like every
other draw, ``SeedSequence(seed, spawn_key=(block, node, purpose, instance slot))``, and are filled
**token-major**: row ``j`` holds the ``j``-th number of every run of the block. Drawing more rows never
changes the first ones, so a call's numbers depend neither on the other calls nor on how many rows a
batch needed (the DES asks for one call at a time, the fast path for all the runs of a slot at once,
and both read the same numbers).

A block keeps the rows it drew (``Block.stream_cache``) for the engines' repeated look-ups: up to
:data:`CACHE_BYTES` (on the DES, which reads one call's column at a time, up to every instance's
matrices of the calls it streams: ``_budget``), and always the :data:`KEPT` matrices drawn last,
however large (the batches of one instance slot read the same few matrices in turn: drawing a whole
block's rows again for every batch made a long answer's cost grow with the square of its tokens).
Older matrices beyond that are dropped and drawn again when asked for, which gives the same numbers.
The size guard counts what this keeps (:mod:`agentsim.plan.sizeguard`, streamed answers).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "BATCH_ELEMENTS",
    "CACHE_BYTES",
    "KEPT",
    "batch_runs",
    "columns",
    "first_size",
    "group_sizes",
    "sizes",
    "token_rows",
]

BATCH_ELEMENTS = 1 << 21  # calls x tokens streamed at once (memory of one matrix: 16 MiB; one longer answer alone)
CACHE_BYTES = 128 << 20  # per-token draws kept per block for the engines' repeated look-ups (beyond: redrawn)
KEPT = 8  # the matrices drawn last, kept whatever their size (one slot's purposes: gaps, chunks, stalls, sentences)


def batch_runs(longest: int) -> int:
    """How many calls of one instance slot are streamed at once when the longest has ``longest`` tokens: at most
    :data:`BATCH_ELEMENTS` calls x tokens, and at least one call (a longer answer alone). Every rule is per
    call, so a batch's size changes no figure."""
    return max(1, BATCH_ELEMENTS // max(1, longest))


def token_rows(block, key_node: int, purpose: int, flat: int, rows: int, cache: bool) -> np.ndarray:
    """Standard normals ``(rows, block.n)`` of one instance slot, token-major (row j: j-th draw of each run)."""
    key = (key_node, purpose, flat)
    kept = block.stream_cache.setdefault("_rows", {})  # key -> matrix, the least recently drawn first
    z = kept.get(key)
    if z is None or z.shape[0] < rows:
        seq = np.random.SeedSequence(block.seed, spawn_key=(block.index, key_node, purpose, flat))
        z = np.random.Generator(np.random.PCG64(seq)).standard_normal((max(rows, 1), block.n))
        if cache:  # the same numbers either way: the cache only saves drawing them again
            _keep(block.stream_cache, kept, key, z)
    return z[:rows]


def _keep(store: dict, kept: dict, key, z: np.ndarray) -> None:
    """Keep ``z`` as the newest matrix; drop the oldest beyond :data:`CACHE_BYTES` but never the last :data:`KEPT`."""
    old = kept.pop(key, None)
    kept[key] = z
    used = store.get("_bytes", 0) - (0 if old is None else old.nbytes) + z.nbytes
    budget = store.get("_budget", CACHE_BYTES)  # the DES's own: agentsim.plan.sizeguard.des_stream_bytes
    while used > budget and len(kept) > KEPT:
        used -= kept.pop(next(iter(kept))).nbytes
    store["_bytes"] = used


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


def first_size(sampler, block, key_node, purpose, flat, runs, N, cache=False) -> np.ndarray:
    """The first group's size over each call's ``N`` tokens, ``min(g_1, N)`` (a first sentence), without drawing
    the others: the rows are token-major, so the first size does not depend on how many follow."""
    return np.minimum(sizes(sampler, block, key_node, purpose, flat, runs, 1, cache)[:, 0], N)
