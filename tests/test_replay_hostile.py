"""``agentsim replay`` on hostile session files: repeated span ids, parent cycles, deep nesting, copies of
a file, implausible token counts. Each ends promptly with exit 0 or 2 and counts every call once."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from agentsim.cli.main import app

FIX = Path(__file__).resolve().parent / "fixtures" / "sessions"
runner = CliRunner()
T0 = 1_793_952_000_000_000_000  # ns


def span(sid, parent=None, *, start=0.0, end=1.0, op="chat", tokens=(1000, 100), trace="ab" * 16):
    attrs = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": op}},
        {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
        {"key": "gen_ai.provider.name", "value": {"stringValue": "openai"}},
    ]
    if op == "chat":
        attrs += [
            {"key": "gen_ai.usage.input_tokens", "value": _num(tokens[0])},
            {"key": "gen_ai.usage.output_tokens", "value": _num(tokens[1])},
        ]
    out = {
        "traceId": trace,
        "spanId": sid,
        "name": f"{op} x",
        "startTimeUnixNano": str(T0 + int(start * 1e9)),
        "endTimeUnixNano": str(T0 + int(end * 1e9)),
        "attributes": attrs,
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def _num(v):
    return {"intValue": str(v)} if isinstance(v, int) and not isinstance(v, bool) else {"doubleValue": v}


def doc(spans):
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]}


def replay_json(*paths, timeout=240):
    """Run the command in a subprocess (a hang fails the test instead of stalling it)."""
    r = subprocess.run(
        [sys.executable, "-m", "agentsim", "replay", *map(str, paths), "--json", "--format", "auto"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert r.returncode in (0, 2), r.stderr
    assert "Traceback" not in r.stderr
    return r


def test_two_spans_sharing_a_span_id_end_and_count_once(tmp_path):
    f = tmp_path / "dup.json"
    agent = span("a1", op="invoke_agent", end=10)
    f.write_text(
        json.dumps(
            doc(
                [
                    agent,
                    span("c1", "a1", start=1, end=2),
                    span("c1", "c1", start=3, end=4),  # the same id again, claiming itself as parent
                    span("a1", "c1", op="invoke_agent", start=0, end=10),  # and the agent id under the call
                    span("c2", "a1", start=5, end=6),
                ]
            )
        )
    )
    r = replay_json(f)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["recorded"]["calls"] == 2  # c1 and c2, the repeats counted once
    assert "2 records repeat one earlier in the same file" in r.stderr and "another file" not in r.stderr


def test_parent_links_in_a_cycle_end(tmp_path):
    f = tmp_path / "cycle.json"
    f.write_text(
        json.dumps(
            doc(
                [
                    span("root", op="invoke_agent", end=10),
                    span("c1", "root", start=1, end=2),
                    span("x", "y", op="invoke_agent", end=5),  # x <- y <- x: cut at x (the earliest, then by id)
                    span("y", "x", op="invoke_agent", end=5),
                    span("c9", "x", start=1, end=2),
                    span("self", "self", start=1, end=2),
                ]
            )
        )
    )
    r = replay_json(f)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["recorded"]["calls"] == 3  # c1; c9 below the cut cycle; 'self', its own parent, read as a root
    notes = " ".join(out["files"][0]["notes"])
    assert "span self names itself as its parent" in notes and "cut at span x" in notes


def test_deep_nesting_is_refused_with_the_file_and_moderate_nesting_replays(tmp_path):
    def chain(depth):
        spans = [span("s0", op="invoke_agent", end=100)]
        spans += [span(f"s{i}", f"s{i - 1}", op="invoke_agent", end=100) for i in range(1, depth)]
        return [*spans, span("leaf", f"s{depth - 1}", start=1, end=2)]

    f = tmp_path / "deep.json"
    f.write_text(json.dumps(doc(chain(5000))))
    r = replay_json(f)
    assert r.returncode == 2
    assert str(f) in r.stderr and "5001 levels deep" in r.stderr and "leave this file out" in r.stderr
    f.write_text(json.dumps(doc(chain(150))))
    assert _calls_and_cost(f)[0] == 1


class _Ran:  # what replay_json gives, from the in-process runner
    def __init__(self, r):
        self.returncode, self.stdout, self.stderr = r.exit_code, r.stdout, r.stderr


def replay_in_process(*paths):
    """In-process (no hang is possible here): faster than a subprocess."""
    r = runner.invoke(app, ["replay", *map(str, paths), "--json"])
    assert r.exit_code in (0, 2), r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return _Ran(r)


def _calls_and_cost(path) -> tuple[int, float]:
    r = runner.invoke(app, ["replay", str(path), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    return d["recorded"]["calls"], d["recorded"]["cost_usd"]


def test_a_copy_of_an_otel_file_is_counted_once(tmp_path):
    one = tmp_path / "one"
    shutil.copytree(FIX / "otel", one)
    two = tmp_path / "two"
    shutil.copytree(FIX / "otel", two)
    shutil.copy(FIX / "otel" / "conversation.json", two / "conversation-copy.json")
    shutil.copy(FIX / "otel" / "jobs.jsonl", two / "jobs (1).jsonl")
    assert _calls_and_cost(two) == _calls_and_cost(one)


def test_a_copy_of_a_codex_rollout_is_counted_once(tmp_path):
    one = tmp_path / "one"
    shutil.copytree(FIX / "codex", one)
    two = tmp_path / "two"
    shutil.copytree(FIX / "codex", two)
    src = next((FIX / "codex").rglob("rollout-*000000000003.jsonl"))
    shutil.copy(src, two / "copy-of-rollout.jsonl")
    # a copy taken while the session ran: the first lines only (the longest copy is kept)
    lines = src.read_text().splitlines(keepends=True)
    (two / "early-copy.jsonl").write_text("".join(lines[: len(lines) // 2]))
    assert _calls_and_cost(two) == _calls_and_cost(one)
    r = runner.invoke(app, ["replay", str(two)])
    assert "counted once" in r.output


def test_implausible_token_counts_are_skipped_with_file_and_line(tmp_path):
    f = tmp_path / "tokens.jsonl"
    good = doc([span("g1", start=0, end=1, trace="cd" * 16)])
    bad = [
        doc([span(f"b{i}", start=2 + i, end=3 + i, tokens=(v, 10), trace="cd" * 16)])
        for i, v in enumerate([1e26, -5, 2.5, 10**9])
    ]
    f.write_text("\n".join(json.dumps(d) for d in [good, *bad]) + "\n")
    r = replay_in_process(f)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["recorded"]["calls"] == 1
    assert out["recorded"]["cost_usd"] < 1  # not $1e21
    assert str(f) in r.stderr and "skipped 4 corrupt lines (first at line 2, 3, 4, 5" in r.stderr
    assert "1e+26" in r.stderr and "not plausible" in r.stderr


def test_implausible_counts_in_codex_and_claude_code_lines(tmp_path):
    codex = next((FIX / "codex").rglob("rollout-*000000000003.jsonl"))
    text = codex.read_text().replace('"output_tokens":150,', '"output_tokens":1e26,', 1)
    (tmp_path / "rollout-x.jsonl").write_text(text)
    claude = FIX / "claude-code" / "-home-dev-blog" / "sess-bbb.jsonl"
    lines = claude.read_text().splitlines()
    k = next(i for i, ln in enumerate(lines) if '"output_tokens"' in ln)
    obj = json.loads(lines[k])
    obj["message"]["usage"]["output_tokens"] = 2.5
    lines[k] = json.dumps(obj)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "sess-bbb.jsonl").write_text("\n".join(lines) + "\n")
    r = replay_in_process(tmp_path)
    assert r.returncode == 0, r.stderr
    assert "rollout-x.jsonl: skipped 1 corrupt lines (first at line 7; line 7: token count 1e+26" in r.stderr
    assert f"sess-bbb.jsonl: skipped 1 corrupt lines (first at line {k + 1}; line {k + 1}: token count 2.5" in (
        r.stderr
    )
