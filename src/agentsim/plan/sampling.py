"""All random draws of a simulation, made up front, block by block, the same for every engine.

Replications are processed in *blocks* of :data:`BLOCK_SIZE` runs. For each block
and each sampled quantity of the plan (a :class:`~agentsim.plan.compiler.Draw`: a call's
output tokens, a tool's latency, a repeat's count...) there is one random stream,
seeded by ``SeedSequence(seed, spawn_key=(block, node, purpose))``. The stream
fills an array of standard-normal draws of shape ``(runs_in_block, *instances)``,
where the instance axes are the block's largest counts of the ``repeat``/``fanout``
nodes around it, and the draw's quantile transform turns them into values.

Consequences, all by construction:

* the DES (one run at a time) and the fast path (a whole block at once) read the
  very same numbers, so they agree to the last bit;
* results do not depend on how many worker processes share the blocks;
* variants share every stream (common random numbers): a call moved to another
  model keeps its normal draws and only the TTFT/TPS transform changes;
* a node's numbers do not depend on other nodes, so adding a step leaves the
  other steps' draws alone.

Where a repeat's count or a choose's pick depends on the model a named call runs on (contract v1.1),
every variant transforms the same draws with its own parameter: ``Block.values`` holds variant 0's
array, ``Block.by_variant`` the others that differ, and engines read ``Block.values_for(variant)``.
Provider conditions multiply a call's drawn TTFT and speed by its run's factors in :func:`tier_speeds`.

Draws are made instance-major (``(*instances, runs)`` then transposed), so
run ``r``'s draw for iteration ``i`` does not move when a sweep changes how many
iterations a repeat has.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from agentsim.model.domain import KINDS
from agentsim.plan.memory import tune_malloc
from agentsim.plan.nodes import COND_TPS, COND_TTFT, U_TPS, U_TTFT, Plan
from agentsim.plan.sizeguard import tiers_of

SPEED_FLOOR = KINDS["speed"].lo  # the slowest output speed a draw may take (tokens/s)

__all__ = [
    "BLOCK_SIZE",
    "Block",
    "block_spans",
    "call_speeds",
    "constant_view",
    "late_draw",
    "per_variant",
    "sample_block",
    "unread_speed_draws",
]

BLOCK_SIZE = 4096


def block_spans(runs: int, block_size: int = BLOCK_SIZE) -> list[tuple[int, int, int]]:
    """``(block_index, first_run, n_runs)`` for ``runs`` replications."""
    return [(b, s, min(block_size, runs - s)) for b, s in enumerate(range(0, runs, block_size))]


@dataclass
class Block:
    index: int
    start: int  # index of the first run
    n: int
    dims: dict[int, int]  # repeat/fanout node id -> largest count in the block
    values: dict[tuple[int, int], np.ndarray]  # (node id, purpose) -> (n, *dims of scope)
    speed_cache: dict = field(default_factory=dict)  # (node id, tier) -> (ttft0, tps), see call_speeds
    seed: int = 0  # the scenario seed, for the per-token streams of agentsim.sim.streaming
    stream_cache: dict = field(default_factory=dict)  # per-token draws of agentsim.sim.streaming, by key
    # variant -> {(node id, purpose): array} where a variant's counts or picks differ from ``values``
    # (a repeat's continue_p or a choose's p that depends on a call's model)
    by_variant: dict[int, dict[tuple[int, int], np.ndarray]] = field(default_factory=dict)

    def shape(self, scope: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(self.dims[m] for m in scope)

    def get(self, node: int, purpose: int) -> np.ndarray:
        return self.values[(node, purpose)]

    def values_for(self, variant: int) -> dict[tuple[int, int], np.ndarray]:
        """The draws as variant ``variant`` sees them (``values`` itself when no count or pick differs)."""
        own = self.by_variant.get(variant)
        return {**self.values, **own} if own else self.values


def _normals(seed: int, block: int, node: int, purpose: int, shape: tuple[int, ...], n: int) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(block, node, purpose))))
    z = rng.standard_normal((math.prod(shape), n))
    return np.moveaxis(z.reshape((*shape, n)), -1, 0)


def sample_block(plan: Plan, seed: int, index: int, start: int, n: int) -> Block:
    """Draw every random quantity of ``n`` runs (block ``index``)."""
    tune_malloc()  # large temporaries follow: keep freed memory for reuse (see agentsim.plan.memory)
    dims: dict[int, int] = {}
    values: dict[tuple[int, int], np.ndarray] = {}
    by_variant: dict[int, dict[tuple[int, int], np.ndarray]] = {}
    unread = unread_speed_draws(plan)
    for d in plan.draws:
        if d.late:  # (late_draw)
            continue
        shape = tuple(dims[m] for m in d.scope) + d.extra
        s = d.sampler
        if s is not None and s.is_constant:
            arr = _constant_array(s.constant_value, d.integer, (n, *shape))
        elif (d.node, d.purpose) in unread:  # normals no transform reads: not drawn (their stream is their own)
            arr = _constant_array(0.0, False, (n, *shape))
        else:
            z = _normals(seed, index, d.node, d.purpose, shape, n)
            if s is not None:
                arr = s.transform(z)
                if d.integer:
                    arr = np.rint(arr).astype(np.int64)
            elif d.transform is not None:  # a kind's own transform (a repeat's count, a choose's pick...)
                arr = d.transform(z, d, by_variant)
            else:  # raw normals for TTFT and TPS, transformed per variant (instance-major memory, see tier_speeds)
                arr = z
        if d.counts:  # the instance counts of a repeat or fanout: its axis is the block's largest count
            dims[d.node] = _largest(arr)
            for own in by_variant.values():  # a block's instance axes fit every variant's counts
                if (d.node, d.purpose) in own and own[(d.node, d.purpose)].size:
                    dims[d.node] = max(dims[d.node], int(own[(d.node, d.purpose)].max()))
        values[(d.node, d.purpose)] = arr
    return Block(index, start, n, dims, values, seed=seed, by_variant=by_variant)


def _largest(arr: np.ndarray) -> int:
    """The largest count of a block (0 when it has none). A constant is a broadcast view of one value, read
    without a pass over its elements: a reduction over a view of 10^13 elements would take hours in C, where no
    Ctrl-C is seen."""
    if not arr.size:
        return 0
    if arr.ndim and 0 in arr.strides:
        base = arr[(0,) * arr.ndim] if all(st == 0 for st in arr.strides) else None
        if base is not None:
            return int(base)
    return int(arr.max())


def unread_speed_draws(plan: Plan) -> frozenset[tuple[int, int]]:
    """The raw normals of a call's TTFT or output speed (``U_TTFT``, ``U_TPS``) that no transform reads: every
    tier the call can run on (its variants' and the fallbacks they lead to) has a constant there, whose transform
    ignores its input (:meth:`Sampler.transform`). Such draws are not made: each (block, node, purpose) has a stream
    of its own, so no other draw changes, and the speeds are the same bits. Worked out once per plan (``memo``)."""
    found = plan.memo.get("unread_speed_draws")
    if found is None:
        out = set()
        for node in plan.calls:
            tiers = [plan.tiers[t] for t in tiers_of(node, plan.tiers)]
            if tiers and all(t.ttft.family == "constant" for t in tiers):
                out.add((node.id, U_TTFT))
            if tiers and all(t.output_tps.family == "constant" for t in tiers):
                out.add((node.id, U_TPS))
        found = plan.memo["unread_speed_draws"] = frozenset(out)
    return found


def late_draw(plan: Plan, block: Block, node: int, purpose: int) -> np.ndarray:
    """A ``late`` draw of a block, made when first read: the same stream, shape and transform as
    :func:`sample_block` would have used (a stream is seeded by (block, node, purpose) alone, and a block's
    instance axes are known once it is sampled), so the same values. ``block`` must be the whole block
    as sampled (not the first runs of it: the draws are instance-major)."""
    d = next(d for d in plan.draws if d.node == node and d.purpose == purpose)
    z = _normals(block.seed, block.index, node, purpose, block.shape(d.scope) + d.extra, block.n)
    return d.transform(z, d, {})


def _constant_array(c: float, integer: bool, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only broadcast view of one value: a constant costs no memory per run (and, cached, no
    time per block: blocks of the same size share it)."""
    return constant_view(np.array(np.rint(c) if integer else c, dtype=np.int64 if integer else np.float64), shape)


def constant_view(value, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only broadcast view of one NumPy scalar ``value`` (its dtype kept), made once per value and
    shape: cached by the value's dtype and bits, so -0.0 is not 0.0 and 1 is not 1.0."""
    v = np.asarray(value)
    return _view_of_bits(v.dtype.str, v.tobytes(), shape)


@functools.lru_cache(maxsize=4096)
def _view_of_bits(dtype: str, bits: bytes, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(np.frombuffer(bits, dtype=dtype).reshape(()), shape)


def per_variant(x: np.ndarray, params: tuple, transform, d, by_variant: dict) -> np.ndarray:
    """Variant 0's array of a count or pick whose parameter differs by variant; the others' arrays
    (only where their parameter differs) go to ``by_variant``. Every variant transforms the same
    draws ``x`` (common random numbers)."""
    done: dict = {}

    def key(param):
        return param.tobytes() if isinstance(param, np.ndarray) else id(param) if hasattr(param, "transform") else param

    for v, param in enumerate(params):
        k = key(param)
        if k not in done:
            done[k] = transform(x, param)
        if v > 0 and k != key(params[0]):
            by_variant.setdefault(v, {})[(d.node, d.purpose)] = done[k]
    return done[key(params[0])]


def call_speeds(plan: Plan, block: Block, variant: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per call node: (drawn TTFT x tier's ttft_x, output TPS x tier's output_tps_x) for a variant.

    Transforms are cached on the block per (node, tier), so variants that keep a
    call on the same tier share the arrays instead of recomputing them.
    """
    return {node.id: tier_speeds(plan, block, node, node.tiers[variant]) for node in plan.calls}


def tier_speeds(plan: Plan, block: Block, node, tier_index: int) -> tuple[np.ndarray, np.ndarray]:
    """(drawn TTFT x ttft_x, TPS x output_tps_x) of a call node on a given tier, cached on the block."""
    key = (node.id, tier_index)
    cache = block.speed_cache
    if key not in cache:
        tier = plan.tiers[tier_index]
        # The speed tiers of one model share its TTFT and TPS distributions (a tier only scales them):
        # the transformed draws are made once per (node, model) and shared, never written in place.
        drawn = cache.get(("drawn", node.id, tier.model))
        if drawn is None:
            drawn = (
                _runs_last(tier.ttft.transform, block.get(node.id, U_TTFT)),
                _runs_last(tier.output_tps.transform, block.get(node.id, U_TPS)),
            )
            cache[("drawn", node.id, tier.model)] = drawn
        ttft0 = _times(drawn[0], tier.ttft_x)
        tps = _times(drawn[1], tier.tps_x)
        cond = plan.conditions.get(tier.model)
        if cond is not None:  # provider conditions: one factor per run, shared by the run's calls to the model
            shape = (block.n,) + (1,) * (ttft0.ndim - 1)
            ttft0 = ttft0 * block.get(cond, COND_TTFT).reshape(shape)
            tps = tps * block.get(cond, COND_TPS).reshape(shape)
        # a positive distribution can still underflow to 0.0 (a gamma of tiny shape), and a speed below the
        # domain table's slowest makes decode times overflow: floor it there (agentsim.model.domain)
        tps = np.maximum(tps, SPEED_FLOOR)
        cache[key] = (ttft0, tps)
    return cache[key]


def _runs_last(transform, z: np.ndarray) -> np.ndarray:
    """``transform(z)`` computed in ``z``'s memory order, instances first and runs last (as drawn).

    The result is a ``(runs, *instances)`` view of instance-major memory: the fast path reads one
    repeat iteration of every run at a time, which is then contiguous instead of one element per
    cache line. Element-wise transforms give the same bits in any memory order.
    """
    if z.ndim == 1:
        return transform(z)
    return np.moveaxis(transform(np.moveaxis(z, 0, -1)), -1, 0)


def _times(x: np.ndarray, factor: float) -> np.ndarray:
    """``x * factor``; a factor of 1 changes no bit (``x * 1.0 == x`` in IEEE arithmetic), so it is skipped."""
    return x if factor == 1.0 else x * factor
