"""Issue 24's hostile corpus, by class: each case ends with exit 2 naming the file, line and key, never
exit 1, a traceback or a RuntimeWarning; and ``validate`` gives the verdict of every command that reads the
file (``run``, ``report``, ``sweep``).

Classes: values that overflowed or divided by zero (huge or denormal token counts, CVs, rates, p90s);
values accepted that should be refused (durations past 10 years in stalls, speech, interrupts, back-off;
token counts as text or booleans; a sweep step of 0; an uncertainty factor of 0; an empirical CSV holding
inf); values that gave nonsense with a NumPy overflow (conditions, time of day, prefill, prices, reader
pace); a NUL in a name; a fan-out of a billion waits that the size guard must count although it holds no
model call.
"""

from __future__ import annotations

import glob
import json
import math
import resource
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent

MODEL = "{price: {input_mtok: 1, output_mtok: 5}, ttft: 0.5, output_tps: 50}"
BASE = f"""name: hostile
runs: 20
models:
  m: {MODEL}
agent:
  steps:
    - call: {{name: a, model: m, output: 100}}
"""


def _model(extra: str) -> str:
    return BASE.replace(f"  m: {MODEL}", f"  m: {{price: {{input_mtok: 1, output_mtok: 5}}, ttft: 0.5, {extra}}}")


def _call(extra: str) -> str:
    return BASE.replace("- call: {name: a, model: m, output: 100}", f"- call: {{name: a, model: m, {extra}}}")


CASES: dict[str, tuple[str, str]] = {
    # exit 1 before: OverflowError / ZeroDivisionError from huge or denormal values
    "jitter_cv": (_model("output_tps: 50, stream: {jitter_cv: 1.0e+200}"), "stream.jitter_cv"),
    "chunk_tokens": (_model("output_tps: 50, stream: {chunk_tokens: 1.0e+300}"), "stream.chunk_tokens"),
    "sentence_tokens": (
        _call("output: 100, consumer: {speech: {tokens_per_s: 3, sentence_tokens: 1.0e+300}}"),
        "speech.sentence_tokens",
    ),
    "render_tokens": (_call("output: 100, consumer: {render: {tokens: 1.0e+300}}"), "render.tokens"),
    "pipeline_after": (
        BASE + "    - pipeline: {after: {tokens: 1.0e+300}, steps: [{wait: {latency: 1}}]}\n",
        "pipeline.after.tokens",
    ),
    "arrivals_denormal": (
        BASE + "workload: {arrivals: {per_hour: 5.0e-324}, duration: {hours: 1}}\n",
        "arrivals.per_hour",
    ),
    "lognormal_p90": (_model("output_tps: {lognormal: {median: 50, p90: 1.0e+300}}"), "output_tps.lognormal.p90"),
    # accepted before: durations past 10 years, text and booleans as token counts, a zero factor
    "stall_seconds": (_model("output_tps: 50, stream: {stall: {p: 0.5, seconds: 1.0e+300}}"), "stall.seconds"),
    "first_audio": (
        _call("output: 100, consumer: {speech: {tokens_per_s: 3, first_audio: 1.0e+300}}"),
        "speech.first_audio",
    ),
    "interrupt_delay": (_call("output: 100, interrupt: {p: 0.5, after_first_token: 1.0e+300}"), "after_first_token"),
    "backoff": (_model("output_tps: 50, error_rate: 0.5, retry: {backoff_base: 1.0e+300}"), "retry.backoff_base"),
    "condition_factor": (_model("output_tps: 50, conditions: {ttft_x: 1.0e+300}"), "conditions.ttft_x"),
    "tokens_text": (_call("output: '200'"), "call.output"),
    "tokens_bool": (_call("output: true"), "call.output"),
    "uncertainty_zero": (
        _model("output_tps: 50, uncertainty: {output_tps_x: 0}") + "uncertainty: parameters\n",
        "uncertainty.output_tps_x",
    ),
    "sweep_step_0": (
        BASE + "sweeps:\n  - set: agent.steps[0].call.output\n    range: {start: 1, stop: 10, step: 0}\n",
        "sweeps[0]",
    ),
    # exit 0 with nonsense before (NumPy overflow warnings, figures of 1e297)
    "time_of_day": (
        _model("output_tps: 50, conditions: {time_of_day: {ttft_x: {hourly: [" + ", ".join(["1.0e+300"] * 24) + "]}}}")
        + 'workload: {start: "09:00"}\n',
        "hourly[0]",
    ),
    "prefill_denormal": (_model("output_tps: 50, prefill_tps: 5.0e-324"), "prefill_tps"),
    "price_huge": (
        BASE.replace("input_mtok: 1, output_mtok: 5", "input_mtok: 1.0e+300, output_mtok: 5"),
        "price.input_mtok",
    ),
    "reader_pace": (_call("output: 100, consumer: {reader: {tokens_per_s: 5.0e-324}}"), "reader.tokens_per_s"),
    "nul_name": (BASE.replace("name: hostile", 'name: "a\\0b"'), "name"),
}

# The classes whose root is in the simulation core (the size guard counts every step instance, not only calls).
CORE = {
    "fanout_of_waits": (
        BASE + "    - choose: {options: [{p: 1, steps: [{fanout: {n: 1000000000, steps: [{wait: {latency: 1}}]}}]}]}\n",
        "fanout",
    ),
}


def _commands(f: Path, tmp_path: Path, sweeps: bool) -> list[list[str]]:
    """The commands that read what the case breaks (sweeps: only sweep and report read them)."""
    report = ["report", str(f), "-o", str(tmp_path / "r.html"), "-q"]
    if sweeps:
        return [report, ["sweep", str(f), "-o", str(tmp_path / "sw"), "-q"]]
    return [["run", str(f)], report]


def _check_case(tmp_path: Path, text: str, place: str) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(text, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a NumPy overflow warning fails the case
        v = runner.invoke(app, ["validate", str(f)])
        assert v.exit_code == 2, (v.exit_code, v.output)
        assert f"{f}:" in v.stderr and place in v.stderr, v.stderr
        for args in _commands(f, tmp_path, "sweeps:" in text):
            r = runner.invoke(app, args)
            assert "Traceback" not in r.output
            assert r.exit_code == v.exit_code, (args, r.exit_code, r.output)  # the same verdict as validate
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "sw").exists()


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_case_exits_2_with_its_place_everywhere(tmp_path, case):
    _check_case(tmp_path, *CASES[case])


@pytest.mark.parametrize("case", sorted(CORE))
def test_hostile_case_in_the_simulation_core(tmp_path, case):
    text, place = CORE[case]
    f = tmp_path / "s.yaml"
    f.write_text(text, encoding="utf-8")
    v = runner.invoke(app, ["validate", str(f)])
    assert v.exit_code == 2 and place in v.stderr, v.output


def test_an_empirical_csv_holding_inf_is_refused(tmp_path):
    (tmp_path / "v.csv").write_text("x\n1.5\ninf\n2\n")
    f = tmp_path / "s.yaml"
    f.write_text(_model("output_tps: {empirical: {file: v.csv, column: x}}"))
    for args in (["validate", str(f)], ["run", str(f)]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2 and "not a finite number" in r.stderr and f"{f}:" in r.stderr, r.output


def test_five_independent_mistakes_in_one_pass(tmp_path):
    text = (
        BASE.replace("runs: 20", "runs: 0")  # 1. schema: runs below 1
        .replace("ttft: 0.5", "ttft: 0.5, colour: red")  # 2. unknown key
        .replace("model: m, output: 100", "model: opsu, output: 100")  # 3. reference: undefined model
        + "    - tool: {latency: 1.0e+300}\n"  # 4. domain: a duration past 10 years
        + "variants: {x: {speed: {nope: fast}}}\n"  # 5. reference: neither a model nor a step
    )
    f = tmp_path / "s.yaml"
    f.write_text(text)
    r = runner.invoke(app, ["validate", str(f)], env={"COLUMNS": "200"})
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert r.exit_code == 2
    for words in ("runs", "colour", "opsu", "tool.latency", "nope"):
        assert any(words in e for e in errors), (words, r.stderr)
    assert len(errors) == 5, r.stderr


@pytest.mark.parametrize("path", sorted(glob.glob(str(ROOT / "scenarios" / "*.yaml"))))
def test_every_bundled_scenario_validates_as_it_runs(path):
    v = runner.invoke(app, ["validate", path])
    assert v.exit_code == 0, v.output
    r = runner.invoke(app, ["run", path, "--runs", "20", "--json"])
    assert r.exit_code == 0, r.output


# --------------------------------------------------------------------------- contract v1.2's vocabulary (second round)

STALL = "output_tps: 50, stream: {chunk_tokens: 2, stall: %s}"
V12: dict[str, tuple[str, str]] = {
    # a stall process on an answer longer than a streamed answer may be (its per-token timeline is held)
    "per_token_long_answer": (
        _model(STALL % "{per_token: 1, seconds: 1}").replace("output: 100", "output: 2000000"),
        "call.output",
    ),
    "per_chunk_above_1": (_model(STALL % "{per_chunk: 2, seconds: 1}"), "stall.per_chunk"),
    "two_stall_forms": (_model(STALL % "{per_token: 0.5, p: 0.5, seconds: 1}"), "stall"),
    "at_chunks_beyond_tokens": (_model(STALL % "{at_chunks: [2, 1.0e+18], seconds: 1}"), "at_chunks[1]"),
    "at_chunks_text": (_model(STALL % "{at_chunks: [2, three], seconds: 1}"), "at_chunks[1]"),
    "at_chunks_first": (_model(STALL % "{at_chunks: [1], seconds: 1}"), "at_chunks"),
    "slo_nul": (BASE + 'slo: {"a\\0b": 1}\n', "slo"),
    "slo_unknown_call": (BASE + "slo: {zz.ttft_s: 1}\n", "slo.zz.ttft_s"),
    "slo_empty_name": (BASE + 'slo: {"": 1}\n', "slo"),
    "slo_huge": (BASE + "slo: {wall_time_s: 1.0e+300}\n", "slo.wall_time_s"),
    "slo_nan": (BASE + "slo: {cost_usd: .nan}\n", "slo.cost_usd"),
    "slo_qoe_above_1": (BASE + "slo: {qoe: 2}\n", "slo.qoe"),
    "after_first_word_huge": (_call("output: 100, interrupt: {p: 1, after_first_word: 1.0e+300}"), "after_first_word"),
    "after_first_word_negative": (
        _call("output: 100, interrupt: {p: 1, after_first_word: {normal: {mean: 0, sd: 5}}}"),
        "after_first_word",
    ),
    "listen_denormal": (
        BASE + "    - listen: {end_of_speech: 5.0e-324, stt: 0.3}\n",
        "listen.end_of_speech",
    ),
    "listen_huge": (BASE + "    - listen: {end_of_speech: 1, stt: 1.0e+300}\n", "listen.stt"),
    "context_speed_factor": (
        _model("output_tps: 50, context_speed: {tokens: [0, 10], ttft_x: [1, 1.0e+300]}"),
        "context_speed.ttft_x[1]",
    ),
    "context_speed_unsorted": (
        _model("output_tps: 50, context_speed: {tokens: [10, 5], output_tps_x: [1, 1]}"),
        "context_speed.tokens",
    ),
}


@pytest.mark.parametrize("case", sorted(V12))
def test_hostile_v12_case_exits_2_with_its_place_everywhere(tmp_path, case):
    _check_case(tmp_path, *V12[case])


def _bounded(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``agentsim ARGS`` in a process of at most 4 GiB of address space (a run that needs more fails: exit 1)."""

    def limit():  # pragma: no cover - runs in the child
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    cmd = [sys.executable, "-m", "agentsim", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, preexec_fn=limit, check=False)


# Valid files at the edges of the new keys: each runs to the end within 4 GiB, with sane figures.
V12_OK = {
    # 2 answers of 10^6 tokens (the most a streamed answer may have), a stall before every token
    "per_token_1_on_the_longest_answer": _model(STALL % "{per_token: 1, seconds: 0.001}")
    .replace("output: 100", "output: 1000000")
    .replace("runs: 20", "runs: 2"),
    # a schedule of 99,999 chunks on answers of 1,000 tokens (500 chunks), for 4,096 runs
    "at_chunks_long_list": _model(
        STALL % ("{at_chunks: [" + ", ".join(map(str, range(2, 100_001))) + "], seconds: 0.01}")
    )
    .replace("runs: 20", "runs: 4096")
    .replace("output: 100", "output: 1000"),
    # a person who would barge in after ten years: never during the answer
    "after_first_word_ten_years": _call(
        "output: 100, consumer: {reader: {tokens_per_s: 5}}, interrupt: {p: 1, after_first_word: 315576000}"
    ),
    # a curve of 10^4 points
    "context_speed_10k_points": _model(
        "output_tps: 50, context_speed: {tokens: ["
        + ", ".join(str(10 * i) for i in range(10_000))
        + "], output_tps_x: ["
        + ", ".join(f"{1 - i * 5e-5:.6f}" for i in range(10_000))
        + "]}"
    ).replace(
        "    - call: {name: a, model: m, output: 100}", "    - call: {name: a, model: m, input: 50000, output: 100}"
    ),
    # targets at the ends of their kinds, on every metric family
    "slo_edges": _call("output: 100, consumer: {speech: {tokens_per_s: 3}}")
    + "slo: {ttft_s: 0, qoe: 1, a.first_audio_s: 315576000, wall_time_s: 0.001, cost_usd: 0}\n",
}


@pytest.mark.parametrize("case", sorted(V12_OK))
def test_hostile_v12_edges_run_within_4_gib(tmp_path, case):
    f = tmp_path / "s.yaml"
    f.write_text(V12_OK[case], encoding="utf-8")
    for args in (["validate", str(f)], ["run", str(f), "--json"]):
        r = _bounded(args, tmp_path)
        assert r.returncode == 0, (args, r.returncode, r.stderr[-2000:])
        assert "Traceback" not in r.stderr
    summary = json.loads(r.stdout)
    for v in summary["variants"].values():
        assert math.isfinite(v["wall_time_s"]["mean"]) and v["wall_time_s"]["mean"] >= 0
