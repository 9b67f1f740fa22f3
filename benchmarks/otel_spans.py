"""Reading OpenTelemetry GenAI spans: read time per span at 10^4, 10^5 and 10^6 spans.

    python benchmarks/otel_spans.py [--sizes 10000,100000,1000000] [--shape conversation|flat|wide] [--replay]

Writes one OTLP JSON Lines file per size into a temporary folder and times ``read_sessions`` on it
(reading, the span tree, ordering), printing the file size, the CPU seconds and microseconds per span.
The reader must be linear in its input: the per-span time should stay flat as the size grows. With
``--replay``, also the whole command ``agentsim replay FILE`` (reading, re-timing, the summary), in a
process of its own: its CPU seconds and peak memory (issue 38: within 60 s and 4 GiB at 10^6 spans).
CPU time, not wall time: the figures hold on a machine shared with other work.

Shapes (every span small: ids, times, a model and token counts, no content):

* ``conversation`` (default): one session (a shared ``session.id``) of traces of 10 spans each: an
  ``invoke_agent`` root holding a ``chat`` call, two ``execute_tool`` spans and so on;
* ``flat``: every span a ``chat`` call at the top of its own trace, all in one session;
* ``wide``: one trace whose root holds every other span as a direct child (calls in parallel groups).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentsim.traces.session_files import read_sessions  # noqa: E402

T0_NS = 1_793_600_000 * 10**9  # 2026-11-02


def _attr(key: str, value) -> dict:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _span(trace: str, sid: str, parent: str | None, name: str, start_ns: int, end_ns: int, attrs: dict) -> dict:
    sp = {
        "traceId": trace,
        "spanId": sid,
        "name": name,
        "startTimeUnixNano": str(start_ns),
        "endTimeUnixNano": str(end_ns),
        "attributes": [_attr(k, v) for k, v in attrs.items()],
    }
    if parent:
        sp["parentSpanId"] = parent
    return sp


def _call(i: int) -> dict:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "claude-sonnet-4-5",
        "gen_ai.usage.input_tokens": 1000 + i % 500,
        "gen_ai.usage.output_tokens": 50 + i % 100,
        "session.id": "s1",
    }


def spans(n: int, shape: str):
    """``n`` spans of the given shape, in batches of up to 1,000 (one OTLP document per line)."""
    ms = 10**6
    if shape == "wide":
        yield _span("t0", "root", None, "invoke_agent coder", T0_NS, T0_NS + n * 100 * ms, {"session.id": "s1"})
        for i in range(1, n):
            start = T0_NS + (i // 4) * 400 * ms  # groups of four parallel calls
            yield _span("t0", f"s{i}", "root", "chat", start, start + 300 * ms, _call(i))
        return
    if shape == "flat":
        for i in range(n):
            start = T0_NS + i * 1000 * ms
            yield _span(f"t{i}", f"s{i}", None, "chat", start, start + 800 * ms, _call(i))
        return
    for k in range(n // 10):
        t = f"t{k}"
        base = T0_NS + k * 20_000 * ms
        root = f"{t}r"
        yield _span(t, root, None, "invoke_agent coder", base, base + 9_000 * ms, {"session.id": "s1"})
        at = base
        for j in range(3):
            c = f"{t}c{j}"
            yield _span(t, c, root, "chat", at, at + 1_000 * ms, _call(k * 3 + j))
            yield _span(
                t,
                f"{t}x{j}",
                root,
                "execute_tool bash",
                at + 1_000 * ms,
                at + 2_000 * ms,
                {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "bash"},
            )
            yield _span(
                t,
                f"{t}y{j}",
                root,
                "execute_tool read",
                at + 1_000 * ms,
                at + 1_500 * ms,
                {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read"},
            )
            at += 2_500 * ms


def write(path: Path, n: int, shape: str) -> None:
    with path.open("w", encoding="utf-8") as fh:
        batch: list[dict] = []
        for sp in spans(n, shape):
            batch.append(sp)
            if len(batch) == 1000:
                fh.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": batch}]}]}) + "\n")
                batch = []
        if batch:
            fh.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": batch}]}]}) + "\n")


def replay_cost(f: Path) -> tuple[float, float, int]:
    """CPU seconds and peak resident MiB of ``agentsim replay f`` run alone, and its exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, "-m", "agentsim", "replay", str(f)]
    done = subprocess.run(cmd, capture_output=True, check=False, cwd=ROOT, env=_env())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, after.ru_maxrss / 1024, done.returncode  # ru_maxrss: the largest child so far, in KiB


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--shape", choices=("conversation", "flat", "wide"), default="conversation")
    ap.add_argument("--replay", action="store_true", help="also time the whole `agentsim replay FILE`")
    args = ap.parse_args()
    print(f"shape: {args.shape}")
    head = f"{'spans':>9} {'MB':>7} {'read cpu s':>10} {'us/span':>8} {'sessions':>8} {'calls':>8}"
    print(head + (f" {'replay cpu s':>12} {'peak MiB':>8} {'exit':>4}" if args.replay else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.sizes.split(",")):
            f = Path(tmp) / f"spans-{n}.jsonl"
            write(f, n, args.shape)
            t = time.process_time()
            sessions, _ = read_sessions([(f, "otel")])
            dt = time.process_time() - t
            calls = sum(len(s.calls) for s in sessions)
            mb = f.stat().st_size / 1e6
            row = f"{n:>9} {mb:>7.1f} {dt:>10.2f} {dt / n * 1e6:>8.1f} {len(sessions):>8} {calls:>8}"
            del sessions
            if args.replay:
                cpu, peak, code = replay_cost(f)
                row += f" {cpu:>12.2f} {peak:>8.0f} {code:>4}"
            print(row, flush=True)
            f.unlink()


if __name__ == "__main__":
    main()
