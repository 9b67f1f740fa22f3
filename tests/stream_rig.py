"""Streaming fidelity end to end: measure a provider with hidden stream timing, calibrate, run, compare (issue 28).

The provider is :class:`sse_server.Hidden` in its own process: lognormal TTFT, per-request speeds,
tokens in SSE events of a varying size, per-token jitter, and a stall process (before each event
after the first, with a probability, a pause of a drawn length). agentsim is told none of it:

1. ``agentsim measure`` streams ``measure_requests`` requests of ``answer`` output tokens (prompts of
   ``MEASURE_INPUT`` words) and ``agentsim calibrate`` writes a profile (TTFT, prefill, speed, and the
   ``stream:`` block: chunks, jitter, ``stall: {per_chunk, seconds}``);
2. the *measured* side is a plain-socket client (tests/raw_client.py, several processes) streaming
   ``reference_streams`` answers of the same size to a prompt of ``INPUT`` words: every output event's
   arrival and tokens. The consumers' metrics are computed from those times with DESIGN.md §3.2's
   rules (:func:`stream_metrics`);
3. the *predicted* side is ``agentsim run`` of one scenario (:func:`scenario`) whose four parallel
   calls are that answer, each with its consumer: a slow reader, a fast reader, a speech consumer, and
   an interruption after the first token (``after_first_token`` uniform, ``p = 1``);
4. :func:`compare` puts the two side by side per metric, with the tolerance the Monte-Carlo error
   allows: ``4 sd sqrt(1 / reference_streams + 1 / measure_requests)`` (the measured mean's own error,
   and the calibration's, a plug-in estimate from ``measure_requests`` requests).

The person always interrupts (``p = 1``); whether that *cuts* the answer depends on the stream: it does
when ``first token + X`` comes before the end. The cut share is computed on the measured side in
expectation (each stream cut with probability ``P(X < end − first token)``), so it carries no draw of
its own.

Used by tests/test_stream_fidelity.py at a small size and by benchmarks/stream_fidelity.py at full size.
``python tests/stream_rig.py reference URL N WORKERS INPUT TOKENS OUT`` streams the reference answers
(several processes, one connection each) into a JSON file.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MODEL = "hidden-stream"
MEASURE_INPUT = "200-2000"  # words of the measured prompts: a spread for the prefill fit
INPUT = 1000  # words (tokens) of the prompt of the predicted answer


@dataclass(frozen=True)
class Consumers:
    slow_reader: float = 50.0  # tokens/s
    fast_reader: float = 200.0
    speech: tuple[float, float, int] = (0.2, 150.0, 20)  # first audio (s), tokens/s, sentence tokens
    cut: tuple[float, float] = (0.5, 2.5)  # an interruption X s after the first token, X uniform


@dataclass(frozen=True)
class Rig:
    answer: int = 400  # output tokens of every request
    measure_requests: int = 120
    measure_concurrency: int = 4
    reference_streams: int = 440
    reference_workers: int = 4
    sim_runs: int = 4000
    consumers: Consumers = field(default_factory=Consumers)


# --------------------------------------------------------------------------- the measured side


def _reference_worker(args) -> list[dict]:
    url, indices, n_input, tokens = args
    from agentsim.measure.probe import MeasureConfig, _body, build_prompt
    from raw_client import RawClient

    cfg = MeasureConfig(url, MODEL, output_tokens=tokens, input_tokens=(n_input, n_input))
    client = RawClient(url, timeout_s=120)
    out = []
    for i in indices:
        s = client.stream(_body(cfg, build_prompt(10_000 + i, n_input, tokens)))
        out.append({"events": [t - s.sent for t in s.events], "tokens": s.tokens, "end": s.end - s.sent})
    client.close()
    return out


def reference(url: str, n: int, workers: int, n_input: int, tokens: int) -> list[dict]:
    """``n`` answers streamed by the plain-socket client from ``workers`` processes (each one at a time), to
    prompts of ``n_input`` tokens (``build_prompt``)."""
    chunks = [(url, list(range(w, n, workers)), n_input, tokens) for w in range(workers)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return [s for part in pool.map(_reference_worker, chunks) for s in part]


def reference_process(url: str, rig: Rig, out: Path) -> subprocess.Popen:
    """Start :func:`reference` in its own Python process (its timing away from the caller's)."""
    args = [url, rig.reference_streams, rig.reference_workers, INPUT, rig.answer, out]
    return subprocess.Popen([sys.executable, __file__, "reference", *map(str, args)])


def prompt_words(n_input: int, tokens: int) -> int:
    """Words of the prompt ``build_prompt`` makes for ``n_input`` tokens: what the server counts (its input)."""
    from agentsim.measure.probe import build_prompt

    return len(build_prompt(0, n_input, tokens).split())


def _reader_wait(d: np.ndarray, rate: float) -> float:
    """``f_N − send − N / r`` of ``f_i = max(d_i, f_{i−1}) + 1/r`` with ``f_0 = send = 0``, which unrolls to
    ``max(0, max_j (d_j − (j−1)/r))``."""
    return max(0.0, float(np.max(d - np.arange(d.size) / rate)))


def _speech(d: np.ndarray, first_audio: float, rate: float, sentence: int) -> tuple[float, float]:
    """(first audio, silence) of sentences of ``sentence`` tokens spoken at ``rate`` (DESIGN.md §3.2)."""
    ends = np.minimum(np.arange(sentence, d.size + sentence, sentence), d.size)
    lengths = np.diff(np.concatenate([[0], ends])) / rate
    start = d[ends[0] - 1] + first_audio
    first, silence = start, 0.0
    for k in range(1, ends.size):
        s = max(d[ends[k] - 1] + first_audio, start + lengths[k - 1])
        silence += s - start - lengths[k - 1]
        start = s
    return first, silence


def stream_metrics(streams: list[dict], c: Consumers) -> dict[str, np.ndarray]:
    """Per measured stream, every compared metric (seconds from sending; see the module doc)."""
    rows: dict[str, list[float]] = {}
    for s in streams:
        e, n = np.asarray(s["events"]), np.asarray(s["tokens"], dtype=np.int64)
        d = np.repeat(e, n)  # each token's delivery
        g = np.diff(e)
        first, silence = _speech(d, *c.speech)
        lo, hi = c.cut
        vals = {
            "ttft_s": e[0],
            "itl_p50_s": float(np.quantile(g, 0.5)),
            "itl_p99_s": float(np.quantile(g, 0.99)),
            "gaps_over_250ms": float(np.sum(g > 0.25)),
            "gaps_over_1s": float(np.sum(g > 1.0)),
            "duration_s": s["end"],
            "slow_reader_wait_s": _reader_wait(d, c.slow_reader),
            "fast_reader_wait_s": _reader_wait(d, c.fast_reader),
            "speech_silence_s": silence,
            "speech_first_audio_s": first,
            "cut_share": min(max((s["end"] - e[0] - lo) / (hi - lo), 0.0), 1.0),
        }
        for k, v in vals.items():
            rows.setdefault(k, []).append(float(v))
    return {k: np.array(v) for k, v in rows.items()}


# --------------------------------------------------------------------------- the predicted side


def scenario(rig: Rig, profile: str = "./profile.yaml") -> str:
    c, n, w = rig.consumers, rig.answer, prompt_words(INPUT, rig.answer)
    fa, rate, sent = c.speech

    def call(name: str, extra: str) -> str:
        return f"      - call: {{name: {name}, model: m, input: {w}, output: {n}, {extra}}}\n"

    return (
        f"name: stream-fidelity\nseed: 1\nruns: {rig.sim_runs}\n"
        f"models:\n  m: {{profile: {profile}, price: {{input_mtok: 1, output_mtok: 1}}}}\n"
        "agent:\n  context: {system: 0, grows: false}\n  steps:\n    - parallel:\n"
        + call("slow", f"consumer: {{reader: {{tokens_per_s: {c.slow_reader}}}}}")
        + call("fast", f"consumer: {{reader: {{tokens_per_s: {c.fast_reader}}}}}")
        + call("speech", f"consumer: {{speech: {{first_audio: {fa}, tokens_per_s: {rate}, sentence_tokens: {sent}}}}}")
        + call("cut", f"interrupt: {{p: 1, after_first_token: {{uniform: {{low: {c.cut[0]}, high: {c.cut[1]}}}}}}}")
    )


# summary.json's (call, metric, statistic) for each compared metric; duration is the slow call's end
PREDICTED = {
    "ttft_s": ("slow", "ttft_s", "mean"),
    "itl_p50_s": ("slow", "itl_p50_s", "mean"),
    "itl_p99_s": ("slow", "itl_p99_s", "mean"),
    "gaps_over_250ms": ("slow", "gaps_over_250ms", "mean"),
    "gaps_over_1s": ("slow", "gaps_over_1s", "mean"),
    "slow_reader_wait_s": ("slow", "reader_wait_s", "mean"),
    "fast_reader_wait_s": ("fast", "reader_wait_s", "mean"),
    "speech_silence_s": ("speech", "silence_s", "mean"),
    "speech_first_audio_s": ("speech", "first_audio_s", "p95"),
    "cut_share": ("cut", "cut_share", "mean"),
}
LABELS = {
    "ttft_s": "TTFT (s)",
    "itl_p50_s": "ITL p50 (s)",
    "itl_p99_s": "ITL p99 (s)",
    "gaps_over_250ms": "gaps > 250 ms per answer",
    "gaps_over_1s": "gaps > 1 s per answer",
    "duration_s": "answer duration (s)",
    "slow_reader_wait_s": "slow reader wait (s)",
    "fast_reader_wait_s": "fast reader wait (s)",
    "speech_silence_s": "speech silence (s)",
    "speech_first_audio_s": "speech first audio p95 (s)",
    "cut_share": "cut share (interrupted while streaming)",
}


def predict(path: Path) -> dict[str, float]:
    """The compared metrics of the scenario at ``path`` (agentsim.simulate: its summary and calls table)."""
    import agentsim

    res = agentsim.simulate(path)
    calls = res.summary_dict()["variants"]["baseline"]["streaming"]["calls"]
    out = {k: float(calls[name][metric][stat]) for k, (name, metric, stat) in PREDICTED.items()}
    t = res.calls
    slow = t[t["step"] == "slow"]
    out["duration_s"] = float((slow["t_end"] - slow["t_start"]).mean())
    return out


def compare(measured: dict[str, np.ndarray], predicted: dict[str, float], n_cal: int) -> list[dict]:
    """One row per metric: measured and predicted, the error, and the Monte-Carlo tolerance (module doc)."""
    rows = []
    for key, label in LABELS.items():
        x = measured[key]
        p95 = PREDICTED.get(key, ("", "", "mean"))[2] == "p95"
        m = float(np.percentile(x, 95)) if p95 else float(np.mean(x))
        sd = float(np.std(x, ddof=1))
        tol = 4 * sd * math.sqrt(1 / x.size + 1 / n_cal) * (1.5 if p95 else 1.0)  # a p95 varies more than a mean
        pred = predicted[key]
        rows.append(
            {
                "metric": key,
                "label": label,
                "measured": m,
                "predicted": pred,
                "error_pct": 100 * (pred / m - 1) if m else float("nan"),
                "tolerance": tol,
                "within": abs(pred - m) <= tol,
            }
        )
    return rows


def table(rows: list[dict]) -> str:
    head = f"{'metric':<28} {'measured':>10} {'predicted':>10} {'error %':>8} {'MC tol.':>9}  ok"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['label']:<28} {r['measured']:>10.4g} {r['predicted']:>10.4g} {r['error_pct']:>+8.1f} "
            f"{r['tolerance']:>9.3g}  {'yes' if r['within'] else 'NO'}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] != "reference":
        raise SystemExit("usage: stream_rig.py reference URL N WORKERS INPUT TOKENS OUT")
    url, n, workers, n_input, tokens, out = sys.argv[2:8]
    sys.path.insert(0, str(Path(__file__).parent))
    got = reference(url, int(n), int(workers), int(n_input), int(tokens))
    Path(out).write_text(json.dumps(got))
