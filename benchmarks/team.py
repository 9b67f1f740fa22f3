"""A team workload (many agents sharing rate limits) on agentsim's DES, against a bare SimPy model of it.

    python benchmarks/team.py [--agents N] [--hours H] [--repeat K] [--src DIR]

The workload is scenarios/team-of-agents.yaml: ``N`` engineers' coding agents (default 40) run back to back
with a think time between runs, for ``H`` simulated hours (default 8), on provider accounts that refuse a
request over their RPM, input-TPM or output-TPM budget with HTTP 429 and a retry-after (token buckets,
``policy: reject``), in two variants (standard Opus, fast mode with its own account). Each run: a plan
call, 30-40 act calls each followed by a tool, then two review calls in parallel.

The bare model does the same queueing with plain SimPy and nothing else: one process per agent, per call
a check of its account's three buckets (refill, take or refuse with the time until they hold enough),
back-off by the retry-after, then one timeout; a tool is a timeout, the reviews two processes joined with
``all_of``; input tokens follow the same growing, cached context roughly (the uncached part of each call is
what was added since the previous one). No contexts per run, no records, no pricing, no summary. It is a
yardstick of the event work, not a second implementation: its counts of calls and 429s are printed beside
agentsim's (both over every run started) to show whether the two do comparable work, and the CPU time per
request made (a call completed or a 429) of each, which compares them when they do not (a saturated
account: agentsim's waiting calls lose their prompt cache, re-send their whole context and are refused
more often).

agentsim is timed end to end: ``simulate(...).summary_dict()`` (sampling, the DES, pricing, the runs
table and every section of summary.json). Both in this process, interleaved, CPU time
(``time.process_time``); prints medians of K and the ratio (goal, issue 29: <= 1.5x), and the peak
memory of agentsim's side in a child process.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import simpy

ROOT = Path(__file__).resolve().parents[1]
SRC = sys.argv[sys.argv.index("--src") + 1] if "--src" in sys.argv else str(ROOT / "src")  # another tree
sys.path.insert(0, SRC)

import yaml  # noqa: E402

TEAM = ROOT / "scenarios" / "team-of-agents.yaml"


def team_doc(agents: int, hours: float) -> dict:
    doc = yaml.safe_load(TEAM.read_text())
    doc["workload"]["concurrent"] = agents
    doc["workload"]["duration"] = {"hours": hours}
    return doc


class _Bucket:
    """A token bucket refilled continuously, as providers document them (agentsim.plan.limits.Bucket)."""

    __slots__ = ("capacity", "level", "rate", "t")

    def __init__(self, per_minute: float):
        self.capacity, self.rate, self.level, self.t = per_minute, per_minute / 60.0, per_minute, 0.0

    def short(self, now: float, need: float) -> float:
        """Seconds until ``need`` tokens are there (0: there now)."""
        if now > self.t:
            self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
            self.t = now
        return 0.0 if self.level >= need else (need - self.level) / self.rate


def bare(doc: dict, variant: str, seed: int = 11) -> dict:
    """The team workload of one variant in plain SimPy: calls made and 429s (see the module doc)."""
    rng = np.random.default_rng(seed)
    wl = doc["workload"]
    duration = wl["duration"]["hours"] * 3600.0
    fast = variant == "fast"
    accounts = {
        "opus": [_Bucket(500), _Bucket(400_000), _Bucket(80_000)] if fast else [_Bucket(1000), _Bucket(450_000),
                                                                                 _Bucket(90_000)],
        "haiku": [_Bucket(1000), _Bucket(450_000), _Bucket(90_000)],
    }  # fmt: skip
    n = int(1000 * wl["concurrent"] * max(1.0, wl["duration"]["hours"]))  # ~200 calls an agent-hour: ample
    pools = {
        "ttft": iter((np.exp(rng.normal(math.log(2.0), math.log(2.25) / 1.2816, n))).tolist()),
        "tps": iter(np.maximum(rng.normal(60, 10, n), 10).tolist()),
        "plan_out": iter(np.rint(np.exp(rng.normal(math.log(600), math.log(2.5) / 1.2816, n))).tolist()),
        "tool": iter(np.exp(rng.normal(math.log(1.5), math.log(4) / 1.2816, n)).tolist()),
        "think": iter(np.exp(rng.normal(math.log(120), math.log(5) / 1.2816, n)).tolist()),
        "iters": iter(rng.integers(30, 41, n).tolist()),
    }
    env = simpy.Environment()
    count = {"calls": 0, "rejected": 0, "runs": 0, "failed": 0}

    def call(model: str, uncached: float, out: float):
        """One call: admitted, or refused (429) and retried after the retry-after; False after 11 refusals."""
        buckets = accounts[model]
        needs = (1.0, uncached, out)
        for attempt in range(11):
            now = env.now
            wait = max(b.short(now, need) for b, need in zip(buckets, needs, strict=True))
            if wait == 0.0:
                break
            count["rejected"] += 1
            if attempt == 10:
                return False
            yield env.timeout(wait)
        for b, need in zip(buckets, needs, strict=True):
            b.level -= need
        count["calls"] += 1
        tps = next(pools["tps"]) * (2.5 if fast and model == "opus" else 1.0)
        ttft = (next(pools["ttft"]) if model == "opus" else 0.6) + uncached / 15000
        yield env.timeout(ttft + out / (tps if model == "opus" else 150.0))
        return True

    def review(ok: list):
        ok.append((yield from call("haiku", 50_000.0, 500.0)))  # the whole context, new to the haiku cache

    def one_run():
        """A run: False when a call used up its attempts (the run fails there)."""
        if not (yield from call("opus", 14000.0, next(pools["plan_out"]))):
            return False
        for _ in range(next(pools["iters"])):
            if not (yield from call("opus", 1100.0, 550.0)):  # new since the last call: output, tool output, 50
                return False
            yield env.timeout(next(pools["tool"]))
        ok: list = []
        yield env.all_of([env.process(review(ok)), env.process(review(ok))])
        return all(ok)

    def agent():
        while env.now <= duration:
            count["runs"] += 1
            count["failed"] += not (yield from one_run())
            yield env.timeout(next(pools["think"]))

    for _ in range(wl["concurrent"]):
        env.process(agent())
    env.run()
    return count


def ours(doc: dict):
    """agentsim's side, timed: simulate the workload and make its summary.json (kept: the counts read it)."""
    import agentsim
    from agentsim.plan.validation import parse

    res = agentsim.simulate(parse(doc))
    res.summary_dict()
    return res


def work(res) -> dict:
    """What agentsim did, counted as the bare model counts (every run started, not only the counted ones):
    runs started and failed, calls completed and requests refused (429), per variant (not timed)."""
    import numpy as np

    out = {}
    for v, name in enumerate(res.variants):
        runs = res.runs[res.runs["variant"] == name]
        calls = res.calls[res.calls["variant"] == name]
        rejected = sum(int(np.sum(b.attempts["outcome"] == 1)) for b in res.outcomes[v].blocks)
        out[name] = {
            "calls": int((calls["status"] == "ok").sum()),
            "rejected": rejected,
            "runs": len(runs),
            "failed": int((runs["status"] == 1).sum()),
        }
    return out


def child_peak(agents: int, hours: float) -> float:
    """Peak RSS (MiB) of a fresh process that simulates the workload and makes its summary."""
    code = (
        f"import sys; sys.path.insert(0, {SRC!r}); sys.path.insert(1, {str(ROOT / 'benchmarks')!r}); "
        "import team, resource; "
        f"team.ours(team.team_doc({agents}, {hours})); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", type=int, default=40)
    ap.add_argument("--hours", type=float, default=8.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--src", default=SRC, help="measure another source tree (read at import)")
    args = ap.parse_args()
    doc = team_doc(args.agents, args.hours)
    ratios, a_cpu, b_cpu = [], [], []
    counts: dict = {}
    for _ in range(args.repeat):
        c = time.process_time()
        counts["bare"] = {v: bare(doc, v) for v in ("standard", "fast")}
        bc = time.process_time() - c
        c = time.process_time()
        res = ours(doc)
        ac = time.process_time() - c
        counts["agentsim"] = work(res)
        del res
        a_cpu.append(ac)
        b_cpu.append(bc)
        ratios.append(ac / bc)
    print(f"team workload: {args.agents} agents, {args.hours:g} simulated hours, 2 variants; CPU time, median of "
          f"{args.repeat}, interleaved")  # fmt: skip
    print(f"agentsim (simulate + summary.json): {statistics.median(a_cpu):6.2f} s   {json.dumps(counts['agentsim'])}")
    print(f"bare SimPy (the queueing only):     {statistics.median(b_cpu):6.2f} s   {json.dumps(counts['bare'])}")
    print(f"ratio agentsim / bare: median {statistics.median(ratios):.2f}x (pairs: "
          f"{', '.join(f'{r:.2f}' for r in ratios)}; goal <= 1.5x)")  # fmt: skip
    requests = {side: sum(c["calls"] + c["rejected"] for c in counts[side].values()) for side in counts}
    per = {side: 1e6 * statistics.median(cpu) / requests[side] for side, cpu in (("agentsim", a_cpu), ("bare", b_cpu))}
    print(f"per request made (calls completed + 429s: agentsim {requests['agentsim']:,}, bare {requests['bare']:,}): "
          f"agentsim {per['agentsim']:.1f} us, bare {per['bare']:.1f} us, "
          f"{per['agentsim'] / per['bare']:.2f}x")  # fmt: skip
    print(f"agentsim peak memory (fresh process): {child_peak(args.agents, args.hours):,.0f} MiB; "
          f"this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
