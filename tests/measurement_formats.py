"""Synthetic per-request measurements from known parameters, written in every supported format.

The writers follow each tool's documented output (llmperf ``*_individual_responses.json``,
``vllm bench serve --save-detailed``, GuideLLM benchmark JSON, AIPerf ``profile_export.jsonl``,
OTLP JSON GenAI spans, the agentsim CSV, ``agentsim measure`` JSONL), including each tool's own
definitions (llmperf's inter-token latency includes the TTFT; GuideLLM and AIPerf report
milliseconds). They are written independently of the importers, from the formats' descriptions.

Run ``python tests/measurement_formats.py`` to regenerate ``tests/fixtures/measurements/``, and
``python tests/measurement_formats.py --study 200`` to check the recovery tolerances over many seeds
(how often each estimate falls outside them, and the spread of the estimates in tolerance units).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

EPOCH0 = 1772445600.0  # 2026-03-02 10:00:00 UTC: start of the synthetic measurements


@dataclass(frozen=True)
class Truth:
    """The parameters the synthetic requests are drawn from."""

    base_median_s: float = 0.6  # base TTFT: lognormal
    base_sigma: float = 0.5
    prefill_tps: float = 8000.0  # uncached input tokens per second
    tps_shape: float = 9.0  # output TPS: gamma
    tps_mean: float = 80.0
    input_range: tuple[int, int] = (500, 20000)
    output_range: tuple[int, int] = (60, 300)
    cached_share: float = 0.0  # share of requests with a cached prefix (half their input)
    model: str = "example-llm"


@dataclass
class Sample:
    truth: Truth
    input_tokens: np.ndarray
    cached_tokens: np.ndarray
    output_tokens: np.ndarray
    base: np.ndarray
    ttft: np.ndarray
    tps: np.ndarray
    decode: np.ndarray
    latency: np.ndarray
    start: np.ndarray
    gaps: list[list[float]]
    failed: np.ndarray  # bool: requests that failed (their values are not used)
    errors: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.ttft)

    @property
    def uncached(self) -> np.ndarray:
        return self.input_tokens - self.cached_tokens


def draw(truth: Truth, n_ok: int, n_failed: int, seed: int) -> Sample:
    """``n_ok`` requests drawn from ``truth``, plus ``n_failed`` failed ones spread among them."""
    rng = np.random.default_rng(seed)
    n = n_ok + n_failed
    inp = rng.integers(truth.input_range[0], truth.input_range[1] + 1, n).astype(float)
    cached = np.where(rng.random(n) < truth.cached_share, np.floor(inp / 2), 0.0)
    out = rng.integers(truth.output_range[0], truth.output_range[1] + 1, n).astype(float)
    base = truth.base_median_s * np.exp(truth.base_sigma * rng.standard_normal(n))
    ttft = base + (inp - cached) / truth.prefill_tps
    scale = truth.tps_mean / truth.tps_shape
    tps = rng.gamma(truth.tps_shape, scale, n)
    decode = out / tps  # agentsim's definition: a call lasts ttft + output / tps
    latency = ttft + decode
    start = EPOCH0 + np.cumsum(rng.exponential(2.0, n))
    gaps = []
    for k in range(n):
        w = rng.gamma(20.0, 1.0, int(out[k]) - 1)  # uneven gaps (jitter) that add up to the decode time
        gaps.append(list(w / w.sum() * decode[k]))
    failed = np.zeros(n, dtype=bool)
    failed[rng.choice(n, n_failed, replace=False)] = True
    errors = ["HTTP 429: rate limited" if i % 2 else "HTTP 500: internal error" for i in range(n)]
    return Sample(truth, inp, cached, out, base, ttft, tps, decode, latency, start, gaps, failed, errors)


# --------------------------------------------------------------------------- writers


def write_llmperf(s: Sample, path: Path, with_e2e: bool = True) -> Path:
    recs = []
    for i in range(s.n):
        if s.failed[i]:
            recs.append(
                {
                    "error_code": 429 if i % 2 else 500,
                    "error_msg": s.errors[i],
                    "inter_token_latency_s": 0,
                    "ttft_s": 0,
                    "end_to_end_latency_s": 0,
                    "request_output_throughput_token_per_s": 0,
                    "number_total_tokens": int(s.input_tokens[i]),
                    "number_output_tokens": 0,
                    "number_input_tokens": int(s.input_tokens[i]),
                }
            )
            continue
        n_out = int(s.output_tokens[i])
        rec = {
            "error_code": None,
            "error_msg": "",
            # llmperf: the sum of all token gaps, the first (TTFT) included, divided by the output tokens
            "inter_token_latency_s": float(s.latency[i]) / n_out,
            "ttft_s": float(s.ttft[i]),
            "end_to_end_latency_s": float(s.latency[i]),
            "request_output_throughput_token_per_s": n_out / float(s.latency[i]),
            "number_total_tokens": int(s.input_tokens[i]) + n_out,
            "number_output_tokens": n_out,
            "number_input_tokens": int(s.input_tokens[i]),
        }
        if not with_e2e:
            del rec["end_to_end_latency_s"]
        recs.append(rec)
    path.write_text(json.dumps(recs, indent=4))
    return path


def write_vllm(s: Sample, path: Path) -> Path:
    ok = ~s.failed
    doc = {
        "date": "20260302-100000",
        "backend": "openai-chat",
        "model_id": s.truth.model,
        "tokenizer_id": s.truth.model,
        "num_prompts": s.n,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": 8,
        "duration": float(s.start[-1] - s.start[0] + s.latency[-1]),
        "completed": int(ok.sum()),
        "failed": int(s.failed.sum()),
        "total_input_tokens": int(s.input_tokens[ok].sum()),
        "total_output_tokens": int(s.output_tokens[ok].sum()),
        "input_lens": [int(x) for x in s.input_tokens],
        "output_lens": [0 if s.failed[i] else int(s.output_tokens[i]) for i in range(s.n)],
        "ttfts": [0.0 if s.failed[i] else float(s.ttft[i]) for i in range(s.n)],
        "itls": [[] if s.failed[i] else [round(g, 7) for g in s.gaps[i]] for i in range(s.n)],
        "start_times": [float(t - EPOCH0 + 1000.0) for t in s.start],  # perf_counter clock, not Unix time
        "generated_texts": ["" for _ in range(s.n)],
        "errors": [s.errors[i] if s.failed[i] else "" for i in range(s.n)],
    }
    path.write_text(json.dumps(doc))
    return path


def write_guidellm(s: Sample, path: Path) -> Path:
    successful, errored = [], []
    for i in range(s.n):
        start = float(s.start[i])
        if s.failed[i]:
            errored.append(
                {
                    "type_": "generative_text_error",
                    "request_id": f"r{i}",
                    "request_type": "chat_completions",
                    "prompt_tokens": int(s.input_tokens[i]),
                    "output_tokens": 0,
                    "start_time": start,
                    "end_time": start + 0.05,
                    "first_token_time": None,
                    "last_token_time": None,
                    "request_latency": 0.05,
                    "time_to_first_token_ms": None,
                    "time_per_output_token_ms": None,
                    "inter_token_latency_ms": None,
                    "error": s.errors[i],
                }
            )
            continue
        n_out = int(s.output_tokens[i])
        first, last = start + float(s.ttft[i]), start + float(s.latency[i])
        successful.append(
            {
                "type_": "generative_text_response",
                "request_id": f"r{i}",
                "request_type": "chat_completions",
                "prompt_tokens": int(s.input_tokens[i]),
                "output_tokens": n_out,
                "start_time": start,
                "end_time": last,
                "first_token_time": first,
                "last_token_time": last,
                "request_latency": last - start,
                "time_to_first_token_ms": 1000 * (first - start),
                "time_per_output_token_ms": 1000 * (last - first) / n_out,  # GuideLLM: includes the first token
                "inter_token_latency_ms": 1000 * (last - first) / (n_out - 1),  # GuideLLM: excludes the first token
                "tokens_per_second": (int(s.input_tokens[i]) + n_out) / (last - start),
                "output_tokens_per_second": n_out / (last - start),
            }
        )
    doc = {
        "benchmarks": [
            {
                "type_": "generative_benchmark",
                "run_id": "run-1",
                "worker": {
                    "type_": "generative_requests_worker",
                    "backend_type": "openai_http",
                    "backend_target": "http://localhost:8000",
                    "backend_model": s.truth.model,
                },
                "start_time": float(s.start[0]),
                "end_time": float(s.start[-1] + s.latency[-1]),
                "request_totals": {
                    "successful": len(successful),
                    "incomplete": 0,
                    "errored": len(errored),
                    "total": s.n,
                },
                "requests": {"successful": successful, "incomplete": [], "errored": errored},
            }
        ]
    }
    path.write_text(json.dumps(doc, indent=2))
    return path


def write_aiperf(s: Sample, path: Path) -> Path:
    lines = []
    for i in range(s.n):
        start_ns = int(s.start[i] * 1e9)
        meta = {
            "session_num": i,
            "x_request_id": f"req-{i}",
            "turn_index": 0,
            "request_start_ns": start_ns,
            "request_end_ns": start_ns + int(s.latency[i] * 1e9),
            "worker_id": "worker_1",
            "benchmark_phase": "profiling",
            "was_cancelled": False,
            "cancellation_time_ns": None,
        }
        if s.failed[i]:
            lines.append(
                {
                    "metadata": meta,
                    "metrics": {"error_isl": {"value": int(s.input_tokens[i]), "unit": "tokens"}},
                    "error": {"code": 500, "type": "InternalServerError", "message": s.errors[i]},
                }
            )
            continue
        n_out = int(s.output_tokens[i])
        ttft_ms, lat_ms = 1000 * float(s.ttft[i]), 1000 * float(s.latency[i])
        lines.append(
            {
                "metadata": meta,
                "metrics": {
                    "input_sequence_length": {"value": int(s.input_tokens[i]), "unit": "tokens"},
                    "time_to_first_token": {"value": ttft_ms, "unit": "ms"},
                    "request_latency": {"value": lat_ms, "unit": "ms"},
                    "output_token_count": {"value": n_out, "unit": "tokens"},
                    "inter_chunk_latency": {"value": [round(1000 * g, 4) for g in s.gaps[i]], "unit": "ms"},
                    "output_sequence_length": {"value": n_out, "unit": "tokens"},
                    "inter_token_latency": {"value": (lat_ms - ttft_ms) / (n_out - 1), "unit": "ms"},
                    "output_token_throughput_per_user": {
                        "value": 1000 * (n_out - 1) / (lat_ms - ttft_ms),
                        "unit": "tokens/sec/user",
                    },
                },
                "error": None,
            }
        )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _kv(key: str, value) -> dict:
    if isinstance(value, str):
        return {"key": key, "value": {"stringValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # OTLP JSON: 64-bit ints as strings
    return {"key": key, "value": {"doubleValue": float(value)}}


def write_otel(s: Sample, path: Path) -> Path:
    spans = []
    for i in range(s.n):
        start_ns = int(s.start[i] * 1e9)
        end_ns = start_ns + int(np.rint(s.latency[i] * 1e9))
        old = i % 3 == 0  # every third span uses the older attribute names
        attrs = [
            _kv("gen_ai.operation.name", "chat"),
            _kv("gen_ai.system" if old else "gen_ai.provider.name", "openai"),
            _kv("gen_ai.request.model", s.truth.model),
            _kv("gen_ai.usage.prompt_tokens" if old else "gen_ai.usage.input_tokens", int(s.input_tokens[i])),
        ]
        if s.cached_tokens[i]:
            attrs.append(_kv("gen_ai.usage.cache_read.input_tokens", int(s.cached_tokens[i])))
        status = {"code": 1}
        if s.failed[i]:
            status = {"code": 2, "message": s.errors[i]}
            attrs.append(_kv("error.type", "429" if i % 2 else "500"))
        else:
            attrs.append(
                _kv("gen_ai.usage.completion_tokens" if old else "gen_ai.usage.output_tokens", int(s.output_tokens[i]))
            )
            attrs.append(_kv("gen_ai.response.time_to_first_chunk", float(s.ttft[i])))
            attrs.append(_kv("gen_ai.response.model", s.truth.model))
        trace = f"{i + 1:032x}"
        spans.append(
            {
                "traceId": trace,
                "spanId": f"{2 * i + 1:016x}",
                "parentSpanId": f"{2 * i + 2:016x}",
                "name": f"chat {s.truth.model}",
                "kind": 3,
                "startTimeUnixNano": str(start_ns),
                "endTimeUnixNano": str(end_ns),
                "attributes": attrs,
                "status": status,
            }
        )
        # the agent span around it is not a model call and must be skipped
        spans.append(
            {
                "traceId": trace,
                "spanId": f"{2 * i + 2:016x}",
                "name": "invoke_agent coder",
                "kind": 1,
                "startTimeUnixNano": str(start_ns - 1000),
                "endTimeUnixNano": str(end_ns + 1000),
                "attributes": [_kv("gen_ai.operation.name", "invoke_agent")],
                "status": {"code": 0},
            }
        )
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": [_kv("service.name", "coder")]},
                "scopeSpans": [{"scope": {"name": "synthetic"}, "spans": spans}],
            }
        ]
    }
    path.write_text(json.dumps(doc))
    return path


def write_csv(s: Sample, path: Path) -> Path:
    out = ["start_s,model,ttft_ms,latency_ms,input_tokens,cached_input_tokens,output_tokens,error"]
    for i in range(s.n):
        if s.failed[i]:
            out.append(f"{float(s.start[i])!r},{s.truth.model},,,{int(s.input_tokens[i])},,,{s.errors[i]}")
            continue
        out.append(
            f"{float(s.start[i])!r},{s.truth.model},{1000 * float(s.ttft[i])!r},{1000 * float(s.latency[i])!r},"
            f"{int(s.input_tokens[i])},{int(s.cached_tokens[i])},{int(s.output_tokens[i])},"
        )
    path.write_text("\n".join(out) + "\n")
    return path


def write_measure(s: Sample, path: Path) -> Path:
    lines = [
        {
            "agentsim_measure": 1,
            "kind": "run",
            "started_at": "2026-03-02T10:00:00+00:00",
            "base_url": "http://127.0.0.1:8000/v1",
            "model": s.truth.model,
            "api": "openai",
            "requests": s.n,
        }
    ]
    for i in range(s.n):
        rec = {
            "agentsim_measure": 1,
            "kind": "request",
            "i": i,
            "api": "openai",
            "model": s.truth.model,
            "input_tokens_requested": int(s.input_tokens[i]),
            "start_s": float(s.start[i]),
        }
        if s.failed[i]:
            rec.update(
                status=429,
                ok=False,
                error=s.errors[i],
                ttft_s=None,
                latency_s=0.2,
                gaps_s=[],
                chunks=0,
                input_tokens=None,
                cached_input_tokens=None,
                output_tokens=None,
                tokens_source="chunks",
            )
        else:
            rec.update(
                status=200,
                ok=True,
                error=None,
                ttft_s=float(s.ttft[i]),
                latency_s=float(s.latency[i]),
                gaps_s=[round(g, 7) for g in s.gaps[i]],
                chunks=len(s.gaps[i]) + 1,
                input_tokens=int(s.input_tokens[i]),
                cached_input_tokens=int(s.cached_tokens[i]),
                output_tokens=int(s.output_tokens[i]),
                tokens_source="usage",
            )
        lines.append(rec)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


WRITERS = {
    "llmperf": (write_llmperf, "llmperf_individual_responses.json"),
    "vllm": (write_vllm, "vllm_bench_serve.json"),
    "guidellm": (write_guidellm, "guidellm_benchmarks.json"),
    "aiperf": (write_aiperf, "aiperf_profile_export.jsonl"),
    "otel": (write_otel, "otel_genai_spans.json"),
    "csv": (write_csv, "measurements.csv"),
    "measure": (write_measure, "agentsim_measure.jsonl"),
}

# the example files: a plausible mid-size model, 28 usable and 2 failed requests per file
FIXTURE_TRUTH = Truth(
    base_median_s=0.45,
    base_sigma=0.35,
    prefill_tps=12000.0,
    tps_shape=12.0,
    tps_mean=95.0,
    input_range=(300, 12000),
    output_range=(40, 160),
    cached_share=0.0,
)
FIXTURE_DIR = Path(__file__).resolve().parent / "fixtures" / "measurements"


def write_fixtures(folder: Path = FIXTURE_DIR) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k, (fmt, (writer, name)) in enumerate(WRITERS.items()):
        sample = draw(FIXTURE_TRUTH, 28, 2, seed=100 + k)
        out.append(writer(sample, folder / name))
        del fmt
    return out


def sample_file(folder: Path, fmt: str, n_ok: int = 23, n_failed: int = 2, seed: int = 0) -> Path:
    """A small synthetic file of one format (for malformed-input tests to break)."""
    writer, name = WRITERS[fmt]
    return writer(draw(Truth(), n_ok, n_failed, seed), folder / name)


def oracle_tolerances(s: Sample, z: float = 4.0) -> dict[str, float]:
    """How far estimates may fall from the truth for this sample size (z standard errors).

    * prefill slope ``b = 1/prefill_tps``: the OLS standard error ``sd(base) / (sqrt(n) sd(x))``
      (closed form; the Huber fit is at least as efficient on lognormal errors: a 200-seed study
      gave 2.7e-6 against the bound 3.2e-6 at n = 400);
    * log base median: ``sqrt((1.03 sigma)^2/n + (E[x] E[1/base] se_b)^2)`` (1.03: Huber location vs mean),
      the second term propagating
      the slope error into every base TTFT (delta method, E[1/base] = exp(-mu + sigma^2/2));
    * base sigma: ``sqrt((1.18 sigma)^2/(2n) + (sigma E[x] E[1/base] se_b)^2)`` (same propagation:
      d sigma / d b = -sigma E[x] E[1/base] for a lognormal independent of x; 1.18 = the standard
      error of Huber's proposal-2 scale over that of the sample sd, from 2,000 normal samples of 400);
    * TPS mean: ``sd / sqrt(n)``; TPS median: the sample-median error ``1 / (2 f(m) sqrt(n))``
      plus the gap between the gamma median and the median of the lognormal closest to it, in
      case the likelihood prefers the lognormal.
    """
    from scipy import special, stats

    t = s.truth
    ok = ~s.failed
    n = int(ok.sum())
    x = s.uncached[ok]
    mu, sig = math.log(t.base_median_s), t.base_sigma
    sd_base = t.base_median_s * math.sqrt(math.exp(sig**2) * (math.exp(sig**2) - 1))
    se_b = sd_base / (math.sqrt(n) * float(np.std(x)))
    k = float(np.mean(x)) * math.exp(-mu + sig**2 / 2)
    theta = t.tps_mean / t.tps_shape
    g = stats.gamma(t.tps_shape, scale=theta)
    misspec = abs(g.median() - math.exp(special.digamma(t.tps_shape)) * theta)
    return {
        "slope": z * se_b,
        "log_median": z * math.sqrt((1.03 * sig) ** 2 / n + (k * se_b) ** 2),
        "sigma": z * math.sqrt((1.18 * sig) ** 2 / (2 * n) + (sig * k * se_b) ** 2),
        "tps_mean": z * g.std() / math.sqrt(n),
        "tps_median": z / (2 * g.pdf(g.median()) * math.sqrt(n)) + misspec,
        "ks": 1.63 / math.sqrt(n),  # Kolmogorov 1% critical value; conservative with fitted parameters
    }


def recovery_study(seeds: int, n_ok: int = 400) -> None:
    """Calibrate ``seeds`` synthetic samples (CSV path) and report estimate errors in tolerance units."""
    import sys
    import tempfile

    from scipy import stats

    from agentsim.measure.calibrate import calibrate
    from agentsim.traces.measurement_files import read_file

    truth = Truth(cached_share=0.3)
    true_tps_median = stats.gamma(truth.tps_shape, scale=truth.tps_mean / truth.tps_shape).median()
    devs: dict[str, list[float]] = {k: [] for k in ("slope", "log_median", "sigma", "tps_mean", "tps_median", "ks")}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(seeds):
            s = draw(truth, n_ok, 0, seed=10_000 + seed)
            cal = calibrate(read_file(write_csv(s, Path(tmp) / "m.csv"))[0])
            tol = oracle_tolerances(s)
            devs["slope"].append((cal.ttft.slope_s_per_token - 1 / truth.prefill_tps) / tol["slope"])
            devs["log_median"].append(math.log(cal.ttft.median_s / truth.base_median_s) / tol["log_median"])
            devs["sigma"].append((cal.ttft.sigma - truth.base_sigma) / tol["sigma"])
            devs["tps_mean"].append((cal.tps.mean - truth.tps_mean) / tol["tps_mean"])
            devs["tps_median"].append((cal.tps.median - true_tps_median) / tol["tps_median"])
            devs["ks"].append(cal.goodness["ttft"]["ks"] / tol["ks"])
    print(f"{seeds} samples of {n_ok} requests; error / tolerance (tolerance = 4 standard errors)")
    for k, v in devs.items():
        a = np.abs(np.asarray(v))
        print(f"  {k:11s} sd {np.std(v):.3f}  max |.| {a.max():.3f}  outside {int((a > 1).sum())}/{seeds}")
    sys.stdout.flush()


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 2 and sys.argv[1] == "--study":
        recovery_study(int(sys.argv[2]))
    else:
        for p in write_fixtures():
            print(p)
