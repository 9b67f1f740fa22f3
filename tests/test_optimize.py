"""The fast-mode placement optimiser: units, exhaustive vs greedy vs brute force, the critical path."""

from __future__ import annotations

import itertools

import pytest

import agentsim
from agentsim.analysis.optimize import critical_table, decision_units, optimize, variant_for
from agentsim.plan.compiler import compile_plan
from conftest import SCENARIOS, make, model

UNITS = ("draft", "polish", "long", "short")


def small_doc(variants=None) -> dict:
    """Three sequential steps and a parallel whose 'short' branch always finishes well before 'long'.

    Per-call speed 20-80 tokens/s (x2 on fast, at 6x the price). 'short' takes at most
    0.5 + 100/20 = 5.5 s, 'long' at least 0.5 + 1500/160 = 9.9 s even on fast: 'short'
    is never on the critical path. Seconds saved per dollar by going fast: draft ~200,
    long ~170 (it also pays for 3,000 input tokens), polish ~18 (mostly input).
    """
    doc = {
        "name": "small",
        "seed": 5,
        "runs": 400,
        "models": {
            "m": model(
                price={"input_mtok": 1, "output_mtok": 10},
                ttft=0.5,
                tps={"normal": {"mean": 50, "sd": 5, "min": 20, "max": 80}},
                speeds={"fast": {"output_tps_x": 2, "price_x": 6}},
            )
        },
        "agent": {
            "steps": [
                {"call": {"name": "draft", "output": 1000}},
                {"call": {"name": "polish", "input": 20000, "output": 200}},
                {"parallel": [
                    {"call": {"name": "long", "input": 3000, "output": 1500}},
                    {"call": {"name": "short", "output": 100}},
                ]},
            ]
        },
    }  # fmt: skip
    if variants:
        doc["variants"] = variants
    return doc


def brute_force(mode: str, limit: float, metric: str = "wall_p95_s") -> dict[str, str]:
    """Every assignment written by hand as a variant, simulated together; the best feasible one."""
    variants = {}
    for bits in itertools.product((0, 1), repeat=len(UNITS)):
        variants["v" + "".join(map(str, bits))] = {"speed": {u: "fast" for u, b in zip(UNITS, bits, strict=True) if b}}
    res = agentsim.simulate(make(small_doc(variants)))
    s = res.summary()
    if mode == "budget":
        ok = s[s.cost_mean_usd <= limit]
        best = ok.sort_values([metric, "cost_mean_usd"], kind="stable").index[0]
    else:
        ok = s[s[metric] <= limit]
        best = ok.sort_values(["cost_mean_usd", metric], kind="stable").index[0]
    return {u: ("fast" if b == "1" else "standard") for u, b in zip(UNITS, best[1:], strict=True)}


@pytest.mark.parametrize("budget", [0.08, 0.12, 0.2, 10.0])
def test_budget_exhaustive_and_greedy_agree_with_brute_force(budget):
    sc = make(small_doc())
    expected = brute_force("budget", budget)
    ex = optimize(sc, budget_usd_per_run=budget, method="exhaustive")
    gr = optimize(sc, budget_usd_per_run=budget, method="greedy")
    assert ex.method == "exhaustive" and gr.method == "greedy"
    assert ex.choices == expected
    assert gr.choices == expected
    assert ex.feasible and gr.feasible
    assert ex.chosen["cost_mean_usd"] <= budget
    # 'short' is off the critical path: never upgraded, whatever the budget
    assert ex.choices["short"] == gr.choices["short"] == "standard"


def test_max_p95_exhaustive_and_greedy_agree_with_brute_force():
    sc = make(small_doc())
    # a limit that needs draft and long on fast: their p95 plus a hair
    both = optimize(sc, budget_usd_per_run=0.2, method="exhaustive")
    limit = both.chosen["wall_p95_s"] + 0.01
    expected = brute_force("max_time", limit)
    ex = optimize(sc, max_time_s=limit, method="exhaustive")
    gr = optimize(sc, max_time_s=limit, method="greedy")
    assert ex.choices == gr.choices == expected
    assert expected["short"] == "standard"
    assert ex.chosen["wall_p95_s"] <= limit


def test_greedy_path_and_auto_method():
    sc = make(small_doc())
    opt = optimize(sc, budget_usd_per_run=10.0, exhaustive_max=4)  # 16 assignments > 4: greedy
    assert opt.method == "greedy"
    path = opt.frontier
    assert path["move"].iloc[0] == "start"
    # each step of the walk lowers the p95 and the walk is in order of seconds saved per dollar
    assert path["time_s"].is_monotonic_decreasing
    moves = path["move"].iloc[1:].tolist()
    assert moves == ["draft: standard → fast", "long: standard → fast", "polish: standard → fast"]
    assert opt.variant == {"speed": {"draft": "fast", "polish": "fast", "long": "fast"}}


def test_an_infeasible_budget_says_so():
    sc = make(small_doc())
    opt = optimize(sc, budget_usd_per_run=0.001)
    assert not opt.feasible
    assert opt.choices == {u: "standard" for u in UNITS}  # the cheapest there is


def test_critical_table_shows_short_off_the_path():
    sc = make(small_doc())
    opt = optimize(sc, budget_usd_per_run=10.0)
    crit = critical_table(sc, opt, runs=200).set_index("step")
    assert crit.loc["short", "base_share"] == 0 and crit.loc["short", "chosen_on_path"] == 0
    assert crit.loc["long", "base_on_path"] == 1.0
    total = crit["base_share"].sum()
    assert total == pytest.approx(1.0)  # the shares split the whole wall time


# --------------------------------------------------------------------------- units


def test_units_of_the_coding_agent():
    sc = agentsim.load(SCENARIOS / "coding-agent.yaml")
    plan = compile_plan(sc)
    units, left = decision_units(plan)
    assert [(u.name, u.kind) for u in units] == [("plan", "call"), ("act-observe", "repeat")]
    assert [o.label for o in units[1].options] == ["standard", "fast", "fast-now"]
    assert left == ["review-a", "review-b"]  # haiku offers one tier only
    units, _ = decision_units(plan, models=["haiku"])
    assert [o.label for o in units[0].options] == ["standard", "fast", "fast-now", "haiku"]
    units, _ = decision_units(plan, steps=["act"])
    assert [u.name for u in units] == ["act"]
    # a base variant already on fast: its option is the base
    units, _ = decision_units(plan, base="fast")
    assert [u.options[u.base].label for u in units] == ["fast", "fast"]
    for bad, kw in (
        ("did you mean 'plan'", {"steps": ["plna"]}),
        ("did you mean 'haiku'", {"models": ["haiku2"]}),
        ("did you mean 'fast'", {"base": "fats"}),
    ):
        with pytest.raises(ValueError, match=bad):
            decision_units(plan, **kw)


def test_a_group_key_moves_the_calls_inside():
    sc = agentsim.load(SCENARIOS / "coding-agent.yaml")
    plan = compile_plan(sc)
    units, _ = decision_units(plan)
    spec = variant_for(sc.variant_specs()["standard"], units, (0, 1))  # plan standard, act-observe fast
    assert spec.speed == {"act-observe": "fast"}
    sc2 = sc.model_copy(update={"variants": {"x": spec}})
    calls = agentsim.simulate(sc2, runs=3).calls
    assert set(calls.loc[calls.step == "act", "speed"]) == {"fast"}
    assert set(calls.loc[calls.step == "plan", "speed"]) == {"standard"}


def test_bad_requests():
    sc = make(small_doc())
    with pytest.raises(ValueError, match="exactly one"):
        optimize(sc)
    with pytest.raises(ValueError, match="exactly one"):
        optimize(sc, budget_usd_per_run=1, max_time_s=3)
    with pytest.raises(ValueError, match="metric"):
        optimize(sc, budget_usd_per_run=1, metric="p99")


def test_parallel_evaluation_gives_the_same_answer():
    # six units of two options: 64 candidates, two chunks, evaluated by two processes
    steps = [{"call": {"name": f"s{i}", "input": 1000 * i, "output": 300 + 50 * i}} for i in range(6)]
    doc = small_doc()
    doc["agent"]["steps"] = steps
    doc["runs"] = 100
    sc = make(doc)
    one = optimize(sc, budget_usd_per_run=0.1, method="exhaustive")
    two = optimize(sc, budget_usd_per_run=0.1, method="exhaustive", workers=2)
    assert one.evaluated == two.evaluated == 64
    assert one.choices == two.choices and one.chosen == two.chosen
    assert set(one.choices.values()) == {"fast", "standard"}  # a mixed answer, not a corner
    assert one.frontier.equals(two.frontier)


def test_chunks_shrink_with_the_runs_and_change_no_figure(monkeypatch):
    from agentsim.analysis import optimize as opt_mod

    assert opt_mod.chunk_size(1000) == 32 and opt_mod.chunk_size(200_000) == 5 and opt_mod.chunk_size(10**6) == 1
    sc = make(small_doc())
    whole = optimize(sc, budget_usd_per_run=0.12, method="exhaustive")  # 16 candidates in one chunk
    monkeypatch.setattr(opt_mod, "CHUNK_RUNS", 3 * 400)  # 3 candidates a chunk: 6 simulations
    assert opt_mod.chunk_size(400) == 3
    small = optimize(sc, budget_usd_per_run=0.12, method="exhaustive")
    assert small.choices == whole.choices and small.chosen == whole.chosen and small.baseline == whole.baseline
    assert small.frontier.equals(whole.frontier)
