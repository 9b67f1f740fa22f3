"""``agentsim fit`` on large synthetic populations: it recovers a known population's parameters within sampling
error, reproduces the wall time and cost of sessions it was not fitted to, and reproduces the figures of the
published TraceLab measurements (arXiv 2606.30560) from sessions shaped like them.

Sessions come from the seeded generator of tests/session_synth.py, written as LangSmith runs (with recorded
first-token times) and as Claude Code JSONL (durations only), and read back by agentsim's readers.

Bounds (docs/fit.md):
* an empirical quantity's fitted quantile q^_p is within 4 standard errors of the true q_p, where
  SE = sqrt(p (1 - p) / n) / f(q_p) (f the true density, n the fitted sample's size), plus 1 for integers;
* a fitted probability (a count's share, the idle share, a model's share) within 4 sqrt(p (1 - p) / n);
* a profile's median and p90 (recorded TTFT: sample quantiles) within 4 SE in the same way;
* the held-back half: simulated mean and p95 wall time and cost within 5% of the replayed sessions'. With
  3,000 sessions (1,500 a side) the difference of two independent halves of this population has an sd of
  0.8% (mean wall time), 1.6% (p95 wall time), 0.7% (mean cost), 1.1% (p95 cost), measured over 8 seeds:
  5% is more than 3 sd.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import lognorm, norm

from agentsim.fit.agent_fit import fit_agent
from agentsim.traces.session_files import read_sessions

sys.path.insert(0, str(Path(__file__).resolve().parent))
import session_synth as S

pytestmark = pytest.mark.slow

KNOWN = S.Agent(
    models=(
        S.Model("claude-sonnet-4-5", 0.7, S.LogN(1.2, 2.5), S.LogN(60, 80)),
        S.Model("gpt-5", 0.3, S.LogN(2.0, 4.0), S.LogN(90, 120)),
    ),
    steps=(5, 11),  # per turn
    output=S.LogN(250, 800),
    growth=S.LogN(800, 2000),
    system=8000,
    tools=((0, 1, 2, 3), (0.2, 0.5, 0.2, 0.1)),
    tool_latency=S.Mix(0.05, S.LogN(0.4, 3.0), S.LogN(15, 40)),
    idle=S.LogN(15, 40),
    turns=(1, 3),
    subagent_p=0.05,
    sub_model=S.Model("claude-haiku-4-5", 0, S.LogN(0.6, 1.2), S.LogN(150, 200)),
)
PROBS = (0.1, 0.5, 0.9)


def _pdf_q(dist, p: float) -> tuple[float, float]:
    """(true quantile, density there) of a LogN or a Mix."""
    if isinstance(dist, S.LogN):
        q = dist.quantile(p)
        return q, float(lognorm(s=dist.sigma, scale=dist.median).pdf(q))
    parts = ((1 - dist.p_slow, dist.fast), (dist.p_slow, dist.slow))

    def cdf(x):
        return sum(w * norm.cdf(math.log(x / d.median) / d.sigma) for w, d in parts)

    q = brentq(lambda x: cdf(x) - p, 1e-6, 1e6)
    return q, sum(w * float(lognorm(s=d.sigma, scale=d.median).pdf(q)) for w, d in parts)


def assert_quantiles(sample, dist, what: str, grid: float = 0.0):
    n = len(sample)
    for p in PROBS:
        q, f = _pdf_q(dist, p)
        se = math.sqrt(p * (1 - p) / n) / f
        got = float(np.quantile(sample, p))
        assert abs(got - q) <= 4 * se + grid, f"{what} p{p * 100:.0f}: {got:.4g} vs {q:.4g} (4 SE = {4 * se:.3g})"


def assert_share(got: float, p: float, n: int, what: str):
    assert abs(got - p) <= 4 * math.sqrt(p * (1 - p) / n), f"{what}: {got:.4f} vs {p} (n {n})"


def _choice(fanout: dict) -> dict[int, float]:
    n = fanout["n"]
    return dict(zip(n["choice"]["values"], n["choice"]["p"], strict=True)) if isinstance(n, dict) else {n: 1.0}


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    folder = tmp_path_factory.mktemp("known")
    S.write_langsmith(S.population(KNOWN, 3000, seed=5), folder / "runs.jsonl")
    sessions, _ = read_sessions([(folder, "auto")])
    return fit_agent(sessions, name="known", stem="known", holdout=0.5, sim_runs=8000)


def test_fit_recovers_the_known_population(known):
    cols, doc = known.samples, known.scenario
    assert doc["agent"]["steps"][0]["choose"]["options"][0]["name"] == "claude-sonnet-4-5"
    fitted = known.report["sessions"]["fitted"]
    assert_share(doc["agent"]["steps"][0]["choose"]["options"][0]["p"], 0.7, fitted, "model mix")
    for group in ("claude-sonnet-4-5", "gpt-5"):
        wf = doc["workflows"][f"agent.{group}"]
        assert wf["context"]["cache"] == {"ttl": "5m"} and wf["context"]["grows"] is True
        growth = np.array(cols[f"{group}.input"])
        se_mean = np.std(growth) * math.sqrt(1 / len(cols[f"{group}.turns"]) + 1 / len(growth))
        assert abs(wf["context"]["system"] - KNOWN.system) <= 4 * se_mean, wf["context"]["system"]
        assert_quantiles(cols[f"{group}.output"], KNOWN.output, f"{group} output", grid=1)
        assert_quantiles(growth, KNOWN.growth, f"{group} growth", grid=1)
        assert_quantiles(cols[f"{group}.tool_s"], KNOWN.tool_latency, f"{group} tool latency")
        assert_quantiles(cols[f"{group}.idle_s"], KNOWN.idle, f"{group} idle time")
        # a conversation (contract v1.3): 1..3 turns per session, 5..11 steps per turn (uniform)
        (conversation,) = wf["steps"]
        turns, more = np.array(cols[f"{group}.turns"]), np.array(cols[f"{group}.more_steps"])
        assert len(more) == int(turns.sum())  # one count per turn
        for v in range(KNOWN.turns[0], KNOWN.turns[1] + 1):
            assert_share(float(np.mean(turns == v)), 1 / 3, len(turns), f"{group} {v} turns")
        for v in range(KNOWN.steps[0] - 1, KNOWN.steps[1]):  # steps after a turn's first: uniform on 4..10
            assert_share(float(np.mean(more == v)), 1 / 7, len(more), f"{group} {v} more steps")
        asks = conversation["turns"]["steps"][1]
        tools, subs = asks["parallel"]["branches"]
        n_steps = len(cols[f"{group}.output"])
        for v, p in zip(*KNOWN.tools, strict=True):
            assert_share(_choice(tools["fanout"]).get(v, 0.0), p, n_steps, f"{group} {v} tools per step")
        assert_share(_choice(subs["fanout"])[1], KNOWN.subagent_p, n_steps, f"{group} subagents per step")
    for model in (*KNOWN.models, KNOWN.sub_model):
        prof = known.profiles[f"known.{model.name}.profile.yaml"]
        n = prof["fit"]["calls"]
        for which, dist in (("ttft", model.ttft), ("output_tps", model.tps)):
            got = prof[which]["lognormal"]
            for p, key in ((0.5, "median"), (0.9, "p90")):
                q, f = _pdf_q(dist, p)
                assert abs(got[key] - q) <= 4 * math.sqrt(p * (1 - p) / n) / f + 5e-4 * q, (model.name, which, key)


def test_fitted_scenario_reproduces_the_held_back_half(known):
    rep = known.report
    assert rep["sessions"]["compared_with"] == "the held-back sessions"
    assert 1300 < rep["sessions"]["compared"] < 1700  # about half of 3,000
    for q in ("wall_time_s", "cost_usd"):
        rec, sim = rep["quantities"][q]["recorded"], rep["quantities"][q]["simulated"]
        for stat in ("mean", "p95"):
            assert sim[stat] == pytest.approx(rec[stat], rel=0.05), (q, stat, rec, sim)
    f = rep["figures"]
    assert f["cache_read_share"]["simulated"] == pytest.approx(f["cache_read_share"]["recorded"], rel=0.02)
    # what a conversation is made of, each within the report's bound (10%) in mean and p90
    for q in ("turns", "turn_s", "steps_per_turn", "server_s", "session_output_tokens", "idle_s"):
        assert rep["quantities"][q]["verdict"] == "within", (q, rep["quantities"][q])
    assert f["cache_read_share"]["verdict"] == "within"


# --------------------------------------------------------------------------- TraceLab-shaped

# Published (TraceLab, arXiv 2606.30560): tool time 59.8% of response time, generation p50 5.7 s per step,
# tool calls p50 0.3 s and p90 13.6 s, ~1.2 tool calls per step, median output 252 tokens per step (Claude).
PUBLISHED = {"tool_share": 0.598, "call_p50_s": 5.7, "tool_p50_s": 0.3, "tool_p90_s": 13.6, "tools_per_step": 1.2}
# Tuned to those figures (a two-part tool latency: quick reads and searches, and builds and tests); its calls
# over a minute are 4.4% of the calls and 77% of the tool time (the study: 4.9% and ~92%).
TRACELAB = S.Agent(
    models=(S.Model("claude-sonnet-4-5", 1.0, S.LogN(1.2, 2.4), S.LogN(60, 78)),),
    steps=(10, 30),
    output=S.LogN(252, 900),
    growth=S.LogN(800, 2500),
    system=12000,
    tools=((0, 1, 2, 3), (0.2, 0.5, 0.2, 0.1)),
    tool_latency=S.Mix(0.1217, S.LogN(0.2253, 1.832), S.LogN(36.48, 193.2)),
    idle_p=0.05,
    idle=S.LogN(20, 120),
)


def _figures(q: dict, f: dict, side: str) -> dict:
    return {
        "tool_share": f["tool_share"][side],
        "call_p50_s": q["call_s"][side]["p50"],
        "tool_p50_s": q["tool_s"][side]["p50"],
        "tool_p90_s": q["tool_s"][side]["p90"],
        "tools_per_step": f["tool_calls_per_step"][side],
    }


def test_fit_of_tracelab_shaped_sessions_reproduces_the_published_figures(tmp_path):
    S.write_claude_code(S.population(TRACELAB, 1000, seed=7), tmp_path)
    sessions, reports = read_sessions([(tmp_path, "auto")])
    assert len(sessions) == 1000 and not any(r.corrupt for r in reports)
    res = fit_agent(sessions, name="tracelab", stem="tracelab", sim_runs=4000)
    q, f = res.report["quantities"], res.report["figures"]
    recorded, simulated = _figures(q, f, "recorded"), _figures(q, f, "simulated")
    for k, published in PUBLISHED.items():
        assert recorded[k] == pytest.approx(published, rel=0.10), ("the synthetic sessions", k, recorded[k])
        assert simulated[k] == pytest.approx(published, rel=0.10), ("the fitted scenario", k, simulated[k])
    prof = res.profiles["tracelab.claude-sonnet-4-5.profile.yaml"]
    assert prof["fit"]["method"].startswith("durations only")  # Claude Code records no first-token time
    assert prof["fit"]["call_duration_ks"] < 0.02
