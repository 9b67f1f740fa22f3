"""Synthetic measurements of a streaming model with known chunking, gap jitter and stalls.

Independent of :mod:`agentsim.sim.streaming`: the model of DESIGN.md §3.2 written out per request.
A request's ``N`` tokens arrive from the first token on over its decode time ``N / tps`` (the
speeds and TTFTs of :func:`measurement_formats.draw`): the ``N - 1`` token gaps are weights ``w``
(lognormal, mean 1, CV ``jitter_cv``) scaled to add up to the decode time. Tokens are delivered in
groups (``chunk``: a constant, or ``(low, high)`` for whole sizes drawn uniformly), each group when
its last token arrives, the first group at the first token. The stalls are a process (DESIGN.md §3.3):
before each delivery after the first, with probability ``stall_per_chunk``, the stream pauses for
``stall_s`` seconds (a constant, or ``(low, high)``: uniform): that delivery, the later ones and the
end move. The gaps the client sees are those between deliveries; the latency includes the pauses,
so the speed a file implies (``N / decode``) is lower than the drawn one for stalled requests.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from measurement_formats import Sample, Truth, draw


@dataclass(frozen=True)
class StreamTruth:
    chunk: int | tuple[int, int] = 1
    jitter_cv: float = 0.4
    stall_per_chunk: float = 0.0
    stall_s: float | tuple[float, float] = 0.0

    @property
    def stall_mean(self) -> float:
        return sum(self.stall_s) / 2 if isinstance(self.stall_s, tuple) else float(self.stall_s)


def delivery_gaps(rng, n: int, decode: float, st: StreamTruth) -> tuple[np.ndarray, float]:
    """The delivery gaps of one request of ``n`` tokens and its total stall pause (0 without)."""
    sigma = np.sqrt(np.log1p(st.jitter_cv**2))
    w = rng.lognormal(-0.5 * sigma**2, sigma, n - 1) if st.jitter_cv > 0 else np.ones(n - 1)
    arrive = np.concatenate([[0.0], np.cumsum(w / w.sum() * decode)])  # token i at arrive[i]
    if isinstance(st.chunk, tuple):
        sizes = rng.integers(st.chunk[0], st.chunk[1] + 1, n)
    else:
        sizes = np.full(n, st.chunk)
    last = np.minimum(np.cumsum(sizes), n) - 1  # 0-based last token of each group
    last = np.unique(last)
    deliver = arrive[last]
    deliver[0] = arrive[0]  # the first group shows with the first token
    hit = rng.uniform(size=deliver.size) < st.stall_per_chunk
    hit[0] = False  # no pause before the first delivery
    if isinstance(st.stall_s, tuple):
        pause = np.where(hit, rng.uniform(st.stall_s[0], st.stall_s[1], deliver.size), 0.0)
    else:
        pause = np.where(hit, st.stall_s, 0.0)
    deliver = deliver + np.cumsum(pause)
    return np.diff(deliver), float(pause.sum())


def draw_stream(st: StreamTruth, n_ok: int, seed: int, truth: Truth | None = None) -> tuple[Sample, np.ndarray]:
    """``n_ok`` requests (two failed ones besides) streaming as ``st`` says, and their total stall pauses."""
    s = draw(truth or Truth(), n_ok, 2, seed)
    rng = np.random.default_rng([seed, 1])
    gaps, pauses = [], np.zeros(s.n)
    for i in range(s.n):
        g, pauses[i] = delivery_gaps(rng, int(s.output_tokens[i]), float(s.decode[i]), st)
        gaps.append(list(g))
    decode = s.decode + pauses
    sample = replace(s, gaps=gaps, decode=decode, latency=s.ttft + decode, tps=s.output_tokens / decode)
    return sample, pauses
