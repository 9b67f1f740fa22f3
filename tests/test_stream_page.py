"""`agentsim stream`: the HTML page that plays a call's answer streaming, per variant.

In headless Chromium (as tests/test_report_html.py does): no console errors, it plays (the clock
advances), and at set virtual times each variant shows exactly the tokens the simulation says had
been delivered, #{i : d_i <= t}, counted here from the token timeline (agentsim.analysis.stream_timeline),
whose times are themselves checked by hand in tests/test_stream_timeline.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from agentsim.analysis.stream_timeline import token_timelines
from agentsim.cli.main import app
from agentsim.viz.stream_page import build_stream_page
from conftest import SCENARIOS

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]  # fmt: skip
runner = CliRunner()


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _embedded(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="timeline">(.*?)</script>', page, re.S)
    return json.loads(m.group(1))


def test_the_page_embeds_the_simulated_delivery_times():
    path = SCENARIOS / "generated-ui.yaml"
    page = build_stream_page(path, runs=40)
    data = _embedded(page)
    frame = token_timelines(path, runs=40)
    assert [v["name"] for v in data["variants"]] == ["gpt-5.2-instant", "gemini-3-flash"]
    for v in data["variants"]:
        want = frame.loc[frame.variant == v["name"], "delivered_s"].to_numpy()
        assert np.array_equal(np.array(v["delivered"]), want)  # float64 survives JSON exactly
    assert "http://" not in page and "https://" not in page  # nothing fetched: self-contained


def test_scenario_text_is_escaped(tmp_path):
    src = tmp_path / "tricky.yaml"
    text = (SCENARIOS / "chat-turn.yaml").read_text()
    text = re.sub(r"(?m)^description: .*$", 'description: "<script>alert(1)</script> One"', text)
    src.write_text(text)
    page = build_stream_page(src, runs=5)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_cli_writes_the_page_and_refuses_bad_input(tmp_path):
    out = tmp_path / "page.html"
    r = runner.invoke(app, ["stream", str(SCENARIOS / "chat-turn.yaml"), "-o", str(out), "--runs", "9"])
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    r = runner.invoke(app, ["stream", str(SCENARIOS / "chat-turn.yaml"), "-o", str(out), "--call", "nope"])
    assert r.exit_code == 2 and "no call named 'nope'" in r.stderr and "answer" in r.stderr
    r = runner.invoke(app, ["stream", str(SCENARIOS / "chat-turn.yaml"), "-o", str(tmp_path), "--runs", "3"])
    assert r.exit_code == 2 and "folder" in r.stderr
    r = runner.invoke(app, ["stream", str(SCENARIOS / "chat-turn.yaml"), "-o", str(out), "--speed", "3"])
    assert r.exit_code == 2 and "--speed" in r.stderr


@pytest.mark.parametrize("name", ["voice-agent.yaml", "generated-ui.yaml", "chat-turn.yaml"])
def test_the_page_plays_in_headless_chromium(tmp_path, name):
    sync_api = pytest.importorskip("playwright.sync_api")
    exe = _chromium()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    path = SCENARIOS / name
    page_file = tmp_path / "stream.html"
    page_file.write_text(build_stream_page(path, runs=60, speed=20), encoding="utf-8")
    frame = token_timelines(path, runs=60)
    variants = list(dict.fromkeys(frame["variant"]))
    # virtual times halfway between successive distinct delivery times (and before the first, after the last)
    times = np.unique(frame["delivered_s"].to_numpy())
    mids = (times[:-1] + times[1:]) / 2
    probes = [0.0, times[0] / 2, *mids[:: max(1, len(mids) // 12)], times[-1] + 1.0]

    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(Path(page_file).resolve().as_uri())
            page.wait_for_load_state("load")
            page.wait_for_function("window.agentsimState().t > 0.5", timeout=10_000)  # it plays (20x)
            assert float(page.get_attribute("#clock", "data-t")) > 0.5
            shown = []
            for t in probes:
                page.evaluate("t => window.agentsimSeek(t)", float(t))
                lane = '.lane[data-variant="{}"]'
                shown.append({v: int(page.get_attribute(lane.format(v), "data-tokens")) for v in variants})
            seen = page.evaluate("document.querySelector('.lane .done').textContent + ''")
        finally:
            browser.close()
    assert errors == []
    for t, got in zip(probes, shown, strict=True):
        want = {v: int(np.sum(frame.loc[frame.variant == v, "delivered_s"].to_numpy() <= t)) for v in variants}
        assert got == want, t
    assert shown[0] == dict.fromkeys(variants, 0)
    assert shown[-1] == {v: int((frame.variant == v).sum()) for v in variants}
    assert seen.strip()  # after the last token, the text is on the page
