"""No command writes over what it read: an output that is (or resolves to, through links) one of the command's
inputs, or a result folder that holds one, is refused with exit 2, and the input is left as it was.

Inputs are every file a command read: the scenario, each file it ``extends:``, its profiles and empirical
CSV files; a replay config and the profiles it names; session files; measurement files; provider
listings. They are compared with the output by identity (device and inode), so a symbolic link, a hard
link and a ``..`` path are caught as well as the same name.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SCENARIO = """\
name: s
runs: 5
models:
  m: {price: {input_mtok: 1, output_mtok: 5}, ttft: 0.5, output_tps: 50}
agent:
  steps:
    - call: {name: a, model: m, output: 100, consumer: {reader: {tokens_per_s: 5}}}
"""


def invoke(*args) -> tuple[int, str]:
    r = runner.invoke(app, [str(a) for a in args])
    return r.exit_code, r.stdout + r.stderr


def _digests(*paths: Path) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def _refused(args, inputs, *fragments) -> None:
    before = _digests(*inputs)
    code, out = invoke(*args)
    assert code == 2, out
    assert "this command reads" in out, out
    for f in fragments:
        assert f in out, out
    assert _digests(*inputs) == before  # no input changed


@pytest.fixture
def scenario(tmp_path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    return path


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "dotdot"])
@pytest.mark.parametrize("command", ["report", "stream"])
def test_a_page_over_its_own_scenario_is_refused(tmp_path, scenario, command, how):
    target = {
        "same": scenario,
        "symlink": tmp_path / "link.html",
        "hardlink": tmp_path / "hard.html",
        "dotdot": tmp_path / "sub" / ".." / "s.yaml",
    }[how]
    if how == "symlink":
        target.symlink_to(scenario)
    elif how == "hardlink":
        os.link(scenario, target)
    elif how == "dotdot":
        (tmp_path / "sub").mkdir()
    extra = ("--runs", "5", "--no-sweep") if command == "report" else ()
    _refused((command, scenario, "-o", target, *extra), [scenario], str(target))


def test_a_base_a_profile_and_an_empirical_file_are_inputs(tmp_path, scenario):
    base = tmp_path / "base.yaml"
    shutil.move(scenario, base)
    child = tmp_path / "child.yaml"
    child.write_text("extends: base.yaml\n")
    _refused(("report", child, "-o", base, "--no-sweep"), [base, child])
    prof = tmp_path / "prof.yaml"
    shutil.copy(ROOT / "scenarios" / "profiles" / "example-calibrated.yaml", prof)
    child.write_text("extends: base.yaml\nmodels:\n  m: {profile: prof.yaml}\n")
    _refused(("report", child, "-o", prof, "--no-sweep"), [base, child, prof])
    csv = tmp_path / "samples.csv"
    csv.write_text("n\n10\n20\n")
    child.write_text("extends: base.yaml\nmodels:\n  m: {ttft: {empirical: {file: samples.csv, column: n}}}\n")
    _refused(("stream", child, "-o", csv), [base, child, csv])


def test_a_result_folder_that_holds_an_input_is_refused(tmp_path, scenario):
    out = tmp_path / "results"
    code, text = invoke("run", scenario, "--out", out)
    assert code == 0, text
    inside = out / "mine.yaml"  # (an earlier result folder: agentsim would replace it whole)
    shutil.copy(scenario, inside)
    _refused(("run", inside, "--out", out), [inside], "holds", "replacing the folder would delete it")
    _refused(("sweep", inside, "--out", out, "--set", "runs=5,6"), [inside], "holds")
    child = tmp_path / "child.yaml"
    child.write_text(f"extends: {inside}\n")  # through a file it extends
    _refused(("run", child, "--out", out), [inside, child], "holds")
    link = tmp_path / "alias"
    link.symlink_to(out)  # through a link to the folder
    _refused(("run", inside, "--out", link), [inside], "holds")
    assert sorted(p.name for p in out.iterdir())[:2] == [".agentsim-result", "calls.parquet"]


def test_replay_and_fit_never_write_over_a_session_or_config(tmp_path):
    sessions = tmp_path / "sessions"
    shutil.copytree(FIXTURES / "sessions", sessions)
    conversation = sessions / "otel" / "conversation.json"
    files = [p for p in sessions.rglob("*") if p.is_file()]
    result = tmp_path / "replayed"
    code, text = invoke("replay", sessions, "--out", result)
    assert code == 0, text
    shutil.copy(conversation, result / "conversation.json")  # a session kept in the result folder
    _refused(("replay", result / "conversation.json", "--out", result), [result / "conversation.json"], "holds")
    # fit -o t.yaml writes t.fit.json beside it: a session file of that name is an input
    named = tmp_path / "t.fit.json"
    shutil.copy(conversation, named)
    _refused(("fit", named, "-o", tmp_path / "t.yaml"), [named], "t.fit.json")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("split: proportional\n")
    _refused(("fit", sessions, "--config", cfg, "-o", cfg), [cfg, *files])
    shutil.copy(cfg, result / "cfg.yaml")  # a config kept in the result folder
    _refused(("replay", sessions, "--config", result / "cfg.yaml", "--out", result), [result / "cfg.yaml", *files])


def test_calibrate_and_profiles_import_never_write_over_their_files(tmp_path):
    m = tmp_path / "m.jsonl"
    shutil.copy(FIXTURES / "measurements" / "agentsim_measure.jsonl", m)
    _refused(("calibrate", m, "-o", m), [m])
    _refused(("calibrate", m, "-o", tmp_path / "p.yaml", "--plot", m), [m], "--plot")
    code, text = invoke("calibrate", m, "-o", tmp_path / "p.yaml", "--plot", tmp_path / "p.yaml")
    assert code == 2 and "the profile's file too" in text, text
    out = tmp_path / "profiles"
    listed = FIXTURES / "providers" / "openrouter-gpt-4-2026-05-06T14-00Z.json"
    code, text = invoke("profiles", "import", "openrouter", listed, "--out", out)
    assert code == 0, text
    listing = out / "openrouter-gpt-4-azure.yaml"  # a listing saved under the name of a profile it makes
    shutil.copy(FIXTURES / "providers" / "openrouter-gpt-4-2026-05-06T14-00Z.json", listing)
    _refused(("profiles", "import", "openrouter", listing, "--out", out, "--taken-at", "mtime"), [listing])


def test_an_existing_measurement_file_is_replaced_only_at_the_end(tmp_path):
    """``measure -o`` over an earlier file: the earlier file stays until the run ends (here: every request fails
    at once, a refused connection), then the new one takes its place whole."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "m.jsonl"
    out.write_text("the earlier measurement\n")
    code, text = invoke("measure", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m", "--requests", "2",
                        "-o", out)  # fmt: skip
    assert code == 0, text
    lines = out.read_text().splitlines()
    assert '"kind": "run"' in lines[0] and len(lines) == 3
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
