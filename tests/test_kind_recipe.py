"""A new step kind and a new consumer kind, each one module outside the package, reach every surface.

``tests/review_kinds.py`` is what a reviewer writes by the recipes of docs/design.md, touching nothing in
``src/``: ``retry: {p, max, backoff, steps}`` (a body run again with probability p, a back-off between
attempts, in a breakdown slot of the kind's own) and ``skim: {tokens_per_s}`` (a consumer with its own
metric). A fresh interpreter imports it (the rest of the suite never sees the kinds) and takes both through
validation, both engines, the ``run`` table, the HTML report, the timeline, the figures and the generated
reference; the numbers are checked against hand computations and the geometric law of the attempts.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
T_CALL = 0.5 + 50 / 50  # TTFT + 50 tokens at 50 tokens/s
BACKOFF = 1.5
PAUSE = 2.0

SCENARIO = f"""\
name: recipe
runs: 4000
seed: 5
models:
  m: {{price: {{input_mtok: 1, output_mtok: 2}}, ttft: 0.5, output_tps: 50}}
agent:
  steps:
    - pause: {{name: think, seconds: {PAUSE}}}
    - retry:
        name: fix
        p: 0.5
        max: 3
        backoff: {BACKOFF}
        steps:
          - call: {{name: attempt, output: 50, consumer: {{skim: {{tokens_per_s: 20}}}}}}
"""

BAD = """\
name: bad
models:
  m: {price: {input_mtok: 1, output_mtok: 2}, ttft: 0.5, output_tps: 50}
agent:
  steps:
    - wait: {latency: 1.0e-320}
    - retry:
        p: 1.5
        max: 3
        backoff: 1.0e-320
        steps:
          - call: {output: 50, consumer: {skim: {tokens_per_s: 0}}}
    - retry: {p: 0.5, max: 2, steps: [{call: {model: nope, output: 5}}]}
"""

_SCRIPT = r"""
import base64, json, re, sys
from pathlib import Path
sys.path.insert(0, TESTS)
import review_kinds, toy_kinds  # register retry and skim (and the toy pause)
import numpy as np
from typer.testing import CliRunner
import agentsim
from agentsim import docs_gen
from agentsim.analysis.stream_timeline import token_timelines
from agentsim.analysis.timeline import activities, run_timeline
from agentsim.cli.main import app
from agentsim.viz import plots
from agentsim.viz.plots_stream import stream_figure
from agentsim.viz.report import build_report

out = {}
good, bad = Path(GOOD), Path(BAD)
cli = CliRunner()
r = cli.invoke(app, ["validate", str(good)])
out["validate_good"] = [r.exit_code, r.output]
r = cli.invoke(app, ["validate", str(bad)])
out["validate_bad"] = [r.exit_code, r.output]

runs = {}
for engine in ("des", "fastpath"):
    res = agentsim.simulate(good, engine=engine)
    runs[engine] = res
    out[engine] = {k: v for k, v in res.summary_dict().items() if k != "engine"}
des, fast = runs["des"], runs["fastpath"]
out["tables_equal"] = [des.calls.equals(fast.calls), des.spans.equals(fast.spans), des.runs.equals(fast.runs)]
out["attempts"] = des.calls.groupby("run").size().reindex(range(len(des.runs)), fill_value=0).tolist()
out["wall"] = des.runs["wall_time_s"].tolist()
out["backoff_s"] = des.runs["backoff_s"].tolist()
out["span_kinds"] = sorted({(k, s) for k, s in zip(des.spans["kind"], des.spans["slot"])})

acts = activities(des.calls, des.spans)
out["acts_backoff"] = acts.groupby("run")["backoff"].sum().reindex(range(len(des.runs)), fill_value=0).tolist()
out["acts_wait_pause"] = float(acts.loc[acts["kind"] == "pause", "wait"].sum())
tl = run_timeline(des.calls, des.spans, int(np.argmax(out["attempts"])), des.plan)

def gids(fig):
    return sorted({(a.get_gid(), a.get_facecolor()[:3]) for ax in fig.axes for a in ax.patches if a.get_gid()})

out["timeline_gids"] = [g for g, _ in gids(plots.timeline_figure(tl))]
out["breakdown_gids"] = [[g, list(c)] for g, c in gids(plots.breakdown_figure(des.runs))]

r = cli.invoke(app, ["run", str(good), "--runs", "200"])
out["run_table"] = [r.exit_code, r.output]

page = build_report(good, runs=200, runs_per_month=1000, sweep=False)
svgs = [base64.b64decode(s).decode() for s in re.findall(r'data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)', page)]
out["report_has_backoff_bar"] = any('id="segment:backoff"' in s for s in svgs)
out["report_text"] = re.sub(r"<[^>]+>", " ", page)

frame = token_timelines(good, "attempt", runs=20)
out["stream_columns"] = list(frame.columns)
fig = stream_figure(frame)
out["stream_legend"] = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]

schema = docs_gen.scenario_schema()
defs = set(schema["$defs"])
documented = {s[0] for s in docs_gen.sections()} | {s[0] for s in docs_gen.DIST_SECTIONS} | docs_gen.folded()
toy = {name for cls, name in docs_gen.definitions().items() if cls.__module__ == "toy_kinds"}  # (no docs: not ours)
out["undocumented"] = sorted(defs - documented - toy)
out["review_defs"] = sorted(name for cls, name in docs_gen.definitions().items() if cls.__module__ == "review_kinds")
out["retry_defs"] = sorted(d for d in defs if d.endswith("RetrySpec"))
all_defs = {**schema["$defs"], "Scenario": schema}
out["no_unit"] = sorted(f"{d}.{k}" for d, node in all_defs.items() for k, p in node.get("properties", {}).items()
                        if d not in toy and docs_gen.is_numeric(p) and docs_gen.unit_of(d, k) is None)
out["reference"] = docs_gen.scenario_reference()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> dict:
    where = tmp_path_factory.mktemp("recipe")
    (where / "good.yaml").write_text(SCENARIO, encoding="utf-8")
    (where / "bad.yaml").write_text(BAD, encoding="utf-8")
    code = (
        _SCRIPT.replace("TESTS", repr(str(TESTS)))
        .replace("GOOD", repr(str(where / "good.yaml")))
        .replace("BAD", repr(str(where / "bad.yaml")))
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_validate_checks_every_field_by_its_own_kind(out):
    assert out["validate_good"][0] == 0, out["validate_good"][1]
    code, text = out["validate_bad"]
    assert code == 2
    text = " ".join(text.split())
    # the back-off is a duration: a denormal is refused as it is in a wait's latency, each at its own line
    assert "agent.steps[0].wait.latency: 1e-320 is a denormal number" in text
    assert "agent.steps[1].retry.backoff: 1e-320 is a denormal number" in text
    assert "agent.steps[1].retry.p" in text  # a probability above 1
    assert "agent.steps[1].retry.steps[0].call.consumer.skim.tokens_per_s" in text  # a pace of 0
    # the broken retry step hides no other problem: the third step's unknown model is reported in the same pass
    assert "agent.steps[2].retry.steps[0].call.model: model 'nope' is not defined" in text


def test_both_engines_agree_bit_for_bit_and_with_a_hand_computation(out):
    assert out["des"] == out["fastpath"]
    assert out["tables_equal"] == [True, True, True]
    attempts, wall, backoff = out["attempts"], out["wall"], out["backoff_s"]
    assert set(attempts) <= {1, 2, 3}
    for k, w, b in zip(attempts, wall, backoff, strict=True):  # each run, by hand
        assert w == pytest.approx(PAUSE + k * T_CALL + (k - 1) * BACKOFF)
        assert b == pytest.approx((k - 1) * BACKOFF)
    # attempts: P(1) = 1 - p, P(2) = p (1 - p), P(3) = p^2 (capped at max); 4,000 runs: 4 standard errors
    n = len(attempts)
    for k, prob in ((1, 0.5), (2, 0.25), (3, 0.25)):
        share = attempts.count(k) / n
        assert abs(share - prob) < 4 * math.sqrt(prob * (1 - prob) / n)
    v = out["des"]["variants"]["baseline"]
    assert v["breakdown_s"]["backoff"] == pytest.approx(sum(backoff) / n)
    assert v["breakdown_s"]["wait"] == pytest.approx(PAUSE)
    # the skimmer: 50 tokens delivered from 0.5 s to 1.5 s after the send, skimmed at 20 tokens/s: done at 2.5 s
    assert v["streaming"]["calls"]["attempt"]["skim_done_s"]["mean"] == pytest.approx(2.5)
    assert out["span_kinds"] == [["pause", "wait"], ["retry", "backoff"]]


def test_the_timeline_times_each_span_in_its_slot(out):
    assert out["acts_backoff"] == pytest.approx(out["backoff_s"])  # activities() agrees with the breakdown
    assert out["acts_wait_pause"] == pytest.approx(PAUSE * len(out["wall"]))  # a toy kind's wait (once 0 s)


def test_the_figures_draw_the_kinds_slot_in_its_colour(out):
    assert any(g.endswith(":backoff") for g in out["timeline_gids"])
    bars = {g: c for g, c in out["breakdown_gids"]}
    assert bars["segment:backoff"] == pytest.approx([0x17 / 255, 0xBE / 255, 0xCF / 255])
    assert "baseline: skimmed" in out["stream_legend"]  # the consumer's per-token times on the stream figure
    assert "skimmed_s" in out["stream_columns"]


def test_the_run_table_lists_the_slot_and_the_metric(out):
    code, text = out["run_table"]
    assert code == 0, text
    assert re.search(r"retry back-off\s+\S", text)
    assert re.search(r"attempt: skimmed\s+\S", text)


def test_the_report_shows_the_slot_the_step_and_the_metric(out):
    assert out["report_has_backoff_bar"]
    text = " ".join(out["report_text"].split())
    assert "fix back-off" in text  # the back-off step in the critical-path table
    assert "skimmed" in text  # the consumer's metric in the streaming table


def test_the_generated_reference_documents_both_kinds(out):
    assert out["undocumented"] == []
    assert "SkimSpec" in out["review_defs"] and any(d.endswith("RetrySpec") for d in out["review_defs"])
    assert out["no_unit"] == []
    assert len(out["retry_defs"]) == 2  # the vocabulary's RetrySpec (a model's retries) and the kind's, apart
    ref = out["reference"]
    assert "- `retry`: its steps again with probability p" in ref
    assert "### Step `retry`" in ref and "### consumer.skim" in ref
    assert re.search(r"\| `backoff` \| \[distribution\]\(#distributions\) \| s \|", ref)  # its kind's unit
    assert re.search(r"\| `max` \| integer ≥ 1 \| attempts \|", ref)  # the kind's own unit
    assert re.search(r"\| `tokens_per_s` \| number \| tokens/s \|", ref)
    assert "### retry.max_attempts" not in ref and "attempts" in ref
