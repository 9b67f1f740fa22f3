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


def dist(x: st.SearchStrategy = small, floor: float = 0) -> st.SearchStrategy:
    """A distribution of ``x`` (valid about 20 times in 21); a normal is truncated at ``floor`` (a speed's is not 0).
    Positive parameters (a lognormal's median, a mean) read 1 where ``x`` drew 0: a token count's strategy starts
    at 0, and the fuzzer should spend its examples on documents that simulate."""
    families = st.one_of(
        x,
        x.map(lambda v: {"constant": v}),
        st.tuples(x, x).map(lambda t: {"uniform": {"low": min(t), "high": max(t)}}),
        st.tuples(x, x).map(lambda t: {"normal": {"mean": t[0], "sd": t[1] / 4}, "min": floor}),
        st.tuples(x, x).map(lambda t: {"lognormal": {"median": min(t) or 1, "p90": max(t) * 2 + 2}}),
        st.tuples(x, x).map(lambda t: {"lognormal": {"mean": t[0] or 1, "sd": t[1]}}),
        st.tuples(x, x).map(lambda t: {"gamma": {"mean": t[0] or 1, "sd": t[1]}}),
        x.map(lambda v: {"exponential": {"mean": v or 1}}),
        st.lists(x, min_size=1, max_size=4).map(lambda v: {"choice": {"values": v}}),
        st.lists(x, min_size=1, max_size=4).map(lambda v: {"empirical": {"values": v}}),
    )
    broken = st.one_of(numbers, st.just({}), st.just({"lognormal": {"median": 2}}), st.just({"weibull": {"k": 1}}))
    return mostly(families, broken)


consumers = st.one_of(
    mostly(st.floats(1, 50), numbers).map(lambda v: {"reader": {"tokens_per_s": v}}),  # a pace is a number
    st.tuples(dist(st.floats(0, 1)), st.floats(1, 10), dist(st.integers(1, 30))).map(
        lambda t: {"speech": {"first_audio": t[0], "tokens_per_s": t[1], "sentence_tokens": t[2]}}
    ),
    mostly(st.sampled_from([1, 50, "all"]), st.just(0)).map(lambda v: {"render": {"tokens": v}}),
)
stalls = mostly(
    st.one_of(
        st.tuples(st.sampled_from([0, 0.1, 1]), dist()).map(lambda t: {"p": t[0], "seconds": t[1]}),
        st.tuples(st.sampled_from([0, 0.05, 1]), dist()).map(lambda t: {"per_chunk": t[0], "seconds": t[1]}),
        st.tuples(st.sampled_from([0, 0.01, 0.5, 1]), dist()).map(lambda t: {"per_token": t[0], "seconds": t[1]}),
        st.tuples(st.lists(st.integers(2, 40), max_size=5), dist()).map(lambda t: {"at_chunks": t[0], "seconds": t[1]}),
    ),
    st.sampled_from([{"per_chunk": 1.5, "seconds": 1}, {"at_chunks": [0, 1], "seconds": 1}, {"p": 0.5}]),
)


@st.composite
def with_pipelines(draw, steps: list) -> list:
    """``steps`` with, now and then, a pipeline right after a call (valid) or at the start (refused)."""
    out = []
    for s in steps:
        out.append(s)
        if "call" in s and draw(st.integers(0, 3)) == 0:
            after = draw(mostly(st.sampled_from(["first_sentence", {"tokens": 5}]), st.just({"tokens": 0})))
            out.append({"pipeline": {"after": after, "steps": [draw(step(2, ("m",)))]}})
    if draw(st.integers(0, 40)) == 20:  # rarely (Hypothesis favours the ends of a range: 0 would be often)
        out.insert(0, {"pipeline": {"after": {"tokens": 1}, "steps": [{"wait": {"latency": 1}}]}})
    return out


counts = mostly(st.one_of(st.integers(1, 4), dist(st.integers(0, 4))), st.sampled_from([0, 10**9, -3, 2.5, "3"]))


@st.composite
def step(draw, depth: int = 0, models=("m",)):
    kinds = ["call", "call", "tool", "wait", "listen"] + (
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
        if draw(st.integers(0, 3)) == 0:
            spec["consumer"] = draw(consumers)
        if draw(st.integers(0, 5)) == 0:
            afters = ["after_first_token", "after_first_word"]
            if "speech" in spec.get("consumer", {}):
                afters.append("after_first_audio")
            after = draw(mostly(st.sampled_from(afters), st.just("after_first_audio")))
            spec["interrupt"] = {"p": draw(mostly(st.sampled_from([0.2, 1]), st.just(2))), after: draw(dist())}
        return {"call": spec}
    if kind == "listen":
        return {"listen": {"end_of_speech": draw(dist()), "stt": draw(dist())}}
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
        "output_tps": draw(dist(st.floats(5, 300), floor=1)),
    }
    if draw(st.integers(0, 3)) == 0:
        m["speeds"] = {"fast": {"output_tps_x": draw(mostly(st.sampled_from([2, 2.5]), st.just(0))), "price_x": 2}}
    if draw(st.integers(0, 4)) == 0:
        m["error_rate"] = draw(mostly(st.sampled_from([0.1, 1]), st.just(2)))
    if draw(st.integers(0, 4)) == 0:
        m["timeout"] = draw(mostly(st.sampled_from([0.01, 30]), st.just(-1)))
    if draw(st.integers(0, 6)) == 0:
        m["prefill_tps"] = draw(mostly(st.just(5000), st.just(0)))
    if draw(st.integers(0, 2)) == 0:
        m["stream"] = {
            "chunk_tokens": draw(dist(st.integers(1, 8))),
            "jitter_cv": draw(st.sampled_from([0, 0.3, 2])),
            "stall": draw(stalls),
        }
    if draw(st.integers(0, 6)) == 0:
        m["context_speed"] = draw(
            mostly(
                st.just({"tokens": [0, 1000, 100000], "output_tps_x": [1, 0.8, 0.5], "ttft_x": [1, 1.5, 3]}),
                st.sampled_from([{"tokens": [5, 1], "output_tps_x": [1, 1]}, {"tokens": [0], "ttft_x": [0]}]),
            )
        )
    return m


@st.composite
def scenario(draw) -> dict:
    model_names = draw(st.sampled_from([["m"], ["m", "h"]]))
    doc: dict = {
        "name": draw(names),
        "runs": draw(mostly(st.integers(1, 30), numbers)),
        "seed": draw(st.integers(0, 2**32)),
        "models": {n: model(draw) for n in model_names},
        "agent": {"steps": draw(st.lists(step(0, tuple(model_names)), min_size=1, max_size=4).flatmap(with_pipelines))},
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
    if draw(st.integers(0, 4)) == 0:  # run figures (any scenario has them), now and then a streaming metric
        doc["slo"] = draw(
            mostly(
                st.dictionaries(
                    mostly(st.sampled_from(["wall_time_s", "cost_usd"]), st.sampled_from(["ttft_s", "qoe"]), odds=3),
                    st.sampled_from([0, 0.5, 2, 30]),
                    min_size=1,
                    max_size=2,
                ),
                st.sampled_from([{"nope_s": 1}, {"qoe": "high"}, {"ttft_s": -1}, {"": 1}, {"a\x00b": 1}]),
            )
        )
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
    print(f"{len(simulated)} of {EXAMPLES} examples simulated")
    assert len(simulated) >= EXAMPLES // 20, f"only {len(simulated)} of {EXAMPLES} examples were valid"


# --------------------------------------------------------------------------- every numeric field of the schema

SCHEMA = __import__("json").loads(
    (__import__("pathlib").Path(__file__).resolve().parent.parent / "schema" / "scenario.schema.json").read_text()
)
RICH = """\
name: rich
runs: 5
seed: 1
models:
  m:
    price: {input_mtok: {base: 3, tiers: [{start: 200000, price: 6}]}, output_mtok: 15, cache_read_mtok: 0.3,
            cache_write_mtok: 3.75, cache_write_1h_mtok: 6, output_reasoning_mtok: 15, requests_kcount: 0.1}
    ttft: {lognormal: {median: 0.5, p90: 1.5}}
    output_tps: {normal: {mean: 60, sd: 10, min: 10, max: 200}}
    prefill_tps: 20000
    error_rate: 0.01
    timeout: 120
    retry: {max_attempts: 3, backoff_base: 0.5, backoff_cap: 8}
    fallback: {model: h, after: 2}
    speeds: {fast: {output_tps_x: 2.5, ttft_x: 0.8, price_x: 2,
                    stream: {chunk_tokens: 2, stall: {at_chunks: [2, 5], seconds: 0.3}},
                    context_speed: {tokens: [0, 100000], output_tps_x: [1, 0.8]}}}
    context_speed: {tokens: [0, 2000, 50000], output_tps_x: [1, 0.9, 0.7], ttft_x: [1, 1.2, 2]}
    stream: {chunk_tokens: {uniform: {low: 1, high: 4}}, jitter_cv: 0.2,
             stall: {p: 0.1, seconds: {gamma: {mean: 1, sd: 0.5}}}}
    conditions:
      ttft_x: {exponential: {mean: 1}}
      output_tps_x: {choice: {values: [0.8, 1, 1.2], p: [0.25, 0.5, 0.25]}}
      time_of_day: {ttft_x: {hourly: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1.2, 1.2, 1.2,
                                      1.2, 1.2, 1.2, 1, 1, 1, 1, 1, 1, 1, 1, 1]}}
    uncertainty: {ttft_x: {uniform: {low: 0.9, high: 1.1}}, output_tps_x: 1,
                  prefill_tps_x: {empirical: {values: [0.9, 1.1]}}}
  h: {price: {input_mtok: 1, output_mtok: 5}, ttft: 0.3, output_tps: 150,
      stream: {chunk_tokens: 3, stall: {per_chunk: 0.1, seconds: {uniform: {low: 0.1, high: 0.5}}}}}
  k: {price: {input_mtok: 1, output_mtok: 5}, ttft: 0.3, output_tps: 80,
      stream: {stall: {per_token: 0.02, seconds: 0.2}}}
agent:
  context: {system: 1000, grows: true, cache: true}
  steps:
    - call: {name: plan, model: m, input: 500, output: 200, reasoning: 100,
             consumer: {reader: {tokens_per_s: 5}, qoe: {expected_ttft: 1, tokens_per_s: 5}},
             interrupt: {p: 0.1, after_first_token: {constant: 2}}}
    - pipeline: {after: {tokens: 20}, sentence_tokens: 12, steps: [{wait: {name: w, latency: 0.1}}]}
    - call: {name: say, model: m, output: 60,
             consumer: {speech: {first_audio: 0.2, tokens_per_s: 3, sentence_tokens: 15}}}
    - call: {name: ui, model: m, output: 90, consumer: {render: {tokens: 30}}}
    - call: {name: read2, model: m, output: 50, consumer: {reader: {words_per_min: 250}}}
    - listen: {name: user, end_of_speech: 0.2, stt: {lognormal: {median: 0.3, p90: 0.6}}}
    - call: {name: word, model: k, output: 40, consumer: {speech: {tokens_per_s: 3}},
             interrupt: {p: 0.3, after_first_word: {uniform: {low: 0.5, high: 3}}}}
    - repeat: {name: loop, times: 2, steps: [{tool: {name: t, latency: 0.5, output: 100}}]}
    - repeat: {continue_p: 0.5, max: 3, steps: [{call: {model: h, output: 10}}]}
    - fanout: {n: 2, join: {k: 1}, steps: [{call: {model: h, output: 20}}]}
    - parallel: {branches: [{call: {model: h, output: 5}}, {wait: {latency: 0.1}}], join: {k: 1}}
    - choose: {options: [{p: 0.5, steps: [{subagent: {workflow: helper, output: 50}}]}, {p: 0.5, steps: []}]}
    - fail: {p: 0.01}
workflows:
  helper: {steps: [{call: {model: h, output: 30}}]}
variants: {base: {}, fast: {speed: {m: fast}}}
value_of_time: {usd_per_hour: 100}
slo: {ttft_s: 2, qoe: 0.8, say.first_audio_s: 1.5, voice_to_voice_s: 3, wall_time_s: 120, cost_usd: 1}
limits: {acct: {models: [m, h], concurrency: 8, rpm: 600, input_tpm: 1000000, output_tpm: 100000}}
workload: {volume: {runs_per_day: 100, working_days: 21}, start: "09:00"}
sweeps:
  - set: agent.steps[0].call.output
    range: {start: 100, stop: 200, step: 100}
"""
EDGES = [1e300, -1e300, 5e-324, float("nan"), float("inf"), float("-inf"), 2**63, 0, -1, "5", True]


def _resolve(node: dict) -> list[dict]:
    """The alternatives a schema node stands for ($ref followed, anyOf/oneOf flattened)."""
    if "$ref" in node:
        return _resolve(SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]])
    alts = node.get("anyOf") or node.get("oneOf")
    if alts:
        return [r for a in alts for r in _resolve(a)]
    return [node]


def _numeric(node: dict) -> bool:
    """A number, or a list of numbers (hourly factors, choice values: the first is set)."""
    return any(
        a.get("type") in ("number", "integer") or (a.get("type") == "array" and _numeric(a.get("items") or {}))
        for a in _resolve(node)
    )


def schema_numeric_fields(doc, node=None, path=()):
    """Every path of a numeric field (present in ``doc`` or declared beside its present siblings) found by
    walking ``doc`` with the published schema: a field added to the schema is fuzzed without new code."""
    node = SCHEMA if node is None else node
    out = []
    alts = _resolve(node)
    if isinstance(doc, dict):
        objs = [a for a in alts if a.get("type") == "object" or "properties" in a]
        fitting = [a for a in objs if set(doc) <= set(a.get("properties", {})) and a.get("properties")]
        for a in fitting[:1] or objs[:1]:
            props = a.get("properties", {})
            for key, ps in props.items():
                if _numeric(ps):
                    out.append((*path, key))
                if key in doc:
                    out += schema_numeric_fields(doc[key], ps, (*path, key))
            extra = a.get("additionalProperties")
            if isinstance(extra, dict) and not props:  # a mapping of names (models, slo targets...)
                for key, v in doc.items():
                    if _numeric(extra):
                        out.append((*path, key))
                    out += schema_numeric_fields(v, extra, (*path, key))
    elif isinstance(doc, list):
        for a in alts:
            if a.get("type") == "array" and isinstance(a.get("items"), dict):
                for i, v in enumerate(doc):
                    out += schema_numeric_fields(v, a["items"], (*path, i))
                break
    return list(dict.fromkeys(out))


RICH_DOC = yaml.safe_load(RICH)
FIELDS = schema_numeric_fields(RICH_DOC)


def test_the_schema_walk_finds_the_numeric_fields():
    shown = {".".join(map(str, f)) for f in FIELDS}
    for expected in ("runs", "models.m.stream.jitter_cv", "models.m.stream.chunk_tokens",
                     "workload.volume.working_days", "agent.steps.2.call.consumer.speech.sentence_tokens",
                     "models.m.conditions.time_of_day.ttft_x.hourly", "agent.steps.1.pipeline.after.tokens",
                     "models.m.ttft.lognormal.p90", "limits.acct.rpm", "sweeps.0.range.step",
                     # contract v1.2, each where it is set (a value beside another form would only be refused)
                     "models.h.stream.stall.per_chunk", "models.k.stream.stall.per_token",
                     "models.m.speeds.fast.stream.stall.at_chunks", "agent.steps.6.call.interrupt.after_first_word",
                     "slo.ttft_s", "slo.say.first_audio_s", "models.m.context_speed.tokens",
                     "models.m.speeds.fast.context_speed.output_tps_x",
                     "agent.steps.5.listen.end_of_speech"):  # fmt: skip
        assert expected in shown, (expected, sorted(shown))
    assert len(FIELDS) > 100


def _set(doc, path, value):
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    if isinstance(cur.get(path[-1]) if isinstance(cur, dict) else None, list):  # a list of numbers: its first
        cur[path[-1]][0] = value
    else:
        cur[path[-1]] = value


def _sane(value) -> bool:
    if isinstance(value, dict):
        return all(_sane(v) for v in value.values())
    if isinstance(value, list):
        return all(_sane(v) for v in value)
    return not isinstance(value, float) or abs(value) < 1e30


def test_rich_base_scenario_runs(tmp_path):
    f = tmp_path / "rich.yaml"
    f.write_text(RICH)
    r = runner.invoke(app, ["run", str(f), "--json"])
    assert r.exit_code == 0, r.output


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_every_schema_number_at_the_domain_edges_exits_0_or_2(tmp_path_factory):
    import copy
    import json

    folder = tmp_path_factory.mktemp("edges")
    counter = iter(range(10**9))

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.sampled_from(FIELDS), st.sampled_from(EDGES))
    def prop(path, value):
        doc = copy.deepcopy(RICH_DOC)
        _set(doc, path, value)
        f = folder / f"e{next(counter)}.yaml"
        f.write_text(yaml.safe_dump(doc, sort_keys=False))
        check(runner.invoke(app, ["validate", str(f)]))
        r = runner.invoke(app, ["run", str(f), "--runs", "5", "--max-calls", "20000", "--json"])
        check(r)
        if r.exit_code == 0:
            assert _sane(json.loads(r.stdout)), (path, value)

    if LONG:
        prop = seed(SEED)(prop)
    prop()
