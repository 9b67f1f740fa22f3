"""The report printed, as a CFO prints it: headless Chromium's PDF (Debian's chromium through playwright, as
tests/test_report_html.py launches it), read back page by page with pypdf.

* The verdict (the summary box), the month (the monthly table) and the prices and speed-ups the verdict rests
  on, with their catalog, dates and speed-up, are on the first printed page (the monthly table may end on
  the second); the whole report is a few pages, not ten.
* Nothing is cut at the margin: under print media, at the printable width of an A4 page, no element reaches
  beyond the right margin nor hides content in a scroll box; and every line of the scenario file, printed
  verbatim, is in the PDF's text whole (its characters in order, wherever the line was wrapped).
"""

from __future__ import annotations

import io
import re
import unicodedata

import pytest

from agentsim.viz.report import build_report, write_report
from conftest import SCENARIOS
from test_report_html import CHROMIUM_ARGS
from test_report_screenshots import _chromium

MM = 96 / 25.4  # CSS pixels per millimetre
PRINTABLE = int((210 - 2 * 11) * MM)  # A4 less the page's left and right margins (the report's @page rule)
OVERFLOW = """() => {
  const out = [];
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (!r.width) continue;
    const style = getComputedStyle(e);
    const cut = style.overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1;
    if (r.right > innerWidth + 0.5 || cut) out.push(`${e.tagName}.${e.className}: right ${r.right}, ` +
      `scroll ${e.scrollWidth} > ${e.clientWidth}: ${e.textContent.slice(0, 60)}`);
  }
  return out;
}"""


def _printed(page_file) -> dict:
    sync_api = pytest.importorskip("playwright.sync_api")
    pypdf = pytest.importorskip("pypdf")
    exe = _chromium()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": PRINTABLE, "height": 1000})
            page.goto(page_file.resolve().as_uri())
            page.wait_for_load_state("load")
            page.emulate_media(media="print")
            overflow = page.evaluate(OVERFLOW)
            pdf = page.pdf(prefer_css_page_size=True, print_background=True)
        finally:
            browser.close()
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    box = reader.pages[0].mediabox
    return {
        "overflow": overflow,
        "pages": [_flat(p.extract_text()) for p in reader.pages],
        "size_mm": (round(float(box.width) / 72 * 25.4), round(float(box.height) / 72 * 25.4)),
    }


def _flat(text: str) -> str:
    """Text as compared here: ligatures (ﬁ) undone, whitespace runs as one space, a word wrapped after its
    hyphen (``fast-plan-`` / ``only``) joined again."""
    return re.sub(r"(?<=\w)- (?=\w)", "-", " ".join(unicodedata.normalize("NFKC", text).split()))


def _page_of(pages: list[str], text: str) -> int:
    """The first page (1-based) that holds ``text`` (0: none)."""
    return next((i + 1 for i, p in enumerate(pages) if text in p), 0)


@pytest.fixture(scope="module")
def coding(tmp_path_factory) -> dict:
    page = build_report(SCENARIOS / "coding-agent.yaml", runs=200, seats=20, runs_per_seat_per_day=10)
    return _printed(write_report(page, tmp_path_factory.mktemp("print") / "report.html"))


@pytest.fixture(scope="module")
def team(tmp_path_factory) -> dict:
    page = build_report(SCENARIOS / "team-of-agents.yaml", runs_per_month=9000)
    return _printed(write_report(page, tmp_path_factory.mktemp("print") / "report.html"))


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> dict:
    """The coding agent with two sweeps (the sweep table is the widest the page has) and a long step name."""
    folder = tmp_path_factory.mktemp("print")
    text = (SCENARIOS / "coding-agent.yaml").read_text(encoding="utf-8")
    text = text.replace("name: act,", "name: act-then-observe-the-repository-and-its-test-results,")
    text += (
        "sweeps:\n"
        "  - {set: models.opus.speeds.fast-now.output_tps_x, values: [1.5, 2.5], label: speed-up (×)}\n"
        "  - {set: 'agent.steps[1].repeat.times', values: [10, 40]}\n"
    )
    path = folder / "swept.yaml"
    path.write_text(text, encoding="utf-8")
    return _printed(write_report(build_report(path, runs=40, runs_per_month=1000), folder / "report.html"))


@pytest.mark.slow
def test_a4_and_a_few_pages(coding, team):
    assert coding["size_mm"] == (210, 297)
    assert 3 <= len(coding["pages"]) <= 7, len(coding["pages"])
    assert 3 <= len(team["pages"]) <= 9, len(team["pages"])


@pytest.mark.slow
def test_the_verdict_and_what_it_rests_on_are_on_page_one(coding):
    first = coding["pages"][0]
    assert "Fastest: fast-now" in first and "Cheapest: standard" in first
    for name in ("fast", "fast-now", "fast-plan-only"):
        assert re.search(rf"Variant {name} pays off when an hour of waiting is worth at least \$\d+", first), name
    # the month: spend, hours saved and net value, in the box
    assert re.search(r"Per month, at 20 seats .* fast-now \$[\d,]+ \(\+\$[\d,]+\): [\d,.]+ h of waiting saved, "
                     r"net [+−]\$[\d,]+ at \$100/h", first)  # fmt: skip
    # every price line in use with the catalog, its model, its date and the catalog's release; the speed-ups
    assert "prices: opus catalog anthropic/claude-opus-5-5 as of 2026-12-01 (Claude Opus 5.5 in genai-prices" in first
    assert "prices: opus/fast-now catalog anthropic/claude-opus-5-5 as of 2026-12-01 (speed=fast;" in first
    assert "prices: opus/fast 6 × the opus price" in first and "prices: haiku catalog" in first
    assert re.search(r"genai-prices \d+\.\d+\.\d+, released \d{4}-\d{2}-\d{2}", first)
    assert "speeds: opus/fast 2.5× output speed, TTFT unchanged" in first
    assert "speeds: opus/fast-now 2.5× output speed, TTFT unchanged" in first


@pytest.mark.slow
@pytest.mark.parametrize("name", ["coding", "team"])
def test_the_monthly_table_is_on_page_one_or_two(name, coding, team):
    pages = {"coding": coding, "team": team}[name]["pages"]
    head = _page_of(pages, "Monthly spend")
    assert 1 <= head <= 2
    table_end = _page_of(pages, "premium per saved hour")  # the table's header, then its rows
    assert head <= table_end <= 2


@pytest.mark.slow
@pytest.mark.parametrize("name", ["coding", "team", "swept"])
def test_nothing_beyond_the_margin(name, coding, team, swept):
    printed = {"coding": coding, "team": team, "swept": swept}[name]
    assert printed["overflow"] == []
    if name == "swept":
        assert _page_of(printed["pages"], "Frontier over the sweep") > 0


@pytest.mark.slow
def test_the_scenario_file_prints_whole(coding):
    """Each line of the scenario file is in the PDF's text, character for character (a line cut at the margin
    would lose its end)."""
    squeezed = re.sub(r"\s+", "", " ".join(coding["pages"]))
    lines = [_flat(x) for x in (SCENARIOS / "coding-agent.yaml").read_text(encoding="utf-8").splitlines()]
    missing = [x for x in lines if re.sub(r"\s+", "", x) not in squeezed]
    assert missing == []
    longest = max(lines, key=len)
    assert len(longest) > 100  # the file has lines longer than a printed line holds: the check can fail


@pytest.mark.slow
def test_one_unit_for_wall_time_in_print(coding):
    """The wall-time columns of the printed tables share the page's unit (minutes for this agent), the 95% CI's
    half-width included."""
    text = " ".join(coding["pages"])
    assert re.search(r"fast-now 10\.\d min ± 0\.\d+ min \d+\.\d min", text), text[:3000]
    assert not re.search(r"± [\d.]+ s\b", text)
    assert re.search(r"fast-now −2\.\d+ min \+\$", text)  # Δ mean wall in the break-even table


def test_figures_use_the_tables_unit():
    """The page's figures of wall time are drawn in the unit of its tables (:func:`wall_unit`), not seconds."""
    import agentsim
    from agentsim.viz.report import analyse, figure_specs

    a = analyse(agentsim.simulate(SCENARIOS / "coding-agent.yaml", runs=100, seed=1))
    assert a.unit == ("min", 60.0)  # 13 min a run
    labels = {}
    for key in ("tradeoff", "cdf", "breakdown"):
        fig = figure_specs(a)[key][2]()
        labels[key] = [ax.get_xlabel() for ax in fig.axes if ax.get_xlabel()]
    assert labels == {
        "tradeoff": ["mean wall time per run (min)", "p95 wall time per run (min)"],
        "cdf": ["wall time per run (min)"],
        "breakdown": ["mean time on the critical path per run (min)"],
    }
    fig = figure_specs(a)["cdf"][2]()
    right = max(line.get_xdata().max() for line in fig.axes[0].get_lines() if line.get_gid() == "cdf:standard")
    assert right == pytest.approx(a.res.runs.query("variant == 'standard'")["wall_time_s"].max() / 60)
