"""Every CSV agentsim writes is safe to open in a spreadsheet; every name it shows displays as what it is.

Names come from scenario files and recorded traces. A variant, model, tool or session named like a formula
(``=cmd|' /C calc'!A0``, ``=HYPERLINK(…)``, ``@SUM(…)``, ``+1``, ``-1+2``) must land in sweep.csv, calls.csv,
spans.csv, sessions.csv and the fit's samples as text (a leading ``'``), while numbers, negative ones
included, stay numbers. A name holding a bidirectional control (``invoice\\u202efdp.exe`` displays as
``invoiceexe.pdf``), a zero-width character or a terminal escape shows those characters written out
(``[U+202E]``) on the HTML report, the stream page, the command line's tables and messages, and in figures.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.model.safe_text import csv_cell, csv_frame, visible

runner = CliRunner()
FORMULAS = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://x","y")', "@SUM(1+1)", "+1+1", "-1+cmd", "\tx", "\rx"]
HIDDEN = ["\u202e", "\u202d", "\u2066", "\u2069", "\u200e", "\u200f", "\u061c", "\u200b", "\u200d", "\ufeff",
          "\u00ad", "\x1b", "\x07", "\u2028", "\u3164", "\U000e0041"]  # fmt: skip
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sessions"


def _formula_like(cell: str) -> bool:
    try:
        float(cell)
        return False  # a plain number, negative or not, is safe
    except ValueError:
        return cell[:1] in ("=", "+", "-", "@", "\t", "\r")


def _csv_cells(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [cell for row in csv.reader(fh) for cell in row]


# --------------------------------------------------------------------------- the rules


@pytest.mark.parametrize("text", FORMULAS)
def test_a_formula_gets_a_quote(text):
    out = csv_cell(text)
    assert not _formula_like(out)
    assert out.startswith("'") if text[0] not in "\t\r" else out == f"[U+{ord(text[0]):04X}]x"  # written out


@pytest.mark.parametrize("value", [-5, -1.5, "-5", "-1.5e3", "+3", "plain", "a=b", 0.0])
def test_numbers_and_plain_text_stay(value):
    assert csv_cell(value) == value


def test_a_frame_keeps_numeric_columns_numeric():
    frame = pd.DataFrame(
        {"name": [*FORMULAS, "ok"], "delta": [-1.0] * 8, "n": range(8), "cat": pd.Categorical(["=x"] * 8)}
    )
    frame = frame.rename(columns={"n": "=SUM(A1)"})
    out = csv_frame(frame)
    assert out["delta"].dtype == frame["delta"].dtype and (out["delta"] == -1.0).all()
    assert list(out.columns) == ["name", "delta", "'=SUM(A1)", "cat"]
    assert not any(_formula_like(c) for c in out["name"]) and set(out["cat"]) == {"'=x"}
    text = out.to_csv(index=False)
    assert ",-1.0," in text  # written as a number: no quote
    assert frame["name"].iloc[0] == FORMULAS[0]  # the caller's frame is untouched


@pytest.mark.parametrize("ch", HIDDEN, ids=lambda c: f"U+{ord(c):04X}")
def test_hidden_characters_are_written_out(ch):
    assert visible(f"a{ch}b") == f"a[U+{ord(ch):04X}]b"


def test_visible_text_stays_as_it_is():
    for text in ("opus", "日本語のモデル", "café", "Ελληνικά", "עברית", "العربية", "emoji 🚀", "a b"):
        assert visible(text) == text
    assert visible("line 1\nline 2\ttab", lines=True) == "line 1\nline 2\ttab"
    assert visible("line 1\nline 2") == "line 1[U+000A]line 2"


# --------------------------------------------------------------------------- end to end

SCENARIO = """\
name: "bidi\\u202etest"
description: "pay the \\u202eTXT.exe invoice"
runs: 30
models:
  m: {price: {input_mtok: 1, output_mtok: 5}, ttft: 0.5, output_tps: 50}
  m2: {price: {input_mtok: 2, output_mtok: 10}, ttft: 0.2, output_tps: 100}
agent:
  steps:
    - call: {name: "an\\u200bswer", model: m, output: 100, consumer: {reader: {tokens_per_s: 5}}}
variants:
  "invoice\\u202efdp.exe": {}
  "=cmd|' /C calc'!A0": {}
  "@SUM(1+1)": {model: {m: m2}}
sweeps:
  - {set: models.m.output_tps, values: [40, 80]}
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "s.yaml"
    path.write_text(SCENARIO, encoding="utf-8")
    return path


def _no_hidden(text: str) -> None:
    assert not any(ch in text for ch in HIDDEN), [hex(ord(c)) for c in HIDDEN if c in text]


def test_the_sweep_csv_holds_no_formula(hostile, tmp_path):
    r = runner.invoke(app, ["sweep", str(hostile), "--out", str(tmp_path / "sw")])
    assert r.exit_code == 0, r.output
    cells = _csv_cells(tmp_path / "sw" / "sweep.csv")
    assert "'=cmd|' /C calc'!A0" in cells and "'@SUM(1+1)" in cells
    assert not any(_formula_like(c) for c in cells)
    assert any(c.startswith("-") for c in cells)  # negative differences stay numbers
    for c in cells:
        _no_hidden(c)


def test_the_run_tables_and_messages_show_the_characters(hostile, tmp_path):
    r = runner.invoke(app, ["run", str(hostile), "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    _no_hidden(r.stdout + r.stderr)
    assert "invoice[U+202E]fdp.exe" in r.stdout and "bidi[U+202E]test" in r.stdout


def test_the_report_and_the_stream_page_show_the_characters(hostile, tmp_path):
    page = tmp_path / "r.html"
    r = runner.invoke(app, ["report", str(hostile), "-o", str(page), "--no-sweep"])
    assert r.exit_code == 0, r.output
    html = page.read_text(encoding="utf-8")
    _no_hidden(html)
    assert "invoice[U+202E]fdp.exe" in html and "pay the [U+202E]TXT.exe invoice" in html
    stream = tmp_path / "s.html"
    r = runner.invoke(app, ["stream", str(hostile), "--call", "an\u200bswer", "-o", str(stream)])
    assert r.exit_code == 0, r.output
    html = stream.read_text(encoding="utf-8")
    data = json.loads(html.split('id="timeline">')[1].split("</script>")[0])
    assert data["variants"][0]["name"] == "invoice[U+202E]fdp.exe"
    _no_hidden(json.dumps(data, ensure_ascii=False))
    _no_hidden(html)


def test_figures_draw_the_characters_written_out():
    from agentsim.viz.plots import breakdown_figure

    runs = pd.DataFrame(
        {"variant": ["invoice\u202efdp.exe"] * 2, "wall_time_s": [1.0, 2.0], "queue_s": 0.0, "ttft_s": 0.5,
         "decode_s": 0.5, "tool_s": 0.0, "wait_s": 0.0}
    )  # fmt: skip
    fig = breakdown_figure(runs, title="t\u200bitle")
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text kept as text in the SVG
        fig.savefig(buf, format="svg")
    svg = buf.getvalue().decode("utf-8")
    _no_hidden(svg)
    assert "invoice[U+202E]fdp.exe" in svg and "t[U+200B]itle" in svg


def test_replay_tables_hold_no_formula_and_show_the_characters(tmp_path):
    src = (FIXTURES / "otel" / "jobs.jsonl").read_text(encoding="utf-8")
    path = tmp_path / "jobs.jsonl"
    path.write_text(src.replace("batch-jobs", "=cmd|' /C calc'!A0"))
    r = runner.invoke(app, ["replay", str(path), "--out", str(tmp_path / "rp")])
    assert r.exit_code == 0, r.output
    for name in ("sessions.csv", "calls.csv", "spans.csv"):
        cells = _csv_cells(tmp_path / "rp" / name)
        assert not any(_formula_like(c) for c in cells), name
    assert "'=cmd|' /C calc'!A0" in _csv_cells(tmp_path / "rp" / "sessions.csv")
    assert any(c.startswith("-") for c in _csv_cells(tmp_path / "rp" / "sessions.csv"))  # negative Δ: numbers


def test_names_from_a_trace_with_hidden_characters(tmp_path):
    src = (FIXTURES / "otel" / "jobs.jsonl").read_text(encoding="utf-8")
    path = tmp_path / "jobs.jsonl"
    path.write_text(src.replace("batch-jobs", "batch\\u202ejobs\\u001b[2J"), encoding="utf-8")
    r = runner.invoke(app, ["replay", str(path), "--out", str(tmp_path / "rp")])
    assert r.exit_code == 0, r.output
    _no_hidden(r.stdout + r.stderr)
    for name in ("sessions.csv", "calls.csv", "spans.csv"):
        _no_hidden((tmp_path / "rp" / name).read_text(encoding="utf-8"))
