"""`agentsim stream`: the HTML page that plays a call's turn from the ask, per variant.

In headless Chromium (as tests/test_report_html.py does): no console errors, it plays (the clock
advances), and at set times since the ask each variant shows exactly the tokens the simulation says had
been delivered, #{i : d_i <= t}, and floor(0.75 of them) words, counted here from the token timeline
(agentsim.analysis.stream_timeline, whose times are checked by hand in tests/test_stream_timeline.py).
Frames opened at ``?t=SECONDS`` of a turn timed by hand (conftest.barge_in_turn) show the phase under way,
no words before the first one, the hand-computed counts after it, and nothing more after the interruption.
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
from agentsim.viz.stream_page import build_stream_page, page_data, words_shown
from conftest import SCENARIOS, barge_in_turn

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


def test_words_are_three_quarters_of_the_tokens():
    # 0.75 words per token, fractions accumulated: after token i, floor(0.75 i) words (by hand)
    assert [words_shown(i) for i in range(9)] == [0, 0, 1, 2, 3, 3, 4, 5, 6]
    assert words_shown(100) == 75 and words_shown(31) == 23


def test_the_page_data_of_a_turn(tmp_path):
    src = tmp_path / "turn.json"
    src.write_text(json.dumps(barge_in_turn()))
    data = _embedded(build_stream_page(src))
    fast, slow = data["variants"]
    assert data["words_per_token"] == 0.75
    assert [p["kind"] for p in fast["phases"]] == ["listen", "tool", "call", "ttft"]
    assert all(p["row"] == 0 for p in fast["phases"])  # one after the other
    assert fast["send"] == pytest.approx(5.1) and fast["interrupt"] == pytest.approx(9.2)
    # the reader stops at the barge-in: 15 tokens read (6.1 + 0.2 i <= 9.2), none after (no nulls in the list)
    assert len(fast["read"]) == len(slow["read"]) == 15 and None not in fast["read"]
    assert len(slow["delivered"]) == 31
    assert data["duration"] == pytest.approx(9.2)  # the last event: the interruption (the reader stops there)


def test_phases_at_once_get_rows_of_their_own(tmp_path):
    # a call 'pre' (0 -> 2 s) holds the one slot while the answer queues (0 -> 2 s): two rows, then the wait for
    # the first word (2 -> 3 s) back on the first
    branch = {"call": {"name": "answer", "output": 10, "consumer": {"reader": {"tokens_per_s": 5}}}}
    doc = {"name": "q", "seed": 1, "runs": 1, "limits": {"one": {"models": ["m"], "concurrency": 1}},
           "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 10}, "ttft": 1.0, "output_tps": 10}},
           "agent": {"steps": [{"parallel": [{"call": {"name": "pre", "output": 10}}, branch]}]}}  # fmt: skip
    src = tmp_path / "q.json"
    src.write_text(json.dumps(doc))
    (v,) = page_data(token_timelines(src, "answer"))["variants"]
    assert [(p["kind"], p["row"]) for p in v["phases"]] == [("call", 0), ("queue", 1), ("ttft", 0)]


def _browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    exe = _chromium()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return sync_api, exe


def _lanes(page, variants) -> dict:
    out = {}
    for v in variants:
        lane = page.locator(f'.lane[data-variant="{v}"]')
        out[v] = {k: lane.get_attribute(f"data-{k}") for k in ("tokens", "words", "read", "phase", "interrupted")}
    return out


# (t, the phase under way, {variant: (tokens, words, tokens read, interrupted)}), by hand from conftest.barge_in_turn:
# fast delivers token i at 6.1 + (i - 1) 2/99, slow at 6.1 + (i - 1) 10/99 until the barge-in at 9.2 s (31 tokens);
# the reader reads token i at 6.1 + 0.2 i until 9.2 s (15 tokens); words = floor(0.75 tokens)
T40 = 6.1 + 39 * 2 / 99 + 1e-3  # just after fast's token 40: slow has (i - 1) 10/99 <= 0.789 -> 8; read 3
FRAMES = [
    (0.3, "listen:caller", {"fast": (0, 0, 0, 0), "slow": (0, 0, 0, 0)}),
    (0.8, "tool:retrieve", {"fast": (0, 0, 0, 0), "slow": (0, 0, 0, 0)}),
    (3.0, "call:route", {"fast": (0, 0, 0, 0), "slow": (0, 0, 0, 0)}),  # routing: no words yet
    (5.5, "ttft:answer", {"fast": (0, 0, 0, 0), "slow": (0, 0, 0, 0)}),
    (T40, "", {"fast": (40, 30, 3, 0), "slow": (8, 6, 3, 0)}),
    (8.55, "", {"fast": (100, 75, 12, 0), "slow": (25, 18, 12, 0)}),  # slow: (i - 1) 10/99 <= 2.45 -> 25
    (9.5, "", {"fast": (100, 75, 15, 1), "slow": (31, 23, 15, 1)}),  # after the barge-in
    (14.0, "", {"fast": (100, 75, 15, 1), "slow": (31, 23, 15, 1)}),  # and no more after it
]


def test_frames_at_chosen_times_show_the_turn_from_the_ask(tmp_path):
    sync_api, exe = _browser()
    src = tmp_path / "turn.json"
    src.write_text(json.dumps(barge_in_turn()))
    page_file = tmp_path / "turn.html"
    page_file.write_text(build_stream_page(src), encoding="utf-8")
    frame = token_timelines(src, "answer")
    errors: list[str] = []
    shown = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 700})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            for i, (t, _, _) in enumerate(FRAMES):
                page.goto(f"{page_file.resolve().as_uri()}?t={t!r}")  # opens paused at t
                page.wait_for_load_state("load")
                assert float(page.get_attribute("#clock", "data-t")) == t
                assert page.evaluate("window.agentsimState().playing") is False
                shown.append(_lanes(page, ["fast", "slow"]))
                page.screenshot(path=tmp_path / f"frame-{i}.png")  # the captured frame
        finally:
            browser.close()
    assert errors == []
    for (t, phase, want), got in zip(FRAMES, shown, strict=True):
        for v, counts in want.items():
            g = got[v]
            assert (int(g["tokens"]), int(g["words"]), int(g["read"]), int(g["interrupted"])) == counts, (t, v)
            assert g["phase"] == phase, (t, v)
            # and the same from the timeline computed in Python
            f = frame[frame.variant == v]
            k = int(np.sum(f["delivered_s"].to_numpy() <= t))
            assert (int(g["tokens"]), int(g["words"])) == (k, words_shown(k))
            assert int(g["read"]) == min(k, int(np.sum(f["read_s"].to_numpy() <= t)))
    assert all((tmp_path / f"frame-{i}.png").stat().st_size > 1000 for i in range(len(FRAMES)))


@pytest.mark.parametrize("name", ["voice-agent.yaml", "generated-ui.yaml", "chat-turn.yaml"])
def test_the_page_plays_in_headless_chromium(tmp_path, name):
    sync_api, exe = _browser()
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
                words = {v: int(page.get_attribute(lane.format(v), "data-words")) for v in variants}
                assert words == {v: words_shown(k) for v, k in shown[-1].items()}
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
