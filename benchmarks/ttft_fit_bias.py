"""Is the TTFT fit of ``agentsim calibrate`` biased? A Monte-Carlo check of the estimator (issue 16).

    python benchmarks/ttft_fit_bias.py [--reps R] [--delay S] [--replay MEASURED.jsonl]

Draws ``R`` synthetic measurement sets of 80 requests from the model ``calibrate`` fits, with the
truth of ``benchmarks/fidelity.py``'s hidden server (base TTFT lognormal, median 0.25 s, log-sd
0.35; prefill 20,000 tokens/s; uncached inputs uniform over 255-4,055 tokens), plus an optional
constant client delay ``S``; fits each with ``fit_ttft`` (what ``calibrate`` calls); and prints the
mean and spread of the base median, log-sd, slope and mean TTFT at 1,000 input tokens against the
truth, with the bias in Monte-Carlo standard errors.

``--replay`` takes the ``measured.jsonl`` of a fidelity run (``fidelity.py --out DIR``, seed 0)
and regenerates the hidden server's own draws (tests/sse_server.py draws one TTFT normal, one speed
normal and one normal per output token from ``random.Random(seed)``, request by request; requests
are taken in order of start time, so a few that overtook each other at the server pair up wrongly).
It prints measured minus drawn TTFT (the client's delay) by prompt size, and the fit of the
server's draws alone: what the sample itself said, before any client effect.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from agentsim.measure.calibrate import fit_ttft

MEDIAN, SIGMA, PREFILL_TPS, N = 0.25, 0.35, 20_000.0, 80


def _fit(y: np.ndarray, x: np.ndarray) -> tuple[float, float, float, float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        f = fit_ttft(y, x)
    mean_1k = f.median_s * math.exp(f.sigma**2 / 2) + f.slope_s_per_token * 1000
    return f.median_s, f.sigma, f.slope_s_per_token * 1e3, mean_1k, (f.slope_se or math.nan) * 1e3


def monte_carlo(reps: int, delay: float, seed: int = 12345) -> None:
    rng = np.random.default_rng(seed)
    est = []
    for _ in range(reps):
        x = rng.integers(255, 4056, N).astype(float)
        est.append(_fit(MEDIAN * np.exp(SIGMA * rng.standard_normal(N)) + x / PREFILL_TPS + delay, x))
    a = np.array(est)
    truth = [MEDIAN, SIGMA, 1e3 / PREFILL_TPS, MEDIAN * math.exp(SIGMA**2 / 2) + 1e3 / PREFILL_TPS + delay]
    print(f"{reps} synthetic sets of {N} requests, client delay {delay:g} s")
    print(f"{'estimate':<22}{'truth':>9}{'mean':>9}{'sd':>9}{'bias':>9}{'bias/MCSE':>10}{'bias/sd':>9}")
    names = ["base median s", "base log-sd", "slope s per 1k tok", "mean TTFT @1k s"]
    for name, col, true in zip(names, a.T, truth, strict=False):
        m, s = col.mean(), col.std(ddof=1)
        print(
            f"{name:<22}{true:>9.5f}{m:>9.5f}{s:>9.5f}{m - true:>+9.5f}{(m - true) / (s / math.sqrt(reps)):>+10.1f}"
            f"{(m - true) / s:>+9.3f}"
        )
    print(f"mean reported slope SE {np.nanmean(a[:, 4]):.5f} s per 1k (spread of the slopes {a[:, 2].std(ddof=1):.5f})")


def replay(path: Path, seed: int = 0) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows = sorted((r for r in rows if r.get("kind") == "request" and r.get("ok")), key=lambda r: r["start_s"])
    rng = random.Random(seed)
    measured, drawn, words = [], [], []
    for r in rows:
        w = r["input_tokens"] - r["cached_input_tokens"]
        drawn.append(MEDIAN * math.exp(SIGMA * rng.gauss(0, 1)) + w / PREFILL_TPS)
        for _ in range(1 + r["output_tokens"]):  # the speed, then one gap weight per token
            rng.gauss(0, 1)
        measured.append(r["ttft_s"])
        words.append(w)
    y, d, x = np.array(measured), np.array(drawn), np.array(words, float)
    delay = y - d
    print(f"\nreplay of {path} ({len(y)} requests): corr(measured, drawn TTFT) {np.corrcoef(y, d)[0, 1]:.4f}")
    print(f"client delay = measured - drawn: median {np.median(delay):.4f} s, mean {delay.mean():.4f} s")
    for lo, hi in [(0, 1200), (1200, 2150), (2150, 3100), (3100, 10**6)]:
        m = (x >= lo) & (x < hi)
        print(f"  uncached input [{lo}, {hi}): {m.sum():2d} requests, median delay {np.median(delay[m]):.4f} s")
    base = d - x / PREFILL_TPS
    slope = np.polyfit(x / 1000, base, 1)[0]
    print(
        f"the server's own bases: median {np.median(base):.4f} s, log-sd {np.log(base).std(ddof=1):.4f}, "
        f"OLS slope on input {slope:+.5f} s per 1k (0 in expectation)"
    )
    for name, yy in [("server's draws", d), ("measured", y)]:
        med, sig, sl, m1k, se = _fit(yy, x)
        print(
            f"fit_ttft on the {name}: median {med:.4f} sigma {sig:.4f} slope {sl:.5f} ± {se:.4f} s per 1k, "
            f"mean TTFT @1k {m1k:.4f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--delay", type=float, default=0.0, help="constant client delay added to every TTFT (s)")
    ap.add_argument("--replay", type=Path, default=None, help="measured.jsonl of a fidelity run (seed 0)")
    a = ap.parse_args()
    monte_carlo(a.reps, a.delay)
    if a.replay:
        replay(a.replay)


if __name__ == "__main__":
    main()
