"""No error repeats a file's contents; files of the kernel's pseudo file systems and special files are refused.

A file named where agentsim expects one of its own (``extends: /etc/shadow``, ``replay --config``, a
``profile:``, an empirical CSV, a session, a measurement file, a provider listing) may be anything. Each
command and reader that takes a path is given a file whose only line looks like a password-file entry, and
files whose values (not keys) are secret: the command exits 2, its message names the file that holds the
problem and the line, and neither stdout nor stderr holds the secret. ``/proc`` files (a process's
environment: a "regular file" of size 0 there), FIFOs and devices are refused with exit 2, by whatever path
reaches them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.model.safe_text import key_text, scrub, value_text

runner = CliRunner()
SECRET = "SECRETHASH"
SHADOW = f"root:$6${SECRET}:19000:0:99999:7:::\n"  # a line of /etc/shadow (the key holds the hash)

SCENARIO = """\
name: s
runs: 5
models:
  m: {price: {input_mtok: 1, output_mtok: 5}, ttft: 0.5, output_tps: 50}
agent:
  steps:
    - call: {name: a, model: m, output: 10}
"""


def invoke(*args) -> tuple[int, str]:
    r = runner.invoke(app, [str(a) for a in args])
    return r.exit_code, r.stdout + r.stderr


@pytest.fixture
def shadow(tmp_path) -> Path:
    path = tmp_path / "shadow"
    path.write_text(SHADOW)
    return path


def _scenario(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def _assert_no_secret(code: int, out: str, *names: str) -> None:
    assert code == 2, out
    assert SECRET not in out and "$6$" not in out, out
    for name in names:
        assert name in out, out


@pytest.mark.parametrize(
    "command",
    [
        ("validate",),
        ("run",),
        ("report", "-o", "r.html"),
        ("sweep",),
        ("size",),
        ("optimize", "--max-p95", "60"),
        ("stream",),
    ],
    ids=lambda c: c[0],
)
def test_a_secret_file_given_as_a_scenario_is_not_repeated(tmp_path, shadow, command):
    code, out = invoke(command[0], shadow, *(str(tmp_path / a) if a.endswith(".html") else a for a in command[1:]))
    _assert_no_secret(code, out, f"{shadow}:1")


def test_extends_names_the_file_that_holds_the_problem_and_never_its_line(tmp_path, shadow):
    child = _scenario(tmp_path, f"extends: {shadow}\n" + SCENARIO)
    code, out = invoke("validate", child)
    _assert_no_secret(code, out, f"error: {shadow}:1: <key of 36 characters>: unknown key")
    assert f"{child}:" not in out  # the problem is the base's, not the child's


def test_a_base_problem_is_placed_in_the_base_and_a_child_problem_in_the_child(tmp_path):
    base = _scenario(tmp_path, SCENARIO + "workload: {concurrent: 2, think: 3}\n", "base.yaml")
    child = _scenario(tmp_path, "extends: base.yaml\n", "child.yaml")
    code, out = invoke("validate", child)
    assert code == 2 and f"{base}:8: workload.think: unknown key 'think'" in out, out
    child.write_text("extends: base.yaml\nrunz: 3\n")
    code, out = invoke("validate", child)
    assert code == 2 and f"{child}:2: runz: unknown key 'runz'" in out, out
    # a child that replaces the base's value holds its problems: the list of steps is the child's
    child.write_text("extends: base.yaml\nagent:\n  steps:\n    - call: {name: a, model: m, output: -1}\n")
    code, out = invoke("validate", child)
    assert code == 2 and f"{child}:4: agent.steps[0].call.output" in out, out


def test_a_profile_and_replay_config_and_speed_profile_pointing_at_a_secret(tmp_path, shadow):
    sc = _scenario(tmp_path, SCENARIO.replace("ttft: 0.5", f"profile: {shadow}, ttft: 0.5"))
    _assert_no_secret(*invoke("validate", sc), str(shadow))
    fixtures = Path(__file__).resolve().parent / "fixtures" / "sessions"
    _assert_no_secret(*invoke("replay", fixtures, "--config", shadow), f"{shadow}:1")
    _assert_no_secret(*invoke("replay", fixtures, "--speed-profile", f"*={shadow}"), str(shadow))
    _assert_no_secret(*invoke("fit", fixtures, "--config", shadow, "-o", tmp_path / "f.yaml"), f"{shadow}:1")


def test_an_empirical_csv_that_is_no_csv(tmp_path, shadow):
    sc = _scenario(tmp_path, SCENARIO.replace("output: 10", f"output: {{empirical: {{file: {shadow}, column: n}}}}"))
    _assert_no_secret(*invoke("validate", sc), "has no column 'n'")


@pytest.mark.parametrize("suffix", ["", ".json", ".jsonl", ".csv"])
def test_recorded_files_that_are_secrets(tmp_path, suffix):
    path = tmp_path / f"secret{suffix}"
    path.write_text(SHADOW)
    _assert_no_secret(*invoke("replay", path), str(path))
    _assert_no_secret(*invoke("fit", path, "-o", tmp_path / "f.yaml"), str(path))
    for fmt in ("auto", "llmperf", "vllm", "guidellm", "aiperf", "otel", "csv", "measure"):
        _assert_no_secret(*invoke("calibrate", path, "--format", fmt, "-o", tmp_path / "p.yaml"), str(path))
    for source in ("openrouter", "artificial-analysis"):
        _assert_no_secret(*invoke("profiles", "import", source, path, "--taken-at", "mtime", "--out", tmp_path))


@pytest.mark.parametrize(
    "text",
    [
        f"name: s\nruns: {SECRET}x\n",  # a text where a number belongs
        f"name: s\nseed: '{SECRET}'\n",
        f"name: s\nprices_as_of: {SECRET}-01\n",
        f"name: s\nmodels:\n  m: {{ttft: {SECRET}}}\n",  # a text where a distribution belongs
        f"name: s\nworkload: {{start: '{SECRET}'}}\n",  # a text where a clock time belongs
        f"name: s\nagent: {{steps: [{{{SECRET}$: 1}}]}}\n",  # an unknown step kind (not a plain name)
        f"name: s\nagent: {{steps: [{SECRET}]}}\n",  # a step that is text
        f"name: s\nx: *{SECRET}$\n",  # a YAML alias that is not defined
        f"name: s\nx: !<{SECRET}$> 3\n",  # a YAML tag that cannot be built
        f"name: s\nx: '{SECRET}\n",  # an unclosed quote
        f"name: s\nx: {SECRET}\u0007\n",  # a character YAML refuses
    ],
)
def test_values_are_described_never_repeated(tmp_path, text):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    code, out = invoke("validate", path)
    _assert_no_secret(code, out, str(path))


def test_the_proc_files_are_refused_whatever_path_reaches_them(tmp_path):
    env = {**os.environ, "AGENTSIM_TEST_SECRET": SECRET}
    link = tmp_path / "env.yaml"
    link.symlink_to("/proc/self/environ")
    child = _scenario(tmp_path, "extends: /proc/self/environ\n", "child.yaml")
    prof = _scenario(tmp_path, SCENARIO.replace("ttft: 0.5", "profile: /proc/self/environ, ttft: 0.5"), "p.yaml")
    for path in ("/proc/self/environ", link, child, prof):
        r = subprocess.run(
            [sys.executable, "-m", "agentsim", "validate", str(path)], capture_output=True, text=True, env=env
        )
        assert r.returncode == 2, r.stderr
        assert SECRET not in r.stdout + r.stderr and "a file of the system's /proc" in r.stderr, r.stderr


def test_fifos_and_devices_are_refused(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    child = _scenario(tmp_path, f"extends: {fifo}\n", "child.yaml")
    for path in (fifo, child, "/dev/zero"):
        code, out = invoke("validate", path)
        assert code == 2 and "not a regular file" in out, out


# --------------------------------------------------------------------------- the helpers' rules


def test_key_value_and_message_rules():
    assert key_text("opus") == "'opus'" and key_text("claude-opus-4.6") == "'claude-opus-4.6'"
    assert key_text("root:$6$x") == "<9 characters, not shown>"
    assert key_text("x" * 41) == "<41 characters, not shown>"
    assert key_text(3) == "3"
    assert value_text("hunter2") == "text" and value_text("5") == "a number in quotes (text)"
    assert value_text(2.5) == "2.5" and value_text(True) == "true" and value_text([1]) == "a list"
    assert scrub("found undefined alias 'a$b:c'") == "found undefined alias <5 characters, not shown>"
    assert scrub("found character '\\t' that cannot start any token") == (
        "found character '\\t' that cannot start any token"
    )
    assert scrub("expected 'opus'") == "expected 'opus'"
