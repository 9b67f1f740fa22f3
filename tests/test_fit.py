"""``agentsim fit``: sessions as steps (hand-made cases), the scenario built from them, the speed fit, and the
command end to end (files, exit codes, privacy, the fitted scenario under run/validate/sweep/size/optimize).

The statistical checks on large synthetic populations are in tests/test_fit_populations.py.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.fit.build import build_scenario
from agentsim.fit.population import session_shape
from agentsim.fit.speeds import fit_speeds
from agentsim.traces.sessions import Call, Node, Session, link_nodes

sys.path.insert(0, str(Path(__file__).resolve().parent))
import session_synth as S

runner = CliRunner()
Z90 = 1.2815515655446004


def _call(nid, a, b, model, inp, out, reasoning=0, read=0, write=0, parent=None, agent="main"):
    c = Call(
        nid,
        model,
        "anthropic",
        input_tokens=inp,
        output_tokens=out,
        reasoning_tokens=reasoning,
        cache_read_tokens=read,
        cache_write_5m_tokens=write,
    )
    return Node(nid, "call", a, b, parent=parent, agent=agent, call=c)


def hand_session(sid="s1") -> Session:
    """Main calls c1 [0,4], c2 [10.5,12], c3 [42,43] (model A); after c1: tools [4,10] and [4,6], a subagent
    [4,9] (calls on model H with a tool between them) and a side call on model H [4.5,5.5]; human time
    [12,42] after c2."""
    nodes = [
        _call("c1", 0, 4, "A", 1000, 100, reasoning=20),
        Node("t1", "tool", 4, 10, name="bash"),
        Node("t2", "tool", 4, 6, name="read"),
        Node("a1", "agent", 4, 9, name="explorer"),
        _call("s1", 4, 5, "H", 300, 40, parent="a1", agent="explorer"),
        Node("st1", "tool", 5, 7, parent="a1", agent="explorer", name="grep"),
        _call("s2", 7, 9, "H", 400, 30, parent="a1", agent="explorer"),
        _call("x1", 4.5, 5.5, "H", 200, 10),
        _call("c2", 10.5, 12, "A", 1200, 50, read=1000, write=200),
        Node("h1", "human", 12, 42, name="human"),
        _call("c3", 42, 43, "A", 1500, 10, read=0, write=1500),
    ]
    link_nodes(nodes)
    return Session(sid, "otel", "f", nodes=nodes)


def test_a_session_as_steps():
    sh = session_shape(hand_session())
    assert sh.wall_time_s == 43 and sh.human_s == 30
    s1, s2, s3 = sh.main.steps
    assert (s1.model, s1.duration, sorted(s1.tools)) == ("A", 4, [2, 6])
    assert [c.call_id for c, _ in s1.sides] == ["x1"] and s1.sides[0][1] == 1.0
    assert s1.tool_phase == 6  # the last of the tools, the subagent and the side call ends at 10
    assert s1.lag == 0.5  # c2 starts 10.5 - 4 - 6 after c1's end
    assert s1.growth == 1200 - 1000 - (100 - 20)  # visible output only: reasoning is not re-sent
    (sub,) = s1.subagents
    assert sub.model == "H" and sub.length == 5 and [st.tools for st in sub.steps] == [[2], []]
    assert sub.steps[0].growth == 400 - 300 - 40 and sub.steps[0].lag == 0
    assert (s2.idle, s2.lag, s2.growth) == (30, 0, 1500 - 1200 - 50)
    assert (s3.growth, s3.lag, s3.tool_phase) == (None, 0, 0)
    # the steps add up to the session: sum(call + tool phase + idle + lag)
    assert sum(s.duration + s.tool_phase + s.idle + s.lag for s in sh.main.steps) == sh.wall_time_s


def test_wrapper_containers_are_unwrapped_turn_after_turn():
    nodes = [
        Node("w1", "agent", 0, 5, name="turn"),
        _call("c1", 0, 2, "A", 100, 10, parent="w1"),
        Node("t1", "tool", 2, 5, parent="w1", name="bash"),
        Node("h", "human", 5, 20, name="human"),
        Node("w2", "agent", 20, 23, name="turn"),
        _call("c2", 20, 23, "A", 200, 10, parent="w2"),
    ]
    link_nodes(nodes)
    sh = session_shape(Session("s", "otel", "f", nodes=nodes))
    assert [st.call.call_id for st in sh.main.steps] == ["c1", "c2"]
    assert sh.main.steps[0].tools == [3] and sh.main.steps[0].idle == 15 and not sh.main.steps[0].subagents


def _load_built(tmp_path, built, profile="claude-opus-4-8"):
    import pandas as pd

    import agentsim

    doc = built.scenario
    for m in doc["models"].values():
        m["profile"] = profile
    pd.DataFrame({k: pd.Series(v) for k, v in built.columns.items()}).to_csv(tmp_path / "x.samples.csv", index=False)
    (tmp_path / "x.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return agentsim.load(tmp_path / "x.yaml")


def test_the_scenario_of_a_hand_made_population(tmp_path):
    shapes = [session_shape(hand_session("a")), session_shape(hand_session("b"))]
    price = {"input_mtok": 3, "output_mtok": 15}
    built = build_scenario(shapes, "x", "x.samples.csv", {"A": "p", "H": "p"}, {"A": price, "H": price})
    doc = built.scenario
    agent = doc["agent"]
    # S = mean(first input) - mean(growth) = 1000 - (120 + 250) / 2; a cache because the calls read and write
    assert agent["context"] == {"system": 815, "grows": True, "cache": {"ttl": "5m"}}
    (conversation,) = agent["steps"]  # the person paused: a conversation (contract v1.3)
    turns = conversation["turns"]
    # two turns in each session ([c1, c2], then c3 after the person's 30 s); the first step, then 1 or 0 more
    assert (turns["name"], turns["n"], turns["think"]) == ("turns", 2, 30)
    first, asks, overhead, rest = turns["steps"]
    assert first["call"]["model"] == "A" and first["call"]["input"] == {
        "empirical": {"file": "x.samples.csv", "column": "A.input"}
    }
    assert sorted(built.columns["A.input"]) == [120, 120, 250, 250]
    assert sorted(built.columns["A.output"]) == [10, 10, 50, 50, 80, 80]  # visible: output - reasoning
    assert built.columns["A.reasoning"] == [20, 0, 0, 20, 0, 0]
    tools, subs, sides = asks["parallel"]["branches"]
    assert tools["fanout"]["n"]["choice"]["values"] == [0, 2]
    assert tools["fanout"]["n"]["choice"]["p"] == pytest.approx([2 / 3, 1 / 3], abs=1e-15)
    assert sorted(built.columns["A.tool_s"]) == [2, 2, 6, 6]
    assert subs["fanout"]["n"]["choice"]["p"] == pytest.approx([2 / 3, 1 / 3], abs=1e-15)
    assert sides["fanout"]["steps"][0]["subagent"]["workflow"] == "side.A"
    assert overhead["wait"]["latency"]["empirical"]["column"] == "A.lag_s"
    assert rest["repeat"]["times"] == {"empirical": {"file": "x.samples.csv", "column": "A.more_steps"}}
    assert sorted(built.columns["A.more_steps"]) == [0, 0, 1, 1]
    assert rest["repeat"]["steps"] == [first, asks, overhead]
    assert session_shape(hand_session()).turn_s == [12, 1]  # from each message to the answer
    sub = doc["workflows"]["sub.A"]
    assert sub["steps"][0]["call"]["model"] == "H" and sub["context"]["system"] == 300 - 60  # 300 - mean growth
    assert doc["workflows"]["side.A"]["context"] == {"system": 0, "grows": False, "cache": False}
    assert _load_built(tmp_path, built).name == "x"
    # idle time left out: no human waits
    quiet = build_scenario(shapes, "x", "x.samples.csv", {"A": "p", "H": "p"}, {"A": price, "H": price}, idle="exclude")
    assert "human" not in json.dumps(quiet.scenario) and "turns" not in json.dumps(quiet.scenario)


def test_speeds_from_recorded_ttft_are_the_lognormals_through_median_and_p90():
    ttft = [1.0, 2.0, 3.0, 4.0, 5.0]
    tps = [10.0, 20.0, 30.0, 40.0, 50.0]
    out = [100, 200, 300, 400, 500]
    dur = [t + o / r for t, o, r in zip(ttft, out, tps, strict=True)]
    f = fit_speeds(dur, out, ttft)
    # numpy's linear percentiles: p50 3, p90 4.6 (TTFT); 30, 46 (speed)
    assert f.dist("ttft") == {"lognormal": {"median": 3.0, "p90": 4.6}}
    assert f.dist("tps") == {"lognormal": {"median": 30.0, "p90": 46.0}}
    assert f.method.startswith("recorded TTFT") and f.calls == 5
    assert fit_speeds([1, 2], [10, 10], [None, None]) is None  # too few calls


def test_speeds_from_durations_only_recover_ttft_and_speed():
    # measured over 8 seeded populations of 20,000 calls (this generator): the errors' sd is 2.7% (TTFT median),
    # 3.6% (TTFT p90), 0.8% (speed median), 0.9% (speed p90); the bounds below are 4 sd (docs/fit.md)
    rng = np.random.default_rng(3)
    n = 20000
    out = np.maximum(1, np.round(252 * np.exp(math.log(900 / 252) / Z90 * rng.standard_normal(n))))
    ttft = 1.2 * np.exp(math.log(2) / Z90 * rng.standard_normal(n))
    tps = 60 * np.exp(math.log(1.3) / Z90 * rng.standard_normal(n))
    f = fit_speeds(ttft + out / tps, out, [None] * n)
    t, r = f.dist("ttft")["lognormal"], f.dist("tps")["lognormal"]
    assert t["median"] == pytest.approx(1.2, rel=0.11) and t["p90"] == pytest.approx(2.4, rel=0.15)
    assert r["median"] == pytest.approx(60, rel=0.03) and r["p90"] == pytest.approx(78, rel=0.04)
    assert f.ks < 0.02 and f.method.startswith("durations only")


# --------------------------------------------------------------------------- the command


SMALL = S.Agent(
    models=(S.Model("claude-sonnet-4-5", 1.0, S.LogN(1.2, 2.5), S.LogN(60, 80)),),
    steps=(4, 8),
    output=S.LogN(250, 800),
    growth=S.LogN(600, 2000),
    system=6000,
    tools=((0, 1, 2), (0.3, 0.5, 0.2)),
    tool_latency=S.Mix(0.1, S.LogN(0.4, 2.0), S.LogN(20, 60)),
    idle_p=0.2,
    idle=S.LogN(30, 90),
    subagent_p=0.1,
    sub_model=S.Model("claude-haiku-4-5", 0, S.LogN(0.6, 1.2), S.LogN(150, 200)),
)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    folder = tmp_path_factory.mktemp("small")
    S.write_otel(S.population(SMALL, 60, seed=1), folder / "sessions.jsonl")
    return folder


def test_fit_writes_a_scenario_that_runs(small, tmp_path):
    out = tmp_path / "fitted" / "my-agent.yaml"
    r = runner.invoke(app, ["fit", str(small), "-o", str(out), "--sim-runs", "500"])
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in out.parent.iterdir())
    assert names == [
        "my-agent.claude-haiku-4-5.profile.yaml",
        "my-agent.claude-sonnet-4-5.profile.yaml",
        "my-agent.fit.json",
        "my-agent.samples.csv",
        "my-agent.yaml",
    ]
    assert "&id" not in out.read_text() and "*id" not in out.read_text()  # no YAML anchors: every value written out
    report = json.loads((out.parent / "my-agent.fit.json").read_text())
    assert report["sessions"] == {"fitted": 60, "compared": 60, "compared_with": "the fitted sessions"}
    assert set(report["quantities"]) >= {"wall_time_s", "cost_usd", "steps", "tool_s", "idle_s"}
    assert "wall_time_s" in r.stdout and "tool_share" in r.stdout
    prof = yaml.safe_load((out.parent / "my-agent.claude-sonnet-4-5.profile.yaml").read_text())
    assert prof["kind"] == "calibrated" and prof["fit"]["method"].startswith("recorded TTFT")
    for cmd in (
        ["validate", str(out)],
        ["run", str(out), "--runs", "200", "--json"],
        ["sweep", str(out), "--set", "agent.context.system=0,20000", "--runs", "100", "--json", "-q"],
        ["size", str(out), "--runs-per-month", "1000", "--runs", "100"],
        ["optimize", str(out), "--budget-usd-per-run", "1", "--models", "claude-haiku-4-5", "--runs", "100", "-q"],
    ):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 0, (cmd, res.output)
        assert "warning" not in res.stderr, (cmd, res.stderr)
    # the same sessions and options give the same files, byte for byte
    again = tmp_path / "again" / "my-agent.yaml"
    assert runner.invoke(app, ["fit", str(small), "-o", str(again), "--sim-runs", "500"]).exit_code == 0
    for p in out.parent.iterdir():
        assert p.read_bytes() == (again.parent / p.name).read_bytes(), p.name


def test_fit_options_holdout_idle_json_and_privacy(small, tmp_path):
    out = tmp_path / "a.yaml"
    r = runner.invoke(
        app, ["fit", str(small), "-o", str(out), "--holdout", "0.5", "--idle", "exclude", "--json", "--sim-runs", "400"]
    )
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["sessions"]["compared_with"] == "the held-back sessions"
    assert report["sessions"]["fitted"] + report["sessions"]["compared"] == 60
    assert report["idle"] == "exclude" and report["quantities"]["idle_s"]["simulated"] == {"n": 0}
    assert "human" not in out.read_text()
    for p in tmp_path.iterdir():
        assert b"SECRET" not in p.read_bytes(), p.name
    assert "SECRET" not in r.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "x.txt"], "ending in .yaml"),
        (["--format", "nope"], "--format 'nope'"),
        (["--holdout", "1.5"], "--holdout 1.5"),
        (["--idle", "maybe"], "--idle 'maybe'"),
        (["--project", "nothing-like-this"], "matches --project"),
    ],
)
def test_bad_options_exit_2(small, tmp_path, args, message):
    out = ["-o", str(tmp_path / "a.yaml")] if "-o" not in args else []
    r = runner.invoke(app, ["fit", str(small), *out, *args])
    assert r.exit_code == 2, r.output
    assert message in r.stderr
    assert not (tmp_path / "a.yaml").exists()


def test_sessions_that_cannot_be_fitted_exit_2(tmp_path):
    f = tmp_path / "empty.jsonl"
    f.write_text("{}\n")
    r = runner.invoke(app, ["fit", str(f), "-o", str(tmp_path / "a.yaml")])
    assert r.exit_code == 2 and "not a recognised session file" in r.stderr
    unknown = S.Agent(
        models=(S.Model("no-such-model-x", 1.0, S.LogN(1, 2), S.LogN(50, 60)),),
        steps=(2, 3),
        output=S.LogN(100, 200),
        growth=S.LogN(100, 200),
        system=100,
        tools=((0,), (1.0,)),
        tool_latency=S.Mix(0.0, S.LogN(1, 2), S.LogN(1, 2)),
    )
    S.write_otel(S.population(unknown, 6, seed=2), tmp_path / "u.jsonl")
    r = runner.invoke(app, ["fit", str(tmp_path / "u.jsonl"), "-o", str(tmp_path / "a.yaml")])
    assert r.exit_code == 2 and "not in the genai-prices catalog" in r.stderr and "--config" in r.stderr
    cfg = tmp_path / "replay.yaml"
    cfg.write_text("models:\n  no-such-model-x:\n    price: {input_mtok: 1, output_mtok: 4}\n")
    r = runner.invoke(
        app,
        ["fit", str(tmp_path / "u.jsonl"), "-o", str(tmp_path / "a.yaml"), "--config", str(cfg), "--sim-runs", "200"],
    )
    assert r.exit_code == 0, r.output
    assert yaml.safe_load((tmp_path / "a.yaml").read_text())["models"]["no-such-model-x"]["price"] == {
        "input_mtok": 1.0,
        "output_mtok": 4.0,
    }
