"""Output paths (issue 24): checked before any simulation, written beside the target (a mount point or a
volume root works), to stdout for ``-``, and never outside the working folder by default."""

from __future__ import annotations

import errno
import json
import os
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.viz import outdir
from agentsim.viz.outdir import OutputError, check_file, check_folder, slug, write_file, write_folder

runner = CliRunner()

SCENARIO = """\
name: {name}
runs: 20
models:
  m: {{price: {{input_mtok: 1, output_mtok: 2}}, ttft: 1, output_tps: 50}}
agent:
  steps:
    - call: {{name: plan, model: m, output: 100}}
sweeps:
  - set: agent.steps[0].call.output
    values: [100, 200]
"""


def scenario(tmp_path: Path, name: str = "t") -> Path:
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO.format(name=json.dumps(name)))
    return f


def test_report_into_a_tmpfs_mount_root(tmp_path):
    root = Path("/dev/shm")
    if not root.is_dir() or not os.path.ismount(root) or not os.access(root, os.W_OK):
        pytest.skip("no writable tmpfs mounted at /dev/shm on this machine")
    target = root / f"agentsim-test-{uuid.uuid4().hex}.html"
    try:
        r = runner.invoke(app, ["report", str(scenario(tmp_path)), "-o", str(target), "--runs", "20", "-q"])
        assert r.exit_code == 0, r.output
        assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        assert not [p for p in root.iterdir() if p.name.startswith(f".{target.name[:32]}.agentsim-")]
    finally:
        target.unlink(missing_ok=True)


@pytest.mark.parametrize("name", ["-", "/dev/stdout"])
def test_report_to_stdout(tmp_path, name):
    r = runner.invoke(app, ["report", str(scenario(tmp_path)), "-o", name, "--runs", "20", "-q", "--no-sweep"])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("<!DOCTYPE html>") and r.stdout.rstrip().endswith("</html>")
    assert "wrote standard output" in r.stderr
    assert not (Path.cwd() / "-").exists()


def test_calibrate_profile_to_stdout_keeps_the_table_off_it(tmp_path):
    fixture = Path(__file__).parent / "fixtures" / "measurements" / "measurements.csv"
    r = runner.invoke(app, ["calibrate", str(fixture), "-o", "-"])
    assert r.exit_code == 0, r.output
    import yaml

    doc = yaml.safe_load(r.stdout)  # stdout is the profile alone
    assert doc["kind"] == "calibrated" and "ttft" in doc


def test_a_special_file_is_refused_before_the_simulation(tmp_path):
    r = runner.invoke(app, ["report", str(scenario(tmp_path)), "-o", "/dev/null"])
    assert r.exit_code == 2 and "special file" in r.output
    assert "/dev/null" in r.output


def test_a_folder_cannot_go_to_stdout():
    with pytest.raises(OutputError, match="standard output"):
        check_folder("-")


def test_a_long_folder_name_whose_temporary_name_would_not_fit_is_written(tmp_path):
    out = tmp_path / ("r" * 250)  # legal; ".<name>.agentsim-tmp-XXXXXXXX" beside it would not be
    r = runner.invoke(app, ["run", str(scenario(tmp_path)), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert (out / "summary.json").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_name_too_long_is_refused_before_the_simulation(tmp_path):
    f = scenario(tmp_path)
    for args in (["run", str(f), "--out", str(tmp_path / ("r" * 300))], ["report", str(f), "-o", "x" * 300 + ".html"]):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, r.output
        assert "bytes long" in r.output and "at most 255" in r.output
        assert "wall time" not in r.output  # nothing was simulated


@pytest.mark.parametrize(
    ("name", "expected"),
    [("../../escaped", "escaped"), ("/etc/passwd", "etc-passwd"), ("a\x00b", "a-b"), ("..", "scenario"),
     ("x/../../y", "x-y"), (".hidden", "hidden"), ("coding-agent", "coding-agent"), ("日本 語", "日本-語")],
)  # fmt: skip
def test_slug(name, expected):
    assert slug(name) == expected
    assert "/" not in slug(name) and ".." not in slug(name) and not slug(name).startswith(".")


def test_sweep_default_folder_never_leaves_the_working_folder(tmp_path, monkeypatch):
    work = tmp_path / "deep" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    f = scenario(tmp_path, name="../../escaped")
    r = runner.invoke(app, ["sweep", str(f), "--runs", "20", "-q"])
    assert r.exit_code == 0, r.output
    assert (work / "results" / "escaped-sweep" / "sweep.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep", "s.yaml"]
    assert sorted(p.name for p in (tmp_path / "deep").iterdir()) == ["work"]


def test_a_sweep_default_folder_is_checked_before_the_sweep(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "t-sweep").write_text("a file, not a folder")
    r = runner.invoke(app, ["sweep", str(scenario(tmp_path)), "--runs", "20", "-q"])
    assert r.exit_code == 2 and "is a file, not a folder" in r.output


def test_a_rename_that_fails_across_devices_falls_back_to_a_direct_write(tmp_path, monkeypatch, caplog):
    # os.replace refusing (EXDEV: the target is on another device, e.g. a bind-mounted file) is the
    # operating system's answer, injected here; the file must still be written whole, with a note
    target = tmp_path / "r.html"
    target.write_text("old")

    def cross_device(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(outdir.os, "replace", cross_device)
    with caplog.at_level("WARNING", logger="agentsim.output"):
        write_file(target, lambda p: p.write_text("new content", encoding="utf-8"))
    assert target.read_text() == "new content"
    assert "written directly" in caplog.text and "cross-device" in caplog.text
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temporary file left


def test_a_result_folder_that_is_a_mount_point_is_filled_in_place(tmp_path, monkeypatch, caplog):
    out = tmp_path / "volume"
    out.mkdir()  # an empty volume root (docker run -v ./results:/out ... --out /out)
    real = os.path.ismount
    monkeypatch.setattr(outdir.os.path, "ismount", lambda p: Path(p) == out or real(p))
    with caplog.at_level("WARNING", logger="agentsim.output"):
        write_folder(out, {"a.txt": lambda p: p.write_text("1"), "b.txt": lambda p: p.write_text("2")})
        assert sorted(p.name for p in out.iterdir()) == [".agentsim-result", "a.txt", "b.txt"]
        write_folder(out, {"c.txt": lambda p: p.write_text("3")})  # an earlier result is replaced whole
    assert sorted(p.name for p in out.iterdir()) == [".agentsim-result", "c.txt"]
    assert "mount point" in caplog.text


def test_a_symlink_loop_as_output_is_refused(tmp_path):
    loop = tmp_path / "loop.html"
    loop.symlink_to(loop)
    with pytest.raises(OutputError, match="cannot use this path"):
        check_file(loop)
