"""``agentsim calibrate`` on degenerate and hostile measurement files: a mock server's constant speeds,
duplicated columns, absurd numbers, huge fields, binary files. Exit 0 or 2 (file and line), never 1."""

from __future__ import annotations

import csv
import os
import warnings

import pytest
import yaml
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.model.profiles import Profile
from conftest import FIXTURES

runner = CliRunner()
MEAS = FIXTURES / "measurements"
HEADER = ["start_s", "model", "ttft_ms", "latency_ms", "input_tokens", "cached_input_tokens", "output_tokens", "error"]


def mock_csv(path, n=40, base_s=0.2, prefill_tps=8000.0, tps=80.0):
    """What a mock server produces: TTFT = base + input / prefill rate exactly, one fixed output speed."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        for i in range(n):
            inp, out = 1000 + 500 * i, 100 + 7 * i
            ttft_ms = (base_s + (inp / prefill_tps if prefill_tps else 0.0)) * 1000
            w.writerow([1772445601 + i, "mock", ttft_ms, ttft_ms + out * 1000 / tps, inp, 0, out, ""])
    return path


def calibrate(*args):
    r = runner.invoke(app, ["calibrate", *map(str, args)])
    assert r.exit_code in (0, 2), r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return r


def test_a_constant_output_speed_gives_a_constant_in_the_profile(tmp_path):
    out = tmp_path / "p.yaml"
    r = calibrate(mock_csv(tmp_path / "m.csv"), "-o", out, "--plot", tmp_path / "p.png")
    assert r.exit_code == 0, r.output
    doc = yaml.safe_load(out.read_text())
    assert doc["output_tps"] == pytest.approx(80.0)  # a plain number: no spread to fit
    assert doc["prefill_tps"] == pytest.approx(8000.0, rel=1e-6)
    assert doc["ttft"] == pytest.approx(0.2)
    assert doc["fit"]["output_tps"]["ks"] == 0.0
    Profile.model_validate(doc)
    assert "constant 80" in r.output


def test_a_constant_ttft_without_prefill_gives_a_constant(tmp_path):
    out = tmp_path / "p.yaml"
    r = calibrate(mock_csv(tmp_path / "m.csv", base_s=0.5, prefill_tps=0.0, tps=100.0), "-o", out)
    assert r.exit_code == 0, r.output
    doc = yaml.safe_load(out.read_text())
    assert doc["ttft"] == pytest.approx(0.5) and doc["output_tps"] == pytest.approx(100.0)
    assert "prefill_tps" not in doc
    assert doc["fit"]["ttft"]["ks"] == 0.0


def _csv_with(tmp_path, name, edit):
    lines = (MEAS / "measurements.csv").read_text().splitlines()
    lines = edit(lines)
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize(
    ("name", "edit", "line", "words"),
    [
        ("dup.csv", lambda ls: [ls[0] + ",ttft_ms"] + [x + ",5" for x in ls[1:]], 1, "appears twice"),
        ("huge.csv", lambda ls: [ls[0], ls[1].replace(",107,", ",1e308,"), *ls[2:]], 2, "range of a token count"),
        ("inf.csv", lambda ls: [ls[0], *ls[1:4], ls[4].replace("1480.3064122598776", "inf"), *ls[5:]], 5, "inf"),
        ("field.csv", lambda ls: [ls[0], ls[1], ls[2].replace("example-llm", "x" * 200_000), *ls[3:]], 3, "128 KB"),
    ],
)
def test_broken_csv_is_exit_2_with_file_and_line(tmp_path, name, edit, line, words):
    f = _csv_with(tmp_path, name, edit)
    r = calibrate(f, "-o", tmp_path / "p.yaml")
    assert r.exit_code == 2, r.output
    assert f"{f}:{line}:" in r.output and words in r.output
    assert not (tmp_path / "p.yaml").exists()


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "empty"),
        (os.urandom(4000).replace(b"\n", b"x") + b"\xff", "not UTF-8"),
        (b"ttft_s,output_tokens,latency_s\n0.1,\x00,2\n", "NUL"),
        (b"\x00" * 100, "cannot tell"),
        (b"null", "cannot tell"),
        (b"[1, 2, 3]", "cannot tell"),
        (b'{"agentsim_measure": 1, "kind": "request", "ttft_s": 1e999}\n', "inf"),
    ],
)
def test_garbage_is_exit_2_naming_the_file(tmp_path, content, words):
    f = tmp_path / "m.csv"
    f.write_bytes(content)
    r = calibrate(f, "-o", tmp_path / "p.yaml", "--format", "csv" if b"ttft_s," in content else "auto")
    assert r.exit_code == 2, r.output
    assert str(f) in r.output and words in r.output


def test_the_profile_names_its_inputs_relative_to_itself(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    src = mock_csv(data / "m.csv")
    prof_dir = tmp_path / "profiles"
    prof_dir.mkdir()
    r = calibrate(src.resolve(), "-o", prof_dir / "p.yaml")  # an absolute path typed
    assert r.exit_code == 0, r.output
    text = (prof_dir / "p.yaml").read_text()
    assert str(tmp_path) not in text
    doc = yaml.safe_load(text)
    assert doc["fit"]["files"] == ["../data/m.csv"]
    assert "../data/m.csv" in doc["source"] and doc["fit"]["date_source"] == "start_s in ../data/m.csv"
    monkeypatch.chdir(data)  # a relative path typed from elsewhere: still relative to the profile
    r = calibrate("m.csv", "-o", prof_dir / "q.yaml")
    assert yaml.safe_load((prof_dir / "q.yaml").read_text())["fit"]["files"] == ["../data/m.csv"]


def test_mostly_equal_ttfts_keep_their_spread(tmp_path):
    """Over half the TTFTs equal (a robust scale of 0): the spread of the rest is not thrown away."""
    f = tmp_path / "m.csv"
    with f.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        for i in range(30):
            ttft_ms = 500.0 if i < 20 else 700.0 + 30 * i
            w.writerow([1772445601 + i, "m", ttft_ms, ttft_ms + 2000 + 13 * i, 1000, 0, 150, ""])
    out = tmp_path / "p.yaml"
    with warnings.catch_warnings():  # a division by a zero scale would be a RuntimeWarning, now an error
        warnings.simplefilter("error", RuntimeWarning)
        r = calibrate(f, "-o", out)
    assert r.exit_code == 0, r.output
    ttft = yaml.safe_load(out.read_text())["ttft"]
    assert ttft["lognormal"]["p90"] > ttft["lognormal"]["median"] * 1.2


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("deep.jsonl", '{"agentsim_measure": 1, "kind": "run"}\n' + "[" * 100_000 + "]" * 100_000, "nested"),
        ("otel.json", '{"resourceSpans": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ],
)
def test_json_nested_too_deep_is_exit_2(tmp_path, name, text, words):
    """Found by the fuzzer: a RecursionError inside the JSON decoder was exit 1."""
    f = tmp_path / name
    f.write_text(text)
    r = calibrate(f, "-o", tmp_path / "p.yaml")
    assert r.exit_code == 2, r.output
    assert str(f) in r.output and words in r.output
    r = runner.invoke(app, ["replay", str(f), "--json"])
    assert r.exit_code in (0, 2) and "please report" not in r.output, r.output
