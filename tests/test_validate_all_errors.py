"""`validate` reports every independent problem of a file in one pass: schema problems (missing speeds,
unknown keys) together with catalog and tier problems; `extends:` of a missing file names the referring
file and line."""

from __future__ import annotations

from typer.testing import CliRunner

from agentsim.cli.main import app

MULTI = """name: multi
models:
  opus:
    price: {catalog: anthropic/claude-opsu-4-8}
    ttft: 2
    output_tps: 60
  haiku:
    price: {catalog: anthropic/claude-haiku-4-5}
    speeds:
      fast: {output_tps_x: 2, price: {catalog: anthropic/claude-haiku-4-5, context: {speed: fast}}}
agent:
  steps:
    - call: {model: opus, input: 100, output: 10, colour: red}
"""


def _validate(path):
    return CliRunner().invoke(app, ["validate", str(path)], env={"COLUMNS": "200"})


def test_every_independent_problem_in_one_pass(tmp_path):
    p = tmp_path / "multi.yaml"
    p.write_text(MULTI, encoding="utf-8")
    r = _validate(p)
    assert r.exit_code == 2
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    expected = [
        (4, "models.opus.price.catalog", "not in the genai-prices catalog"),  # the catalog typo
        (7, "models.haiku.ttft", "missing required key"),  # missing speeds
        (7, "models.haiku.output_tps", "missing required key"),
        (10, "models.haiku.speeds.fast.price.context.speed", "no price for speed=fast"),  # unavailable tier
        (13, "agent.steps[0].call.colour", "unknown key"),
    ]
    assert len(errors) == len(expected), r.stderr
    for line, path, words in expected:
        assert any(e.startswith(f"error: {p}:{line}: {path}: ") and words in e for e in errors), (path, r.stderr)


def test_catalog_problem_beside_a_reference_problem(tmp_path):
    p = tmp_path / "refs.yaml"
    p.write_text(
        MULTI.replace("colour: red", "")
        .replace("model: opus", "model: opsu")
        .replace("  haiku:\n", "  haiku:\n    ttft: 1\n    output_tps: 90\n"),
        encoding="utf-8",
    )
    r = _validate(p)
    assert r.exit_code == 2
    assert "opsu" in r.stderr and "claude-opsu-4-8" in r.stderr and "speed=fast" in r.stderr


def test_extends_missing_file_names_the_referring_file_and_line(tmp_path):
    p = tmp_path / "child.yaml"
    p.write_text("name: child\nextends: missing.yaml\n", encoding="utf-8")
    r = _validate(p)
    assert r.exit_code == 2
    assert f"error: {p}:2: extends: extends names 'missing.yaml'" in r.stderr
