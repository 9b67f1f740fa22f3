"""The report's summary box weighs what the scenario asks: targets first where it has ``slo:`` targets, the
person's waiting where it has turns, the month (hours saved, net value), only the price lines in use, each
tier's speed-up, and a score's worst tail where more of it is better (QoE).

Every figure is checked against summary.json (``simulate(...).summary_dict()`` with the page's seed and runs)
or against arithmetic on it, never against the page's own helpers.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

import agentsim
from agentsim.viz import format as fmt
from agentsim.viz.report import build_report
from agentsim.viz.report_verdict import rank_by_targets
from conftest import SCENARIOS


def _text(markup: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def _box(page: str) -> str:
    return _text(page.split('id="summary">', 1)[1].split("</div>", 1)[0])


def _write(tmp_path: Path, doc: dict, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- targets lead


def test_targets_lead_and_rank_the_variants():
    page = build_report(SCENARIOS / "voice-agent.yaml", runs=300)
    doc = agentsim.simulate(SCENARIOS / "voice-agent.yaml", runs=300).summary_dict()
    shares = {name: v["slo"]["all"] for name, v in doc["variants"].items()}
    order = sorted(shares, key=lambda n: -shares[n]["share"])
    assert len({shares[n]["share"] for n in order}) == len(order)  # no tie: the order is the shares' alone
    box = _box(page)
    best = shares[order[0]]
    lead = (f"Most turns within the target (voice_to_voice_s ≤ 0.80 s): {order[0]} , {fmt.pct(best['share'])} of "
            f"them (95% interval {fmt.pct(best['ci95'][0])}–{fmt.pct(best['ci95'][1])}).")  # fmt: skip
    assert box.startswith(lead), box[:300]
    ranked = _text(page.split('<ol class="ranked">', 1)[1].split("</ol>", 1)[0])
    assert [m.group(1) for m in re.finditer(r"(\S+) : [\d.]+%", ranked)] == order
    for name in order:
        lo, hi = shares[name]["ci95"]
        assert f"{name} : {fmt.pct(shares[name]['share'])} ({fmt.pct(lo)}–{fmt.pct(hi)}) of turns" in ranked
    assert box.index("Most turns within") < box.index("Fastest:")  # the targets before the means


def test_several_targets_each_with_its_share(tmp_path):
    doc = yaml.safe_load((SCENARIOS / "chat-turn.yaml").read_text(encoding="utf-8"))
    doc["slo"] = {"first_word_s": 4, "answer.qoe": 0.9995}
    page = build_report(_write(tmp_path, doc), runs=200, sweep=False)
    summary = agentsim.simulate(_write(tmp_path, doc, "t.yaml"), runs=200).summary_dict()
    ranked = _text(page.split('<ol class="ranked">', 1)[1].split("</ol>", 1)[0])
    for name, v in summary["variants"].items():
        slo = v["slo"]
        for key, label in (("first_word_s", "first_word_s ≤ 4.00 s"), ("answer.qoe", "answer.qoe ≥ 0.9995")):
            lo, hi = slo[key]["ci95"]
            assert f"{label} {fmt.pct(slo[key]['share'])} ({fmt.pct(lo)}–{fmt.pct(hi)})" in ranked, (name, key)
        assert f"{name} : {fmt.pct(slo['all']['share'])}" in ranked
    assert "of turns within every target" in ranked


def test_no_turn_within_the_target(tmp_path):
    doc = yaml.safe_load((SCENARIOS / "voice-agent.yaml").read_text(encoding="utf-8"))
    doc["slo"] = {"voice_to_voice_s": 0.01}
    box = _box(build_report(_write(tmp_path, doc), runs=50, sweep=False))
    assert box.startswith("No turns within the target (voice_to_voice_s ≤ 0.01 s) in any variant.")


def test_rank_ties_go_to_the_cheaper_and_none_last():
    def doc(shares):
        return {"variants": {n: {"slo": {"all": {"share": s}}} for n, s in shares.items()}}

    d = doc({"a": 0.5, "b": 0.9, "c": None, "d": 0.9})
    assert rank_by_targets(d, {"a": 1.0, "b": 2.0, "c": 0.1, "d": 1.0}) == ["d", "b", "a", "c"]
    assert rank_by_targets(d, {"a": 1.0, "b": 1.0, "c": 0.1, "d": 1.0}) == ["b", "d", "a", "c"]  # then the earlier


# --------------------------------------------------------------------------- turns: the person's waiting


TURNS = {
    "name": "conversation",
    "seed": 5,
    "runs": 400,
    "models": {
        "m": {
            "price": {"input_mtok": 3, "output_mtok": 15, "source": "test"},
            "ttft": 1.0,
            "output_tps": 50,
            "speeds": {"fast": {"output_tps_x": 2.5, "price_x": 2}, "unused": {"output_tps_x": 9, "price_x": 9}},
        }
    },
    "agent": {
        "steps": [
            {
                "turns": {
                    "n": 3,
                    "think": {"exponential": {"mean": 120}},
                    "steps": [
                        {"call": {"name": "act", "model": "m", "input": 2000, "output": 400}},
                        {"tool": {"name": "run", "latency": 4}},
                    ],
                }
            }
        ]
    },
    "variants": {"standard": {}, "fast": {"speed": {"m": "fast"}}},
    "value_of_time": {"usd_per_hour": 60},
    "workload": {"volume": {"runs_per_month": 10000}},
}


@pytest.fixture(scope="module")
def turns(tmp_path_factory):
    path = _write(tmp_path_factory.mktemp("turns"), TURNS)
    return build_report(path, sweep=False), agentsim.simulate(path).summary_dict()


def test_turns_weigh_the_persons_waiting(turns):
    page, doc = turns
    box = _box(page)
    w = {n: v["waiting_s"]["mean"] for n, v in doc["variants"].items()}
    wall = {n: v["wall_time_s"]["mean"] for n, v in doc["variants"].items()}
    assert all(wall[n] > w[n] + 200 for n in w)  # the pauses between turns are not waiting
    unit = fmt.time_unit([w["fast"]])
    assert f"Fastest: fast ({fmt.fmt_time(w['fast'], unit)} of waiting per run, mean," in box
    saved = (w["standard"] - w["fast"]) * 10000 / 3600
    extra = (doc["variants"]["fast"]["cost_usd"]["mean"] - doc["variants"]["standard"]["cost_usd"]["mean"]) * 10000
    hours = fmt.decimals_for([w["standard"] * 10000 / 3600, w["fast"] * 10000 / 3600, saved])
    assert f"{fmt.numbers([saved], ' h', decimals=hours)[0]} of waiting saved" in box
    assert f"net {fmt.signed_usd(saved * 60 - extra)} at $60/h" in box
    assert "Waiting is the person's turns, from each message to the answer, not their pauses between turns." in box
    table = page.split("<h2>Variants compared</h2>", 1)[1].split("</table>", 1)[0]
    assert "<th>mean waiting</th><th>p95 waiting</th>" in table
    assert f'data-value="{float(w["fast"])!r}"' in table
    assert "<th>Δ mean waiting</th>" in page and "<th>USD per hour of waiting saved</th>" in page


def test_only_the_price_lines_in_use_and_each_speed_up(turns):
    page, _ = turns
    box = _box(page)
    assert "prices: m explicit prices in the scenario: test" in box
    assert "prices: m/fast 2 × the m price" in box
    assert "speeds: m/fast 2.5× output speed, TTFT unchanged" in box
    assert "m/unused" not in page.split("<h2>The scenario</h2>", 1)[0]  # a tier no variant runs on


# --------------------------------------------------------------------------- a score's worst tail


def test_qoe_tail_is_its_worst_five_percent():
    page = build_report(SCENARIOS / "chat-turn.yaml", runs=300)
    doc = agentsim.simulate(SCENARIOS / "chat-turn.yaml", runs=300)
    runs, summary = doc.runs, doc.summary_dict()
    table = page.split("<h2>Streaming</h2>", 1)[1].split("</table>", 1)[0]
    header = re.findall(r"<th>(.*?)</th>", table)
    qoe = header.index("QoE")
    tails = [r for r in table.split("<tr>")[2:] if "worst 5% (p95; QoE, QoE from ask: p5)" in r]
    assert len(tails) == len(summary["variants"])
    for row, (name, v) in zip(tails, summary["variants"].items(), strict=True):
        q = v["streaming"]["calls"]["answer"]["qoe"]
        values = re.findall(r'<td(?: data-value="([^"]*)")?>', row)
        assert float(values[qoe]) == q["p5"] != q["p95"]
        from_runs = runs.loc[runs["variant"] == name, "answer.qoe"].to_numpy(float)
        assert q["p5"] == pytest.approx(np.percentile(from_runs[np.isfinite(from_runs)], 5), rel=1e-12)
        assert q["p1"] <= q["p5"] <= q["p50"]
        assert "p5" not in v["streaming"]["calls"]["answer"]["ttft_s"]  # lower is better: its tail is the p95
