"""Every report says how to make it again, and that command does, byte for byte.

For every bundled scenario a report is made through the command line (with a few volume and sweep options
on some, so that the reproduce line must carry them); its last line's command is then run as written, in a
fresh empty folder, and must write the same page. Small ``--runs`` keep it quick; a workload's runs are its
arrivals, so team-of-agents and slow-afternoon take their full simulated day either way.
"""

from __future__ import annotations

import html
import re
import shlex
import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from agentsim.cli.main import app
from conftest import SCENARIOS

BUNDLED = sorted([*SCENARIOS.glob("*.yaml"), *(SCENARIOS / "claims").glob("*.yaml")])
OPTIONS = {  # options that change the page, and must be in its reproduce line
    "coding-agent.yaml": ["--seats", "20", "--runs-per-seat-per-day", "10", "--working-days", "20"],
    "chat-turn.yaml": ["--runs-per-month", "30000"],
    "team-of-agents.yaml": ["--seats", "40", "--runs-per-seat-per-day", "12"],
}


def reproduce_line(page: str) -> str:
    m = re.search(r'<code id="reproduce">(.*?)</code>', page)
    assert m, "the page has no reproduce line"
    return html.unescape(m.group(1))


@pytest.mark.slow
@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_the_reproduce_line_makes_the_same_page(path, tmp_path):
    first = tmp_path / "first" / "report.html"
    extra = OPTIONS.get(path.name, [])
    r = CliRunner().invoke(app, ["report", str(path), "--runs", "20", "--seed", "7", "-o", str(first), "-q", *extra])
    assert r.exit_code == 0, r.output
    page = first.read_text(encoding="utf-8")
    line = reproduce_line(page)
    words = shlex.split(line)
    assert words[:3] == ["agentsim", "report", str(path)]
    assert "--seed" in words and words[words.index("--seed") + 1] == "7"
    for i in range(0, len(extra), 2):  # every option given is there with its value
        assert extra[i] in words and words[words.index(extra[i]) + 1] == extra[i + 1], (extra[i], line)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "agentsim", *words[1:], "-q"], cwd=fresh, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr
    assert (fresh / "report.html").read_bytes() == first.read_bytes()


def test_options_that_change_nothing_are_left_out_and_no_sweep_is_kept(tmp_path):
    # --workers does not change a page; --no-sweep does when the scenario has sweeps
    doc = {"extends": str(SCENARIOS / "chat-turn.yaml"),
           "sweeps": [{"set": "models.flash.output_tps", "values": [100, 200]}]}  # fmt: skip
    src = tmp_path / "swept.yaml"
    src.write_text(yaml.safe_dump(doc), encoding="utf-8")
    out = tmp_path / "r.html"
    r = CliRunner().invoke(app, ["report", str(src), "--runs", "10", "--workers", "2", "--no-sweep", "-o", str(out)])
    assert r.exit_code == 0, r.output
    line = reproduce_line(out.read_text(encoding="utf-8"))
    assert line == f"agentsim report {shlex.quote(str(src))} --runs 10 --seed 3 --no-sweep"
    assert "<h2>Sweep</h2>" not in out.read_text(encoding="utf-8")


def test_a_missing_partner_flag_is_named(tmp_path):
    for flag, missing in (("--seats", "--runs-per-seat-per-day"), ("--runs-per-seat-per-day", "--seats")):
        r = CliRunner().invoke(
            app, ["report", str(SCENARIOS / "chat-turn.yaml"), flag, "5", "-o", str(tmp_path / "r.html")]
        )
        assert r.exit_code == 2 and f"{flag} needs {missing}" in r.stderr, r.stderr
        assert not (tmp_path / "r.html").exists()  # nothing written
