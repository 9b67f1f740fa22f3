"""The coding-agent and team reports read like a finance document at 1280 px, checked in headless Chromium.

Each page is opened at 1280 × 900 CSS pixels (Debian's chromium through playwright, as
tests/test_report_html.py launches it), screenshotted in full, and its DOM is read back:

* no column of any table mixes units: every duration cell of a column has the same unit (s, min or h)
  and the same number of decimals, and every amount of money follows the one rule (whole dollars from
  $10, cents from $1, three significant digits below);
* no sentence of the scenario's description or of its opening comments is split: each sentence of the
  comment text (its lines joined) lies inside one paragraph or list item of the page;
* the page is no wider than the window (a wide table scrolls inside its own box);
* the summary box of the team report has the completed-runs warning and the monthly total.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from agentsim.viz.notes import comment_blocks
from agentsim.viz.report import build_report, write_report
from conftest import SCENARIOS
from test_report_html import CHROMIUM_ARGS

DURATION = re.compile(r"^[±+−-]?\s*[\d,]+(?:\.(\d+))?\s(s|min|h)$")
MONEY = re.compile(r"^[±+−]?\$([\d,]+(?:\.\d+)?)(?:/h)?$")
WIDTH = 1280


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed (.ci/run installs it)")
    pytest.skip("chromium is not installed (apt-get install chromium)")


def _open(page_file: Path, shot: Path) -> dict:
    sync_api = pytest.importorskip("playwright.sync_api")
    exe = _chromium()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 900})
            page.goto(page_file.resolve().as_uri())
            page.wait_for_load_state("load")
            page.screenshot(path=str(shot), full_page=True)
            return page.evaluate(
                """() => ({
                  tables: Array.from(document.querySelectorAll('table')).map(t => ({
                    header: Array.from(t.querySelectorAll('thead th')).map(c => c.textContent.trim()),
                    rows: Array.from(t.querySelectorAll('tbody tr')).map(
                      r => Array.from(r.children).map(c => c.textContent.trim()))})),
                  blocks: Array.from(document.querySelectorAll('p, li')).map(e => e.textContent),
                  summary: (document.getElementById('summary') || {textContent: ''}).textContent,
                  scrollWidth: document.documentElement.scrollWidth,
                })"""
            )
        finally:
            browser.close()


def _money_ok(text: str) -> bool:
    m = MONEY.match(text)
    if not m:
        return True  # not money
    digits = m.group(1).replace(",", "")
    value = float(digits)
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    if value >= 10:
        return decimals == 0
    if value >= 1:
        return decimals == 2
    if value == 0:
        return digits == "0"
    significant = digits.split(".")[1].lstrip("0")
    return len(significant) == 3


def _columns_one_unit(tables: list[dict]) -> list[str]:
    bad = []
    for t in tables:
        width = max((len(r) for r in t["rows"]), default=0)
        for i in range(width):
            cells = [r[i] for r in t["rows"] if i < len(r)]
            kinds = {(m.group(2), len(m.group(1) or "")) for c in cells if (m := DURATION.match(c))}
            if len(kinds) > 1:
                bad.append(f"{t['header'][i] if i < len(t['header']) else i}: {sorted(kinds)} in {cells}")
            bad += [f"money {c!r}" for c in cells if not _money_ok(c)]
    return bad


def _sentences(path: Path) -> list[str]:
    """The sentences of a scenario file's opening comment, from its lines joined (what a reader wrote)."""
    text = []
    for b in comment_blocks(path.read_text(encoding="utf-8")):
        text += [b.text] if b.text else b.items
    out = []
    for block in text:
        out += [s for s in re.split(r"(?<=[.!?:])\s+(?=[A-Z(\"`])", block) if len(s) > 20]
    return out


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, dict]:
    out = {}
    for name, kw in (("coding-agent", {"runs": 200, "seats": 20, "runs_per_seat_per_day": 10}),
                     ("team-of-agents", {"runs_per_month": 9000})):  # fmt: skip
        folder = tmp_path_factory.mktemp(name)
        page_file = write_report(build_report(SCENARIOS / f"{name}.yaml", **kw), folder / "report.html")
        shot = folder / "report.png"
        out[name] = {**_open(page_file, shot), "shot": shot}
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["coding-agent", "team-of-agents"])
def test_no_column_mixes_units(pages, name):
    assert _columns_one_unit(pages[name]["tables"]) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["coding-agent", "team-of-agents"])
def test_no_description_sentence_is_split(pages, name):
    blocks = [" ".join(b.split()) for b in pages[name]["blocks"]]
    sentences = _sentences(SCENARIOS / f"{name}.yaml")
    assert len(sentences) > 5
    split = [s for s in sentences if not any(" ".join(s.split()) in b for b in blocks)]
    assert split == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["coding-agent", "team-of-agents"])
def test_the_page_fits_1280_px(pages, name):
    from matplotlib.image import imread

    assert pages[name]["scrollWidth"] <= WIDTH
    image = imread(pages[name]["shot"])
    assert image.shape[1] == WIDTH and image.shape[0] > 2000  # the full page, one CSS pixel per pixel


@pytest.mark.slow
def test_the_team_summary_box_warns_and_totals(pages):
    box = " ".join(pages["team-of-agents"]["summary"].split())
    assert "Warning: In variant 'fast'" in box and "completed runs only" in box
    assert "Per month, at 9,000 runs a month (--runs-per-month): standard $" in box
    assert re.search(r"fast \$[\d,]+ \(\+\$[\d,]+\): [\d,.]+ h of waiting saved, net [+−]\$[\d,]+ at \$\d+/h", box)
    assert "Every run's wall time counts as waiting." in box
    assert re.search(r"Variant fast pays off when an hour of waiting is worth at least \$\d+", box)
    assert "Opus 4.6 fast mode at launch prices" in box  # the prices the verdict rests on, with their date
