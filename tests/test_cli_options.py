"""Every numeric option of every command is a quantity of a kind (agentsim.model.domain): NaN, ±inf,
denormals and absurd sizes exit 2 naming the option and its range, before any work.

The commands are enumerated from the command line itself, so a new option is covered without new
code: it fails :func:`test_every_numeric_option_has_a_kind` until it is given its kind in
``agentsim.cli.common.OPTION_KINDS`` (and until then it is still refused when not finite).
"""

from __future__ import annotations

import click
import pytest
import typer
from typer.testing import CliRunner

from agentsim.cli.common import OPTION_KINDS, BadInput, parse_duration
from agentsim.cli.main import app

runner = CliRunner()

SCENARIO = """\
name: t
runs: 20
models:
  m: {price: {input_mtok: 1, output_mtok: 2}, ttft: 1, output_tps: 50}
agent:
  steps:
    - call: {name: plan, model: m, output: 100}
"""


def numeric_options():
    """(command, parameter name, its longest option, 'int' | 'float' | 'duration') of every numeric option."""
    group = typer.main.get_command(app)
    ctx = click.Context(group)
    out = []
    for name in group.list_commands(ctx):
        for p in group.get_command(ctx, name).params:
            if type(p).__name__ != "TyperOption":
                continue
            desc = p.type_descriptor
            if getattr(desc.parameter_info, "metavar", None) == "DURATION":
                out.append((name, p.name, max(p.opts, key=len), "duration"))
            elif desc.annotation in (int, float):
                out.append((name, p.name, max(p.opts, key=len), desc.annotation.__name__))
    return out


OPTIONS = numeric_options()


def test_the_options_were_found():
    names = {(c, p) for c, p, _, _ in OPTIONS}
    assert {("optimize", "max_p95"), ("size", "runs_per_month"), ("run", "runs"), ("measure", "timeout")} <= names
    assert len(OPTIONS) > 25


@pytest.mark.parametrize(("command", "param"), [(c, p) for c, p, _, _ in OPTIONS])
def test_every_numeric_option_has_a_kind(command, param):
    assert param in OPTION_KINDS, f"{command} --{param}: add its quantity kind to OPTION_KINDS"


def _args(command: str, tmp_path) -> list[str]:
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO)
    if command == "calibrate":
        return [command, str(f), "-o", str(tmp_path / "p.yaml")]
    if command == "measure":
        return [command, "--base-url", "http://127.0.0.1:9", "--model", "x", "-o", str(tmp_path / "m.jsonl")]
    if command == "fit":
        return [command, str(tmp_path / "sessions"), "-o", str(tmp_path / "fitted.yaml")]
    if command in ("prices", "profiles", "replay"):
        return [command]
    if command == "validate":
        return [command, str(f)]
    return [command, str(f)]


BAD = {"float": ["nan", "inf", "-inf", "1e400", "5e-324"], "int": ["99999999999999999999"], "duration": ["nan", "inf"]}


@pytest.mark.parametrize(
    ("command", "param", "option", "value"),
    [(c, p, o, v) for c, p, o, t in OPTIONS for v in BAD[t]],
)
def test_non_finite_and_absurd_values_exit_2_naming_the_option(tmp_path, command, param, option, value):
    r = runner.invoke(app, [*_args(command, tmp_path), option, value])
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert "Traceback" not in r.output
    assert option in r.output, r.output
    assert not any((tmp_path / name).exists() for name in ("p.yaml", "m.jsonl", "fitted.yaml"))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("420", 420.0), ("420s", 420.0), ("7min", 420.0), ("7m", 420.0), ("1.5h", 5400.0), ("2d", 172800.0),
     ("250ms", 0.25), (" 3 s ", 3.0), ("1e3", 1000.0)],
)  # fmt: skip
def test_durations_take_units(text, seconds):
    assert parse_duration(text, "--x") == seconds


@pytest.mark.parametrize("text", ["7parsecs", "", "s", "nan", "inf", "-3", "0", "11 years", "400000000", "5e-324"])
def test_bad_durations_say_the_unit_or_the_range(text):
    with pytest.raises(BadInput) as exc:
        parse_duration(text, "--max-p95")
    msg = str(exc.value)
    assert msg.startswith("--max-p95")
    assert "420s, 7min, 1.5h" in msg or "315,576,000 s (10 years)" in msg or "above zero" in msg, msg


def test_optimize_max_p95_accepts_minutes(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO.replace("m: {price", "m: {speeds: {fast: {output_tps_x: 2, price_x: 2}}, price"))
    r = runner.invoke(app, ["optimize", str(f), "--max-p95", "1min", "--json", "--runs", "20"])
    assert r.exit_code == 0, r.output
    import json

    assert json.loads(r.stdout)["limit"] == 60.0


def test_optimize_steps_given_twice_count_once(tmp_path):
    import json

    f = tmp_path / "s.yaml"
    f.write_text(
        SCENARIO.replace("m: {price", "m: {speeds: {fast: {output_tps_x: 2, price_x: 2}}, price")
        + "    - call: {name: act, model: m, output: 300}\n"
    )
    docs = []
    for steps in ("plan", "plan,plan,plan", " plan , plan"):
        r = runner.invoke(app, ["optimize", str(f), "--max-p95", "1h", "--steps", steps, "--json", "--runs", "20"])
        assert r.exit_code == 0, r.output
        docs.append(json.loads(r.stdout))
    assert docs[0]["evaluated"] == 2  # one decision, two options (standard, fast)
    assert all(d["evaluated"] == docs[0]["evaluated"] and d["choices"] == docs[0]["choices"] for d in docs)
