"""The HTML report: content, self-containment, determinism, atomic writing, and a real browser."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from agentsim import version
from agentsim.viz.report import build_report, write_report
from conftest import SCENARIOS

CHAT = SCENARIOS / "chat-turn.yaml"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def chat_page() -> str:
    return build_report(CHAT, runs=100, runs_per_month=30_000)


def test_report_content(chat_page):
    page = chat_page
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "agentsim report: chat-turn" in page
    assert f"agentsim {version()}" in page and "seed 3" in page
    # the scenario file with its comments: sources and assumptions
    assert "OpenRouter provider statistics" in page and "ASSUMPTIONS" in page
    for section in ("Variants compared", "Break-even", "Monthly spend", "Critical path", "The scenario"):
        assert f"<h2>{section}</h2>" in page
    assert "30,000 runs a month (--runs-per-month)" in page
    imgs = re.findall(r'<img src="([^"]+)"', page)
    assert len(imgs) == 6  # the five of every page, and the stream figure (the reader)
    assert all(src.startswith("data:image/svg+xml;base64,") for src in imgs)
    # self-contained: nothing fetched from elsewhere
    assert not re.search(r'(src|href)="(https?:|//)', page)
    assert "<script" not in page


def test_report_is_deterministic(chat_page):
    assert build_report(CHAT, runs=100, runs_per_month=30_000) == chat_page


def test_write_report_is_atomic(tmp_path, chat_page):
    out = tmp_path / "sub" / "r.html"
    written = write_report(chat_page, out)
    assert written == out and out.read_text(encoding="utf-8") == chat_page
    assert [p.name for p in out.parent.iterdir()] == ["r.html"]  # no temporary left behind
    with pytest.raises(IsADirectoryError):
        write_report(chat_page, tmp_path)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_report_opens_in_headless_chromium(tmp_path):
    """The page loads in a real browser with no console errors and every image decoded."""
    sync_api = pytest.importorskip("playwright.sync_api")
    exe = _chromium()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    # a scenario with a sweep, so that the sweep section and its figures are in the page too
    doc = {"extends": str(SCENARIOS / "coding-agent.yaml"),
           "sweeps": [{"set": "models.opus.speeds.fast.output_tps_x", "values": [2, 3],
                       "label": "fast-mode speed-up (×)"}]}  # fmt: skip
    src = tmp_path / "swept.yaml"
    src.write_text(yaml.safe_dump(doc), encoding="utf-8")
    html_text = build_report(src, runs=60, workers=1)
    assert "No volume given" in html_text and "runs_per_month" in html_text  # how to add one
    assert "<h2>Sweep</h2>" in html_text
    assert "Opus 4.6 fast mode" in html_text  # the comments (sources) of the file it extends are shown too
    page_file = write_report(html_text, tmp_path / "report.html")

    errors: list[str] = []
    shot = tmp_path / "report.png"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(Path(page_file).resolve().as_uri())
            page.wait_for_load_state("load")
            images = page.evaluate(
                "Array.from(document.images).map(i => ({alt: i.alt, ok: i.complete && i.naturalWidth > 0}))"
            )
            title = page.title()
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert title == "agentsim report: coding-agent"
    assert len(images) == 5 + 1 + 1  # the five figures, the sweep frontier, one figure per swept axis
    assert all(i["ok"] for i in images), images
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_text_from_the_scenario_is_escaped(tmp_path):
    """The page is rendered with autoescaping: markup in a scenario's text shows as text, never as HTML."""
    doc = {"extends": str(CHAT), "description": 'Costs <script>alert("x")</script> & "more" <b>here</b>'}
    src = tmp_path / "tricky.yaml"
    src.write_text(yaml.safe_dump(doc), encoding="utf-8")
    page = build_report(src, runs=30)
    assert "<script" not in page and "<b>here</b>" not in page
    assert "Costs &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#34;more&#34; &lt;b&gt;here&lt;/b&gt;" in page
    # the scenario file itself is shown escaped too (with its comments)
    assert "description: Costs &lt;script&gt;" in page or "description: &#39;Costs &lt;script&gt;" in page
