"""End-to-end fidelity: three agent workflows run for real against a provider with hidden speeds,
and agentsim's prediction of them from its own measurements (issue 16, item 5).

The provider is :class:`sse_server.Hidden` in its own process (lognormal TTFT, a prefill rate,
per-request lognormal speeds, gap jitter, a 10-stream cap). agentsim is told none of it:

1. ``agentsim measure`` sends ``measure_requests`` requests (prompts of 200-4,000 tokens, 60 output
   tokens, 4 at a time: below the cap, so no queueing) and ``agentsim calibrate`` writes a profile
   (TTFT, prefill, speed, their bootstrap uncertainty, the stream description);
2. a real async client (:func:`agentsim.measure.probe.stream_request`, the request ``measure`` sends)
   runs each workflow: **chain**, 30 calls one after another; **fanout**, a plan, 8 parallel calls
   and a synthesis; **closed**, 20 agents each running three calls with real tool sleeps between
   them (lognormal, drawn here) behind the provider's 10-stream cap, one run after another, runs
   counted when they start inside ``[warmup, duration]`` (agents keep going until those finish);
3. ``agentsim run`` simulates the same workflow from the calibrated profile with ``uncertainty:
   parameters`` (the closed one as ``workload: {concurrent: 20}`` with the provider's cap, a
   published limit and so known, as ``limits: {concurrency: 10}``). The chains and fan-outs are
   run so that they never reach the cap (``cap >= 8``, checked), so their scenarios need no limit;
4. :func:`compare` puts predicted and measured mean and p95 wall time side by side, and says whether
   the measured mean lies in the parameter-aware interval ``wall_time_s.param_ci95``.

Used by tests/test_fidelity_loopback.py at a tiny size and by benchmarks/fidelity.py at full size
(which adds tests/ to ``sys.path``): the server and the workflows are validation fixtures with a
hidden truth, not something a user of agentsim runs, so they live with the tests.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from agentsim.measure.probe import MeasureConfig, build_prompt, stream_request
from sse_server import Hidden, SSEServer

MODEL = "hidden-llm"
MEASURE_INPUT = "200-4000"
MEASURE_OUTPUT = 60
MEASURE_CONCURRENCY = 4
TOOL = {"median": 2.0, "p90": 4.0}  # the closed workload's tool sleeps (the user's own tool: known)
Z90 = 1.2815515655446004


@dataclass(frozen=True)
class Call:
    name: str
    input: int  # prompt tokens asked of build_prompt
    output: int

    @property
    def words(self) -> int:
        """Prompt words the server counts (its prefill and uncached input): the scenario's ``input``."""
        return len(build_prompt(0, self.input, self.output).split())


CHAIN = Call("step", 1000, 40)
CHAIN_LENGTH = 30
PLAN, BRANCH, SYNTH = Call("plan", 1500, 80), Call("branch", 800, 60), Call("synthesis", 3000, 120)
BRANCHES = 8
CLOSED = (Call("a", 1000, 50), Call("b", 1500, 50), Call("c", 2000, 80))


@dataclass(frozen=True)
class Sizes:
    """How big a fidelity run is; :meth:`scaled` shrinks or grows the full size."""

    measure_requests: int = 320
    chain_runs: int = 40
    fanout_runs: int = 120
    agents: int = 20
    cap: int = 10
    closed_s: float = 480.0
    warmup_s: float = 60.0
    sim_runs: int = 4000

    def __post_init__(self):
        if self.cap < BRANCHES:
            raise ValueError(f"cap must be at least {BRANCHES}: a fan-out must not queue behind it")

    @classmethod
    def scaled(cls, scale: float) -> Sizes:
        full = cls()
        return replace(
            full,
            chain_runs=max(2, round(full.chain_runs * scale)),
            fanout_runs=max(2, round(full.fanout_runs * scale)),
            closed_s=max(20.0, full.closed_s * scale),
            warmup_s=max(5.0, full.warmup_s * scale),
        )


# --------------------------------------------------------------------------- the real client


class Client:
    """Streams requests to the loopback provider; every request a unique prompt."""

    def __init__(self, url: str, http):
        self.url, self.http, self.count = url, http, 0

    async def call(self, c: Call) -> float:
        self.count += 1
        cfg = MeasureConfig(self.url, MODEL, output_tokens=c.output, input_tokens=(c.input, c.input), timeout_s=300)
        rec = await stream_request(self.http, cfg, self.count, c.input, None)
        if not rec["ok"]:
            raise RuntimeError(f"a {c.name} request failed: {rec['error']}")
        return rec["latency_s"]


async def _timed(coro) -> float:
    t0 = time.perf_counter()
    await coro
    return time.perf_counter() - t0


async def _chain(cl: Client) -> None:
    for _ in range(CHAIN_LENGTH):
        await cl.call(CHAIN)


async def _fanout(cl: Client) -> None:
    await cl.call(PLAN)
    await asyncio.gather(*(cl.call(BRANCH) for _ in range(BRANCHES)))
    await cl.call(SYNTH)


async def _runs(cl: Client, workflow, runs: int, at_once: int) -> list[float]:
    gate = asyncio.Semaphore(at_once)

    async def one() -> float:
        async with gate:
            return await _timed(workflow(cl))

    return list(await asyncio.gather(*(one() for _ in range(runs))))


async def _closed(cl: Client, sizes: Sizes, seed: int) -> list[float]:
    """Wall times of the counted runs of ``agents`` agents looping over the three-call workflow."""
    rng = random.Random(seed)
    sigma = math.log(TOOL["p90"] / TOOL["median"]) / Z90
    t0 = time.perf_counter()
    counted: list[float] = []
    open_counted = 0
    done = asyncio.Event()

    async def run() -> None:
        for i, c in enumerate(CLOSED):
            if i:
                await asyncio.sleep(TOOL["median"] * math.exp(sigma * rng.gauss(0, 1)))
            await cl.call(c)

    async def agent() -> None:
        nonlocal open_counted
        while not done.is_set():
            start = time.perf_counter() - t0
            counts = sizes.warmup_s <= start <= sizes.closed_s
            open_counted += counts
            wall = await _timed(run())
            if counts:
                counted.append(wall)
                open_counted -= 1
            if time.perf_counter() - t0 > sizes.closed_s and open_counted == 0:
                done.set()  # every counted run has finished

    tasks = [asyncio.create_task(agent()) for _ in range(sizes.agents)]
    await done.wait()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return counted


async def run_workflows(url: str, sizes: Sizes, seed: int = 0) -> dict[str, list[float]]:
    """Measured wall times (seconds) of every run of the three workflows."""
    from agentsim.measure.http_stream import Pool

    async with Pool(64) as http:
        cl = Client(url, http)
        chain = await _runs(cl, _chain, sizes.chain_runs, sizes.cap)  # one stream per chain: within the cap
        fanout = await _runs(cl, _fanout, sizes.fanout_runs, 1)  # eight streams at most
        closed = await _closed(cl, sizes, seed)
    return {"chain": chain, "fanout": fanout, "closed": closed}


# --------------------------------------------------------------------------- agentsim's side


def scenarios(sizes: Sizes) -> dict[str, str]:
    """The three workflows in agentsim's vocabulary, on the calibrated profile ``./profile.yaml``."""
    head = (
        "seed: 1\nruns: {runs}\nuncertainty: parameters\n"
        "models:\n  m: {{profile: ./profile.yaml, price: {{input_mtok: 1, output_mtok: 1}}}}\n"
        "agent:\n  context: {{system: 0, grows: false}}\n  steps:\n"
    )

    def call(c: Call, indent: str = "    ") -> str:
        return f"{indent}- call: {{name: {c.name}, model: m, input: {c.words}, output: {c.output}}}\n"

    chain = head.format(runs=sizes.sim_runs) + (
        f"    - repeat:\n        times: {CHAIN_LENGTH}\n        steps:\n" + call(CHAIN, "          ")
    )
    fanout = (
        head.format(runs=sizes.sim_runs)
        + call(PLAN)
        + f"    - fanout:\n        n: {BRANCHES}\n        steps:\n"
        + call(BRANCH, "          ")
        + call(SYNTH)
    )
    tool = f"    - tool: {{name: work, latency: {{lognormal: {{median: {TOOL['median']}, p90: {TOOL['p90']}}}}}}}\n"
    closed = head.format(runs=1) + call(CLOSED[0]) + tool + call(CLOSED[1]) + tool + call(CLOSED[2])
    closed += f"limits:\n  provider: {{models: [m], concurrency: {sizes.cap}}}\n" + (
        f"workload:\n  concurrent: {sizes.agents}\n  duration: {{seconds: {sizes.closed_s:g}}}\n"
        f"  warmup: {{seconds: {sizes.warmup_s:g}}}\n"
    )
    return {
        name: f"name: fidelity-{name}\n" + text
        for name, text in (("chain", chain), ("fanout", fanout), ("closed", closed))
    }


def agentsim_cli(*args: str, cwd: Path | None = None) -> str:
    """Run ``python -m agentsim ARGS``; its standard output, or an error with what it said."""
    res = subprocess.run([sys.executable, "-m", "agentsim", *args], capture_output=True, text=True, cwd=cwd)
    if res.returncode != 0:
        raise RuntimeError(f"agentsim {' '.join(args)} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return res.stdout


def truth_profile(hidden: Hidden) -> str:
    """The server's hidden truth as an agentsim profile: what a perfect calibration would write.

    Its predictions leave out what the real client adds to every request (a few ms of event-loop
    and HTTP time that ``measure`` does see), so they are the model's answer with no calibration error.
    """
    ttft_p90 = hidden.ttft_s * math.exp(Z90 * hidden.ttft_sigma)
    tps_p90 = hidden.tps_median * math.exp(Z90 * hidden.tps_sigma)
    return (
        f"profile: {MODEL}\nkind: assumption\nsource: the loopback server's hidden truth\ndate: 2026-11-30\n"
        f"ttft:\n  lognormal: {{median: {hidden.ttft_s!r}, p90: {ttft_p90!r}}}\n"
        f"prefill_tps: {hidden.prefill_tps!r}\n"
        f"output_tps:\n  lognormal: {{median: {hidden.tps_median!r}, p90: {tps_p90!r}}}\n"
    )


def predict(folder: Path, sizes: Sizes, profile: str = "profile.yaml") -> dict[str, dict]:
    """``wall_time_s`` of the baseline variant of each workflow, simulated from ``folder/profile``."""
    out = {}
    for name, text in scenarios(sizes).items():
        if profile != "profile.yaml":  # another profile (the truth): the point prediction only
            text = text.replace("./profile.yaml", f"./{profile}").replace("uncertainty: parameters\n", "")
        path = folder / (f"{name}.yaml" if profile == "profile.yaml" else f"{name}-{Path(profile).stem}.yaml")
        path.write_text(text)
        summary = json.loads(agentsim_cli("run", str(path), "--json"))
        out[name] = summary["variants"]["baseline"]["wall_time_s"]
    return out


def compare(
    predicted: dict[str, dict], measured: dict[str, list[float]], truth: dict[str, dict] | None = None
) -> list[dict]:
    """One row per workflow: predicted vs measured mean and p95, errors, the interval checks.

    ``inside``: the measured mean lies in ``param_ci95``, the interval of the *true* mean given the
    calibration (and the simulation's own error). The measured mean of a few dozen real runs has a
    sampling error of its own (``measured_mean_se_s``), which that interval does not contain, so
    ``inside_with_measured`` also checks the interval widened by it: each side's half-width
    ``sqrt(half**2 + (1.96 se)**2)``, the 95% interval of predicted minus measured when the two errors
    are independent. ``truth``: the same workflows predicted from the server's hidden truth.
    """
    rows = []
    for name, wall in predicted.items():
        m = np.asarray(measured[name], dtype=float)
        mean, p95 = float(m.mean()), float(np.percentile(m, 95))
        se = float(m.std(ddof=1) / math.sqrt(m.size)) if m.size > 1 else float("nan")
        lo, hi = wall["param_ci95"]
        pm = wall["mean"]
        wide = (lo, hi)  # one measured run: no standard error to add
        if not math.isnan(se):
            wide = (pm - math.hypot(pm - lo, 1.96 * se), pm + math.hypot(hi - pm, 1.96 * se))
        row = {
            "workflow": name,
            "runs_measured": int(m.size),
            "predicted_mean_s": pm,
            "measured_mean_s": mean,
            "measured_mean_se_s": se,
            "mean_error_pct": 100 * (pm / mean - 1),
            "predicted_p95_s": wall["p95"],
            "measured_p95_s": p95,
            "p95_error_pct": 100 * (wall["p95"] / p95 - 1),
            "param_ci95": [lo, hi],
            "inside": bool(lo <= mean <= hi),
            "with_measured_ci95": [wide[0], wide[1]],
            "inside_with_measured": bool(wide[0] <= mean <= wide[1]),
        }
        if truth is not None:
            row["truth_mean_s"] = truth[name]["mean"]
            row["truth_p95_s"] = truth[name]["p95"]
        rows.append(row)
    return rows


def fidelity(folder: Path, sizes: Sizes, hidden: Hidden | None = None, log=print) -> list[dict]:
    """measure -> calibrate -> run the real workflows -> simulate them -> compare (see the module doc)."""
    hidden = hidden or Hidden(cap=sizes.cap)
    folder.mkdir(parents=True, exist_ok=True)
    with SSEServer(hidden=hidden) as srv:
        url = f"{srv.url}/ok/v1"
        t = time.perf_counter()
        agentsim_cli(
            "measure", "--base-url", url, "--model", MODEL, "-o", str(folder / "measured.jsonl"),
            "--requests", str(sizes.measure_requests), "--concurrency", str(MEASURE_CONCURRENCY),
            "--input-tokens", MEASURE_INPUT, "--output-tokens", str(MEASURE_OUTPUT),
        )  # fmt: skip
        log(f"measured {sizes.measure_requests} requests in {time.perf_counter() - t:.0f} s")
        agentsim_cli("calibrate", str(folder / "measured.jsonl"), "-o", str(folder / "profile.yaml"))
        t = time.perf_counter()
        measured = asyncio.run(run_workflows(url, sizes))
        log(f"ran the workflows in {time.perf_counter() - t:.0f} s")
    (folder / "measured_wall_times.json").write_text(json.dumps(measured))
    t = time.perf_counter()
    predicted = predict(folder, sizes)
    (folder / "truth.yaml").write_text(truth_profile(hidden))
    truth = predict(folder, sizes, "truth.yaml")
    log(f"simulated them in {time.perf_counter() - t:.0f} s")
    return compare(predicted, measured, truth)
