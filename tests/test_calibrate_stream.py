"""calibrate writes the ``stream:`` block from files that record every gap (issues 14 and 28).

Synthetic files (tests/stream_measurements.py: a generator written from DESIGN.md §3.2-3.3, not from
agentsim.sim.streaming) with known chunking, jitter and a stall process go through ``agentsim
calibrate``; the profile's ``stream:`` must recover them. Tolerances are four standard errors of the
estimator, measured here by refitting 20 independent samples of the same size (``fit_stream`` on the
same model; the stall rate also against its binomial error). The profile must then load and run.
"""

from __future__ import annotations

import datetime as dt
import json
import math

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.measure.calibrate import calibrate, profile_document
from agentsim.measure.stream_fit import MIN_STREAM_REQUESTS, fit_stream, fit_table
from agentsim.traces.measurement_files import read_file
from measurement_formats import FIXTURE_DIR, WRITERS
from stream_measurements import StreamTruth, draw_stream

runner = CliRunner()
N_OK = 400
REPLICATES = 20


def _chunk_mean_width(c) -> tuple[float, float]:
    """Mean and width (sqrt(12 var), the width of a uniform of that variance) of a chunk size."""
    if isinstance(c, dict):
        v, p = np.array(c["choice"]["values"], dtype=float), np.array(c["choice"]["p"])
        mean = float(v @ p)
        return mean, math.sqrt(12 * float(p @ (v - mean) ** 2))
    return float(c), 0.0


def _seconds(s) -> float:
    """The mean of a stall length in scenario vocabulary."""
    if not isinstance(s, dict):
        return float(s)
    (family, p), *_ = s.items()
    if family == "uniform":
        return (p["low"] + p["high"]) / 2
    if family == "lognormal":
        sigma = math.log(p["p90"] / p["median"]) / 1.2815515655446004
        return p["median"] * math.exp(sigma**2 / 2)
    return p["mean"]


def _estimates(fit: dict) -> np.ndarray:
    m, w = _chunk_mean_width(fit["chunk_tokens"])
    st = fit.get("stall", {"per_chunk": 0.0, "seconds": 0.0})
    return np.array([m, w, fit["jitter_cv"], st["per_chunk"], _seconds(st["seconds"])])


def _standard_errors(st: StreamTruth) -> np.ndarray:
    """The spread of each estimate over independent samples of N_OK requests."""
    reps = []
    for r in range(REPLICATES):
        s, _ = draw_stream(st, N_OK, seed=1000 + r)
        ok = np.flatnonzero(~s.failed)
        reps.append(_estimates(fit_stream([s.gaps[i] for i in ok], output_tokens=s.output_tokens[ok])))
    return np.std(np.array(reps), axis=0, ddof=1)


CASES = {
    "measure": StreamTruth(chunk=1, jitter_cv=0.5, stall_per_chunk=0.004, stall_s=1.5),
    "vllm": StreamTruth(chunk=4, jitter_cv=0.4, stall_per_chunk=0.02, stall_s=(0.5, 2.0)),
    "aiperf": StreamTruth(chunk=(2, 6), jitter_cv=0.3),
}


@pytest.mark.parametrize("fmt", list(CASES))
def test_calibrate_recovers_the_stream(tmp_path, fmt):
    st = CASES[fmt]
    sample, _ = draw_stream(st, N_OK, seed=7)
    writer, name = WRITERS[fmt]
    data = writer(sample, tmp_path / name)
    doc = _profile(data)
    got = _estimates(doc["stream"])
    se = _standard_errors(st)
    if isinstance(st.chunk, tuple):  # whole sizes uniform on low..high: mean and the matching continuous width
        lo, hi = st.chunk
        want_m, want_w = (lo + hi) / 2, math.sqrt((hi - lo + 1) ** 2 - 1)  # width = sqrt(12 var)
        assert min(doc["stream"]["chunk_tokens"]["choice"]["values"]) >= 1
    else:
        want_m, want_w = st.chunk, 0.0
        assert doc["stream"]["chunk_tokens"] == st.chunk  # a constant group size is found exactly
    assert abs(got[0] - want_m) <= 4 * se[0] + 1e-9
    assert abs(got[1] - want_w) <= 4 * se[1] + 1e-9
    assert abs(got[2] - st.jitter_cv) <= 4 * se[2]
    # the stall rate within 4 binomial SEs of the truth (slow calls' limits hide some short pauses: the
    # truncated fit counts them back), the mean length within 4 SEs, the family of the truth
    ok = ~sample.failed
    gaps = sum(len(sample.gaps[i]) for i in np.flatnonzero(ok))
    assert abs(got[3] - st.stall_per_chunk) <= 4 * math.sqrt(st.stall_per_chunk / gaps) + 1e-9
    assert abs(got[4] - st.stall_mean) <= 4 * se[4] + 1e-4
    if st.stall_per_chunk:
        family = "uniform" if isinstance(st.stall_s, tuple) else "constant"
        assert doc["fit"]["stream"]["stalls"]["length"]["chosen"] == family
    else:
        assert "stall" not in doc["stream"]
    # notes and the fit section say what was used
    n_gaps = sum(len(sample.gaps[i]) for i in np.flatnonzero(ok))
    assert f"Stream fitted from {N_OK} of {N_OK} usable requests ({n_gaps:,} gaps" in doc["notes"]
    assert doc["fit"]["stream"]["requests"] == N_OK and doc["fit"]["stream"]["gaps"] == n_gaps


def _profile(data) -> dict:
    """The profile calibrate writes from ``data`` (the library's document, before the command checks it loads)."""
    table, found = read_file(data)
    cal = calibrate(table)
    return profile_document(cal, "p", [str(data)], [found.source_format], dt.date(2026, 12, 1), "given")


def test_calibrate_says_what_it_fitted(tmp_path):
    st = CASES["vllm"]
    sample, _ = draw_stream(st, N_OK, seed=7)
    data = WRITERS["vllm"][0](sample, tmp_path / "v.json")
    res = runner.invoke(app, ["calibrate", str(data), "-o", str(tmp_path / "p.yaml")])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "stream: chunk_tokens 4, jitter_cv" in text and "(95% " in text
    assert "stall per_chunk 0.0" in text and "(uniform by BIC, KS " in text
    assert yaml.safe_load((tmp_path / "p.yaml").read_text())["stream"] == _profile(data)["stream"]


def test_stall_pauses_are_taken_out_of_the_output_speed(tmp_path):
    """The simulator adds stalls on top of the speed: the fitted speed is the one without them."""
    st = StreamTruth(chunk=1, jitter_cv=0.3, stall_per_chunk=0.01, stall_s=3.0)
    sample, pauses = draw_stream(st, N_OK, seed=11)
    data = WRITERS["measure"][0](sample, tmp_path / "m.jsonl")
    table, _ = read_file(data)
    cal = calibrate(table)
    ok = ~sample.failed
    true_tps = sample.output_tokens[ok] / (sample.decode[ok] - pauses[ok])  # what was drawn
    se = float(np.std(true_tps)) / math.sqrt(N_OK)
    assert abs(cal.tps.mean - float(np.mean(true_tps))) <= 4 * se
    # the speed the file implies (pauses counted as decode) is far slower: it would count them twice
    assert float(np.mean(sample.tps[ok])) < float(np.mean(true_tps)) - 8 * se


def test_profile_with_a_stream_loads_and_runs(tmp_path):
    st = StreamTruth(chunk=4, jitter_cv=0.4, stall_per_chunk=0.01, stall_s=2.0)
    sample, _ = draw_stream(st, N_OK, seed=3)
    data = WRITERS["vllm"][0](sample, tmp_path / "v.json")
    res = runner.invoke(app, ["calibrate", str(data), "-o", str(tmp_path / "p.yaml")])
    assert res.exit_code == 0, res.output
    doc = yaml.safe_load((tmp_path / "p.yaml").read_text())
    (tmp_path / "s.yaml").write_text(
        "name: s\nseed: 3\nruns: 4000\n"
        "models:\n  x: {profile: ./p.yaml, price: {input_mtok: 1, output_mtok: 4}}\n"
        "agent: {steps: [{call: {name: answer, model: x, input: 2000, output: 200,"
        " consumer: {reader: {tokens_per_s: 5}}}}]}\n"
    )
    res = runner.invoke(app, ["run", str(tmp_path / "s.yaml"), "--json"])
    assert res.exit_code == 0, res.output
    v = json.loads(res.output)["variants"]["baseline"]
    # the stall part of the wall time: 49 chances (50 deliveries of 4 tokens) of p each, within four
    # Monte-Carlo standard errors (a binomial count of pauses of a constant length per run)
    p, secs = doc["stream"]["stall"]["per_chunk"], _seconds(doc["stream"]["stall"]["seconds"])
    se = secs * math.sqrt(49 * p * (1 - p) / 4000)
    assert abs(v["breakdown_s"]["stall"] - 49 * p * secs) <= 4 * se
    assert "answer" in v["streaming"]["calls"]


def test_no_gaps_no_stream_and_the_reason_is_said(tmp_path):
    data = FIXTURE_DIR / "measurements.csv"  # a CSV holds no per-gap timings
    res = runner.invoke(app, ["calibrate", str(data), "-o", str(tmp_path / "p.yaml")])
    assert res.exit_code == 0, res.output
    doc = yaml.safe_load((tmp_path / "p.yaml").read_text())
    assert "stream" not in doc and "stream" not in doc["fit"] and "Stream" not in doc["notes"]
    assert "no stream description fitted: the files record no per-gap timings" in res.output


def test_too_few_requests_with_gaps(tmp_path):
    sample, _ = draw_stream(StreamTruth(), 30, seed=5)
    for i in range(MIN_STREAM_REQUESTS - 1, sample.n):  # leave the gaps of only 9 requests
        sample.gaps[i] = []
    data = WRITERS["measure"][0](sample, tmp_path / "m.jsonl")
    table, _ = read_file(data)
    fit = fit_table(table[table["usable"]])
    assert fit.stream is None and not fit.pause_s.any()
    kept = int((~sample.failed[: MIN_STREAM_REQUESTS - 1]).sum())
    assert f"only {kept} requests record every gap (at least {MIN_STREAM_REQUESTS} are needed)" in fit.note


def test_one_stall_per_call_is_a_rate_per_gap_and_lengths_that_vary_a_family():
    """One pause in each call of 101 gaps: 1/101 per chunk, whatever the share of calls with one (all)."""
    rng = np.random.default_rng(2)
    pauses = rng.lognormal(np.log(2.0), 1.0, 200)
    gaps = [np.r_[np.full(50, 0.01), [0.01 + p], np.full(50, 0.01)] for p in pauses]
    fit = fit_stream(gaps)
    assert fit["stall"]["per_chunk"] == pytest.approx(1 / 101, rel=1e-3)
    ln = fit["stall"]["seconds"]["lognormal"]  # a heavy tail (log-sd 1): no other family comes close
    assert abs(math.log(ln["median"] / 2.0)) <= 4 * 1.0 / math.sqrt(200)
    sd = math.log(ln["p90"] / ln["median"]) / 1.2815515655446004
    assert sd == pytest.approx(np.std(np.log(pauses)), rel=1e-2)  # the (untruncated) maximum likelihood


def test_deliveries_inconsistent_with_one_group_size_give_a_range():
    # groups of 3 tokens in one call, 5 in another: no single size explains both
    fit = fit_stream([[0.03] * 9, [0.05] * 9], output_tokens=[30, 50])
    ch = fit["chunk_tokens"]["choice"]
    mean = (29.5 + 49.5) / (9.5 + 9.5)  # sum(N - 1/2) / sum(k - 1/2)
    # the spread (sd 3.2 tokens) would reach below one token: narrowed to [1, 2 mean - 1], and written as the
    # whole sizes that uniform rounds to (each size's share of it)
    high = 2 * mean - 1
    ks = np.arange(1, round(high) + 1)
    share = (np.minimum(ks + 0.5, high) - np.maximum(ks - 0.5, 1.0)) / (high - 1)
    assert ch["values"] == ks.tolist()
    assert ch["p"] == pytest.approx(share.tolist(), abs=len(ks) * 5e-5) and math.fsum(ch["p"]) == pytest.approx(
        1, abs=1e-12
    )
