"""``agentsim profiles import openrouter|artificial-analysis``: published provider statistics as dated profiles.

The fixtures in tests/fixtures/providers are SYNTHETIC files in the documented response shapes (OpenRouter's
endpoints listing, Artificial Analysis' models listing). Expected figures are computed by hand below: a
lognormal through published percentiles has its median at the published p50 and
sigma = sum z_i (log q_i - log q_50) / sum z_i^2 (z_i = Phi^-1(p_i)); its p90 is median * exp(1.28155 sigma).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.model.profiles import load_profile

FIX = Path(__file__).resolve().parent / "fixtures" / "providers"
OPENROUTER = FIX / "openrouter-gpt-4-2026-05-06T14-00Z.json"
AA = FIX / "aa-models-2026-05-06.json"
Z75, Z90, Z99 = 0.6744897501960817, 1.2815515655446004, 2.3263478740408408
runner = CliRunner()


def _import(*args):
    return runner.invoke(app, ["profiles", "import", *map(str, args)])


def _profile(folder: Path, name: str) -> dict:
    return yaml.safe_load((folder / f"{name}.yaml").read_text())


def _listing(endpoints, model="openai/gpt-4") -> dict:
    return {"data": {"id": model, "name": model, "endpoints": endpoints}}


def _endpoint(lat, thr, tag="openai", **extra) -> dict:
    return {"provider_name": tag.title(), "tag": tag, "latency_last_30m": lat, "throughput_last_30m": thr, **extra}


def _write(tmp_path: Path, doc, name="listing-2026-05-06T14-00Z.json") -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


# --------------------------------------------------------------------------- OpenRouter


def test_openrouter_percentiles_become_fitted_lognormals(tmp_path):
    r = _import("openrouter", OPENROUTER, "-o", tmp_path)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["openrouter-gpt-4-azure.yaml", "openrouter-gpt-4-openai.yaml"]
    doc = _profile(tmp_path, "openrouter-gpt-4-openai")
    # TTFT: p50 0.25, p75 0.35, p90 0.48, p99 0.85 s
    s_ttft = (Z75 * math.log(0.35 / 0.25) + Z90 * math.log(0.48 / 0.25) + Z99 * math.log(0.85 / 0.25)) / (
        Z75**2 + Z90**2 + Z99**2
    )
    assert doc["ttft"] == {"lognormal": {"median": 0.25, "p90": float(f"{0.25 * math.exp(Z90 * s_ttft):.4g}")}}
    assert doc["ttft"]["lognormal"]["p90"] == 0.4872
    # throughput: ordinary percentiles (OpenRouter's schema): p75 53.07 at z = Z75, p90 72.19 at Z90, p99 135.3 at Z99
    s_tps = (Z75 * math.log(53.07 / 45.2) + Z90 * math.log(72.19 / 45.2) + Z99 * math.log(135.3 / 45.2)) / (
        Z75**2 + Z90**2 + Z99**2
    )
    assert doc["output_tps"] == {"lognormal": {"median": 45.2, "p90": float(f"{45.2 * math.exp(Z90 * s_tps):.4g}")}}
    assert doc["output_tps"]["lognormal"]["p90"] == 78.83
    assert doc["kind"] == "measured" and doc["date"] == "2026-05-06"
    assert doc["fit"]["ttft"]["default_spread"] is False
    assert doc["fit"]["output_tps"]["snapshots"][0]["published"] == {
        "p50": 45.2,
        "p75": 53.07,
        "p90": 72.19,
        "p99": 135.3,
    }
    assert "30 minutes" in doc["source"] and "real OpenRouter traffic" in doc["source"]
    prices = {f["quantity"].split(" ")[0]: f["value"] for f in doc["figures"] if f["unit"] == "USD/Mtok"}
    assert prices == {"input": 30.0, "output": 60.0}  # "0.00003" USD per token = $30 per million
    assert "price" not in doc  # a profile never sets prices
    # two published percentiles each (p75 and p99 null): p90 exactly where published
    azure = _profile(tmp_path, "openrouter-gpt-4-azure")
    assert azure["ttft"] == {"lognormal": {"median": 0.6, "p90": 1.2}}
    assert azure["output_tps"] == {"lognormal": {"median": 30.0, "p90": 45.0}}  # p90 exactly where published
    # the endpoint with null latency and zero throughput is reported and not imported
    assert "data.endpoints[2] (Nobody)" in r.stderr and "not imported" in r.stderr
    assert "latency read as seconds" in r.stderr
    prof, _ = load_profile(str(tmp_path / "openrouter-gpt-4-openai.yaml"))
    assert prof.kind == "measured"


def test_latency_in_milliseconds_gives_the_same_profile(tmp_path):
    doc = json.loads(OPENROUTER.read_text())
    for ep in doc["data"]["endpoints"]:
        lat = ep["latency_last_30m"]
        if lat:
            ep["latency_last_30m"] = {k: (v * 1000 if v is not None else None) for k, v in lat.items()}
    f = _write(tmp_path, doc)
    r = _import("openrouter", f, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert "latency read as milliseconds" in r.stderr
    assert _profile(tmp_path / "out", "openrouter-gpt-4-openai")["ttft"] == {
        "lognormal": {"median": 0.25, "p90": 0.4872}
    }


def test_ambiguous_latency_unit_is_refused_unless_given(tmp_path):
    f = _write(tmp_path, _listing([_endpoint({"p50": 80, "p90": 110}, {"p50": 50, "p90": 60})]))
    r = _import("openrouter", f, "-o", tmp_path / "out")
    assert r.exit_code == 2
    assert "both as seconds and as milliseconds" in r.stderr and "--latency-unit" in r.stderr
    assert not (tmp_path / "out").exists()  # nothing written
    r = _import("openrouter", f, "-o", tmp_path / "out", "--latency-unit", "ms")
    assert r.exit_code == 0, r.output
    assert _profile(tmp_path / "out", "openrouter-gpt-4-openai")["ttft"]["lognormal"]["median"] == 0.08
    r = _import("openrouter", f, "-o", tmp_path / "o2", "--latency-unit", "s")
    assert r.exit_code == 0  # 80 s is a plausible (slow) first token when the user says so
    bad = _write(tmp_path, _listing([_endpoint({"p50": 0.3}, {"p50": 50})]), "b-2026-05-06T14-00Z.json")
    r = _import("openrouter", bad, "-o", tmp_path / "o3", "--latency-unit", "ms")
    assert r.exit_code == 2 and "0.3 ms is not plausible" in r.stderr


def test_latency_plausible_in_neither_unit_or_mixed_is_refused(tmp_path):
    mixed = _listing([_endpoint({"p50": 0.3}, {"p50": 50}), _endpoint({"p50": 450}, {"p50": 50}, tag="b")])
    r = _import("openrouter", _write(tmp_path, mixed), "-o", tmp_path / "out")
    assert r.exit_code == 2 and "neither plausible seconds nor plausible milliseconds" in r.stderr


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        (_endpoint({"p50": float("nan")}, {"p50": 50}), "latency_last_30m.p50: nan is not a finite number"),
        (_endpoint({"p50": -0.3}, {"p50": 50}), "latency_last_30m.p50: -0.3 is negative"),
        (_endpoint({"p50": "0.3"}, {"p50": 50}), "latency_last_30m.p50: '0.3' is not a number"),
        (_endpoint({"p50": True}, {"p50": 50}), "is not a number"),
        (_endpoint({"p50": 0.3}, {"p50": float("inf")}), "throughput_last_30m.p50: inf is not a finite number"),
        (_endpoint({"p50": 0.3}, {"p50": 1e9}), "is not a plausible output speed"),
        (_endpoint({"p50": 0.3}, {"p50": 40, "p90": 20}), "throughput_last_30m: {'p50': 40.0, 'p90': 20.0} falls"),
        (_endpoint({"p50": 0.5, "p90": 0.2}, {"p50": 20}), "falls from p50 to p99"),
        (_endpoint({"p50": 0.3}, {"p50": 20}, pricing={"prompt": "abc"}), "pricing.prompt: 'abc' is not a number"),
        (_endpoint({"p50": 0.3}, {"p50": 20}, pricing={"prompt": "-5"}), "pricing.prompt: -5 is negative"),
        (_endpoint({"p50": 0.3}, {"p50": 20}, uptime_last_30m=250), "not a plausible uptime"),
        (_endpoint({"p50": 0.3}, [20]), "expected an object of percentiles"),
        ("not an endpoint", "data.endpoints[0]: expected an endpoint object"),
        ({"latency_last_30m": {"p50": 0.3}, "throughput_last_30m": {"p50": 20}}, "no provider_name or tag"),
    ],
)
def test_hostile_openrouter_values_exit_2_naming_the_place(tmp_path, endpoint, message):
    r = _import("openrouter", _write(tmp_path, _listing([endpoint])), "-o", tmp_path / "out")
    assert r.exit_code == 2, r.output
    assert message in r.stderr, r.stderr
    assert "data.endpoints[0]" in r.stderr and "Traceback" not in r.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not an OpenRouter endpoints listing"),
        (json.dumps({"data": {"endpoints": []}}), "data.id"),
        (json.dumps({"data": {"id": "x/y", "endpoints": []}}), "has no endpoints"),
        ("[" * 100_000 + "]" * 100_000, "not JSON"),
        (json.dumps(_listing([_endpoint(None, None)])), "no endpoint with both a time to first token"),
    ],
)
def test_garbage_openrouter_files_exit_2(tmp_path, text, message):
    r = _import("openrouter", _write(tmp_path, text), "-o", tmp_path / "out")
    assert r.exit_code == 2, r.output
    assert message in r.stderr


def test_a_file_needs_a_time_it_was_taken(tmp_path):
    f = _write(tmp_path, json.loads(OPENROUTER.read_text()), "endpoints.json")
    r = _import("openrouter", f, "-o", tmp_path / "out")
    assert r.exit_code == 2 and "--taken-at" in r.stderr and "endpoints.json" in r.stderr
    r = _import("openrouter", f, "-o", tmp_path / "out", "--taken-at", "2026-07-01T09:30Z")
    assert r.exit_code == 0 and _profile(tmp_path / "out", "openrouter-gpt-4-openai")["date"] == "2026-07-01"
    os.utime(f, (1_780_000_000, 1_780_000_000))  # 2026-05-28T20:26:40Z
    r = _import("openrouter", f, "-o", tmp_path / "o2", "--taken-at", "mtime")
    assert r.exit_code == 0 and _profile(tmp_path / "o2", "openrouter-gpt-4-openai")["date"] == "2026-05-28"
    r = _import("openrouter", f, "-o", tmp_path / "o3", "--taken-at", "yesterday")
    assert r.exit_code == 2 and "is not a date" in r.stderr


def test_snapshots_at_different_hours_make_a_time_of_day_profile(tmp_path):
    # medians 0.2 s / 60 tok/s at 01:xx, 0.4 s / 40 tok/s at 13:xx, 0.3 s / 50 tok/s at 19:xx (UTC; a window
    # ending at 14:00 belongs to hour 13)
    files = []
    for when, ttft, tps in (("02-00", 0.2, 60.0), ("14-00", 0.4, 40.0), ("20-00", 0.3, 50.0)):
        doc = _listing([_endpoint({"p50": ttft, "p90": ttft * 2}, {"p50": tps, "p90": tps * 1.5})])
        files.append(_write(tmp_path, doc, f"gpt4-2026-05-06T{when}Z.json"))
    r = _import("openrouter", *files, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    doc = _profile(tmp_path / "out", "openrouter-gpt-4-openai")
    base_ttft = math.exp((math.log(0.2) + math.log(0.4) + math.log(0.3)) / 3)
    assert doc["ttft"]["lognormal"]["median"] == float(f"{base_ttft:.4g}")
    assert doc["ttft"]["lognormal"]["p90"] == float(f"{base_ttft * 2:.4g}")  # every snapshot has p90 = 2 x p50
    tod = doc["conditions"]["time_of_day"]
    hourly = tod["ttft_x"]["hourly"]
    assert tod["ttft_x"]["curve"] == "linear" and len(hourly) == 24
    assert hourly[1] == float(f"{0.2 / base_ttft:.4g}") and hourly[13] == float(f"{0.4 / base_ttft:.4g}")
    assert hourly[19] == float(f"{0.3 / base_ttft:.4g}")
    # 07:00 lies halfway between 01 and 13 in log: the geometric mean of the two factors
    assert hourly[7] == float(f"{math.sqrt(0.2 * 0.4) / base_ttft:.4g}")
    # 22:00 wraps around midnight: 3/6 of the way from 19 to 25 (= 01)
    assert hourly[22] == float(f"{math.exp(0.5 * math.log(0.3) + 0.5 * math.log(0.2)) / base_ttft:.4g}")
    base_tps = math.exp((math.log(60) + math.log(40) + math.log(50)) / 3)
    assert tod["output_tps_x"]["hourly"][13] == float(f"{40 / base_tps:.4g}")
    assert "workload.start" in doc["notes"]
    # the profile drives a scenario with a clock
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": "tod",
                "runs": 50,
                "models": {
                    "m": {
                        "profile": str(tmp_path / "out" / "openrouter-gpt-4-openai.yaml"),
                        "price": {"input_mtok": 1, "output_mtok": 2},
                    }
                },
                "agent": {"steps": [{"call": {"model": "m", "output": 100}}]},
                "workload": {"start": "13:00"},
            }
        )
    )
    res = runner.invoke(app, ["run", str(scenario), "--json"])
    assert res.exit_code == 0, res.output


def test_snapshots_within_one_hour_are_pooled_without_factors(tmp_path):
    a = _write(tmp_path, _listing([_endpoint({"p50": 0.2}, {"p50": 60})]), "a-2026-05-06T14-20Z.json")
    b = _write(tmp_path, _listing([_endpoint({"p50": 0.8}, {"p50": 15})]), "b-2026-05-06T14-55Z.json")
    r = _import("openrouter", a, b, a, "-o", tmp_path / "out")  # a given twice: read once
    assert r.exit_code == 0, r.output
    doc = _profile(tmp_path / "out", "openrouter-gpt-4-openai")
    assert doc["ttft"]["lognormal"]["median"] == 0.4 and doc["output_tps"]["lognormal"]["median"] == 30.0
    assert "conditions" not in doc and "given twice" in r.stderr


# --------------------------------------------------------------------------- Artificial Analysis


def test_artificial_analysis_medians_get_the_default_spread(tmp_path):
    r = _import("artificial-analysis", AA, "-o", tmp_path, "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert sorted(report["profiles"]) == ["aa-o3-mini"]
    doc = _profile(tmp_path, "aa-o3-mini")
    assert doc["ttft"] == {"lognormal": {"median": 0.8, "p90": 1.6}}  # p90 = 2 x median
    assert doc["output_tps"] == {"lognormal": {"median": 153.8, "p90": 199.9}}  # p90 = 1.3 x median
    assert doc["fit"]["ttft"]["default_spread"] is True and doc["fit"]["output_tps"]["default_spread"] is True
    assert "DEFAULT SPREAD" in doc["notes"] and "reasoning" in doc["notes"]  # first answer token 14.1 s later
    assert "72 hours" in doc["source"] and "~1,000 input and ~1,000 output tokens" in doc["source"]
    answer = [f for f in doc["figures"] if f["quantity"].startswith("time to first answer token")]
    assert answer[0]["value"] == 14.9
    assert any("quiet-model" in s and "not measured" in s for s in report["skipped"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"status": 429}, "status 429"),
        ({"prompt_options": {"prompt_length": "huge"}}, "prompt_length 'huge'"),
        ({"data": [{"slug": "m", "median_output_tokens_per_second": float("nan")}]}, "is not a finite number"),
        ({"data": [{"slug": "m", "median_time_to_first_token_seconds": -1}]}, "is negative"),
        ({"data": [{"slug": "m", "median_time_to_first_token_seconds": 1e7}]}, "not a plausible time to first token"),
        ({"data": [{"median_time_to_first_token_seconds": 1}]}, "no slug or id"),
        ({"data": [{"slug": "m", "pricing": {"price_1m_input_tokens": "1"}}]}, "pricing.price_1m_input_tokens"),
        ({"data": {"slug": "m"}}, "not an Artificial Analysis models listing"),
    ],
)
def test_hostile_artificial_analysis_files_exit_2(tmp_path, change, message):
    doc = {**json.loads(AA.read_text()), **change}
    r = _import("artificial-analysis", _write(tmp_path, doc), "-o", tmp_path / "out")
    assert r.exit_code == 2, r.output
    assert message in r.stderr


def test_workload_of_another_prompt_length_is_recorded(tmp_path):
    doc = {**json.loads(AA.read_text()), "prompt_options": {"prompt_length": "long", "parallel_queries": 10}}
    r = _import("artificial-analysis", _write(tmp_path, doc), "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    prof = _profile(tmp_path / "out", "aa-o3-mini")
    assert "~10,000 input" in prof["source"] and "10 requests at a time" in prof["source"]


# --------------------------------------------------------------------------- the command group


def test_bare_profiles_still_lists_the_bundled_profiles():
    r = runner.invoke(app, ["profiles", "--json"])
    assert r.exit_code == 0
    assert "claude-opus-4-8" in {row["name"] for row in json.loads(r.stdout)}


def test_out_must_be_a_folder(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    r = _import("openrouter", OPENROUTER, "-o", f)
    assert r.exit_code == 2 and "is a file" in r.stderr
