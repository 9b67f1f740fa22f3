"""Black-box audit of ``agentsim replay`` (docs/replay.md): small recorded sessions in each input format,
replayed under another speed tier, model or price, with every expected figure worked out by hand in the
comments from "The replay model" and "Assumptions" sections; then hostile inputs, each of which must end
in bounded time with exit 0 (corrupt lines skipped and named) or exit 2 (one message naming the file and
the place), never a traceback or exit 1.

Speeds come from a profile file written here (so no bundled figure can move a result): TTFT 1 s, 50 output
tokens/s, prefill 1,000 uncached input tokens/s, and a ``fast`` tier with ``output_tps_x: 2.5`` and
``ttft_x: 0.5``. The replay rules used below:

* expected TTFT ``e = ttft·ttft_x + uncached/prefill``, expected decode ``d = output/(tps·tps_x)``;
* ttft-first: a call lasting ``D >= e + d`` has TTFT ``e`` and decode ``D - e``; a faster call is split
  ``D·e/(e+d)`` : ``D·d/(e+d)``; a recorded OTel TTFT is used as is;
* under a variant: TTFT × (target e / recorded e), decode × (recorded speed / target speed);
* tools, human gaps and lags keep their recorded durations; a container keeps its lead and tail.

Prices: the genai-prices catalog rates used (USD per million tokens, as bundled in November 2026):
claude-opus-4-8 input 5, cache read 0.5, 5-minute write 6.25, 1-hour write 10, output 25, and twice each
for ``{speed: fast}``; claude-sonnet-4-5 (under 200k input) 3 / 0.3 / 3.75 / 6 / 15; gpt-5.3-codex input
1.75, cached 0.175, cache writes at the input rate, output (reasoning included) 14, and twice each
for ``{service_tier: fast}``.
``test_catalog_rates_used_by_hand`` checks these rates against genai_prices, so a catalog update fails
there, loudly, instead of in the hand computations.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from genai_prices import Usage, calc_price
from typer.testing import CliRunner

from agentsim.cli.main import app

runner = CliRunner()

PROFILE = """profile: audit
kind: assumption
source: audit test
date: 2026-11-01
ttft: 1.0
output_tps: 50
prefill_tps: 1000
speeds: {fast: {output_tps_x: 2.5, ttft_x: 0.5}}
"""


@pytest.fixture
def prof(tmp_path) -> Path:
    p = tmp_path / "audit-profile.yaml"
    p.write_text(PROFILE)
    return p


def run(*args):
    """In-process CLI run; returns the result (exit_code, stdout, stderr)."""
    r = runner.invoke(app, ["replay", *map(str, args)])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return r


def run_json(*args) -> dict:
    r = run(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def run_proc(*args, timeout=120):
    """Out of process, with a time limit: a hang or a crash fails the test instead of stalling it."""
    r = subprocess.run(
        [sys.executable, "-m", "agentsim", "replay", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert "Traceback" not in r.stderr and "the run failed" not in r.stderr, r.stderr
    assert r.returncode in (0, 2), r.stderr
    return r


# --------------------------------------------------------------------------- writers of recorded sessions


def cc_line(uuid, parent, ts, typ, message, **kw) -> dict:
    d = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/u/shop",
        "sessionId": "s1",
        "version": "2.0.61",
        "uuid": uuid,
        "timestamp": f"2026-11-10T10:00:{ts:06.3f}Z",
        "type": typ,
        "message": message,
    }
    d.update(kw)
    return d


def cc_usage(inp, w5m=0, w1h=0, read=0, out=0) -> dict:
    """Claude Code usage: ``input_tokens`` is the uncached input only."""
    return {
        "input_tokens": inp,
        "cache_creation_input_tokens": w5m + w1h,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": w5m, "ephemeral_1h_input_tokens": w1h},
        "output_tokens": out,
    }


def cc_assistant(uuid, parent, ts, mid, content, usage, model="claude-opus-4-8", **kw) -> dict:
    msg = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": content, "usage": usage}
    return cc_line(uuid, parent, ts, "assistant", msg, requestId=f"req_{mid}", **kw)


def cc_result(uuid, parent, ts, tool_id) -> dict:
    content = [{"type": "tool_result", "tool_use_id": tool_id, "content": "file contents"}]
    return cc_line(uuid, parent, ts, "user", {"role": "user", "content": content})


def tool_use(tid, name):
    return [{"type": "tool_use", "id": tid, "name": name, "input": {}}]


# Three sequential opus calls with two tools between them (seconds after 10:00:00):
#   prompt 0 | C1 0-10 (asks Bash) | Bash 10-13 | C2 13-20 (asks Read) | Read 20-25 | C3 25-29
# C1: 1,000 uncached in, 200 out.  C2: 500 uncached + 1,000 read + 200 written (5 min), 100 out.
# C3: 2,000 uncached + 1,700 read + 300 written (1 h), 150 out.
CC_SESSION = [
    cc_line("u1", None, 0, "user", {"role": "user", "content": "rename the title"}),
    cc_assistant("a1", "u1", 10, "m1", tool_use("tu1", "Bash"), cc_usage(1000, out=200)),
    cc_result("u2", "a1", 13, "tu1"),
    cc_assistant("a2", "u2", 20, "m2", tool_use("tu2", "Read"), cc_usage(500, w5m=200, read=1000, out=100)),
    cc_result("u3", "a2", 25, "tu2"),
    cc_assistant("a3", "u3", 29, "m3", [{"type": "text", "text": "done"}], cc_usage(2000, w1h=300, read=1700, out=150)),
]


def write_jsonl(path: Path, objs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


@pytest.fixture
def cc_file(tmp_path) -> Path:
    return write_jsonl(tmp_path / "claude" / "-home-u-shop" / "s1.jsonl", CC_SESSION)


def codex_event(t, typ, payload) -> dict:
    return {"timestamp": f"2026-11-12T09:00:{t:06.3f}Z", "type": typ, "payload": payload}


def codex_count(t, inp, cached, out, reasoning, total) -> dict:
    last = {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": reasoning,
        "total_tokens": inp + out,
    }
    keys = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")
    tot = dict(zip(keys, total, strict=True)) | {"total_tokens": total[0] + total[2]}
    return codex_event(
        t, "event_msg", {"type": "token_count", "info": {"total_token_usage": tot, "last_token_usage": last}}
    )


# One Codex rollout, gpt-5.3-codex at the standard tier (seconds after 09:00:00):
#   prompt 0, task 0 | K1 0-3 (asks shell at 2) | shell 3-7 | K2 7-12 | human 12-40 | K3 40-45
# K1: 4,000 in (none cached), 100 out (50 reasoning). K2: 5,000 in (4,000 cached), 80 out.
# K3: 6,000 in (5,000 cached), 200 out (100 reasoning).
CODEX_ROLLOUT = [
    codex_event(0, "session_meta", {"id": "rollout-audit-1", "cwd": "/home/u/web", "model_provider": "openai"}),
    codex_event(0, "event_msg", {"type": "user_message", "message": "fix the tests"}),
    codex_event(0, "turn_context", {"model": "gpt-5.3-codex"}),
    codex_event(0, "event_msg", {"type": "task_started"}),
    codex_event(2, "response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "ca"}),
    codex_count(3, 4000, 0, 100, 50, (4000, 0, 100, 50)),
    codex_event(7, "response_item", {"type": "function_call_output", "call_id": "ca", "output": "ok"}),
    codex_count(12, 5000, 4000, 80, 0, (9000, 4000, 180, 50)),
    codex_event(12.1, "event_msg", {"type": "task_complete"}),
    codex_event(40, "event_msg", {"type": "user_message", "message": "and the docs"}),
    codex_event(40, "event_msg", {"type": "task_started"}),
    codex_count(45, 6000, 5000, 200, 100, (15000, 9000, 380, 150)),
]


@pytest.fixture
def codex_file(tmp_path) -> Path:
    return write_jsonl(
        tmp_path / "codex" / "2026" / "11" / "12" / "rollout-2026-11-12T09-00-00-audit.jsonl", CODEX_ROLLOUT
    )


T0_NS = 1_793_952_000_000_000_000  # 2026-11-06T08:00:00Z


def kv(key, v) -> dict:
    if isinstance(v, str):
        return {"key": key, "value": {"stringValue": v}}
    if isinstance(v, float):
        return {"key": key, "value": {"doubleValue": v}}
    return {"key": key, "value": {"intValue": str(v)}}


OTEL_KEYS = {
    "inp": "gen_ai.usage.input_tokens",
    "out": "gen_ai.usage.output_tokens",
    "read": "gen_ai.usage.cache_read.input_tokens",
    "ttft": "gen_ai.response.time_to_first_chunk",
    "tool": "gen_ai.tool.name",
}


def otel_span(sid, parent, start, end, op="chat", status=None, trace="cd" * 16, **attrs) -> dict:
    a = [kv("gen_ai.operation.name", op)]
    if op == "chat":
        a += [kv("gen_ai.request.model", "claude-opus-4-8"), kv("gen_ai.provider.name", "anthropic")]
    a += [kv(OTEL_KEYS[k], v) for k, v in attrs.items()]
    d = {
        "traceId": trace,
        "spanId": sid,
        "name": op,
        "startTimeUnixNano": str(T0_NS + int(start * 1e9)),
        "endTimeUnixNano": str(T0_NS + int(end * 1e9)),
        "attributes": a,
    }
    if parent:
        d["parentSpanId"] = parent
    if status is not None:
        d["status"] = {"code": status}
    return d


def otel_doc(spans) -> dict:
    return {
        "resourceSpans": [{"resource": {"attributes": [kv("service.name", "bot")]}, "scopeSpans": [{"spans": spans}]}]
    }


# One OTel trace (seconds after T0): agent r 0-30 holding
#   A 1-7 (recorded TTFT 1.5 s; 1,000 in, 100 out)
#   then, side by side: B 7-17 (1,000 in, 300 out) and C 7-12, a call that FAILED (status error, no usage)
#   C2 13-19, C's retry one second later (1,000 in, 200 out)
#   tool t 19-22 (waits for B and C2), then E 22-26 (2,500 in of which 500 cache reads, 100 out); r's tail 4 s.
OTEL_SPANS = [
    otel_span("r", None, 0, 30, op="invoke_agent"),
    otel_span("a", "r", 1, 7, inp=1000, out=100, ttft=1.5),
    otel_span("b", "r", 7, 17, inp=1000, out=300),
    otel_span("c", "r", 7, 12, status=2),
    otel_span("c2", "r", 13, 19, inp=1000, out=200),
    otel_span("t", "r", 19, 22, op="execute_tool", tool="grep"),
    otel_span("e", "r", 22, 26, inp=2500, read=500, out=100),
]


@pytest.fixture
def otel_file(tmp_path) -> Path:
    p = tmp_path / "otel" / "trace.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(otel_doc(OTEL_SPANS)))
    return p


# --------------------------------------------------------------------------- the rates used by hand


@pytest.mark.parametrize(
    ("model", "provider", "ctx", "rates"),
    [
        ("claude-opus-4-8", "anthropic", None, (5, 0.5, 6.25, 10, 25)),
        ("claude-opus-4-8", "anthropic", {"speed": "fast"}, (10, 1, 12.5, 20, 50)),
        ("claude-sonnet-4-5", "anthropic", None, (3, 0.3, 3.75, 6, 15)),
        ("gpt-5.3-codex", "openai", None, (1.75, 0.175, 1.75, 1.75, 14)),  # writes: no rate of their own
        ("gpt-5.3-codex", "openai", {"service_tier": "fast"}, (3.5, 0.35, 3.5, 3.5, 28)),
    ],
)
def test_catalog_rates_used_by_hand(model, provider, ctx, rates):
    when = dt.datetime(2026, 11, 10, 12, tzinfo=dt.UTC)
    k = 100_000  # one tenth of a million: under every long-context threshold

    def usd(**u):
        return float(
            calc_price(
                Usage(**u), model, provider_id=provider, price_context=ctx, genai_request_timestamp=when
            ).total_price
        )

    inp, read, w5m, w1h, out = rates
    assert usd(input_tokens=k) == pytest.approx(inp / 10, rel=1e-12)
    assert usd(input_tokens=k, cache_read_tokens=k) == pytest.approx(read / 10, rel=1e-12)
    if w5m is not None:
        assert usd(input_tokens=k, cache_write_tokens=k) == pytest.approx(w5m / 10, rel=1e-12)
        assert usd(input_tokens=k, cache_write_tokens=k, cache_write_1h_tokens=k) == pytest.approx(w1h / 10, rel=1e-12)
    assert usd(output_tokens=k) == pytest.approx(out / 10, rel=1e-12)


# --------------------------------------------------------------------------- Claude Code, sequential


def test_claude_code_three_calls_at_the_fast_tier_by_hand(cc_file, prof, tmp_path):
    """Recorded split (profile: e = 1 + uncached/1000, d = out/50):
    C1 10 s: e = 1 + 1 = 2, d = 4, 10 >= 6 -> TTFT 2, decode 8.
    C2  7 s: e = 1 + 0.5 = 1.5, d = 2, 7 >= 3.5 -> TTFT 1.5, decode 5.5.
    C3  4 s: e = 1 + 2 = 3, d = 3, 4 < 6 (faster than expected) -> TTFT 4·3/6 = 2, decode 2.
    Fast (ttft_x 0.5: e' = 0.5 + uncached/1000; decode / 2.5):
    C1 TTFT 2·1.5/2 = 1.5, decode 3.2 -> 4.7 s;  C2 1.5·1.0/1.5 = 1.0, 2.2 -> 3.2 s;
    C3 2·2.5/3 = 5/3, 0.8 -> 2.4667 s.  Wall 4.7 + 3 + 3.2 + 5 + 2.4667 = 18.3667 s (29 s recorded).
    """
    out = tmp_path / "res"
    r = run(cc_file, "--speed-profile", f"claude-opus-4-8={prof}", "-v", "fast", "--json", "--out", out)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc == json.loads((out / "replay.json").read_text())
    rec, fast = doc["recorded"], doc["variants"]["fast"]
    assert rec["calls"] == 3 and rec["wall_time_s"] == pytest.approx(29.0, abs=1e-6)
    assert rec["time_s"] == pytest.approx(
        {"model": 21.0, "ttft": 5.5, "decode": 15.5, "tool": 8.0, "human": 0.0, "other": 0.0}, abs=1e-6
    )
    wall = 4.7 + 3 + 3.2 + 5 + (5 / 3 + 0.8)
    # timestamps are absolute epoch seconds (~1.8e9): the replayed wall time carries ~1e-7 s of rounding
    assert fast["wall_time_s"] == pytest.approx(wall, abs=1e-6)
    assert fast["time_s"] == pytest.approx(
        {
            "model": wall - 8,
            "ttft": 1.5 + 1.0 + 5 / 3,
            "decode": 3.2 + 2.2 + 0.8,
            "tool": 8.0,
            "human": 0.0,
            "other": 0.0,
        },
        abs=1e-6,
    )
    calls = pd.read_parquet(out / "calls.parquet")
    f = calls[calls.variant == "fast"].sort_values("start_s")
    assert list(f.ttft_s) == pytest.approx([1.5, 1.0, 5 / 3], rel=1e-12)
    assert list(f.decode_s) == pytest.approx([3.2, 2.2, 0.8], rel=1e-12)
    assert set(f.target_tier) == {"fast"}
    # replayed starts: C1 at 0, C2 after 4.7 + 3 s of Bash, C3 after 3.2 + 5 s of Read
    t0 = f.replay_start_s.iloc[0]
    assert list(f.replay_start_s - t0) == pytest.approx([0, 7.7, 15.9], abs=1e-6)
    tools = pd.read_parquet(out / "spans.parquet")
    assert sorted(tools[tools.kind == "tool"].duration_s) == pytest.approx([3.0, 5.0], abs=1e-6)


def test_claude_code_prices_with_cached_tokens_by_hand(cc_file, prof):
    """Opus standard (per Mtok: 5 in, 0.5 read, 6.25 5-min write, 10 1-h write, 25 out), in micro-dollars:
    C1 1000·5 + 200·25 = 10,000;  C2 500·5 + 1000·0.5 + 200·6.25 + 100·25 = 6,750;
    C3 2000·5 + 1700·0.5 + 300·10 + 150·25 = 17,600;  total $0.03435.  Fast: every rate doubled, $0.0687.
    USD per hour saved: 0.03435 / ((29 - 18.3667) / 3600) = 11.6295 $/h.
    """
    doc = run_json(cc_file, "--speed-profile", f"claude-opus-4-8={prof}", "-v", "fast", "-v", "identity")
    rec, fast, same = doc["recorded"], doc["variants"]["fast"], doc["variants"]["identity"]
    assert rec["cost_usd"] == pytest.approx(0.03435, rel=1e-12)
    assert rec["tokens"] == {
        "input": 1000 + (500 + 1000 + 200) + (2000 + 1700 + 300),
        "cache_read": 2700,
        "cache_write_5m": 200,
        "cache_write_1h": 300,
        "output": 450,
        "reasoning": 0,
    }
    assert fast["cost_usd"] == pytest.approx(0.0687, rel=1e-12)
    saved_h = (29 - (4.7 + 3 + 3.2 + 5 + 5 / 3 + 0.8)) / 3600
    vs = fast["vs_recorded"]
    assert vs["delta_cost_usd"] == pytest.approx(0.03435, rel=1e-12)
    assert vs["delta_time_s"] == pytest.approx(-saved_h * 3600, abs=1e-6)
    assert vs["usd_per_hour_saved"] == pytest.approx(0.03435 / saved_h, rel=1e-6)
    assert vs["pays_off"] is None  # no value of time given
    # identity: the recorded wall time and cost, exactly
    assert same["wall_time_s"] == rec["wall_time_s"] and same["cost_usd"] == rec["cost_usd"]
    assert same["vs_recorded"]["usd_per_hour_saved"] is None  # not faster: no premium


@pytest.mark.parametrize(("vot", "pays"), [(11.6, False), (11.7, True), (120, True)])
def test_value_of_time_pays_off_on_either_side_of_the_premium(cc_file, prof, vot, pays):
    # premium 11.6295 $/h (above): pays off when the value of time is at least that
    doc = run_json(cc_file, "--speed-profile", f"claude-opus-4-8={prof}", "--value-of-time", vot)
    assert doc["value_of_time_usd_per_hour"] == vot
    assert doc["variants"]["fast"]["vs_recorded"]["pays_off"] is pays
    r = run(cc_file, "--speed-profile", f"claude-opus-4-8={prof}", "--value-of-time", vot)
    assert r.exit_code == 0
    assert f"pays off at ${vot:,.0f}/h" in r.stdout


def test_model_swap_and_negotiated_table_by_hand(cc_file, prof, tmp_path):
    """Sonnet with its own profile: TTFT 0.5 s, 100 tokens/s, prefill 2,000 tokens/s.
    C1 TTFT 2·(0.5 + 1000/2000)/2 = 1.0, decode 8·50/100 = 4 -> 5 s;
    C2 1.5·(0.5 + 0.25)/1.5 = 0.75, 5.5/2 = 2.75 -> 3.5 s;  C3 2·(0.5 + 1)/3 = 1.0, 2/2 = 1 -> 2 s.
    Wall 5 + 3 + 3.5 + 5 + 2 = 18.5 s.  Sonnet prices (3 / 0.3 / 3.75 / 6 / 15), micro-dollars:
    C1 3000 + 3000 = 6,000;  C2 1500 + 300 + 750 + 1500 = 4,050;  C3 6000 + 510 + 1800 + 2250 = 10,560: $0.02061.
    Negotiated opus table (in 4, read 0.4, out 20; writes default to the input rate): C1 4000 + 4000 = 8,000;
    C2 2000 + 400 + 800 + 2000 = 5,200;  C3 8000 + 680 + 1200 + 3000 = 12,880: $0.02608, at the recorded speed.
    """
    (tmp_path / "sonnet.yaml").write_text(
        PROFILE.replace("ttft: 1.0", "ttft: 0.5")
        .replace("output_tps: 50", "output_tps: 100")
        .replace("prefill_tps: 1000", "prefill_tps: 2000")
    )
    cfg = tmp_path / "replay.yaml"
    cfg.write_text(
        f"models:\n  claude-opus-4-8: {{profile: {prof}}}\n"
        "  anthropic/claude-sonnet-4-5: {profile: sonnet.yaml}\n"
        "variants:\n"
        "  sonnet: {model: anthropic/claude-sonnet-4-5}\n"
        "  negotiated: {price: {claude-opus-4-8: {input_mtok: 4, cache_read_mtok: 0.4, output_mtok: 20}}}\n"
    )
    doc = run_json(cc_file, "--config", cfg)
    sonnet, neg = doc["variants"]["sonnet"], doc["variants"]["negotiated"]
    assert sonnet["wall_time_s"] == pytest.approx(18.5, abs=1e-6)
    assert sonnet["time_s"]["ttft"] == pytest.approx(2.75, abs=1e-9)
    assert sonnet["time_s"]["decode"] == pytest.approx(7.75, abs=1e-9)
    assert sonnet["cost_usd"] == pytest.approx(0.02061, rel=1e-12)
    assert sonnet["vs_recorded"]["usd_per_hour_saved"] == pytest.approx(
        (0.02061 - 0.03435) / (10.5 / 3600), rel=1e-6
    )  # faster and cheaper: negative
    assert neg["wall_time_s"] == pytest.approx(29.0, abs=1e-6)
    assert neg["cost_usd"] == pytest.approx(0.02608, rel=1e-12)
    assert doc["assumptions"]["models"]["anthropic/claude-sonnet-4-5"]["profile"] == "audit"


def test_proportional_split_and_prices_as_of_by_hand(cc_file, prof):
    """--split proportional splits every call D·e/(e+d) : D·d/(e+d):
    C1 10 s, e 2, d 4: TTFT 10/3, decode 20/3; fast 10/3·1.5/2 = 2.5, 20/3/2.5 = 8/3 -> 31/6 s.
    C2 7 s, e 1.5, d 2: TTFT 3, decode 4; fast 3·1/1.5 = 2, 1.6 -> 3.6 s.
    C3 4 s, e 3, d 3: TTFT 2, decode 2; fast 5/3 + 0.8.  Wall 31/6 + 3 + 3.6 + 5 + 5/3 + 0.8 = 19.2333 s.
    Before the fix both options ended in "the run failed: ValidationError ... Instance is frozen", exit 1.
    The profile comes from a config, relative to it: the options must not lose where the config lives."""
    cfg = prof.parent / "replay.yaml"
    cfg.write_text(f"models:\n  claude-opus-4-8: {{profile: {prof.name}}}\n")
    doc = run_json(cc_file, "--config", cfg, "--split", "proportional", "--prices-as-of", "2026-11-01")
    assert doc["assumptions"]["split"] == "proportional"
    assert doc["assumptions"]["prices"] == "as of 2026-11-01"
    assert doc["assumptions"]["models"]["claude-opus-4-8"]["profile"] == "audit"
    assert doc["recorded"]["cost_usd"] == pytest.approx(0.03435, rel=1e-12)  # the same rates on Nov 1
    rec, fast = doc["recorded"], doc["variants"]["fast"]
    assert rec["time_s"]["ttft"] == pytest.approx(10 / 3 + 3 + 2, abs=1e-9)
    assert fast["wall_time_s"] == pytest.approx(31 / 6 + 3 + 3.6 + 5 + 5 / 3 + 0.8, abs=1e-6)
    assert fast["time_s"]["ttft"] == pytest.approx(2.5 + 2 + 5 / 3, abs=1e-9)


@pytest.mark.parametrize(("vot", "pays"), [(4.8, True), (4.9, False)])
def test_fast_recorded_session_replayed_at_standard_by_hand(tmp_path, prof, vot, pays):
    """The same session recorded in fast mode (usage.speed: fast), replayed with --variant standard.
    Recorded split at the fast tier (e = 0.5 + uncached/1000, d = out/125):
    C1 10 s: e 1.5, d 1.6 -> TTFT 1.5, decode 8.5; standard: TTFT 1.5·2/1.5 = 2, decode 8.5·2.5 = 21.25.
    C2  7 s: e 1.0, d 0.8 -> 1 + 6; standard: 1·1.5/1 = 1.5, 15.
    C3  4 s: e 2.5, d 1.2 -> 2.5 + 1.5; standard: 2.5·3/2.5 = 3, 3.75.
    Wall 23.25 + 3 + 16.5 + 5 + 6.75 = 54.5 s (+25.5 s). Cost: recorded at the fast price $0.0687, standard
    $0.03435 (-$0.03435). Slower and cheaper: no premium per hour saved; pays off below
    V* = 3600 · 0.03435 / 25.5 = 4.8494 $/h."""
    lines = [json.loads(json.dumps(x)) for x in CC_SESSION]
    for x in lines:
        if x["type"] == "assistant":
            x["message"]["usage"]["speed"] = "fast"
    f = write_jsonl(tmp_path / "p" / "s1.jsonl", lines)
    doc = run_json(f, "--speed-profile", f"claude-opus-4-8={prof}", "-v", "standard", "--value-of-time", vot)
    rec, std = doc["recorded"], doc["variants"]["standard"]
    assert rec["cost_usd"] == pytest.approx(0.0687, rel=1e-12)
    assert rec["time_s"]["ttft"] == pytest.approx(1.5 + 1 + 2.5, abs=1e-9)
    assert std["wall_time_s"] == pytest.approx(54.5, abs=1e-6)
    assert std["time_s"]["decode"] == pytest.approx(21.25 + 15 + 3.75, abs=1e-6)
    assert std["cost_usd"] == pytest.approx(0.03435, rel=1e-12)
    vs = std["vs_recorded"]
    assert vs["delta_time_s"] == pytest.approx(25.5, abs=1e-6) and vs["usd_per_hour_saved"] is None
    assert vs["pays_off"] is pays


def test_cross_provider_swap_keeps_the_usage_cache_writes_included(cc_file, prof):
    """model=openai/gpt-5.3-codex,speed=fast on the opus session, one profile for every model (so the timing is
    the opus fast timing, 18.3667 s). The recorded usage is kept, cache writes included ("Same tokens"), and
    priced at gpt-5.3-codex's fast rates (3.5 in and writes, 0.35 reads, 28 out), micro-dollars:
    C1 1000·3.5 + 200·28 = 9,100;  C2 500·3.5 + 1000·0.35 + 200·3.5 + 100·28 = 5,600;
    C3 2000·3.5 + 1700·0.35 + 300·3.5 + 150·28 = 12,845: $0.027545."""
    doc = run_json(cc_file, "--speed-profile", str(prof), "-v", "model=openai/gpt-5.3-codex,speed=fast")
    v = doc["variants"]["model=openai/gpt-5.3-codex,speed=fast"]
    assert v["tokens"] == doc["recorded"]["tokens"]
    assert v["wall_time_s"] == pytest.approx(4.7 + 3 + 3.2 + 5 + 5 / 3 + 0.8, abs=1e-6)
    assert v["cost_usd"] == pytest.approx(0.027545, rel=1e-12)


def test_identity_is_exact_in_every_format_and_a_path_given_twice_changes_nothing(cc_file, codex_file, otel_file, prof):
    a = run_json(cc_file, codex_file, otel_file, "--speed-profile", str(prof), "-v", "identity", "-v", "fast")
    rec, same = a["recorded"], a["variants"]["identity"]
    assert a["sources"] == {"claude-code": 1, "codex": 1, "otel": 1}
    assert rec["wall_time_s"] == pytest.approx(29 + 45 + 30, abs=1e-6)
    assert (same["wall_time_s"], same["cost_usd"], same["time_s"]) == (
        rec["wall_time_s"],
        rec["cost_usd"],
        rec["time_s"],
    )
    # the three hand-computed sessions add up
    fast = 4.7 + 3 + 3.2 + 5 + 5 / 3 + 0.8 + (15.9 / 7 + 4 + 2.7 + 28 + 1.25 + 4 / 3) + 19.765
    assert a["variants"]["fast"]["wall_time_s"] == pytest.approx(fast, abs=1e-5)
    assert a["variants"]["fast"]["cost_usd"] == pytest.approx(0.0687 + 0.03479 + 0.0855, rel=1e-12)
    b = run_json(
        cc_file,
        codex_file,
        otel_file,
        cc_file,
        otel_file.parent,
        "--speed-profile",
        str(prof),
        "-v",
        "identity",
        "-v",
        "fast",
    )
    assert (b["recorded"], b["variants"]) == (a["recorded"], a["variants"])


def test_claude_code_parallel_tools_of_one_call_and_the_last_lines_usage(tmp_path, prof):
    """C1 (message m1) is written as two content lines: tool_use A at 9 s with a partial usage (1 output token),
    tool_use B at 10 s with the final usage (1,000 in, 200 out): one call, 0-10, the last line's usage.
    Tools A 10-12 and B 10-15 ran side by side; C2 answers B's result (15) and ends at 20 (500 uncached, 1,000
    read, 200 written, 100 out). Fast: C1 4.7 s as before; both tools kept; C2 waits for the later tool, B:
    C2 5 s, e 1.5, d 2 -> 1.5 + 3.5; fast 1.0 + 1.4 = 2.4. Wall 4.7 + 5 + 2.4 = 12.1 s (20 recorded).
    Cost: C1 10,000 + C2 6,750 micro-dollars = $0.01675 (the partial usage is not added)."""
    lines = [
        CC_SESSION[0],
        cc_assistant("a1", "u1", 9, "m1", tool_use("tA", "Read"), cc_usage(1000, out=1)),
        cc_assistant("a1b", "a1", 10, "m1", tool_use("tB", "Bash"), cc_usage(1000, out=200)),
        cc_result("u2", "a1b", 12, "tA"),
        cc_result("u3", "u2", 15, "tB"),
        cc_assistant(
            "a2", "u3", 20, "m2", [{"type": "text", "text": "ok"}], cc_usage(500, w5m=200, read=1000, out=100)
        ),
    ]
    f = write_jsonl(tmp_path / "p" / "s1.jsonl", lines)
    doc = run_json(f, "--speed-profile", f"claude-opus-4-8={prof}")
    rec, fast = doc["recorded"], doc["variants"]["fast"]
    assert rec["calls"] == 2 and rec["tokens"]["output"] == 300
    assert rec["wall_time_s"] == pytest.approx(20.0, abs=1e-6)
    assert rec["time_s"]["tool"] == pytest.approx(5.0, abs=1e-6)  # B is on the critical path, A is not
    assert fast["wall_time_s"] == pytest.approx(12.1, abs=1e-6)
    assert rec["cost_usd"] == pytest.approx(0.01675, rel=1e-12)


def test_a_failed_claude_code_request_is_not_a_call(tmp_path, prof):
    """Claude Code writes a failed request as a ``<synthetic>`` assistant line (isApiErrorMessage); the docs:
    "<synthetic> messages are not calls". Prompt 0, error line 4, new prompt 10, opus call 10-16 (1,000 in,
    200 out). The session starts at its first node, the call: wall 6 s, no human gap (no node before the
    second prompt). Fast: TTFT 2·1.5/2 = 1.5, decode (6 - 2)/2.5 = 1.6 -> 3.1 s. Cost 1000·5 + 200·25 = $0.01."""
    err = cc_assistant(
        "a0", "u1", 4, "m0", [{"type": "text", "text": "API Error: 529"}], cc_usage(0), model="<synthetic>"
    )
    err["isApiErrorMessage"] = True
    lines = [
        cc_line("u1", None, 0, "user", {"role": "user", "content": "go"}),
        err,
        cc_line("u2", "a0", 10, "user", {"role": "user", "content": "try again"}),
        cc_assistant("a1", "u2", 16, "m1", [{"type": "text", "text": "ok"}], cc_usage(1000, out=200)),
    ]
    f = write_jsonl(tmp_path / "p" / "s.jsonl", lines)
    doc = run_json(f, "--speed-profile", f"claude-opus-4-8={prof}")
    assert doc["recorded"]["calls"] == 1 and doc["recorded"]["wall_time_s"] == pytest.approx(6.0, abs=1e-6)
    assert doc["recorded"]["time_s"]["human"] == 0.0
    assert doc["variants"]["fast"]["wall_time_s"] == pytest.approx(3.1, abs=1e-6)
    assert doc["recorded"]["cost_usd"] == pytest.approx(0.01, rel=1e-12)
    assert any("<synthetic>" in n for rep in doc["files"] for n in rep["notes"])


# --------------------------------------------------------------------------- Codex


def test_codex_rollout_with_cached_input_fast_by_hand(codex_file, prof):
    """Recorded split (uncached = input - cached):
    K1 3 s: e = 1 + 4 = 5, d = 2, 3 < 7 -> TTFT 15/7, decode 6/7;  fast 15/7·4.5/5 = 13.5/7, 2.4/7 -> 15.9/7 s.
    K2 5 s: e = 1 + 1 = 2, d = 1.6 -> TTFT 2, decode 3;  fast 2·1.5/2 = 1.5, 1.2 -> 2.7 s.
    K3 5 s: e = 2, d = 4, 5 < 6 -> TTFT 5/3, decode 10/3;  fast 5/3·1.5/2 = 1.25, 4/3 -> 2.5833 s.
    Wall 15.9/7 + 4 (shell) + 2.7 + 28 (human) + 2.5833 = 39.5548 s (45 recorded).
    gpt-5.3-codex (1.75 in, 0.175 cached, 14 out), micro-dollars: K1 4000·1.75 + 100·14 = 8,400;
    K2 1000·1.75 + 4000·0.175 + 80·14 = 3,570;  K3 1000·1.75 + 5000·0.175 + 200·14 = 5,425: $0.017395.
    Fast tier {service_tier: fast}: twice, $0.03479.
    """
    doc = run_json(codex_file, "--speed-profile", str(prof), "-v", "fast")
    rec, fast = doc["recorded"], doc["variants"]["fast"]
    assert doc["sources"] == {"codex": 1} and rec["calls"] == 3
    assert rec["wall_time_s"] == pytest.approx(45.0, abs=1e-6)
    assert rec["time_s"] == pytest.approx(
        {
            "model": 13.0,
            "ttft": 15 / 7 + 2 + 5 / 3,
            "decode": 6 / 7 + 3 + 10 / 3,
            "tool": 4.0,
            "human": 28.0,
            "other": 0.0,
        },
        abs=1e-6,
    )
    assert rec["tokens"]["cache_read"] == 9000 and rec["tokens"]["reasoning"] == 150
    wall = 15.9 / 7 + 4 + 2.7 + 28 + (1.25 + 4 / 3)
    assert fast["wall_time_s"] == pytest.approx(wall, abs=1e-6)
    assert fast["time_s"]["human"] == pytest.approx(28.0, abs=1e-6) and fast["time_s"]["tool"] == pytest.approx(4.0)
    assert rec["cost_usd"] == pytest.approx(0.017395, rel=1e-12)
    assert fast["cost_usd"] == pytest.approx(0.03479, rel=1e-12)


def test_codex_explicit_price_table_with_a_cache_read_rate(codex_file, tmp_path):
    """A table of 2 in, 0.1 cached, 10 out (reasoning at the output rate), micro-dollars:
    K1 4000·2 + 100·10 = 9,000;  K2 1000·2 + 4000·0.1 + 80·10 = 3,200;  K3 1000·2 + 5000·0.1 + 200·10 = 4,500:
    $0.0167; the same timing as recorded (only the price changes)."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text("variants:\n  deal: {price: {'*': {input_mtok: 2, cache_read_mtok: 0.1, output_mtok: 10}}}\n")
    doc = run_json(codex_file, "--config", cfg)
    deal = doc["variants"]["deal"]
    assert deal["cost_usd"] == pytest.approx(0.0167, rel=1e-12)
    assert deal["wall_time_s"] == doc["recorded"]["wall_time_s"]
    assert deal["vs_recorded"]["usd_per_hour_saved"] is None  # not faster


# --------------------------------------------------------------------------- OpenTelemetry, parallel


def test_otel_parallel_calls_failed_call_and_recorded_ttft_by_hand(otel_file, prof, tmp_path):
    """Order: B and C both wait for A (parallel); C2 waits for C (1 s lag); t waits for B and C2; E for t.
    Recorded split and fast re-timing (e = 1 + uncached/1000; fast e' = 0.5 + uncached/1000):
    A  6 s, recorded TTFT 1.5 -> decode 4.5;  fast TTFT 1.5·1.5/2 = 1.125, decode 1.8 -> 2.925 s.
    B 10 s: e 2, d 6 -> 2 + 8;  fast 1.5 + 3.2 = 4.7 s.
    C  5 s, failed, no usage: e 1, d 0 -> 1 + 4 ("the rest of its duration as decode"); fast 0.5 + 1.6 = 2.1 s.
    C2 6 s: e 2, d 4 -> 2 + 4;  fast 1.5 + 1.6 = 3.1 s.
    E  4 s: uncached 2000, e 3, d 2, 4 < 5 -> 2.4 + 1.6;  fast 2.4·2.5/3 = 2.0, 0.64 -> 2.64 s.
    Fast timeline: A 1-3.925; B 3.925-8.625 and C 3.925-6.025; C2 7.025-10.125; t 10.125-13.125 (C2 ends last);
    E 13.125-15.765; r ends 15.765 + 4 = 19.765: the wall time (30 s recorded).
    Critical path: lead 1 + A + C + lag 1 + C2 + t + E + tail 4: model 2.925 + 2.1 + 3.1 + 2.64 = 10.765,
    tool 3, other 6.  Costs (opus, micro-dollars): A 5000 + 2500; B 5000 + 7500; C unknown (no usage); C2 5000 + 5000;
    E 2000·5 + 500·0.5 + 100·25 = 12,750: $0.04275 recorded, $0.0855 fast.
    """
    out = tmp_path / "res"
    r = run(otel_file, "--speed-profile", str(prof), "-v", "fast", "--json", "--out", out)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    rec, fast = doc["recorded"], doc["variants"]["fast"]
    assert doc["sources"] == {"otel": 1} and rec["calls"] == 5  # the failed call is a call
    assert rec["wall_time_s"] == pytest.approx(30.0, abs=1e-6)
    # recorded critical path: lead 1, A 6 (TTFT 1.5), C 5 (1), lag 1, C2 6 (2), t 3, E 4 (2.4), tail 4
    assert rec["time_s"] == pytest.approx(
        {
            "model": 21.0,
            "ttft": 1.5 + 1 + 2 + 2.4,
            "decode": 4.5 + 4 + 4 + 1.6,
            "tool": 3.0,
            "human": 0.0,
            "other": 6.0,
        },
        abs=1e-6,
    )
    assert fast["wall_time_s"] == pytest.approx(19.765, abs=1e-6)
    assert fast["time_s"] == pytest.approx(
        {
            "model": 10.765,
            "ttft": 1.125 + 0.5 + 1.5 + 2.0,
            "decode": 1.8 + 1.6 + 1.6 + 0.64,
            "tool": 3.0,
            "human": 0.0,
            "other": 6.0,
        },
        abs=1e-6,
    )
    assert rec["cost_usd"] == pytest.approx(0.04275, rel=1e-12)
    assert fast["cost_usd"] == pytest.approx(0.0855, rel=1e-12)
    calls = pd.read_parquet(out / "calls.parquet")
    f = calls[calls.variant == "fast"].set_index("node")
    t0 = T0_NS / 1e9
    expected = {"a": (1, 3.925), "b": (3.925, 8.625), "c": (3.925, 6.025), "c2": (7.025, 10.125), "e": (13.125, 15.765)}
    for node, (start, end) in expected.items():
        assert f.replay_start_s[node] - t0 == pytest.approx(start, abs=1e-6), node
        assert f.replay_end_s[node] - t0 == pytest.approx(end, abs=1e-6), node
    assert f.ttft_s["a"] == pytest.approx(1.125, rel=1e-12)  # the recorded 1.5 s TTFT, re-timed by 1.5/2
    # C records no usage: counted, but its cost is unknown (not $0), said in the notes and the unpriced count
    assert math.isnan(f.cost_usd["c"]) and not f.usage_recorded["c"]
    assert rec["unpriced_calls"] == 1 and any("no token usage recorded" in n for n in doc["notes"])


def test_otel_conversation_traces_are_one_session_with_human_time_between(tmp_path, prof):
    """Two traces sharing gen_ai.conversation.id: a call 0-5 s, then (human 5-65 s) a call 65-68 s; each
    1,000 in, 100 out, so e = 2, d = 2. The 5 s call: TTFT 2, decode 3; fast 1.5 + 1.2 = 2.7 s. The 3 s call is
    faster than expected (3 < 4): TTFT 3·2/4 = 1.5, decode 1.5; fast 1.5·1.5/2 + 1.5/2.5 = 1.125 + 0.6 = 1.725 s.
    Wall 2.7 + 60 (human, kept) + 1.725 = 64.425 s (68 recorded)."""
    conv = {"key": "gen_ai.conversation.id", "value": {"stringValue": "conv-7"}}
    s1 = otel_span("x1", None, 0, 5, trace="11" * 16, inp=1000, out=100)
    s2 = otel_span("x2", None, 65, 68, trace="22" * 16, inp=1000, out=100)
    for s in (s1, s2):
        s["attributes"].append(conv)
    f = tmp_path / "conv.jsonl"
    f.write_text(json.dumps(otel_doc([s1])) + "\n" + json.dumps(otel_doc([s2])) + "\n")
    doc = run_json(f, "--speed-profile", str(prof))
    assert doc["sessions"] == 1 and doc["recorded"]["wall_time_s"] == pytest.approx(68.0, abs=1e-6)
    assert doc["recorded"]["time_s"]["human"] == pytest.approx(60.0, abs=1e-6)
    assert doc["variants"]["fast"]["wall_time_s"] == pytest.approx(64.425, abs=1e-6)


# --------------------------------------------------------------------------- hostile inputs


def test_truncated_last_line_is_skipped_and_named(cc_file, prof):
    text = cc_file.read_text()
    cc_file.write_text(text[: len(text) - 120])  # the last line (C3) is cut
    r = run_proc(cc_file, "--json", "--speed-profile", f"claude-opus-4-8={prof}")
    assert r.returncode == 0
    assert f"warning: {cc_file}: skipped 1 corrupt lines (first at line 6)" in r.stderr
    doc = json.loads(r.stdout)
    # C1 0-10, Bash 10-13, C2 13-20, then Read 20-25 (its result line is intact): 25 s, two calls
    assert doc["recorded"]["calls"] == 2 and doc["recorded"]["wall_time_s"] == pytest.approx(25.0, abs=1e-6)


def test_a_file_truncated_in_its_only_line_exits_2_naming_file_and_line(tmp_path):
    f = tmp_path / "cut.jsonl"
    f.write_text(json.dumps(CC_SESSION[1])[:200])
    r = run_proc(f, "--format", "claude-code")
    assert r.returncode == 2 and r.stdout == ""
    assert str(f) in r.stderr and "nothing usable" in r.stderr and "first at line(s) 1" in r.stderr


def test_a_truncated_otel_document_exits_2_naming_the_file(tmp_path):
    f = tmp_path / "cut.json"
    f.write_text(json.dumps(otel_doc(OTEL_SPANS))[:700])
    r = run_proc(f)
    assert r.returncode == 2 and str(f) in r.stderr and "line(s) 1" in r.stderr


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("output_tokens", "200", "token count '200' is not a number"),
        ("output_tokens", -5, "token count -5 is negative"),
        ("input_tokens", 12.5, "token count 12.5 is not a whole number"),
    ],
)
def test_wrong_token_types_in_claude_code_skip_the_line_and_say_why(tmp_path, field, value, why):
    lines = [dict(x) for x in CC_SESSION]
    bad = json.loads(json.dumps(lines[3]))
    bad["message"]["usage"][field] = value
    lines[3] = bad
    f = write_jsonl(tmp_path / "p" / "s.jsonl", lines)
    r = run_proc(f, "--json")
    assert r.returncode == 0
    assert f"{f}: skipped 1 corrupt lines (first at line 4; line 4: {why})" in r.stderr
    assert json.loads(r.stdout)["recorded"]["calls"] == 2


def test_wrong_types_in_a_codex_rollout_skip_the_line(tmp_path):
    lines = [json.loads(json.dumps(x)) for x in CODEX_ROLLOUT]
    lines[7]["payload"]["info"]["last_token_usage"]["input_tokens"] = "5000"
    lines[5]["timestamp"] = 1762938003  # a number, not an ISO string
    f = write_jsonl(tmp_path / "rollout-x.jsonl", lines)
    r = run_proc(f, "--json")
    assert r.returncode == 0
    assert f"{f}: skipped 2 corrupt lines (first at line 6, 8" in r.stderr
    assert json.loads(r.stdout)["recorded"]["calls"] == 1


@pytest.mark.parametrize("value", [{"a": 1}, [1, 2]])
def test_a_claude_code_uuid_that_is_not_a_string_skips_the_line(tmp_path, value):
    # before the fix: "the run failed: TypeError: unhashable type: 'dict'", exit 1
    lines = [json.loads(json.dumps(x)) for x in CC_SESSION]
    lines[3]["uuid"] = value
    lines[5]["parentUuid"] = value
    f = write_jsonl(tmp_path / "p" / "s1.jsonl", lines)
    r = run(f, "--json")
    assert r.exit_code == 0, r.output
    assert f"{f}: skipped 2 corrupt lines (first at line 4, 6)" in r.stderr
    assert json.loads(r.stdout)["recorded"]["calls"] == 1


@pytest.mark.parametrize("vot", ["inf", "-1", "nan", "ten"])
def test_a_value_of_time_that_is_not_a_finite_non_negative_number_exits_2(cc_file, vot):
    # "inf" was accepted: replay.json said value_of_time null while every variant "paid off at $inf/h"
    r = run(cc_file, "--value-of-time", vot)
    assert r.exit_code == 2 and "--value-of-time" in r.stderr


def otel_variant(tmp_path, change) -> Path:
    d = otel_doc(json.loads(json.dumps(OTEL_SPANS)))
    change(d)
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(d))
    return f


def _span(d, k):
    return d["resourceSpans"][0]["scopeSpans"][0]["spans"][k]


@pytest.mark.parametrize(
    ("change", "place"),
    [
        (lambda d: d.__setitem__("resourceSpans", {"x": 1}), "resourceSpans[0]"),
        (lambda d: _span(d, 2).__setitem__("traceId", {"a": 1}), "spans[2]: TypeError: traceId is dict"),
        (lambda d: _span(d, 2).__setitem__("spanId", [1]), "spans[2]: TypeError: spanId is list"),
        (lambda d: _span(d, 3).__setitem__("parentSpanId", {"r": 1}), "spans[3]: TypeError: parentSpanId is dict"),
        (lambda d: _span(d, 1).__setitem__("status", "error"), "spans[1]: AttributeError"),
        (lambda d: d["resourceSpans"][0].__setitem__("resource", [1]), "resourceSpans[0]: AttributeError"),
        (lambda d: _span(d, 4).__setitem__("startTimeUnixNano", "soon"), "spans[4]: ValueError"),
        (lambda d: _span(d, 4)["attributes"].append({"key": "x", "value": {"arrayValue": [1]}}), "spans[4]"),
    ],
)
def test_wrongly_typed_otlp_fields_exit_2_naming_file_and_span(tmp_path, change, place):
    # before the fix, all but the last two ended with "the run failed: AttributeError/TypeError" and exit 1
    f = otel_variant(tmp_path, change)
    r = run(f, "--json")
    assert r.exit_code == 2, r.output
    assert str(f) in r.stderr and "not an OTLP JSON document" in r.stderr and place in r.stderr
    assert "\n" not in r.stderr.strip()  # one paragraph


@pytest.mark.parametrize("ns", [str(10**30), str(-(10**20)), "-1"])
def test_otlp_times_outside_1970_to_9999_exit_2_naming_the_span(tmp_path, ns):
    # before the fix: "the run failed: OverflowError: timestamp out of range" (or "year -1143 is out of range"), exit 1
    f = otel_variant(tmp_path, lambda d: _span(d, 1).update(startTimeUnixNano=ns))
    r = run(f, "--json")
    assert r.exit_code == 2, r.output
    assert str(f) in r.stderr and f"spans[1]: ValueError: startTimeUnixNano {ns} is not a time" in r.stderr


@pytest.mark.parametrize("ttft", [float("nan"), float("inf"), -1.0, "1.5"])
def test_a_recorded_ttft_that_is_not_a_finite_number_skips_the_span(tmp_path, prof, ttft):
    """A's recorded TTFT replaced. Before the fix a NaN was taken as the TTFT and the fast variant's wall time
    came out as null (NaN) without a word. Now span a is skipped with its reason; the rest replays: B, C, C2,
    E and the tool as before, and the agent's lead (1 s before A) now runs to B at 7 s."""

    def change(d):
        attrs = _span(d, 1)["attributes"]
        attrs[-1] = {
            "key": OTEL_KEYS["ttft"],
            "value": {"stringValue": ttft} if isinstance(ttft, str) else {"doubleValue": ttft},
        }

    f = otel_variant(tmp_path, change)
    r = run(f, "--json", "--speed-profile", str(prof))
    assert r.exit_code == 0, r.output
    assert f"{f}: skipped 1 corrupt lines (span a: time to first token" in r.stderr
    doc = json.loads(r.stdout)
    assert doc["recorded"]["calls"] == 4
    # fast: lead 7 (B and C start at 7), then as before from B/C on: 19.765 - 3.925 + 7 = 22.84
    assert doc["variants"]["fast"]["wall_time_s"] == pytest.approx(19.765 - 3.925 + 7, abs=1e-6)


def test_a_span_ending_before_it_starts_is_skipped_and_named(tmp_path, prof):
    # B (7-17) recorded as 17-7: skipped with its span id; before the fix the warning read "(first at line )"
    f = otel_variant(
        tmp_path,
        lambda d: _span(d, 2).update(startTimeUnixNano=str(T0_NS + 17 * 10**9), endTimeUnixNano=str(T0_NS + 7 * 10**9)),
    )
    r = run(f, "--json", "--speed-profile", str(prof))
    assert r.exit_code == 0
    assert f"warning: {f}: skipped 1 corrupt lines (span b ends before it starts)" in r.stderr
    assert json.loads(r.stdout)["recorded"]["calls"] == 4
    only = otel_variant(
        tmp_path,
        lambda d: d["resourceSpans"][0]["scopeSpans"][0].__setitem__(
            "spans", [otel_span("n", None, 9, 6, inp=10, out=1)]
        ),
    )
    r = run(only)
    assert r.exit_code == 2 and "1 corrupt lines skipped (span n ends before it starts)" in r.stderr


def test_timestamps_out_of_order_give_no_negative_duration(tmp_path):
    """The Bash result (13 s) and C2's line (20 s) swap timestamps. Accepted without a note (the docs promise
    no error); what must hold: no node of negative length, and the recorded wall time is the span of the
    timestamps, 0 to 29 s."""
    lines = [json.loads(json.dumps(x)) for x in CC_SESSION]
    lines[2]["timestamp"], lines[3]["timestamp"] = lines[3]["timestamp"], lines[2]["timestamp"]
    f = write_jsonl(tmp_path / "p" / "s.jsonl", lines)
    out = tmp_path / "res"
    r = run_proc(f, "--json", "--out", out)
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    assert doc["recorded"]["calls"] == 3 and doc["recorded"]["wall_time_s"] == pytest.approx(29.0, abs=1e-6)
    for name in ("calls", "spans"):
        t = pd.read_parquet(out / f"{name}.parquet")
        assert (t.duration_s >= 0).all(), name
    calls = pd.read_parquet(out / "calls.parquet")
    assert (calls.replay_end_s >= calls.replay_start_s).all()


def test_reversed_line_order_changes_nothing(cc_file, tmp_path, prof):
    rev = write_jsonl(tmp_path / "q" / "s1.jsonl", CC_SESSION[::-1])
    a = run_json(cc_file, "--speed-profile", f"claude-opus-4-8={prof}")
    b = run_json(rev, "--speed-profile", f"claude-opus-4-8={prof}")
    assert a["recorded"] == b["recorded"] and a["variants"] == b["variants"]


FIFTY_MB = 50 * 2**20


def test_a_50_mb_line_is_read_or_skipped_in_bounded_time(tmp_path, prof):
    big = json.loads(json.dumps(CC_SESSION[2]))
    big["message"]["content"][0]["content"] = "x" * FIFTY_MB  # a huge but valid tool result
    f = write_jsonl(tmp_path / "big" / "s1.jsonl", [CC_SESSION[0], CC_SESSION[1], big, *CC_SESSION[3:]])
    r = run_proc(f, "--json", "--speed-profile", f"claude-opus-4-8={prof}", timeout=120)
    assert r.returncode == 0 and r.stderr == ""
    assert json.loads(r.stdout)["variants"]["fast"]["wall_time_s"] == pytest.approx(
        4.7 + 3 + 3.2 + 5 + 5 / 3 + 0.8, abs=1e-6
    )
    g = tmp_path / "garbage" / "s1.jsonl"
    write_jsonl(g, CC_SESSION)
    with g.open("a") as fh:
        fh.write('{"type": "user", "message": "' + "y" * FIFTY_MB + "\n")  # 50 MB that is not JSON
    r = run_proc(g, "--json", timeout=120)
    assert r.returncode == 0 and f"{g}: skipped 1 corrupt lines (first at line 7)" in r.stderr


def test_a_50_mb_otel_json_lines_record_is_skipped(tmp_path):
    f = tmp_path / "spans.jsonl"
    f.write_text(json.dumps(otel_doc(OTEL_SPANS)) + "\n" + '{"resourceSpans": [' + "[" * FIFTY_MB + "\n")
    r = run_proc(f, "--json", timeout=120)
    assert r.returncode == 0 and f"{f}: skipped 1 corrupt lines (first at line 2)" in r.stderr


def test_unknown_formats_exit_2_with_the_fix(tmp_path, cc_file):
    f = tmp_path / "events.jsonl"
    f.write_text('{"event": "click", "at": 1}\n{"event": "scroll"}\n')
    r = run(f)
    assert r.exit_code == 2 and f"{f}: not a recognised session file" in r.stderr and "--format" in r.stderr
    folder = tmp_path / "only-unknown"
    folder.mkdir()
    (folder / "a.jsonl").write_text("[1, 2]\n")
    r = run(folder)
    assert r.exit_code == 2 and "no recorded session with API calls found" in r.stderr and str(folder) in r.stderr
    # a Claude Code file read as OTel: nothing usable, the file named
    r = run(cc_file, "--format", "otel")
    assert r.exit_code == 2 and str(cc_file) in r.stderr and "nothing usable as a otel session" in r.stderr
    r = run(cc_file, "--format", "xml")
    assert r.exit_code == 2 and "--format 'xml'" in r.stderr
    binary = tmp_path / "blob.json"
    binary.write_bytes(b"\xff\xfe\x00\x01garbage")
    r = run(binary)
    assert r.exit_code == 2 and str(binary) in r.stderr


# --------------------------------------------------------------------------- disagreements (see the report)


def test_retry_back_off_before_a_claude_code_call_is_kept(tmp_path, prof):
    """C1 0-10 asks Bash (10-13); C2's first attempt fails: Claude Code writes a system api_error line at 16
    (retryInMs 4000), the retry is sent at 20 and C2's content arrives at 25 (1,000 in, 200 out).
    Expected, keeping the overhead (13-20: a failed attempt that would fail as fast in fast mode, and a
    client back-off) as recorded lag: C2 lasts 5 s, e = 2, d = 4, 5 < 6 -> TTFT 5/3, decode 10/3; fast:
    TTFT 1.25, decode 4/3. Fast wall: C1 4.7 + Bash 3 + lag 7 + 2.5833 = 17.2833 s (25 recorded).
    Before the retry rule (docs/replay.md), C2 ran 13-25 = 12 s, TTFT 2, decode 10, fast 1.5 + 4 = 5.5, wall
    4.7 + 3 + 5.5 = 13.2 s: the 7 s of failure and back-off shrank to 2.8 s."""
    retry = {
        "parentUuid": "u2",
        "isSidechain": False,
        "type": "system",
        "subtype": "api_error",
        "level": "error",
        "uuid": "e1",
        "sessionId": "s1",
        "timestamp": "2026-11-10T10:00:16.000Z",
        "error": {"status": 529},
        "retryInMs": 4000,
        "retryAttempt": 1,
        "maxRetries": 10,
    }
    lines = [
        *CC_SESSION[:3],
        retry,
        cc_assistant("a2", "u2", 25, "m2", [{"type": "text", "text": "done"}], cc_usage(1000, out=200)),
    ]
    f = write_jsonl(tmp_path / "p" / "s1.jsonl", lines)
    doc = run_json(f, "--speed-profile", f"claude-opus-4-8={prof}")
    assert doc["recorded"]["wall_time_s"] == pytest.approx(25.0, abs=1e-6)
    assert doc["variants"]["fast"]["wall_time_s"] == pytest.approx(4.7 + 3 + 7 + 1.25 + 4 / 3, abs=1e-6)


@pytest.mark.parametrize("chained", [False, True], ids=["same-parent", "retry-line-is-parent"])
@pytest.mark.parametrize("wait_ms", [4000, "4000", -1, 1e30, None])
def test_a_retry_line_moves_the_call_start_only_when_it_can_be_placed(tmp_path, prof, chained, wait_ms):
    """The same session as above; the retry line's retryInMs malformed or absent: not read as a retry, so
    the call runs from its parent line as before (fast wall 13.2 s); the content line may also answer the
    retry line itself (Claude Code versions differ): the same 17.2833 s."""
    retry = {
        "parentUuid": "u2",
        "isSidechain": False,
        "type": "system",
        "subtype": "api_error",
        "uuid": "e1",
        "sessionId": "s1",
        "timestamp": "2026-11-10T10:00:16.000Z",
        "retryInMs": wait_ms,
    }
    parent = "e1" if chained else "u2"
    lines = [
        *CC_SESSION[:3],
        retry,
        cc_assistant("a2", parent, 25, "m2", [{"type": "text", "text": "done"}], cc_usage(1000, out=200)),
    ]
    f = write_jsonl(tmp_path / "p" / "s1.jsonl", lines)
    doc = run_json(f, "--speed-profile", f"claude-opus-4-8={prof}")
    assert doc["recorded"]["wall_time_s"] == pytest.approx(25.0, abs=1e-6)
    placed = wait_ms == 4000
    if placed:
        expected = 4.7 + 3 + 7 + 1.25 + 4 / 3
    elif chained:  # no retry time: C2 answers the system line at 16 s (13-16 kept as lag) and lasts 9 s:
        # TTFT e = 2 (9 > 6: the rest is decode, 7 s); fast: TTFT 0.5 + 1 = 1.5, decode 7 / 2.5 = 2.8
        expected = 4.7 + 3 + 3 + 1.5 + 2.8
    else:
        expected = 4.7 + 3 + 5.5
    assert doc["variants"]["fast"]["wall_time_s"] == pytest.approx(expected, abs=1e-6)


def test_a_target_profiles_context_curve_reaches_the_replay(cc_file, prof, tmp_path):
    """A profile's ``context_speed`` applies to the calls replayed on it. A flat curve of 0.5 on the output speed
    and 2 on the TTFT (one knot) is the same as half the speed and twice the TTFT: the sonnet profile at 100
    tokens/s and 0.5 s with that curve replays exactly as one at 50 tokens/s and 1 s without it."""
    base = PROFILE.replace("prefill_tps: 1000", "prefill_tps: 2000")
    (tmp_path / "curved.yaml").write_text(
        base.replace("ttft: 1.0", "ttft: 0.5").replace("output_tps: 50", "output_tps: 100")
        + "context_speed: {tokens: [0], output_tps_x: [0.5], ttft_x: [2]}\n"
    )
    (tmp_path / "plain.yaml").write_text(base)
    docs = {}
    for name in ("curved", "plain"):
        cfg = tmp_path / f"{name}-replay.yaml"
        cfg.write_text(
            f"models:\n  claude-opus-4-8: {{profile: {prof}}}\n"
            f"  anthropic/claude-sonnet-4-5: {{profile: {name}.yaml}}\n"
            "variants:\n  sonnet: {model: anthropic/claude-sonnet-4-5}\n"
        )
        docs[name] = run_json(cc_file, "--config", cfg)["variants"]["sonnet"]
    for key in ("ttft", "decode"):
        assert docs["curved"]["time_s"][key] == pytest.approx(docs["plain"]["time_s"][key], rel=1e-12)
    assert docs["curved"]["wall_time_s"] == pytest.approx(docs["plain"]["wall_time_s"], rel=1e-12)
