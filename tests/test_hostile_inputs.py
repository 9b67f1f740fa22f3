"""Hostile, absurd and degenerate input: every class ends in bounded time and memory, exit 0 or 2.

One test (or a few) per class of issue 18: scenarios whose every run fails, workloads that
cannot advance simulated time, absurd sizes, YAML resource bombs, malformed dates and numbers,
YAML syntax errors, Rich markup in user text, and ``extends:`` pitfalls. Where a failure mode is a
hang or a memory blow-up, the command runs in a subprocess with a timeout and an address-space
limit, so a regression fails the test instead of the machine.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app

runner = CliRunner()

MODEL = """\
    price: {input_mtok: 1, output_mtok: 5}
    ttft: 0.5
    output_tps: 50
"""


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def invoke(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    return result


def _limit_memory(nbytes: int):
    def apply():  # runs in the child before exec
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))

    return apply


def run_cli(*args: str, timeout: float = 60, memory: int = 2 << 30) -> subprocess.CompletedProcess:
    """``agentsim ARGS`` in a subprocess with a wall-clock timeout and an address-space limit."""
    proc = subprocess.run(
        [sys.executable, "-m", "agentsim", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limit_memory(memory),
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 2), (proc.returncode, proc.stderr)
    return proc


# --------------------------------------------------------------------------- 1. variants that complete no run

ALL_FAIL = f"""\
name: t
runs: 40
models:
  m:
{MODEL}    error_rate: 1
agent:
  steps:
    - call: {{name: a, model: m, input: 100, output: 200}}
"""

HALF_FAIL = f"""\
name: t
runs: 40
models:
  m:
{MODEL}  bad:
{MODEL}    error_rate: 1
agent:
  steps:
    - call: {{name: a, model: m, input: 100, output: 200}}
    - call: {{name: b, model: m, input: 100, output: 200}}
variants:
  ok: {{}}
  broken: {{model: {{a: bad}}}}
value_of_time: {{usd_per_hour: 50}}
"""


def test_one_variant_all_runs_failed_warns_and_exits_0(tmp_path):
    f = write(tmp_path, ALL_FAIL)
    r = invoke("run", f)
    assert r.exit_code == 0
    assert "100% of the runs (40 of 40) did not complete" in r.stderr
    assert "no run completed" in r.stderr
    doc = json.loads(invoke("run", f, "--json").stdout)
    v = doc["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] is None and v["cost_usd"]["mean"] is None
    assert v["vs_baseline"]["delta_time_s"] is None  # nothing to compare, not "0 s faster"


def test_two_variants_all_failed_and_every_command_copes(tmp_path):
    f = write(tmp_path, ALL_FAIL + "variants: {x: {}, y: {}}\n")
    r = invoke("run", f, "--out", tmp_path / "out")
    assert r.exit_code == 0 and "variant 'y', 100%" in r.stderr
    assert (tmp_path / "out" / "summary.json").exists()
    with warnings.catch_warnings():  # no matplotlib layout warning leaks from a figure of bars that are all empty
        warnings.simplefilter("error")
        assert invoke("report", f, "--out", tmp_path / "r.html").exit_code == 0
    assert "No variant completed a run" in (tmp_path / "r.html").read_text()
    assert invoke("size", f, "--runs-per-month", "1000").exit_code == 0
    r = invoke("sweep", f, "--set", "agent.steps[0].call.output=10:100:90", "--out", tmp_path / "sw")
    assert r.exit_code == 0


def test_one_broken_variant_is_compared_as_unknown(tmp_path):
    f = write(tmp_path, HALF_FAIL)
    doc = json.loads(invoke("run", f, "--json").stdout)
    ok, broken = doc["variants"]["ok"], doc["variants"]["broken"]
    # the working variant: two calls of 0.5 s + 200/50 s each, 2 x (100 in, 200 out) tokens
    assert ok["wall_time_s"]["mean"] == pytest.approx(2 * (0.5 + 4.0))
    assert ok["cost_usd"]["mean"] == pytest.approx((200 * 1 + 400 * 5) / 1e6)
    assert broken["wall_time_s"]["mean"] is None
    assert broken["vs_baseline"] == {
        "delta_time_s": None,
        "delta_cost_usd": None,
        "usd_per_hour_saved": None,
        "pays_off": None,
        "delta_waiting_s": None,
        "basis": "wall_time_s",
    }
    r = invoke("size", f, "--runs-per-month", "1000")
    assert "no completed run" in r.stdout
    assert "cheapest overall by value of time V: ok" in r.stdout.replace("\n", " ")
    assert invoke("report", f, "--out", tmp_path / "r.html").exit_code == 0


# --------------------------------------------------------------------------- 2. hangs and absurd sizes

BASE = f"""\
name: t
runs: 50
models:
  m:
{MODEL}agent:
  steps:
"""


@pytest.mark.parametrize(
    "steps, workload",
    [
        (
            "    - repeat: {times: 0, steps: [{call: {model: m, output: 10}}]}\n",
            "{concurrent: 1, duration: {minutes: 1}}",
        ),
        ("    - fanout: {n: 0, steps: [{call: {model: m, output: 10}}]}\n", "{concurrent: 3, duration: {hours: 1}}"),
        ("    - choose: {options: [{p: 1, steps: []}]}\n", "{concurrent: 1, duration: {minutes: 1}}"),
    ],
)
def test_closed_workload_whose_runs_take_no_time_is_rejected_by_validate(tmp_path, steps, workload):
    f = write(tmp_path, BASE + steps + f"workload: {workload}\n")
    r = invoke("validate", f)  # in-process: validate never simulates
    assert r.exit_code == 2
    assert f"{f}:" in r.stderr and "workload.concurrent" in r.stderr
    assert "can take no simulated time" in r.stderr and "think_time" in r.stderr
    if "repeat" in steps:  # run, in a subprocess with a timeout: this one used to loop forever
        r = run_cli("run", f, timeout=120)
        assert r.returncode == 2 and "can take no simulated time" in r.stderr


def test_closed_workload_with_a_think_time_is_accepted(tmp_path):
    steps = "    - repeat: {times: 0, steps: [{call: {model: m, output: 10}}]}\n"
    f = write(tmp_path, BASE + steps + "workload: {concurrent: 1, duration: {minutes: 1}, think_time: 1}\n")
    r = run_cli("run", f, "--json", timeout=60)
    assert r.returncode == 0
    # one agent, runs of zero length 1 s apart: the runs starting in [0, 60] s are counted
    assert json.loads(r.stdout)["variants"]["baseline"]["workload"]["runs_counted"] == 61


ABSURD = {
    "runs": (BASE.replace("runs: 50", "runs: 1000000000") + "    - call: {model: m, output: 10}\n", "--runs"),
    "repeat": (BASE + "    - repeat: {times: 1000000000, steps: [{call: {model: m, output: 10}}]}\n", "repeat"),
    "fanout": (BASE + "    - fanout: {n: 1000000000, steps: [{call: {model: m, output: 10}}]}\n", "fanout"),
    "nested": (
        BASE + "    - repeat: {times: 1000, steps: [{repeat: {times: 1000, steps: [{repeat: {times: 1000, "
        "steps: [{call: {model: m, output: 10}}]}}]}}]}\n",
        "repeat",
    ),
    "concurrent": (
        BASE + "    - call: {model: m, output: 10}\nworkload: {concurrent: 10000000, duration: {minutes: 1}}\n",
        "concurrent",
    ),
    "arrivals": (
        BASE + "    - call: {model: m, output: 10}\nworkload: {arrivals: {per_hour: 1.0e+9}, duration: {hours: 1}}\n",
        "arrivals",
    ),
    "near-zero runs": (
        BASE.replace("ttft: 0.5", "ttft: 1.0e-9").replace("output_tps: 50", "output_tps: 1.0e+8")
        + "    - call: {model: m, output: 10}\nworkload: {concurrent: 1, duration: {hours: 1}}\n",
        "concurrent",
    ),
}


@pytest.mark.parametrize("case", sorted(ABSURD))
def test_absurd_sizes_are_refused_before_work_starts(tmp_path, case):
    text, fix = ABSURD[case]
    f = write(tmp_path, text)
    r = run_cli("run", f, timeout=60, memory=1 << 30)
    assert r.returncode == 2
    assert "--max-calls" in r.stderr or "--no-size-limit" in r.stderr
    assert fix in r.stderr or "repeat/fanout" in r.stderr


def test_size_limit_flag_is_honoured(tmp_path):
    # 30 runs x 10 calls = 300 calls: refused under --max-calls 299, accepted at 300
    f = write(
        tmp_path,
        BASE.replace("runs: 50", "runs: 30") + "    - repeat: {times: 10, steps: [{call: {model: m, output: 1}}]}\n",
    )
    r = invoke("run", f, "--max-calls", "299")
    assert r.exit_code == 2 and "300 simulated calls" in r.stderr and "--max-calls" in r.stderr
    assert invoke("run", f, "--max-calls", "300").exit_code == 0
    r = invoke("sweep", f, "--max-calls", "299", "--set", "runs=1,30", "--json")
    assert r.exit_code == 2
    assert invoke("run", f, "--max-calls", "299", "--no-size-limit").exit_code == 0


# --------------------------------------------------------------------------- 3. resource exhaustion, bad values

BILLION_LAUGHS = "a: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + "".join(
    f"{b}: &{b} [{','.join(['*' + a] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_billion_laughs_is_refused_quickly_in_little_memory(tmp_path):
    f = write(tmp_path, BILLION_LAUGHS)
    assert len(BILLION_LAUGHS) < 500  # 9^9 = 387 million strings once expanded
    r = run_cli("validate", f, timeout=30, memory=1 << 30)
    assert r.returncode == 2
    assert "expands to more than 1,000,000 values" in r.stderr and f"{f}:" in r.stderr


@pytest.mark.parametrize(
    "text, words",
    [
        ("name: &n [a, *n]\n", "recursive alias"),
        ("name: t\nx: " + "[" * 2000 + "]" * 2000 + "\n", "nested too deeply"),
        ("name: t\nx: " + "{a: " * 150 + "1" + "}" * 150 + "\n", "nested more than 100 levels"),
    ],
)
def test_recursive_and_deep_yaml_is_a_clear_error(tmp_path, text, words):
    f = write(tmp_path, text)
    r = invoke("validate", f)
    assert r.exit_code == 2 and words in r.stderr and str(f) in r.stderr


def test_extends_cycle_and_missing_base_name_the_referring_file_and_line(tmp_path):
    write(tmp_path, "extends: b.yaml\nname: a\n", "a.yaml")
    write(tmp_path, "name: b\nextends: a.yaml\n", "b.yaml")
    r = invoke("validate", tmp_path / "a.yaml")
    assert r.exit_code == 2 and "circle (a.yaml -> b.yaml -> a.yaml)" in r.stderr
    assert f"{tmp_path / 'b.yaml'}:2: extends" in r.stderr
    f = write(tmp_path, "name: t\nruns: 5\nextends: missing.yaml\n", "c.yaml")
    r = invoke("validate", f)
    assert r.exit_code == 2 and f"{f}:3: extends" in r.stderr and "missing.yaml" in r.stderr


def test_bad_date_is_reported_with_its_line_and_validate_goes_on(tmp_path):
    good = write(tmp_path, BASE + "    - call: {model: m, output: 10}\n", "good.yaml")
    bad = write(tmp_path, BASE + "    - call: {model: m, output: 10}\nprices_as_of: 2026-02-30\n", "bad.yaml")
    old = write(tmp_path, BASE + "    - call: {model: m, output: 10}\nprices_as_of: 0001-01-01\n", "old.yaml")
    r = invoke("validate", bad, old, good)
    assert r.exit_code == 2
    assert f"{bad}:11: prices_as_of: '2026-02-30' is not a valid value" in r.stderr
    assert f"{old}:11: prices_as_of: 0001-01-01 is not a plausible date" in r.stderr
    assert f"ok: {good}" in r.stdout


def test_lone_surrogate_in_a_json_name_is_rejected(tmp_path):
    doc = {
        "name": "x\ud800y",
        "runs": 5,
        "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 5}, "ttft": 0.5, "output_tps": 50}},
        "agent": {"steps": [{"call": {"model": "m", "output": 10}}]},
    }
    f = tmp_path / "s.json"
    f.write_text(json.dumps(doc))  # json escapes the surrogate as \ud800
    for command in ("validate", "run"):
        r = invoke(command, f)
        assert r.exit_code == 2 and "lone UTF-16 surrogate" in r.stderr and f"{f}:1: name" in r.stderr


@pytest.mark.parametrize(
    "line, place, words",
    [
        ("runs: true", "runs", "expected a whole number, got true"),
        ('runs: "5"', "runs", "expected a whole number, got a number in quotes (text)"),
        ("seed: 1.0e+30", "seed", "too large"),
        (
            "workload: {arrivals: {per_hour: 1}, duration: {days: 1.0e+308}}",
            "workload.duration",
            "longer than 10 years",
        ),
    ],
)
def test_numbers_are_checked(tmp_path, line, place, words):
    f = write(tmp_path, BASE.replace("runs: 50\n", "") + "    - call: {model: m, output: 10}\n" + line + "\n")
    r = invoke("validate", f)
    assert r.exit_code == 2 and f": {place}: " in r.stderr and words in r.stderr


@pytest.mark.parametrize(
    "call, place",
    [
        ("{model: m, output: 1.0e+19}", "agent.steps[0].call.output"),
        (
            "{model: m, output: 10, reasoning: {lognormal: {median: 1.0e+7, p90: 1.0e+8}}}",
            "agent.steps[0].call.reasoning",
        ),
    ],
)
def test_absurd_token_counts_are_rejected_instead_of_wrapping_int64(tmp_path, call, place):
    f = write(tmp_path, BASE + f"    - call: {call}\n")
    r = invoke("run", f)
    assert r.exit_code == 2 and f"{f}:10: {place}" in r.stderr
    assert "above the limit of 1e+08 tokens" in r.stderr or "range of a token count" in r.stderr


def test_fanout_join_k_above_n_is_rejected_like_parallel(tmp_path):
    f = write(tmp_path, BASE + "    - fanout: {n: 2, join: {k: 5}, steps: [{call: {model: m, output: 10}}]}\n")
    r = invoke("validate", f)
    assert r.exit_code == 2 and "agent.steps[0].fanout.join.k: join k=5 but there are at most 2 copies" in r.stderr
    f = write(tmp_path, BASE + "    - parallel: {branches: [{call: {model: m, output: 1}}], join: {k: 5}}\n")
    assert "join k=5 but there are only 1 branches" in invoke("validate", f).stderr


# --------------------------------------------------------------------------- 4. YAML syntax errors


def test_unclosed_bracket_names_where_it_opened(tmp_path):
    f = write(tmp_path, "name: t\nruns: 5\nmodels: [a, b\nagent: {}\n")
    r = invoke("validate", f)
    assert r.exit_code == 2
    assert f"{f}:4: not valid YAML: while parsing a flow sequence that opened on line 3, column 9" in r.stderr


# --------------------------------------------------------------------------- 6. extends replaces one-of mappings


def test_extends_replaces_a_one_of_mapping_instead_of_merging_it(tmp_path):
    parent = (
        BASE.replace("ttft: 0.5", "ttft: {lognormal: {median: 1, p90: 2}}") + "    - call: {model: m, output: 10}\n"
    )
    write(tmp_path, parent + "workload: {arrivals: {per_hour: 60}, duration: {seconds: 600}}\n", "parent.yaml")
    child = write(
        tmp_path,
        "extends: parent.yaml\nworkload: {duration: {hours: 6}}\nmodels: {m: {ttft: {constant: 2}}}\n",
        "child.yaml",
    )
    from agentsim.model.loading import load_data

    data, _ = load_data(child)
    assert data["workload"] == {"arrivals": {"per_hour": 60}, "duration": {"hours": 6}}
    assert data["models"]["m"]["ttft"] == {"constant": 2}
    assert invoke("validate", child).exit_code == 0


# --------------------------------------------------------------------------- 5. user text is never markup


def test_user_text_is_printed_literally_not_as_rich_markup_or_emoji(tmp_path):
    r = invoke("sweep", write(tmp_path, BASE + "    - call: {model: m, output: 10}\n"), "--set", "x=10:100:0")
    assert r.exit_code == 2 and "--set x=10:100:0" in r.stderr and "\N{HUNDRED POINTS SYMBOL}" not in r.stderr
    text = (
        BASE.replace("name: t", 'name: "[bold red]x[/] :smile:"').replace("runs: 50", "runs: 5")
        + '    - call: {model: m, output: 10}\nvariants: {"[b]v:100:": {}}\n'
    )
    r = invoke("run", write(tmp_path, text))
    assert r.exit_code == 0
    assert "[bold red]x[/] :smile:" in r.stdout and "[b]v:100:" in r.stdout
    assert "\N{HUNDRED POINTS SYMBOL}" not in r.stdout and "\N{SMILING FACE WITH SMILING EYES}" not in r.stdout


# --------------------------------------------------------------------------- found by the fuzzer


@pytest.mark.parametrize("engine", ["des", "fastpath"])
def test_output_speed_that_underflows_to_zero_does_not_divide_by_zero(tmp_path, engine):
    # a gamma of shape (5/84)^2 = 0.0035 draws exactly 0.0 in float64 about half of the time
    text = (
        BASE.replace("output_tps: 50", "output_tps: {gamma: {mean: 5, sd: 84}}")
        + "    - call: {model: m, output: 10}\n"
    )
    r = invoke("run", write(tmp_path, text), "--engine", engine, "--runs", "200", "--json")
    assert r.exit_code == 0
