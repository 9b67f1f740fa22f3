"""``agentsim replay`` end to end: output, files, exit codes, and the privacy guarantee."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app

FIX = Path(__file__).resolve().parent / "fixtures" / "sessions"
runner = CliRunner()


def run(*args, env=None):
    return runner.invoke(app, ["replay", *map(str, args)], env=env)


def test_prints_a_table_per_variant_and_notes():
    r = run(FIX, "--variant", "fast", "--variant", "model=anthropic/claude-sonnet-4-5", "--value-of-time", "100")
    assert r.exit_code == 0, r.output
    for text in (
        "recorded",
        "fast",
        "model=anthropic/claude-sonnet-4-5",
        "waiting on the model",
        "waiting on tools",
        "waiting on the human",
        "USD per hour of waiting saved",
        "pays off at $100/h",
        "8 sessions",
        "22 API calls",
    ):
        assert text in r.output, text
    assert "skipped 1 corrupt lines (first at line 14)" in r.output
    assert "claude-haiku-4-5 has no fast tier" in r.output


def test_json_is_only_json_and_consistent():
    r = runner.invoke(app, ["replay", str(FIX), "--json", "-v", "fast", "-v", "identity"])
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    rec, fast, same = doc["recorded"], doc["variants"]["fast"], doc["variants"]["identity"]
    assert rec["calls"] == 22 and doc["sessions"] == 8
    # 374 + 21 + 5 (Claude Code) + 124.8 + 12.5 (Codex) + 70 + 3 + 2.5 (OTel), by hand from the fixtures
    assert rec["wall_time_s"] == pytest.approx(612.8, abs=1e-6)
    assert same["wall_time_s"] == pytest.approx(rec["wall_time_s"], abs=1e-6) and same["cost_usd"] == rec["cost_usd"]
    vs = fast["vs_recorded"]
    assert vs["delta_time_s"] < 0 < vs["delta_cost_usd"]
    assert vs["usd_per_hour_saved"] == pytest.approx(vs["delta_cost_usd"] / (-vs["delta_time_s"] / 3600))
    t = rec["time_s"]
    assert t["model"] + t["tool"] + t["human"] + t["other"] == pytest.approx(rec["wall_time_s"])
    assert t["human"] == pytest.approx(183 + 82.7 + 40)  # one gap per format, by hand
    assert doc["assumptions"]["default_profile"] == {"ttft_s": 2.0, "output_tps": 60.0, "fast_output_tps_x": 2.5}


def test_filters():
    r = run(FIX, "--json", "--project", "blog", "--since", "2026-11-03", "--until", "20261103")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["sessions"] == 2 and doc["recorded"]["wall_time_s"] == pytest.approx(21 + 5)


def test_out_folder_and_privacy_no_content_in_any_output(tmp_path):
    """Prompts, commands, file contents, reasoning, tool arguments and results placed in the fixtures
    appear in no printed output and no written file."""
    secrets = set()
    for f in FIX.rglob("*.json*"):
        secrets.update(re.findall(r"SECRET-[A-Za-z0-9-]+", f.read_text()))
    assert len(secrets) > 20  # prompts, commands, file contents, reasoning, tool arguments and results
    out = tmp_path / "res"
    r1 = run(FIX, "--out", out, "-v", "fast", "-v", "model=anthropic/claude-sonnet-4-5")
    r2 = runner.invoke(app, ["replay", str(FIX), "--json"])
    assert r1.exit_code == 0 and r2.exit_code == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        [
            ".agentsim-result",
            "replay.json",
            "sessions.parquet",
            "sessions.csv",
            "calls.parquet",
            "calls.csv",
            "spans.parquet",
            "spans.csv",
            "tradeoff.png",
            "breakdown.png",
        ]
    )
    calls = pd.read_parquet(out / "calls.parquet")
    assert len(calls) == 3 * 22 and set(calls.variant) == {"recorded", "fast", "model=anthropic/claude-sonnet-4-5"}
    assert len(pd.read_csv(out / "sessions.csv")) == 3 * 8
    texts = [r1.output, r2.stdout]
    for p in out.iterdir():
        raw = p.read_bytes()
        assert b"SECRET" not in raw, p.name
        if p.suffix == ".parquet":  # compressed on disk: check the values too
            frame = pd.read_parquet(p)
            texts.append(frame.to_csv())
        elif p.suffix != ".png":
            texts.append(raw.decode())
    for text in texts:
        assert "SECRET" not in text
        assert "/home/dev" not in text  # working directories are not copied either (only project names)


def test_bad_input_exits_2(tmp_path):
    r = run(tmp_path / "nope")
    assert r.exit_code == 2 and "no such file or folder" in r.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("{not json\n")
    r = run(empty, "--format", "claude-code")
    assert r.exit_code == 2 and "nothing usable" in r.output and "first at line(s) 1" in r.output
    assert run(FIX, "-v", "fats").exit_code == 2
    r = run(FIX, "-v", "fats")
    assert "did you mean 'fast'" in r.output
    assert run(FIX, "--since", "yesterday").exit_code == 2
    assert run(FIX, "--format", "csv").exit_code == 2
    r = run(FIX, "--project", "no-such-project")
    assert r.exit_code == 2 and "matches" in r.output
    r = run(FIX, "-v", "model=anthropic/claude-no-such-model")
    assert r.exit_code == 2 and "not in the genai-prices catalog" in r.output
    bad = tmp_path / "cfg.yaml"
    bad.write_text("variants:\n  x: {speed: 3}\n")
    r = run(FIX, "--config", bad)
    assert r.exit_code == 2 and f"{bad}:2" in r.output
    bad.write_text("models:\n  claude-opus-4-8:\n    profile: no-such-profile\n")
    r = run(FIX, "--config", bad)
    assert r.exit_code == 2 and f"{bad}:3: models.claude-opus-4-8.profile" in r.output
    r = run(FIX, "--speed-profile", "no-such-profile")
    assert r.exit_code == 2 and "--speed-profile: models.*.profile" in r.output


def test_default_folders(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(FIX / "claude-code", home / ".claude" / "projects")
    r = run("--json", env={"HOME": str(home)})
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["sources"] == {"claude-code": 3}
    r = run(env={"HOME": str(tmp_path / "nobody")})
    assert r.exit_code == 2 and "give session files or folders" in r.output


def test_speed_profile_option(tmp_path):
    prof = tmp_path / "p.yaml"
    prof.write_text("profile: p\nkind: measured\nsource: bench\ndate: 2026-11-01\nttft: 1.0\noutput_tps: 100\n")
    r = runner.invoke(
        app,
        [
            "replay",
            str(FIX / "claude-code/-home-dev-blog/sess-bbb.jsonl"),
            "--json",
            "--speed-profile",
            f"claude-opus-4-8={prof}",
        ],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["assumptions"]["models"]["claude-opus-4-8"]["profile"] == "p"
    # sess-bbb with TTFT 1 s: fast decode (12-1)/2.5 + (8-1)/2.5 = 7.2 s; wall 1 + 4.4 + 1 + 1 + 2.8 = 10.2 s
    assert doc["variants"]["fast"]["wall_time_s"] == pytest.approx(10.2)
