"""Calibration: synthetic measurements from known parameters, in every format, fitted back.

Tolerances come from the sample size (see ``measurement_formats.oracle_tolerances``): four
standard errors of each estimator, the slope's error propagated into the base TTFT.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import agentsim
from agentsim.cli.main import app
from agentsim.measure.calibrate import CalibrationError, calibrate
from agentsim.model.profiles import load_profile
from agentsim.traces.measurement_files import detect_format, read_file
from agentsim.traces.measurements import Rows, measurement_table
from measurement_formats import FIXTURE_DIR, WRITERS, Truth, draw, oracle_tolerances, write_fixtures
from numeric_compare import assert_same_numbers

runner = CliRunner()
CACHE_AWARE = {"otel", "csv", "measure"}  # formats that can say how many input tokens were cached


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_recovery_in_each_format(tmp_path, fmt):
    truth = Truth(cached_share=0.3 if fmt in CACHE_AWARE else 0.0)
    sample = draw(truth, n_ok=400, n_failed=20, seed=7 + list(WRITERS).index(fmt))
    writer, name = WRITERS[fmt]
    path = writer(sample, tmp_path / name)

    assert detect_format(path) == fmt
    table, found = read_file(path)
    ok = ~sample.failed
    # every request is a row; the failed ones are counted and left out
    assert len(table) == sample.n
    assert int((~table["ok"]).sum()) == 20 and int(table["usable"].sum()) == 400
    use = table[table["usable"]]
    # per request, the definitions are reconciled exactly: tps = output / (latency - ttft)
    np.testing.assert_allclose(use["ttft_s"], sample.ttft[ok], rtol=0, atol=1e-6)  # Unix-time floats: ~0.2 µs
    np.testing.assert_allclose(use["tps"], sample.tps[ok], rtol=1e-4)
    np.testing.assert_allclose(
        use["uncached_input_tokens"], sample.uncached[ok] if fmt in CACHE_AWARE else sample.input_tokens[ok]
    )

    cal = calibrate(table)
    tol = oracle_tolerances(sample)
    assert cal.counts["failed"] == 20 and cal.counts["usable"] == 400
    assert cal.ttft.prefill_tps is not None
    assert abs(cal.ttft.slope_s_per_token - 1 / truth.prefill_tps) <= tol["slope"]
    assert abs(math.log(cal.ttft.median_s / truth.base_median_s)) <= tol["log_median"]
    assert abs(cal.ttft.sigma - truth.base_sigma) <= tol["sigma"]
    assert abs(cal.tps.mean - truth.tps_mean) <= tol["tps_mean"]
    from scipy import stats

    true_median = stats.gamma(truth.tps_shape, scale=truth.tps_mean / truth.tps_shape).median()
    assert abs(cal.tps.median - true_median) <= tol["tps_median"]
    assert cal.goodness["ttft"]["ks"] < tol["ks"]
    assert cal.goodness["output_tps"]["ks"] < tol["ks"]
    if fmt != "llmperf":  # llmperf records no times of day
        assert str(found.date) == "2026-03-02"


def test_tps_family_is_chosen_by_likelihood():
    rng = np.random.default_rng(11)
    n = 2000
    ttft = 0.5 * np.exp(0.3 * rng.standard_normal(n))
    out = rng.integers(100, 400, n).astype(float)
    for family, tps in (("gamma", rng.gamma(4.0, 20.0, n)), ("lognormal", 80 * np.exp(0.5 * rng.standard_normal(n)))):
        rows = [
            {"ttft_s": a, "latency_s": a + o / t, "output_tokens": o, "input_tokens": 1000.0, "ok": True}
            for a, o, t in zip(ttft, out, tps, strict=True)
        ]
        cal = calibrate(measurement_table(Rows(rows, "csv", "x.csv")))
        assert cal.tps.family == family
        assert cal.tps.loglik[family] > cal.tps.loglik["gamma" if family == "lognormal" else "lognormal"]


def test_prefill_dropped_when_input_sizes_do_not_vary():
    truth = Truth(input_range=(4000, 4000))
    s = draw(truth, 300, 0, seed=3)
    rows = [
        {"ttft_s": a, "latency_s": b, "input_tokens": c, "output_tokens": d, "ok": True}
        for a, b, c, d in zip(s.ttft, s.latency, s.input_tokens, s.output_tokens, strict=True)
    ]
    cal = calibrate(measurement_table(Rows(rows, "csv", "x.csv")))
    assert cal.ttft.prefill_tps is None and "vary too little" in cal.ttft.prefill_note
    # the whole TTFT (base + 0.5 s of prefill) is now the lognormal: its median is the data's
    logs = np.log(s.ttft)
    se = math.sqrt(math.pi / 2) * float(np.std(logs)) / math.sqrt(len(logs))  # SE of a log-median
    assert abs(math.log(cal.ttft.median_s) - float(np.median(logs))) < 4 * se
    doc = _profile_doc(cal)
    assert "prefill_tps" not in doc and "vary too little" in doc["notes"]


def test_prefill_dropped_when_ttft_does_not_grow_with_input():
    s = draw(Truth(prefill_tps=1e15), 300, 0, seed=4)
    rows = [
        {"ttft_s": a, "latency_s": b, "input_tokens": c, "output_tokens": d, "ok": True}
        for a, b, c, d in zip(s.ttft, s.latency, s.input_tokens, s.output_tokens, strict=True)
    ]
    cal = calibrate(measurement_table(Rows(rows, "csv", "x.csv")))
    assert cal.ttft.prefill_tps is None and "no clearly positive prefill effect" in cal.ttft.prefill_note


def test_too_few_usable_requests_is_exit_2(tmp_path):
    s = draw(Truth(), 15, 10, seed=5)
    path = WRITERS["csv"][0](s, tmp_path / "few.csv")
    with pytest.raises(CalibrationError, match="only 15 usable requests"):
        calibrate(read_file(path)[0])
    res = runner.invoke(app, ["calibrate", str(path), "-o", str(tmp_path / "p.yaml")])
    assert res.exit_code == 2
    assert "few.csv" in res.output and "only 15 usable requests (of 25; 10 failed" in res.output
    assert not (tmp_path / "p.yaml").exists()


def test_several_models_need_a_choice(tmp_path):
    a = WRITERS["csv"][0](draw(Truth(model="alpha"), 30, 0, seed=1), tmp_path / "a.csv")
    b = WRITERS["csv"][0](draw(Truth(model="beta", tps_mean=40.0), 30, 0, seed=2), tmp_path / "b.csv")
    res = runner.invoke(app, ["calibrate", str(a), str(b), "-o", str(tmp_path / "p.yaml")])
    assert res.exit_code == 2 and "2 models (alpha, beta); choose one with --model" in res.output
    res = runner.invoke(app, ["calibrate", str(a), str(b), "--model", "beta", "-o", str(tmp_path / "p.yaml")])
    assert res.exit_code == 0, res.output
    prof, _ = load_profile(str(tmp_path / "p.yaml"))
    assert prof.profile == "beta" and prof.fit["requests"]["requests"] == 30
    res = runner.invoke(app, ["calibrate", str(a), "--model", "gamma", "-o", str(tmp_path / "p.yaml")])
    assert res.exit_code == 2 and "model 'gamma' is not in the measurements" in res.output


def _profile_doc(cal):
    import datetime as dt

    from agentsim.measure.calibrate import profile_document

    return profile_document(cal, "x", ["x.csv"], ["csv"], dt.date(2026, 3, 2), "test")


# --------------------------------------------------------------------------- the profile file, end to end


def test_written_profile_loads_and_simulates(tmp_path):
    s = draw(Truth(), 400, 5, seed=21)
    data = WRITERS["measure"][0](s, tmp_path / "m.jsonl")
    prof_path, fig_path = tmp_path / "profile.yaml", tmp_path / "fit.png"
    res = runner.invoke(app, ["calibrate", str(data), "-o", str(prof_path), "--plot", str(fig_path)])
    assert res.exit_code == 0, res.output
    assert "TTFT (s)" in res.output and "output tokens/s" in res.output
    assert fig_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    prof, _ = load_profile(str(prof_path))
    assert prof.kind == "calibrated" and prof.date.isoformat() == "2026-03-02"
    assert prof.fit["requests"]["failed"] == 5 and prof.fit["ttft"]["prefill"]["kept"] is True
    assert "m.jsonl" in prof.source

    sc = tmp_path / "s.yaml"
    sc.write_text(
        "name: s\nseed: 1\nruns: 2000\n"
        "models:\n  x: {profile: ./profile.yaml, price: {input_mtok: 1, output_mtok: 4}}\n"
        "agent: {steps: [{call: {model: x, input: 6000, output: 200}}]}\n"
    )
    out = agentsim.simulate(agentsim.load(sc))
    ttft = out.calls["ttft_s"].to_numpy()
    decode = out.calls["decode_s"].to_numpy()
    # simulated TTFT = base (lognormal of the profile) + 6000 / prefill_tps: its median is exact
    med = prof.ttft.lognormal.median + 6000 / prof.prefill_tps
    se = 1.2533 * float(np.std(np.log(ttft))) / math.sqrt(len(ttft))  # SE of a log-median
    assert abs(math.log(np.median(ttft) / med)) < 4 * se
    # simulated decode = 200 / tps: the simulated speeds have the fitted TPS median
    tps = 200 / decode
    fitted = _tps_median(prof)
    se = 1.2533 * float(np.std(tps)) / math.sqrt(len(tps))  # SE of a median (normal approximation)
    assert abs(np.median(tps) - fitted) < 4 * se


def _tps_median(prof) -> float:
    from scipy import stats

    if prof.output_tps.gamma is not None:
        g = prof.output_tps.gamma
        k = (g.mean / g.sd) ** 2
        return float(stats.gamma(k, scale=g.mean / k).median())
    return prof.output_tps.lognormal.median


def test_calibrate_output_is_byte_identical(tmp_path):
    data = FIXTURE_DIR / "vllm_bench_serve.json"
    outs = []
    for k in range(2):
        p, f = tmp_path / f"p{k}.yaml", tmp_path / f"f{k}.png"
        res = runner.invoke(app, ["calibrate", str(data), "-o", str(p), "--plot", str(f), "--name", "same"])
        assert res.exit_code == 0, res.output
        outs.append((p.read_bytes(), f.read_bytes()))
    assert outs[0] == outs[1]


def test_fixtures_are_the_documented_formats_and_calibrate(tmp_path):
    written = write_fixtures(tmp_path)
    assert sorted(p.name for p in written) == sorted(p.name for p in FIXTURE_DIR.iterdir())
    for p in written:  # the committed example files hold what the writers produce (numbers to 1e-12)
        assert_same_numbers(p, FIXTURE_DIR / p.name)
    for fmt, (_, name) in WRITERS.items():
        path = FIXTURE_DIR / name
        assert detect_format(path) == fmt
        res = runner.invoke(app, ["calibrate", str(path), "-o", str(tmp_path / f"{fmt}.yaml")])
        assert res.exit_code == 0, (fmt, res.output)
        doc = yaml.safe_load((tmp_path / f"{fmt}.yaml").read_text())
        assert doc["fit"]["requests"] == {
            "requests": 30,
            "failed": 2,
            "incomplete": 0,
            "usable": 28,
            "excluded_because": {"error": 2},
        }


def test_date_falls_back_to_the_file_and_can_be_given(tmp_path):
    data = FIXTURE_DIR / "llmperf_individual_responses.json"  # llmperf records no times of day
    p = tmp_path / "p.yaml"
    res = runner.invoke(app, ["calibrate", str(data), "-o", str(p)])
    assert res.exit_code == 0, res.output
    assert "modification time" in yaml.safe_load(p.read_text())["fit"]["date_source"]
    res = runner.invoke(app, ["calibrate", str(data), "-o", str(p), "--date", "2026-01-31"])
    doc = yaml.safe_load(p.read_text())
    assert str(doc["date"]) == "2026-01-31" and doc["fit"]["date_source"] == "given with --date"
    res = runner.invoke(app, ["calibrate", str(data), "-o", str(p), "--date", "31/01/2026"])
    assert res.exit_code == 2 and "YYYY-MM-DD" in res.output


def test_llmperf_without_end_to_end_latency_uses_itl_with_ttft(tmp_path):
    """llmperf's inter_token_latency_s is end-to-end / output tokens (TTFT included)."""
    s = draw(Truth(), 40, 0, seed=9)
    path = WRITERS["llmperf"][0](s, tmp_path / "x_individual_responses.json", with_e2e=False)
    table, _ = read_file(path, "llmperf")
    np.testing.assert_allclose(table["latency_s"], s.latency, rtol=1e-12)
    np.testing.assert_allclose(table["tps"], s.tps, rtol=1e-9)
    # reading it as "first token excluded" (decode = itl x (n - 1)) would count the TTFT as decode time
    wrong_tps = s.output_tokens / (table["latency_s"] / s.output_tokens * (s.output_tokens - 1))
    assert not np.allclose(wrong_tps, s.tps, rtol=0.05)


def test_example_profile_and_scenario(tmp_path, monkeypatch):
    """scenarios/profiles/example-calibrated.yaml is exactly what calibrate writes from the example files."""
    import shutil
    from pathlib import Path

    from agentsim.plan.compiler import compile_plan

    root = Path(__file__).resolve().parents[1]
    names = [name for _, name in WRITERS.values()]
    # the repository's layout in a scratch folder (the profile names its inputs relative to itself)
    (tmp_path / "tests/fixtures").mkdir(parents=True)
    shutil.copytree(root / "tests/fixtures/measurements", tmp_path / "tests/fixtures/measurements")
    (tmp_path / "scenarios/profiles").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(
        app,
        [
            "calibrate",
            *[f"tests/fixtures/measurements/{n}" for n in names],
            "--name",
            "example-calibrated",
            "-o",
            "scenarios/profiles/p.yaml",
        ],
    )
    assert res.exit_code == 0, res.output
    # the same document, numbers equal to 1e-12 (the last digit of a fit may change with SciPy/statsmodels)
    assert_same_numbers(tmp_path / "scenarios/profiles/p.yaml", root / "scenarios/profiles/example-calibrated.yaml")

    sc = agentsim.load(root / "scenarios/measured-vs-assumed.yaml")
    prof, _ = load_profile("example-calibrated.yaml", root / "scenarios/profiles")
    tiers = {t.model: t for t in compile_plan(sc).tiers}
    assert tiers["measured"].prefill_tps == prof.prefill_tps and tiers["assumed"].prefill_tps == float("inf")
