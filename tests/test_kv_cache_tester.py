"""kv-cache-tester traces: read as conversations, replayed by hand, and the real files of the public corpus.

The hand-written trace below exercises every rule of :mod:`agentsim.traces.kv_cache_tester` once: a
person's message, a tool loop whose gap holds a blocking subagent, a long pause of the person that lets the
prompt cache expire, and the next turn. Its figures are worked out in the comments.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.replay.config import ReplayConfig, ReplayVariantSpec
from agentsim.replay.retime import replay
from agentsim.traces.kv_cache_tester import read_kv_traces
from agentsim.traces.session_files import detect_format, read_sessions

FIX = Path(__file__).resolve().parent / "fixtures" / "kv-cache-tester"
runner = CliRunner()
K = 100_000  # tokens per block in the hand-written trace


def _req(t, api, ttft, inp, out, hashes, kinds, stop, think=None, **extra):
    rec = {
        "t": t,
        "type": "n",
        "model": "m",
        "in": inp,
        "out": out,
        "hash_ids": hashes,
        "input_types": kinds,
        "output_types": ["text"],
        "stop": stop,
        "api_time": api,
        "ttft": ttft,
    }
    if think is not None:
        rec["think_time"] = think
    return {**rec, **extra}


def hand_trace() -> dict:
    """Main: r0 [0, 10] (the person's message), a Task tool [10, 30] holding a subagent [10.5, 25.5] of two
    requests ([10.5, 14.5], a 2 s tool, [16.5, 21.5]), r1 [30, 35]; the person pauses 365 s (past the 5-minute
    cache lifetime); r2 [400, 408]. Two turns: [0, 35] and [400, 408], 43 s of waiting in a 408 s session."""
    sub = {
        "t": 25.5,
        "type": "subagent",
        "agent_id": "agent_001",
        "subagent_type": "Explore",
        "duration_ms": 15000,
        "status": "completed",
        "requests": [
            _req(0.0, 4.0, 1.0, 2 * K, 50, [101, 102], ["text"], "tool_use", 0.0),
            _req(6.0, 5.0, 1.0, 25 * K // 10, 80, [101, 102, 103], ["tool_result"], "end_turn", 2.0),
        ],
    }
    return {
        "id": "hand-1",
        "models": ["m"],
        "block_size": K,
        "hash_id_scope": "local",
        "tool_tokens": 0,
        "system_tokens": 0,
        "requests": [
            _req(0.0, 10.0, 2.0, 3 * K, 100, [1, 2, 3], ["text"], "tool_use", 0.0),
            sub,
            _req(30.0, 5.0, 1.0, 4 * K, 200, [1, 2, 3, 4], ["tool_result"], "end_turn", 20.0),
            _req(400.0, 8.0, 2.0, 5 * K, 300, [1, 2, 3, 4, 5], ["text"], "end_turn", 365.0),
        ],
    }


@pytest.fixture
def hand_file(tmp_path) -> Path:
    p = tmp_path / "hand.json"
    p.write_text(json.dumps(hand_trace()))
    return p


def _calls(session):
    return {n.call.call_id.split(":", 1)[1]: n for n in session.calls}


def test_the_hand_trace_reads_as_two_turns_with_a_subagent_in_its_task_tool(hand_file):
    [s], [rep] = read_kv_traces([hand_file])
    assert (rep.calls, rep.sessions, rep.corrupt) == (5, 1, 0)
    assert not s.dated and s.id == "hand-1"
    assert s.wall_time_s == 408.0
    kinds = sorted((n.kind, n.start, n.end) for n in s.nodes if n.parent is None)
    assert kinds == [("call", 0.0, 10.0), ("call", 30.0, 35.0), ("call", 400.0, 408.0), ("human", 35.0, 400.0),
                     ("tool", 10.0, 30.0)]  # fmt: skip
    task = next(n for n in s.nodes if n.kind == "tool" and n.parent is None)
    agent = next(n for n in s.nodes if n.kind == "agent")
    assert (task.name, agent.parent, agent.start, agent.end, agent.name) == ("Task", task.id, 10.5, 25.5, "Explore")
    inner = sorted((n.kind, n.start, n.end) for n in s.nodes if n.parent == agent.id)
    assert inner == [("call", 10.5, 14.5), ("call", 16.5, 21.5), ("tool", 14.5, 16.5)]


def test_cache_reads_follow_the_block_hashes_and_expire_across_the_pause(hand_file):
    [s], _ = read_kv_traces([hand_file])
    c = {k: n.call for k, n in _calls(s).items()}
    # r0 writes all; r1 (sent 20 s after r0 ended) reads r0's 3 blocks; r2 (sent 365 s after r1 ended) reads
    # nothing: both entries are older than 300 s. The subagent has its own cache: s1 reads s0's 2 blocks.
    got = {k: (x.cache_read_tokens, x.cache_write_5m_tokens, x.cache_write_1h_tokens) for k, x in c.items()}
    assert got == {
        "requests[0]": (0, 3 * K, 0),
        "requests[2]": (3 * K, K, 0),
        "requests[3]": (0, 5 * K, 0),
        "requests[1].requests[0]": (0, 2 * K, 0),
        "requests[1].requests[1]": (2 * K, K // 2, 0),
    }
    [s1h], _ = read_kv_traces([hand_file], ttl=3600.0)  # a 1-hour cache outlives the pause
    r2 = _calls(s1h)["requests[3]"].call
    assert (r2.cache_read_tokens, r2.cache_write_5m_tokens, r2.cache_write_1h_tokens) == (4 * K, 0, K)


def _config() -> ReplayConfig:
    return ReplayConfig.model_validate(
        {
            "models": {
                "m": {
                    "price": {"input_mtok": 1, "output_mtok": 5, "cache_read_mtok": 0.1, "cache_write_mtok": 1.25},
                    "speeds": {"fast": {"output_tps_x": 2.5, "price_x": 2}},
                }
            }
        }
    )


def test_fast_mode_on_the_hand_trace_saves_what_a_hand_computation_says(hand_file):
    sessions, reports = read_kv_traces([hand_file])
    res = replay(sessions, {"fast": ReplayVariantSpec(speed="fast")}, _config(), reports)
    doc = res.summary_dict()
    rec, fast = doc["recorded"], doc["variants"]["fast"]
    assert (rec["turns"], rec["waiting_s"], rec["wall_time_s"]) == (2, 43.0, 408.0)
    # fast: every decode / 2.5 (TTFTs recorded, kept). r0 ends 2 + 8/2.5 = 5.2; the Task tool starts there, its
    # subagent 0.5 s later (5.7): s0 1 + 3/2.5 -> 7.9, the 2 s tool -> 9.9, s1 1 + 4/2.5 -> 12.5, the agent's
    # recorded tail 4 s -> 16.5, the tool's tail 4.5 s -> 21.0; r1 1 + 4/2.5 -> 23.6; the pause 365 s -> 388.6;
    # r2 2 + 6/2.5 -> 393.0. Turns: 23.6 + 4.4 = 28.0 s.
    assert math.isclose(fast["waiting_s"], 28.0, abs_tol=1e-9)
    assert math.isclose(fast["wall_time_s"], 393.0, abs_tol=1e-9)
    assert math.isclose(fast["waiting_saved_s"], 15.0, abs_tol=1e-9)
    assert math.isclose(fast["session_saved_s"], 15.0, abs_tol=1e-9)
    # cost by hand (USD per token = price / 1e6), recorded:
    #   r0 3e5 written 0.375 + 100 out 0.0005; r1 3e5 read 0.03 + 1e5 written 0.125 + 200 out 0.001;
    #   r2 5e5 written 0.625 + 300 out 0.0015; s0 2e5 written 0.25 + 50 out 0.00025;
    #   s1 2e5 read 0.02 + 5e4 written 0.0625 + 80 out 0.0004
    recorded = 0.3755 + 0.156 + 0.6265 + 0.25025 + 0.0829
    assert math.isclose(rec["cost_usd"], recorded, rel_tol=1e-12)
    assert round(rec["cost_usd"], 2) == 1.49
    assert math.isclose(fast["extra_cost_usd"], recorded, rel_tol=1e-12)  # fast costs twice as much
    assert math.isclose(fast["usd_per_hour_waiting_saved"], recorded / (15.0 / 3600.0), rel_tol=1e-12)
    assert fast["waiting_saved_share"]["value"] == pytest.approx(15.0 / 43.0, rel=1e-12)


def test_a_baseline_variant_measures_savings_against_itself(hand_file):
    sessions, reports = read_kv_traces([hand_file])
    variants = {"standard": ReplayVariantSpec(speed="standard"), "fast": ReplayVariantSpec(speed="fast")}
    doc = replay(sessions, variants, _config(), reports, baseline="standard").summary_dict()
    assert doc["baseline"] == "standard"
    assert doc["variants"]["standard"]["waiting_saved_s"] == 0.0
    assert math.isclose(doc["variants"]["fast"]["waiting_saved_s"], 15.0, abs_tol=1e-9)
    with pytest.raises(ValueError, match="baseline 'nope' is not one of the variants"):
        replay(sessions, variants, _config(), reports, baseline="nope")


def _recorded_figures(doc: dict) -> dict:
    """Independently of agentsim: requests, tokens, server time and the session's end, from the JSON."""
    out = {"requests": 0, "in": 0, "out": 0, "api": 0.0, "end": 0.0}

    def walk(reqs, base):
        for r in reqs:
            if r.get("type") == "subagent":
                walk(r["requests"], base + r["t"] - r["duration_ms"] / 1000)
                out["end"] = max(out["end"], base + r["t"])
                continue
            out["requests"] += 1
            out["in"] += r["in"]
            out["out"] += r["out"]
            out["api"] += r["api_time"]
            out["end"] = max(out["end"], base + r["t"] + r["api_time"])

    walk(doc["requests"], 0.0)
    return out


def test_an_identity_replay_of_a_real_trace_reproduces_its_recorded_timeline():
    path = FIX / "trace_0291.json"
    expect = _recorded_figures(json.loads(path.read_text()))
    sessions, reports = read_sessions([(path, "auto")])
    res = replay(sessions, {"identity": ReplayVariantSpec()}, ReplayConfig(), reports)
    doc = res.summary_dict()
    rec, same = doc["recorded"], doc["variants"]["identity"]
    assert rec["calls"] == expect["requests"] == 32
    assert rec["tokens"]["input"] == expect["in"] and rec["tokens"]["output"] == expect["out"]
    calls = res.calls[res.calls.variant == "recorded"]
    assert math.isclose(float(calls.duration_s.sum()), expect["api"], rel_tol=1e-12)
    assert math.isclose(rec["wall_time_s"], expect["end"], rel_tol=1e-12)
    assert math.isclose(same["wall_time_s"], rec["wall_time_s"], rel_tol=1e-12)
    assert math.isclose(same["waiting_s"], rec["waiting_s"], rel_tol=1e-12)
    assert rec["turns"] == 4  # four messages of the person, each after the agent had stopped
    assert detect_format(path) == "kv-cache-tester"


def test_a_request_without_api_time_is_estimated_and_said_so():
    path = FIX / "trace_0242.json"
    [s], [rep] = read_kv_traces([path])
    assert any("1 streaming requests carry no api_time" in n for n in rep.notes)
    calls = sorted(s.calls, key=lambda n: n.start)
    assert [n.start for n in calls] == [0.0, 90.0, 185.0]
    # a person's message each (input_types ["text"] after a stop other than tool_use): three turns
    humans = sorted((n.start, n.end) for n in s.nodes if n.kind == "human")
    assert humans[0] == (43.48, 90.0) and humans[1] == (calls[1].end, 185.0)
    assert 0.0 < calls[1].duration < 185.0 - 90.0


def test_a_copy_of_a_session_is_read_once_and_named(tmp_path):
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(hand_trace()))
    sessions, reports = read_kv_traces([tmp_path / "a.json", tmp_path / "b.json"])
    assert len(sessions) == 1
    assert reports[1].duplicates == 5 and "already read from" in reports[1].notes[0]


SECRET = "root:$6$SECRETHASH:19000:0:99999:7:::"


def test_bad_records_are_skipped_and_counted_without_their_text(tmp_path):
    doc = hand_trace()
    doc["requests"][0]["in"] = -5
    doc["requests"][2]["model"] = SECRET * 10
    doc["requests"][3]["ttft"] = 99.0  # longer than its api_time
    doc["requests"].append("not a request")
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    [s], [rep] = read_kv_traces([p])
    assert rep.corrupt == 4 and len(s.calls) == 2  # the subagent's two requests remain
    assert rep.first_problem == "requests[0].in: token count -5 is negative"
    r = runner.invoke(app, ["replay", str(p), "--json"])
    assert r.exit_code == 0, r.output
    assert "SECRETHASH" not in r.output


def test_a_truncated_or_foreign_file_exits_2_without_echoing_it(tmp_path):
    text = json.dumps(hand_trace())
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    [_], [rep] = read_kv_traces([cut])
    assert any("not a complete JSON document" in n for n in rep.notes)
    bad = tmp_path / "trace.json"
    bad.write_text('{"requests": [{"hash_ids": [1], "input_types": ["' + SECRET + '"], "t": "x"}], "block_size": 64}')
    r = runner.invoke(app, ["replay", str(bad), "--format", "kv-cache-tester"])
    assert r.exit_code == 2 and "SECRETHASH" not in r.output
    assert "requests[0].t is not a number" in r.output


def test_replay_help_names_every_format_it_reads():
    from agentsim.traces.session_files import FORMATS

    text = " ".join(runner.invoke(app, ["replay", "--help"], terminal_width=200).output.split())
    assert all(name in text for name in FORMATS), [n for n in FORMATS if n not in text]
