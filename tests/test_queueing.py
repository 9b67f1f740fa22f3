"""Queueing in measurements: a simulated capped server, measured above its cap.

The server (a first-come first-served queue with ``cap`` slots, written out below) serves
each request in ``base + input / 20000 + output / 50`` seconds; ``clients`` closed-loop
clients send requests back to back. With more clients than slots, requests wait for a slot.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import pandas as pd

from agentsim.measure.calibrate import calibrate
from agentsim.measure.queueing import find_queueing

NET = 0.05  # seconds of connection set-up before the headers
BASE_MEDIAN, BASE_SIGMA = 0.3, 0.2


def _capped_server(n: int, clients: int, cap: int, queue_before_headers: bool, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    base = BASE_MEDIAN * np.exp(BASE_SIGMA * rng.standard_normal(n))
    inp = rng.integers(500, 8001, n).astype(float)
    out = rng.integers(100, 301, n).astype(float)
    tps = np.full(n, 50.0)
    sends = [(c * 1e-3, c) for c in range(clients)]  # clients start a millisecond apart, as `measure`'s do
    slots = [0.0] * cap
    rows = []
    for i in range(n):
        send, c = heapq.heappop(sends)
        start = max(send + NET, heapq.heappop(slots))  # FIFO: requests are taken in the order sent
        wait = start - (send + NET)
        ttft = NET + wait + base[i] + inp[i] / 20000
        latency = ttft + out[i] / tps[i]
        heapq.heappush(slots, send + latency)
        heapq.heappush(sends, (send + latency, c))
        headers = NET + wait if queue_before_headers else NET
        rows.append((send, headers, ttft, latency, inp[i], out[i]))
    r = np.array(rows)
    return pd.DataFrame(
        {
            "start_s": r[:, 0],
            "headers_s": r[:, 1],
            "ttft_s": r[:, 2],
            "latency_s": r[:, 3],
            "input_tokens": r[:, 4],
            "cached_input_tokens": 0.0,
            "uncached_input_tokens": r[:, 4],
            "output_tokens": r[:, 5],
            "tps": r[:, 5] / (r[:, 3] - r[:, 2]),
            "itl_s": np.nan,
            "gaps_s": None,
            "ok": True,
            "usable": True,
            "reason": None,
            "error": None,
            "model": "m",
            "source_file": "f",
        }
    )


# the TTFT without any wait: NET + base + prefill; its base (prefill removed) has median NET + ... of a
# shifted lognormal: the median of NET + base is NET + BASE_MEDIAN exactly (a monotone shift)
UNQUEUED_MEDIAN = NET + BASE_MEDIAN
# the log-median's standard error on n = 300 requests is about 1.25 x 0.2 / 0.35 x 0.3 / sqrt(300) < 0.02
TOL = 0.08


def test_queue_before_headers_is_taken_out_of_ttft():
    table = _capped_server(300, clients=20, cap=10, queue_before_headers=True)
    assert float(np.median(table["ttft_s"] - table["headers_s"])) < 1.0 < float(np.median(table["headers_s"]))
    q = find_queueing(table)
    assert q.headers_queued and not q.ttft_grows and q.peak == 20
    cal = calibrate(table)
    assert abs(math.log(cal.ttft.median_s / UNQUEUED_MEDIAN)) < TOL
    assert abs(cal.ttft.prefill_tps / 20000 - 1) < 0.15
    assert cal.measured["queueing"]["headers_queued"] is True and cal.measured["concurrency"] == 20
    assert any("response headers waited" in n for n in cal.notes)


def test_queue_after_headers_is_flagged():
    table = _capped_server(300, clients=20, cap=10, queue_before_headers=False)
    q = find_queueing(table)
    assert q.headers_rho is None and q.ttft_grows  # headers say nothing; the TTFT carries the wait
    cal = calibrate(table)
    assert cal.ttft.median_s > 2 * UNQUEUED_MEDIAN  # the wait stays in: the point of the warning
    assert cal.measured["queueing"] == {
        "headers_queued": False,
        "ttft_grows": True,
        "removed_median_s": 0.0,
        "valid_at_concurrency": 20,
    }
    assert any("holds only at a concurrency of about 20" in n for n in cal.notes)


def test_below_the_cap_nothing_is_found():
    table = _capped_server(300, clients=5, cap=10, queue_before_headers=True)
    q = find_queueing(table)
    assert not q.headers_queued and not q.ttft_grows and not q.removed_s.any()
    cal = calibrate(table)
    assert "queueing" not in cal.measured and cal.notes == ()
    assert abs(math.log(cal.ttft.median_s / UNQUEUED_MEDIAN)) < TOL
