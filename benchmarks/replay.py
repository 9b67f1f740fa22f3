"""Replay speed: reading Claude Code sessions and replaying them under two variants.

    python benchmarks/replay.py [--sessions N] [--calls M] [--repeat K]

Writes a synthetic Claude Code project (N sessions of M API calls each: every call
is two content-block lines and a tool round trip, every 10th call asks for two tools
in parallel, every 25th is followed by a human pause) into a temporary folder, then
times, as medians of K repeats in one process: reading it (``read_sessions``) and
replaying it under ``fast`` and ``model=anthropic/claude-sonnet-4-5`` (``replay``).
Prints lines and calls per second.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentsim.replay.retime import parse_variant, replay  # noqa: E402
from agentsim.traces.session_files import read_sessions  # noqa: E402

T0 = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC).timestamp()


def _ts(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_session(path: Path, sid: str, calls: int, t: float) -> int:
    lines, parent, n = [], None, 0

    def add(kind, **extra):
        nonlocal parent, n
        n += 1
        uid = f"{sid}-{n}"
        lines.append(
            json.dumps(
                {
                    "parentUuid": parent,
                    "isSidechain": False,
                    "sessionId": sid,
                    "type": kind,
                    "uuid": uid,
                    "timestamp": _ts(t),
                    **extra,
                }
            )
        )
        parent = uid

    add("user", message={"role": "user", "content": "prompt"})
    for i in range(calls):
        usage = {
            "input_tokens": 5,
            "cache_creation_input_tokens": 300,
            "cache_read_input_tokens": 1000 * i,
            "output_tokens": 150,
            "service_tier": "standard",
        }
        tools = [f"toolu_{sid}_{i}_{k}" for k in range(2 if i % 10 == 9 else 1)]
        t += 2.0
        add(
            "assistant",
            requestId=f"req_{sid}_{i}",
            message={
                "id": f"msg_{sid}_{i}",
                "model": "claude-opus-4-8",
                "content": [{"type": "text", "text": "x"}],
                "usage": usage,
            },
        )
        t += 3.0
        for tid in tools:
            add(
                "assistant",
                requestId=f"req_{sid}_{i}",
                message={
                    "id": f"msg_{sid}_{i}",
                    "model": "claude-opus-4-8",
                    "content": [{"type": "tool_use", "id": tid, "name": "Bash", "input": {}}],
                    "usage": usage,
                },
            )
        for k, tid in enumerate(tools):
            t += 1.5 + k
            add("user", message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid}]})
        if i % 25 == 24:
            t += 60.0
            add("user", message={"role": "user", "content": "next prompt"})
    path.write_text("\n".join(lines) + "\n")
    return len(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    variants = dict(parse_variant(v) for v in ("fast", "model=anthropic/claude-sonnet-4-5"))
    with tempfile.TemporaryDirectory() as tmp:
        proj = Path(tmp) / "projects" / "-bench"
        proj.mkdir(parents=True)
        total_lines = sum(
            write_session(proj / f"s{k:04d}.jsonl", f"s{k:04d}", args.calls, T0 + 86400.0 * k)
            for k in range(args.sessions)
        )
        read_s, replay_s = [], []
        for _ in range(args.repeat):
            a = time.perf_counter()
            sessions, reports = read_sessions([(proj, "auto")])
            b = time.perf_counter()
            replay(sessions, variants, reports=reports)
            c = time.perf_counter()
            read_s.append(b - a)
            replay_s.append(c - b)
    calls = sum(len(s.calls) for s in sessions)
    r, p = statistics.median(read_s), statistics.median(replay_s)
    print(f"{args.sessions} sessions, {calls:,} calls, {total_lines:,} lines; medians of {args.repeat}")
    print(f"read:   {r:6.2f} s  ({total_lines / r:,.0f} lines/s, {calls / r:,.0f} calls/s)")
    print(f"replay: {p:6.2f} s  ({calls / p:,.0f} calls/s for recorded + 2 variants)")


if __name__ == "__main__":
    main()
