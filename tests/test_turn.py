"""The turn as the person lives it (contract v1.2, DESIGN.md §3.3): from the ask, voice to voice, barge-in, targets.

Every expected number is computed by hand in the comments, from the rules of docs/concepts.md: a call's
first visible token at TTFT (+ reasoning), its last at the call's end, evenly spaced (gap N / ((N - 1) tps));
the ask is the run's start; voice to voice runs from the start of the latest ``listen`` step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from agentsim.model.loading import ScenarioError
from conftest import make, model, run, scenario

ENGINES = ["des", "fastpath"]
PRICE = {"input_mtok": 1, "output_mtok": 10}


def streaming(res, call, variant=None):
    doc = res.summary_dict()
    v = doc["variants"][variant or next(iter(doc["variants"]))]
    return {k: s["mean"] for k, s in v["streaming"]["calls"][call].items()}


def support_turn(**answer):
    # retrieval 0.6 s, a routing call (TTFT 2 s, 100 tokens at 50 tok/s = 2 s), then the streamed answer
    steps = [
        {"tool": {"name": "retrieve", "latency": 0.6}},
        {"call": {"name": "route", "model": "router", "output": 100}},
        {"call": {"name": "answer", "model": "m", "output": 100, **answer}},
    ]
    models = {"router": model(ttft=2.0, tps=50.0, price=PRICE), "m": model(ttft=1.0, tps=50.0, price=PRICE)}
    return scenario(steps, models=models)


@pytest.mark.parametrize("engine", ENGINES)
def test_first_word_from_the_ask_counts_every_step_before_the_answer(engine):
    # The answer is sent at 0.6 + 2 + 2 = 4.6 s; its first token comes 1 s later: first word 5.6 s from the ask,
    # TTFT 1 s from the send. A reader at 5 tok/s reads 100 tokens from 5.6 s: done 5.6 + 20 = 25.6 s from the
    # ask (21 s from the send), having waited 5.6 s since the ask (1 s since the send).
    res = run(support_turn(consumer={"reader": {"tokens_per_s": 5}}), engine=engine)
    s = streaming(res, "answer")
    assert s["ttft_s"] == pytest.approx(1.0)
    assert s["first_word_s"] == pytest.approx(5.6)
    assert s["reader_done_s"] == pytest.approx(21.0)
    assert s["reader_done_from_ask_s"] == pytest.approx(25.6)
    assert s["reader_wait_s"] == pytest.approx(1.0)
    assert s["reader_wait_from_ask_s"] == pytest.approx(5.6)
    # the runs table has one column per streaming metric of the call
    assert res.runs["answer.first_word_s"].to_numpy() == pytest.approx(5.6)
    assert res.runs["answer.reader_done_from_ask_s"].to_numpy() == pytest.approx(25.6)


@pytest.mark.parametrize("engine", ENGINES)
def test_voice_to_voice_by_hand(engine):
    # listen: end-of-speech detection 0.2 s + STT 0.3 s, from the end of the person's speech (t = 0). The answer
    # is sent at 0.5 s: TTFT 0.4 s, 101 tokens at 101 tok/s (gaps 101 / (100 x 101) = 0.01 s); the first
    # sentence ends at token 12, delivered at 0.5 + 0.4 + 11 x 0.01; its first audio 0.15 s later:
    # voice to voice = 0.2 + 0.3 + 0.4 + 0.11 + 0.15 = 1.16 s.
    speech = {"speech": {"first_audio": 0.15, "tokens_per_s": 3, "sentence_tokens": 12}}
    steps = [
        {"listen": {"name": "user", "end_of_speech": 0.2, "stt": 0.3}},
        {"call": {"name": "answer", "output": 101, "consumer": speech}},
    ]
    res = run(scenario(steps, models={"m": model(ttft=0.4, tps=101.0, price=PRICE)}), engine=engine)
    s = streaming(res, "answer")
    assert s["voice_to_voice_s"] == pytest.approx(1.16)
    assert s["first_audio_from_ask_s"] == pytest.approx(1.16)  # the listen starts the run: the same here
    assert s["first_audio_s"] == pytest.approx(0.4 + 0.11 + 0.15)


@pytest.mark.parametrize("engine", ENGINES)
def test_voice_to_voice_counts_from_the_latest_listen(engine):
    # A wait of 5 s (the person thinking) before they speak: voice to voice starts at the listen (5 s), the ask
    # at the run's start. Listen 5 -> 5.5; the answer (TTFT 0.4, 1 token) is delivered at 5.9; one-token
    # sentence, first audio 0.1 s later: 6.0 s from the ask, 1.0 s voice to voice.
    speech = {"speech": {"first_audio": 0.1, "tokens_per_s": 3, "sentence_tokens": 5}}
    steps = [
        {"wait": {"name": "think", "latency": 5}},
        {"listen": {"name": "user", "end_of_speech": 0.2, "stt": 0.3}},
        {"call": {"name": "answer", "output": 1, "consumer": speech}},
    ]
    s = streaming(run(scenario(steps, models={"m": model(ttft=0.4, tps=10.0, price=PRICE)}), engine=engine), "answer")
    assert s["first_audio_from_ask_s"] == pytest.approx(6.0)
    assert s["voice_to_voice_s"] == pytest.approx(1.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_barge_in_is_the_persons_whatever_the_model_speed(engine):
    # The person interrupts 3 s after the first word, in every run (p = 1). A slow model (10 tok/s: 100 tokens
    # take 10 s) is still generating then: cut at 1 + 3 = 4 s with (i - 1) 10/99 <= 3 -> 30 tokens billed. A fast
    # one (1000 tok/s, done at 1.1 s) has finished: nothing is cut, all 100 tokens are billed. Both answers are
    # interrupted (the voice, 3 tok/s, is still speaking): the same share, and the voice stops at 4 s in both.
    speech = {"speech": {"first_audio": 0.0, "tokens_per_s": 3, "sentence_tokens": 5}}
    models = {"slow": model(ttft=1.0, tps=10.0, price=PRICE), "fast": model(ttft=1.0, tps=1000.0, price=PRICE)}
    call = {"name": "a", "model": "slow", "output": 100, "consumer": speech,
            "interrupt": {"p": 1, "after_first_word": 3}}  # fmt: skip
    doc = scenario([{"call": call}], models=models, variants={"slow": {}, "fast": {"model": {"a": "fast"}}}, runs=4)
    res = run(doc, engine=engine)
    slow, fast = streaming(res, "a", "slow"), streaming(res, "a", "fast")
    assert slow["interrupted_share"] == fast["interrupted_share"] == 1.0
    assert slow["cut_share"] == 1.0 and fast["cut_share"] == 0.0
    tokens = res.summary_dict()["variants"]
    assert tokens["slow"]["tokens"]["output"] == pytest.approx(30)
    assert tokens["fast"]["tokens"]["output"] == pytest.approx(100)
    assert slow["wasted_usd"] == pytest.approx(30 * 10e-6)
    assert fast["wasted_usd"] == pytest.approx(100 * 10e-6)
    # speech silent after the barge-in: the voice stops at 4 s (1 s of first audio + 3 s) in both
    assert slow["speech_done_s"] == pytest.approx(4.0)
    assert fast["speech_done_s"] == pytest.approx(4.0)
    # the calls the person let finish: none, so their figures are null
    unint = res.summary_dict()["variants"]["slow"]["streaming"]["uninterrupted"]["a"]
    assert unint["speech_done_s"]["mean"] is None


@pytest.mark.parametrize("engine", ENGINES)
def test_a_barge_in_after_the_voice_finished_cuts_and_stops_nothing(engine):
    # 3 tokens at 10 tok/s from 1 s: the call ends at 1 + 3/10 = 1.3 s with token 3; the one sentence of 3 tokens
    # plays from 1.3 s for 3/30 = 0.1 s: done at 1.4 s. The person barges in 5 s after the first word (6 s):
    # it is their interruption (counted), but nothing is left to cut or to stop: all 3 tokens billed, the voice
    # done at 1.4 s.
    speech = {"speech": {"first_audio": 0.0, "tokens_per_s": 30, "sentence_tokens": 3}}
    call = {"name": "a", "output": 3, "consumer": speech, "interrupt": {"p": 1, "after_first_word": 5}}
    res = run(scenario([{"call": call}], models={"m": model(ttft=1.0, tps=10.0, price=PRICE)}), engine=engine)
    s = streaming(res, "a")
    assert s["interrupted_share"] == 1 and s["cut_share"] == 0
    assert s["speech_done_s"] == pytest.approx(1.4)
    assert s["wasted_usd"] == pytest.approx(3 * 10e-6)
    assert res.summary_dict()["variants"]["baseline"]["tokens"]["output"] == 3


def test_after_first_word_and_after_first_token_are_the_same_instant():
    base = support_turn(consumer={"reader": {"tokens_per_s": 5}}, interrupt={"p": 0.5, "after_first_word": 1.5})
    other = support_turn(consumer={"reader": {"tokens_per_s": 5}}, interrupt={"p": 0.5, "after_first_token": 1.5})
    a, b = run(base, runs=200, seed=3).summary_dict(), run(other, runs=200, seed=3).summary_dict()
    assert a["variants"] == b["variants"]


@pytest.mark.parametrize("engine", ENGINES)
def test_slo_attainment_against_the_closed_form_of_a_lognormal_ttft(engine):
    # One answer whose TTFT is lognormal (median 1 s, p90 2 s: mu = 0, sigma = ln 2 / z_90), its first token right
    # at TTFT (no reasoning): P(first_word <= x) = Phi((ln x - mu) / sigma). Targets 0.8 s and 1.5 s, and all of
    # them (the tighter one). Tolerance: 4 standard errors of a share over 4000 runs.
    runs = 4000
    sigma = math.log(2) / stats.norm.ppf(0.9)
    m = model(ttft={"lognormal": {"median": 1.0, "p90": 2.0}}, tps=100.0, price=PRICE)
    call = {"name": "answer", "output": 50, "consumer": {"reader": {"tokens_per_s": 5}}}
    doc = scenario([{"call": call}], models={"m": m}, runs=runs, slo={"first_word_s": 0.8, "answer.ttft_s": 1.5})
    slo = run(doc, engine=engine).summary_dict()["variants"]["baseline"]["slo"]
    for metric, x in (("first_word_s", 0.8), ("answer.ttft_s", 1.5)):
        p = stats.norm.cdf(math.log(x) / sigma)
        assert slo[metric]["target"] == x and slo[metric]["runs"] == runs
        assert slo[metric]["share"] == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / runs))
        lo, hi = slo[metric]["ci95"]
        assert lo < slo[metric]["share"] < hi and hi - lo < 0.04
    assert slo["all"]["share"] == slo["first_word_s"]["share"]


def test_slo_on_wall_time_cost_and_qoe_and_a_failed_run_misses():
    # Two calls of 1 s TTFT and 10 tokens at 10 tok/s: wall 4 s, cost 2 x 10 x $10/M = $0.0002; a fail step
    # between them with p = 0.5: half the runs fail (their first answer was read, the second never came).
    call = {"name": "a", "output": 10, "consumer": {"reader": {"tokens_per_s": 50}}}
    steps = [{"call": call}, {"fail": {"p": 0.5}}, {"call": {**call, "name": "b"}}]
    doc = scenario(steps, models={"m": model(ttft=1.0, tps=10.0, price=PRICE)}, runs=2000,
                   slo={"wall_time_s": 4, "cost_usd": 0.0002, "b.qoe": 0.5, "a.first_word_s": 2})  # fmt: skip
    slo = run(doc).summary_dict()["variants"]["baseline"]["slo"]
    share_ok = slo["a.first_word_s"]["share"]
    assert share_ok == 1.0  # a's first word at 1 s in every run, failed or not
    # completed runs meet the others; failed runs have no b and (wall 2 s, cost $0.0001) meet the time and cost
    ok = slo["b.qoe"]["share"]
    assert abs(ok - 0.5) < 4 * math.sqrt(0.25 / 2000)
    assert slo["wall_time_s"]["share"] == 1.0 and slo["cost_usd"]["share"] == 1.0
    assert slo["all"]["share"] == ok


@pytest.mark.parametrize(
    ("slo", "message"),
    [
        ({"first_wrd_s": 2}, "first_word_s"),
        ({"answer.first_audio_s": 1}, "not a metric"),
        ({"first_word_s": -1}, "slo.first_word_s"),
        ({"first_word_s": float("nan")}, "NaN"),
        ({"qoe": 2}, "at most 1"),
        ({"first_word_s": "2s"}, "slo.first_word_s"),
    ],
)
def test_bad_targets_are_refused_with_their_place(slo, message):
    doc = support_turn(consumer={"reader": {"tokens_per_s": 5}})
    doc["slo"] = slo
    with pytest.raises(ScenarioError) as exc:
        make(doc)
    assert message in str(exc.value)


def test_engines_agree_on_the_turn_metrics():
    speech = {"speech": {"first_audio": {"uniform": {"low": 0.1, "high": 0.4}}, "tokens_per_s": 3,
                         "sentence_tokens": {"uniform": {"low": 5, "high": 20}}}}  # fmt: skip
    m = model(ttft={"lognormal": {"median": 0.5, "p90": 1.5}}, tps={"lognormal": {"median": 80, "p90": 150}},
              price=PRICE, stream={"chunk_tokens": {"uniform": {"low": 1, "high": 4}},
                                   "stall": {"per_chunk": 0.05, "seconds": 0.4}})  # fmt: skip
    more = {"name": "more", "output": 40, "consumer": {"reader": {"words_per_min": 250}},
            "interrupt": {"p": 0.3, "after_first_word": 2}}  # fmt: skip
    steps = [
        {"listen": {"name": "user", "end_of_speech": 0.2, "stt": {"uniform": {"low": 0.1, "high": 0.5}}}},
        {"tool": {"name": "lookup", "latency": {"exponential": {"mean": 0.5}}}},
        {"call": {"name": "answer", "output": {"uniform": {"low": 1, "high": 200}}, "consumer": speech,
                  "interrupt": {"p": 0.4, "after_first_audio": {"uniform": {"low": 0.5, "high": 6}}}}},
        {"repeat": {"times": 2, "steps": [{"listen": {"name": "again", "end_of_speech": 0.1}}, {"call": more}]}},
    ]  # fmt: skip
    doc = scenario(steps, models={"m": m}, runs=600,
                   slo={"voice_to_voice_s": 1.5, "first_word_s": 1.0, "more.reader_done_from_ask_s": 30})  # fmt: skip
    des, fast = run(doc, engine="des"), run(doc, engine="fastpath")
    a, b = des.summary_dict(), fast.summary_dict()
    a.pop("engine"), b.pop("engine")
    assert a == b
    cols = [c for c in des.runs.columns if "." in c]
    assert cols and all(np.array_equal(des.runs[c], fast.runs[c], equal_nan=True) for c in cols)
    s = a["variants"]["baseline"]["streaming"]["calls"]
    assert {"voice_to_voice_s", "first_word_s", "first_audio_from_ask_s", "cut_share"} <= set(s["answer"])
    assert set(s["answer"]["voice_to_voice_s"]) == {"mean", "p50", "p95", "p99"}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_andes_qoe_worked_example_of_the_docs(engine):
    # docs/concepts.md#qoe: a 1 s tool, then 4 tokens sent at 1 s, TTFT 1.5 s, 40 tok/s (decode 0.1 s): from the send
    # d = 1.5, 1.5333, 1.5667, 1.6; expected (defaults T = 1.3, v = 4.8) x = 1.3, 1.5083, 1.7167, 1.925; digested
    # u = 1.5, 1.5333, 1.7167, 1.925; T_end = 1.925: sum(T_end - u) = 1.025, sum(T_end - x) = 1.25 -> 0.82.
    # From the ask (x from 0, d from 2.5): every token late, u = d, T_end = 2.6: 0.2 / 3.95.
    steps = [
        {"tool": {"name": "look", "latency": 1.0}},
        {"call": {"name": "answer", "output": 4, "consumer": {"reader": {"tokens_per_s": 5}}}},
    ]
    s = streaming(run(scenario(steps, models={"m": model(ttft=1.5, tps=40.0, price=PRICE)}), engine=engine), "answer")
    assert s["qoe"] == pytest.approx(0.82, rel=1e-12)
    assert s["qoe"] == pytest.approx(1 - (0.2 + 0.025) / 1.25, rel=1e-12)
    assert s["qoe_from_ask"] == pytest.approx(0.2 / 3.95, rel=1e-12)
    assert s["first_word_s"] == pytest.approx(2.5) and s["ttft_s"] == pytest.approx(1.5)


def test_a_voice_s_qoe_expects_listening_pace_by_default():
    # the same answer to a voice: v = 3.3 tok/s, T = 1.3 s (docs/concepts.md#qoe): x = 1.3, 1.6030, 1.9061, 2.2091
    # (from the send); u = 1.5, 1.6030, 1.9061, 2.2091; T_end = 2.2091: sum(T_end - u) = 0.7091 + 0.6061 + 0.3030,
    # sum(T_end - x) = 0.9091 + 0.6061 + 0.3030 -> 1 - 0.2 / 1.8182 = 0.89
    speech = {"speech": {"first_audio": 0.1, "tokens_per_s": 3, "sentence_tokens": 4}}
    steps = [{"call": {"name": "answer", "output": 4, "consumer": speech}}]
    s = streaming(run(scenario(steps, models={"m": model(ttft=1.5, tps=40.0, price=PRICE)})), "answer")
    whole = sum(3 * 1 / 3.3 - k / 3.3 for k in range(4))  # sum over i of (T_end - x_i), T_end = x_4
    assert s["qoe"] == pytest.approx(1 - 0.2 / whole, rel=1e-12)
    assert s["qoe"] == pytest.approx(0.89, abs=1e-12)


# --------------------------------------------------------------------------- the cheapest assignment meeting a target


def _routed_turn(target: float) -> dict:
    # route: 50 tokens, TTFT 1 s, 50 tok/s: 2 s; on fast (TTFT x0.3, speed x2, price x3): 0.3 + 0.5 = 0.8 s.
    # answer: TTFT 1 s (fast: 0.3 s). First word from the ask = route + the answer's TTFT:
    # std/std 3 s, fast/std 1.8 s, std/fast 2.3 s, fast/fast 1.1 s. Costs ($10/M output): route $0.0005
    # (fast $0.0015), answer 100 tokens $0.001 (fast $0.003).
    m = model(ttft=1.0, tps=50.0, price=PRICE)
    m["speeds"] = {"fast": {"ttft_x": 0.3, "output_tps_x": 2, "price_x": 3}}
    steps = [
        {"call": {"name": "route", "output": 50}},
        {"call": {"name": "answer", "output": 100, "consumer": {"reader": {"tokens_per_s": 5}}}},
    ]
    return scenario(steps, models={"m": m}, runs=20, slo={"first_word_s": target})


@pytest.mark.parametrize(
    ("target", "choice", "cost"),
    [(2.0, {"route": "fast", "answer": "standard"}, 0.0025), (1.5, {"route": "fast", "answer": "fast"}, 0.0045)],
)
def test_optimize_finds_the_cheapest_assignment_meeting_the_targets(target, choice, cost):
    from agentsim.analysis.optimize import optimize

    opt = optimize(make(_routed_turn(target)), min_slo_share=0.95)
    assert opt.feasible and opt.choices == choice
    assert opt.chosen["cost_mean_usd"] == pytest.approx(cost)
    assert opt.chosen["slo_all_share"] == 1.0 and opt.baseline["slo_all_share"] == 0.0


def test_optimize_with_an_unreachable_target_exits_3_and_without_targets_2(tmp_path):
    import yaml
    from typer.testing import CliRunner

    from agentsim.cli.main import app

    path = tmp_path / "turn.yaml"
    path.write_text(yaml.safe_dump(_routed_turn(0.5)))  # even fast/fast (1.1 s) misses it
    r = CliRunner().invoke(app, ["optimize", str(path), "--min-slo-share", "0.9", "-q"])
    assert r.exit_code == 3, r.output
    doc = _routed_turn(2.0)
    del doc["slo"]
    path.write_text(yaml.safe_dump(doc))
    r = CliRunner().invoke(app, ["optimize", str(path), "--min-slo-share", "0.9", "-q"])
    assert r.exit_code == 2 and "slo targets" in r.output


def test_the_report_and_a_sweep_show_the_share_of_runs_meeting_the_targets(tmp_path):
    import json
    import re

    import yaml
    from typer.testing import CliRunner

    from agentsim.cli.main import app

    doc = _routed_turn(2.0)
    doc["models"]["m"]["ttft"] = {"lognormal": {"median": 1.0, "p90": 2.0}}  # shares strictly between 0 and 1
    doc["runs"] = 300
    doc["sweeps"] = [{"set": "models.m.output_tps", "values": [25, 50]}]
    path = tmp_path / "turn.yaml"
    path.write_text(yaml.safe_dump(doc))
    runner = CliRunner()
    summary = json.loads(runner.invoke(app, ["run", str(path), "--json"]).output)
    share = summary["variants"]["baseline"]["slo"]["first_word_s"]["share"]
    assert 0 < share < 1
    r = runner.invoke(app, ["report", str(path), "-o", str(tmp_path / "r.html"), "-q", "--no-sweep"])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "r.html").read_text()
    targets = page[page.index("<h2>Targets</h2>") :]
    assert re.search(rf">\s*{100 * share:.1f}% \(", targets), "the share as run --json gives it"
    r = runner.invoke(app, ["sweep", str(path), "-o", str(tmp_path / "sw"), "-q"])
    assert r.exit_code == 0, r.output
    assert "slo met" in r.output
    import pandas as pd

    table = pd.read_csv(tmp_path / "sw" / "sweep.csv")
    at_50 = table[table["models.m.output_tps"] == 50]["slo_all_share"].iloc[0]
    assert at_50 == pytest.approx(share)  # the scenario's own speed is 50: the same runs as `run`
