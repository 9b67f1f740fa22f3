"""The vectorised streaming rules against a plain, token-by-token reading of DESIGN.md §3.2.

agentsim.sim.streaming computes readers in closed form, speech as a loop over sentences vectorised over
calls, chunk deliveries with a reversed running minimum and the QoE from row sums. Here every rule is
re-implemented the obvious way (one Python loop per token, one call at a time) on random timelines,
and both must agree to rounding.
"""

from __future__ import annotations

import numpy as np
import pytest

from agentsim.consumers.reader import ReaderCfg
from agentsim.consumers.speech import SpeechCfg
from agentsim.sim.stream_metrics import consumer_metrics
from agentsim.sim.streaming import StreamBatch


def _reader(d, t0, r):
    f, wait = t0, 0.0
    for a in d:
        wait += max(0.0, a - f)
        f = max(a, f) + 1 / r
    return f - t0, wait


def _speech(d, t0, sizes, fa, rate):
    ends = np.cumsum(sizes)
    s_prev = dur_prev = None
    silence, longest = 0.0, 0.0
    first = None
    for k, (e, size) in enumerate(zip(ends, sizes, strict=True)):
        b = d[e - 1] + fa
        s = b if k == 0 else max(b, s_prev + dur_prev)
        if k == 0:
            first = s
        else:
            gap = s - (s_prev + dur_prev)
            silence += gap
            longest = max(longest, gap)
        s_prev, dur_prev = s, size / rate
    return d[ends[0] - 1] - t0, first - t0, silence, longest, s_prev + dur_prev - t0


def _qoe(d, t0, T, v):
    x = [t0 + T + i / v for i in range(len(d))]
    u = [max(a, b) for a, b in zip(d, x, strict=True)]
    end = max(u)
    whole = sum(end - b for b in x)
    return 1.0 if whole <= 0 else sum(end - b for b in u) / whole


def _gaps(d, starts):
    return [d[i] - d[i - 1] for i in range(1, len(d)) if starts[i]]


def _random_batch(rng, C=40, width=60):
    N = rng.integers(1, width + 1, C)
    send = rng.uniform(0, 5, C)
    D = np.full((C, width), np.nan)
    starts = np.zeros((C, width), dtype=bool)
    for c in range(C):
        a = send[c] + rng.uniform(0.1, 3) + np.cumsum(rng.exponential(0.1, N[c]))
        # random chunks: each token ends its group with probability 0.4 (and the last always does)
        ends = rng.random(N[c]) < 0.4
        ends[-1] = True
        d = a.copy()
        last = N[c] - 1
        for i in range(N[c] - 1, -1, -1):
            if ends[i]:
                last = i
            d[i] = a[last]
        first_end = int(np.argmax(ends))
        d[: first_end + 1] = a[0]
        D[c, : N[c]] = d
        starts[c, 0] = True
        starts[c, 1 : N[c]] = d[1:] != d[:-1]
        starts[c, N[c] :] = True
    return StreamBatch(D.copy(), D, N, starts, send, np.nanmax(D, axis=1)), N


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_reader_gaps_and_qoe_match_the_token_loop(seed):
    rng = np.random.default_rng(seed)
    sb, N = _random_batch(rng)
    cons = ReaderCfg("reader", 7.0, qoe_ttft=1.5, qoe_rate=6.0)
    m = consumer_metrics(cons, sb, N)
    for c in range(len(N)):
        d = sb.D[c, : N[c]]
        done, wait = _reader(d, sb.send[c], 7.0)
        assert m["reader_done_s"][c] == pytest.approx(done, abs=1e-9)
        assert m["reader_wait_s"][c] == pytest.approx(wait, abs=1e-9)
        assert m["ttft_s"][c] == pytest.approx(d[0] - sb.send[c])
        g = _gaps(d, sb.chunk_start[c])
        assert m["longest_gap_s"][c] == pytest.approx(max(g) if g else 0.0)
        assert m["gaps_over_250ms"][c] == sum(x > 0.25 for x in g)
        if g:
            assert m["itl_p50_s"][c] == pytest.approx(np.percentile(g, 50))
            assert m["itl_p99_s"][c] == pytest.approx(np.percentile(g, 99))
        assert m["qoe"][c] == pytest.approx(_qoe(d, sb.send[c], 1.5, 6.0), abs=1e-9)


@pytest.mark.parametrize("seed", [4, 5])
def test_speech_matches_the_sentence_loop(seed):
    rng = np.random.default_rng(seed)
    sb, N = _random_batch(rng)
    sizes = np.zeros((len(N), int(N.max())), dtype=np.int64)
    for c in range(len(N)):
        left, k = int(N[c]), 0
        while left > 0:
            s = min(int(rng.integers(1, 12)), left)
            sizes[c, k], left, k = s, left - s, k + 1
    fa = rng.uniform(0, 0.5, len(N))
    m = consumer_metrics(SpeechCfg("speech", 4.0), sb, N, {"sentences": sizes, "first_audio": fa})
    for c in range(len(N)):
        sz = [int(x) for x in sizes[c] if x > 0]
        ref = _speech(sb.D[c, : N[c]], sb.send[c], sz, fa[c], 4.0)
        got = [
            m[k][c] for k in ("first_sentence_s", "first_audio_s", "silence_s", "longest_silence_s", "speech_done_s")
        ]
        assert got == pytest.approx(list(ref), abs=1e-9)


def test_truncated_answers_use_only_the_delivered_tokens():
    rng = np.random.default_rng(9)
    sb, N = _random_batch(rng)
    n = np.maximum(N // 2, 1)
    m = consumer_metrics(ReaderCfg("reader", 3.0), sb, n)
    for c in range(len(N)):
        done, _ = _reader(sb.D[c, : n[c]], sb.send[c], 3.0)
        assert m["reader_done_s"][c] == pytest.approx(done, abs=1e-9)


def test_arrivals_stall_and_chunks_match_the_formulas():
    from types import SimpleNamespace

    from agentsim.plan.compiler import StreamCfg
    from agentsim.plan.distributions import Sampler
    from agentsim.sim.call_timeline import CallSlot, CallTimeline
    from agentsim.sim.stalls import stall_position
    from agentsim.sim.streaming import streams

    rng = np.random.default_rng(11)
    C = 30
    N = rng.integers(1, 50, C)
    send = rng.uniform(0, 10, C)
    a1 = send + rng.uniform(0.2, 2, C)
    stall = np.where(rng.random(C) < 0.5, rng.uniform(0.5, 3, C), 0.0)
    u = rng.random(C)
    end = a1 + N / rng.uniform(5, 50, C) + stall
    c = 3
    tier = SimpleNamespace(stream=StreamCfg(Sampler("constant", {"value": float(c)}), 0.0, 0.5, None))
    node = SimpleNamespace(id=0)
    # the timeline as the engines hand it on: first visible token at a1 (no reasoning), the end given
    tl = CallTimeline(send, a1 - send, N, 0.0, 1.0, None, stall, end)
    sb = streams(tier, CallSlot(None, node, 0, np.arange(C)), tl, u)
    k = stall_position(u, N)
    for j in range(C):
        n = int(N[j])
        gap = (end[j] - stall[j] - a1[j]) / max(n - 1, 1)
        a = [a1[j] + i * gap + (stall[j] if i + 1 > k[j] else 0.0) for i in range(n)]
        if n >= 2:
            a[-1] = end[j]
        assert sb.A[j, :n] == pytest.approx(a, abs=1e-9)
        # groups of c: the group's last token's arrival, the first group at a_1
        d = [a[0] if i < c else a[min((i // c + 1) * c, n) - 1] for i in range(n)]
        assert sb.D[j, :n] == pytest.approx(d, abs=1e-9)
        assert np.isnan(sb.A[j, n:]).all()
        if stall[j] and n >= 2:
            assert 1 <= k[j] <= n - 1
