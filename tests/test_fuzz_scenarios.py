"""Fuzzing the scenario vocabulary: whatever a user writes, ``validate`` and ``run`` exit 0 or 2, never 1.

Hypothesis builds scenario documents from the vocabulary of DESIGN.md §3 (models, distributions,
every step type, variants, limits, workloads), valid ones and broken ones (a required key dropped,
an unknown key, a value of the wrong type, absurd numbers, text cut in the middle), writes them as
YAML and runs ``agentsim validate`` and ``agentsim run --runs 20`` in-process. The property: the
exit code is 0 or 2 and no traceback is printed (exit 1 means an internal error: a bug).

In the normal test run the example count is small and the search derandomised (the same examples
every time). ``make fuzz`` runs 2,000 examples from a random seed, which it prints so a failure can
be replayed: ``AGENTSIM_FUZZ_SEED=<seed> AGENTSIM_FUZZ_EXAMPLES=2000 pytest tests/test_fuzz_scenarios.py``.
"""

from __future__ import annotations

import os
import random

import pytest
import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentsim.cli.main import app

EXAMPLES = int(os.environ.get("AGENTSIM_FUZZ_EXAMPLES", "60"))
LONG = "AGENTSIM_FUZZ_EXAMPLES" in os.environ
SEED = int(os.environ.get("AGENTSIM_FUZZ_SEED") or (random.SystemRandom().randrange(2**32) if LONG else 0))

runner = CliRunner()

# --------------------------------------------------------------------------- values

names = st.sampled_from(["a", "b", "plan", "act", "review", "m", "fast", "x y", "[b]z", "日本"])
numbers = st.one_of(
    st.integers(0, 50),
    st.floats(0.01, 5000, allow_nan=False),
    st.sampled_from([0, -1, 0.0, 1e-9, 1e8, 1.0e19, 1e308, 2**63, True, "5", None]),
)
small = st.floats(0.05, 20, allow_nan=False)


def mostly(good: st.SearchStrategy, bad: st.SearchStrategy, odds: int = 20) -> st.SearchStrategy:
    """``good`` about ``odds`` times in ``odds + 1``, else ``bad``: most documents stay valid enough to simulate."""
    # the bad branch sits in the middle: Hypothesis favours the ends of a range (0 and odds)
    return st.integers(0, odds).flatmap(lambda i: bad if i == odds // 2 else good)


def dist(x: st.SearchStrategy = small) -> st.SearchStrategy:
    families = st.one_of(
        x,
        x.map(lambda v: {"constant": v}),
        st.tuples(x, x).map(lambda t: {"uniform": {"low": min(t), "high": max(t)}}),
        st.tuples(x, x).map(lambda t: {"normal": {"mean": t[0], "sd": t[1] / 4}, "min": 0}),
        st.tuples(x, x).map(lambda t: {"lognormal": {"median": min(t), "p90": max(t) * 1.5}}),
        st.tuples(x, x).map(lambda t: {"lognormal": {"mean": t[0], "sd": t[1]}}),
        st.tuples(x, x).map(lambda t: {"gamma": {"mean": t[0], "sd": t[1]}}),
        x.map(lambda v: {"exponential": {"mean": v}}),
        st.lists(x, min_size=1, max_size=4).map(lambda v: {"choice": {"values": v}}),
        st.lists(x, min_size=1, max_size=4).map(lambda v: {"empirical": {"values": v}}),
    )
    broken = st.one_of(numbers, st.just({}), st.just({"lognormal": {"median": 2}}), st.just({"weibull": {"k": 1}}))
    return mostly(families, broken)


counts = mostly(st.one_of(st.integers(1, 4), dist(st.integers(0, 4))), st.sampled_from([0, 10**9, -3, 2.5, "3"]))


@st.composite
def step(draw, depth: int = 0, models=("m",)):
    kinds = ["call", "call", "tool", "wait"] + (
        ["parallel", "fanout", "repeat", "choose", "subagent"] if depth < 2 else []
    )
    kind = draw(st.sampled_from(kinds))
    steps = st.lists(step(depth + 1, models), min_size=0 if draw(st.booleans()) and depth else 1, max_size=3)
    join = mostly(st.sampled_from(["all", "any", {"k": 1}]), st.sampled_from([{"k": 2}, {"k": 5}, "some"]))
    if kind == "call":
        spec = {
            "model": draw(mostly(st.sampled_from(models), st.just("nope"))),
            "output": draw(dist(st.integers(0, 800))),
        }
        if draw(st.booleans()):
            spec["name"] = draw(names)
        if draw(st.booleans()):
            spec["input"] = draw(dist(st.integers(0, 3000)))
        if draw(st.booleans()):
            spec["reasoning"] = draw(dist(st.integers(0, 500)))
        if draw(st.integers(0, 8)) == 0:
            spec["speed"] = draw(st.sampled_from(["fast", "standard", "warp"]))
        return {"call": spec}
    if kind == "tool":
        return {"tool": {"latency": draw(dist()), "output": draw(dist(st.integers(0, 1000)))}}
    if kind == "wait":
        return {"wait": {"latency": draw(dist())}}
    if kind == "parallel":
        branches = draw(st.lists(step(depth + 1, models), min_size=1, max_size=3))
        return {"parallel": branches if draw(st.booleans()) else {"branches": branches, "join": draw(join)}}
    if kind == "fanout":
        return {"fanout": {"n": draw(counts), "steps": draw(steps), "join": draw(join)}}
    if kind == "repeat":
        if draw(st.booleans()):
            return {"repeat": {"times": draw(counts), "steps": draw(steps)}}
        p = draw(mostly(st.sampled_from([0, 0.5, 0.9, 1]), st.just(1.5)))
        cap = draw(mostly(st.sampled_from([1, 5, 60]), st.just(0)))
        return {"repeat": {"continue_p": p, "max": cap, "steps": draw(steps)}}
    if kind == "choose":
        ps = draw(mostly(st.sampled_from([[1], [0.5, 0.5], [0.3, 0.7]]), st.just([0.5, 0.6])))
        return {"choose": {"options": [{"p": p, "steps": draw(steps)} for p in ps]}}
    return {"subagent": {"workflow": draw(mostly(st.just("helper"), st.just("missing")))}}


def model(draw) -> dict:
    m = {
        "price": draw(
            mostly(
                st.sampled_from(
                    [{"input_mtok": 3, "output_mtok": 15}, {"input_mtok": 1, "output_mtok": 5, "cache_read_mtok": 0.1}]
                ),
                st.sampled_from([{"input_mtok": -1, "output_mtok": 5}, {"output_mtok": 5}]),
            )
        ),
        "ttft": draw(dist()),
        "output_tps": draw(dist(st.floats(5, 300))),
    }
    if draw(st.integers(0, 3)) == 0:
        m["speeds"] = {"fast": {"output_tps_x": draw(mostly(st.sampled_from([2, 2.5]), st.just(0))), "price_x": 2}}
    if draw(st.integers(0, 4)) == 0:
        m["error_rate"] = draw(mostly(st.sampled_from([0.1, 1]), st.just(2)))
    if draw(st.integers(0, 4)) == 0:
        m["timeout"] = draw(mostly(st.sampled_from([0.01, 30]), st.just(-1)))
    if draw(st.integers(0, 6)) == 0:
        m["prefill_tps"] = draw(mostly(st.just(5000), st.just(0)))
    return m


@st.composite
def scenario(draw) -> dict:
    model_names = draw(st.sampled_from([["m"], ["m", "h"]]))
    doc: dict = {
        "name": draw(names),
        "runs": draw(mostly(st.integers(1, 30), numbers)),
        "seed": draw(st.integers(0, 2**32)),
        "models": {n: model(draw) for n in model_names},
        "agent": {"steps": draw(st.lists(step(0, tuple(model_names)), min_size=1, max_size=4))},
    }
    if draw(st.booleans()):
        doc["agent"]["context"] = {
            "system": draw(mostly(st.sampled_from([0, 2000]), st.just(1e9))),
            "grows": True,
            "cache": True,
        }
    if draw(st.booleans()):
        doc["workflows"] = {"helper": {"steps": draw(st.lists(step(1, tuple(model_names)), min_size=1, max_size=2))}}
    if draw(st.booleans()):
        doc["variants"] = {
            "base": {},
            "other": draw(
                mostly(
                    st.sampled_from([{"speed": {"m": "fast"}}, {"model": {"m": model_names[-1]}}]),
                    st.just({"speed": {"zz": "x"}}),
                )
            ),
        }
    if draw(st.integers(0, 3)) == 0:
        doc["value_of_time"] = {"usd_per_hour": draw(mostly(st.sampled_from([0, 50]), st.just(-5)))}
    if draw(st.integers(0, 3)) == 0:
        doc["limits"] = {
            "acct": {
                "models": list(model_names),
                draw(st.sampled_from(["concurrency", "rpm", "input_tpm", "output_tpm"])): draw(
                    mostly(st.sampled_from([1, 2, 50, 100000]), st.just(0))
                ),
                "policy": draw(st.sampled_from(["queue", "reject"])),
            }
        }
    if draw(st.integers(0, 3)) == 0:
        duration = draw(
            mostly(
                st.sampled_from([{"minutes": 5}, {"seconds": 600}]),
                st.sampled_from([{"hours": 1e9}, {"days": 1e308}, {}]),
            )
        )
        if draw(st.booleans()):
            rate = draw(mostly(st.sampled_from([30, 300]), st.just(1e9)))
            doc["workload"] = {"arrivals": {"per_hour": rate}, "duration": duration}
        else:
            doc["workload"] = {
                "concurrent": draw(mostly(st.sampled_from([1, 4]), st.just(10**7))),
                "duration": duration,
            }
            if draw(st.booleans()):
                doc["workload"]["think_time"] = draw(dist())
    if draw(st.integers(0, 5)) == 0:
        doc["prices_as_of"] = draw(
            mostly(st.just("2026-01-15"), st.sampled_from(["2026-02-30", "0001-01-01", 20260115]), odds=4)
        )
    return doc


def _paths(doc, here=()):
    """Every (path, container, key) of a document, to pick a place to break."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*here, k), doc, k
            yield from _paths(v, (*here, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield (*here, i), doc, i
            yield from _paths(v, (*here, i))


@st.composite
def document(draw) -> str:
    doc = draw(scenario())
    how = draw(st.sampled_from(["valid", "valid", "valid", "valid", "drop", "unknown", "retype", "truncate"]))
    places = list(_paths(doc))
    if how in ("drop", "unknown", "retype") and places:
        _, container, key = places[draw(st.integers(0, len(places) - 1))]
        if how == "drop":
            del container[key]
        elif how == "unknown" and isinstance(container, dict):
            container[key + "x" if isinstance(key, str) else "extra"] = 1
        else:
            container[key] = draw(st.sampled_from(["text", [], {}, None, True, -1, 1e300, {"a": 1}]))
    text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    if how == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    return text


# --------------------------------------------------------------------------- the property


def check(result) -> None:
    out = result.output
    assert "Traceback" not in out, out
    assert result.exit_code in (0, 2), f"exit {result.exit_code}: {out[-2000:]}\n{result.exception!r}"


@pytest.mark.filterwarnings("ignore")
@pytest.mark.filterwarnings("error::RuntimeWarning")  # closest to the test: a NumPy overflow is a failure
def test_fuzzed_scenarios_exit_0_or_2(tmp_path_factory):
    if LONG:
        print(f"\nfuzz seed: {SEED} (replay: AGENTSIM_FUZZ_SEED={SEED} AGENTSIM_FUZZ_EXAMPLES={EXAMPLES})")
    folder = tmp_path_factory.mktemp("fuzz")
    counter = iter(range(10**9))
    simulated = []  # examples that ran a simulation (exit 0): the fuzzer must not only make broken files

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=not LONG,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(document())
    def prop(text):
        f = folder / f"s{next(counter)}.yaml"
        f.write_text(text, encoding="utf-8")
        check(runner.invoke(app, ["validate", str(f)]))
        # a small call budget keeps every example quick; exceeding it is a clean exit 2
        result = runner.invoke(app, ["run", str(f), "--runs", "20", "--max-calls", "20000"])
        check(result)
        if result.exit_code == 0:
            simulated.append(f.name)

    if LONG:
        prop = seed(SEED)(prop)
    prop()
    assert len(simulated) >= EXAMPLES // 20, f"only {len(simulated)} of {EXAMPLES} examples were valid"
