"""Targets drive verdicts: the targeted metric's percentiles beside its share, the rank of the variants on the
targets, the ``run`` table that leads with them, and what barge-ins cost (issue 36)."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from agentsim.analysis.targets import rank_variants, targets_frame, verdict
from agentsim.cli.main import app
from conftest import SCENARIOS, model, run, scenario

runner = CliRunner()


def _doc(entries: dict[str, dict]) -> dict:
    """A summary document with one target ``voice_to_voice_s`` of 0.8 s; ``entries``: variant -> its figures."""
    variants = {}
    for name, e in entries.items():
        t = {"target": 0.8, "share": e["share"], "ci95": [e["share"], e["share"]], "runs": 100, "mean": 1.0,
             "p50": 0.7, "p95": e["p95"], "p99": 2.0}  # fmt: skip
        variants[name] = {"slo": {"voice_to_voice_s": t, "all": {"share": e["share"], "ci95": t["ci95"], "runs": 100}}}
    return {"variants": variants}


def test_variants_rank_by_the_share_then_the_p95_then_their_order():
    doc = _doc({
        "a": {"share": 0.40, "p95": 1.5},
        "b": {"share": 0.97, "p95": 0.75},
        "c": {"share": 0.40, "p95": 1.2},  # ties with a on the share, a lower p95: before a
        "d": {"share": None, "p95": None},  # no run with an outcome: last
        "e": {"share": 0.97, "p95": 0.75},  # ties with b on both: after b (scenario order)
    })  # fmt: skip
    assert rank_variants(doc) == ["b", "e", "c", "a", "d"]
    v = verdict(doc)
    assert v.best == "b" and v.share == 0.97
    assert v.at_p95["voice_to_voice_s"] == ["b", "e"]  # p95 within 0.8 s
    frame = targets_frame(doc)
    assert frame.loc[frame["variant"] == "a", "rank"].tolist() == [4, 4]  # the target's row and all's
    assert rank_variants({"variants": {"x": {}}}) == [] and verdict({"variants": {"x": {}}}) is None


def test_a_floor_ranks_its_ties_by_the_higher_p95():
    doc = _doc({"a": {"share": 0.5, "p95": 0.6}, "b": {"share": 0.5, "p95": 0.7}})
    for v in doc["variants"].values():  # the same figures on a QoE floor: higher is better
        v["slo"] = {"qoe": v["slo"].pop("voice_to_voice_s"), "all": v["slo"]["all"]}
    assert rank_variants(doc) == ["b", "a"]
    assert verdict(doc).best_p95["qoe"] == ("b", 0.7)


def _answer(target: float) -> dict:
    return scenario(
        [{"call": {"name": "a", "model": "m", "output": {"lognormal": {"median": 100, "p90": 400}},
                   "consumer": {"reader": {"tokens_per_s": 5}}}}],
        models={"m": model(ttft={"lognormal": {"median": 1, "p90": 3}})}, runs=400, slo={"ttft_s": target},
    )  # fmt: skip


def test_p95_is_within_the_target_exactly_when_95_percent_meet_it():
    values = run(_answer(1.0), engine="fastpath").runs["a.ttft_s"].to_numpy()
    for target in np.quantile(values, [0.5, 0.9, 0.94, 0.95, 0.96, 0.99]):
        doc = run(_answer(float(target)), engine="fastpath").summary_dict()  # the same runs, another target
        e = next(iter(doc["variants"].values()))["slo"]["ttft_s"]
        assert (e["p95"] <= target) == (e["share"] >= 0.95), target
        assert e["p95"] == pytest.approx(np.percentile(values, 95), rel=1e-12)  # no missing values here
        assert e["mean"] == pytest.approx(values.mean(), rel=1e-12)


def _barge(p: float, turns: int | None = None) -> dict:
    call = {"call": {"name": "say", "model": "m", "output": 100, "consumer": {"speech": {"first_audio": 0.1,
            "tokens_per_s": 3, "sentence_tokens": 10}}, "interrupt": {"p": p, "after_first_audio": 1.0}}}  # fmt: skip
    steps = [call] if turns is None else [{"turns": {"n": turns, "think": 5, "steps": [call]}}]
    return scenario(steps, runs=300)


def test_every_answer_interrupted_wastes_the_whole_cost():
    # p = 1 and every call interruptible: each turn is interrupted once, and all the money went on interrupted
    # calls, so the waste per run is the mean cost and per turn a third of it (3 turns a run)
    res = run(_barge(1.0, turns=3), engine="fastpath")
    v = next(iter(res.summary_dict()["variants"].values()))
    b = v["barge_in"]
    assert b["interruptions_per_turn"] == pytest.approx(1.0)
    assert b["wasted_share_of_cost"] == pytest.approx(1.0, rel=1e-12)
    assert b["wasted_usd_per_run"] == pytest.approx(v["cost_usd"]["mean"], rel=1e-12)
    assert b["wasted_usd_per_turn"] == pytest.approx(v["cost_usd"]["mean"] / 3, rel=1e-12)


def test_barge_in_cost_agrees_with_the_runs_table():
    # one call per run: the runs table's own columns (another path through the code) give the same figures
    res = run(_barge(0.3), engine="fastpath")
    b = next(iter(res.summary_dict()["variants"].values()))["barge_in"]
    runs = res.runs
    assert 0.2 < b["interruptions_per_turn"] < 0.4
    assert b["interruptions_per_turn"] == pytest.approx(runs["say.interrupted_share"].mean(), rel=1e-12)
    assert b["wasted_usd_per_turn"] == pytest.approx(runs["say.wasted_usd"].mean(), rel=1e-12)
    assert b["wasted_share_of_cost"] == pytest.approx(runs["say.wasted_usd"].sum() / runs["cost_usd"].sum())
    plain = run(scenario([{"call": {"model": "m", "output": 10, "consumer": {"reader": {"tokens_per_s": 5}}}}]))
    assert "barge_in" not in next(iter(plain.summary_dict()["variants"].values()))


def test_the_run_table_leads_with_the_targets_and_says_the_verdict():
    r = runner.invoke(app, ["run", str(SCENARIOS / "voice-agent.yaml"), "--runs", "300"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if "targets: share within" in line)
    wall = next(i for i, line in enumerate(lines) if "wall time mean" in line)
    assert first < wall  # before every other figure
    block = "\n".join(lines[first:wall])
    for label in ("voice_to_voice_s ≤ 0.80 s", "mean", "p95", "p99", "rank on targets"):
        assert label in block, label
    rank = next(line for line in lines if "rank on targets" in line).split("│")[2:5]
    assert [c.strip() for c in rank] == ["3", "2", "1"]  # the 1,000 tok/s provider first
    assert "barge-ins" in r.stdout and "wasted per turn" in r.stdout
    verdict_line = next(line for line in lines if line.startswith("targets: "))
    assert "1000-tps-provider leads" in verdict_line and "95% CI" in verdict_line


def _optimize(*extra: str) -> dict:
    import json

    args = ["optimize", str(SCENARIOS / "voice-agent.yaml"), "--models", "flash,fast-provider", "--runs", "300"]
    r = runner.invoke(app, [*args, *extra, "--json", "--quiet"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_optimize_under_a_budget_ranks_on_the_targets_and_reports_them():
    # a budget on a scenario with slo targets maximises the share within them; the chosen assignment's figures
    # are those `run` gives the same model on the same runs and seed (common random numbers), by another path
    doc = _optimize("--budget-usd-per-run", "0.001")
    assert doc["metric"] == "slo" and doc["choices"] == {"reply": "fast-provider"}
    ran = runner.invoke(app, ["run", str(SCENARIOS / "voice-agent.yaml"), "--runs", "300", "--json"])
    want = __import__("json").loads(ran.stdout)["variants"]["1000-tps-provider"]["slo"]["voice_to_voice_s"]
    chosen = doc["chosen"]
    assert chosen["slo_voice_to_voice_s_share"] == want["share"]
    assert [chosen["slo_voice_to_voice_s_ci95_lo"], chosen["slo_voice_to_voice_s_ci95_hi"]] == want["ci95"]
    assert (chosen["slo_voice_to_voice_s_p95"], chosen["slo_voice_to_voice_s_p99"]) == (want["p95"], want["p99"])
    assert _optimize("--budget-usd-per-run", "0.001", "--metric", "p95")["metric"] == "p95"  # wall time, as asked


def test_optimize_leads_its_tables_with_the_targets():
    args = ["optimize", str(SCENARIOS / "voice-agent.yaml"), "--models", "flash,fast-provider", "--runs", "300"]
    r = runner.invoke(app, [*args, "--budget-usd-per-run", "0.001"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "maximise the share of runs within voice_to_voice_s ≤ 0.80 s" in r.stdout
    result = r.stdout[r.stdout.index("result") :]
    rows = [line for line in result.splitlines() if line.startswith("│")]
    assert rows[0].split("│")[1].strip() == "voice_to_voice_s ≤ 0.80 s"  # the first row of the result
    assert [row.split("│")[1].strip() for row in rows[1:3]] == ["p95", "p99"]
    assert "within voice_to_voice_s ≤ 0.80 s" in r.stdout and "p95 voice_to_voice_s" in r.stdout  # the frontier
