"""The demo report rendered in a real browser (headless Chromium via Selenium).

Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them) and the `selenium` test extra;
skips cleanly when they are absent.
"""

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vpeval.cli.main import app
from vpeval.report.writer import resolve_refs

webdriver = pytest.importorskip("selenium.webdriver")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "librispeech-mini"

pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="chromium and chromedriver not installed")


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-dev-shm-usage", "--window-size=1280,2000"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    yield drv
    drv.quit()


@pytest.fixture(scope="module")
def demo_out(demo_run):
    """The session's one demo report (tests/conftest.py), shared by the tests of this module."""
    return demo_run[0]


def test_demo_report_in_chromium(browser, demo_out, tmp_path):
    out = demo_out
    doc = resolve_refs(json.loads((out / "report.json").read_text()))
    browser.get((out / "report.html").as_uri())
    # loads without console errors
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []
    # every plot is present and decoded: on the main page at least each system's DET figure
    imgs = browser.find_elements("tag name", "img")
    assert len(imgs) >= len(doc["verdicts"])
    for img in imgs:
        assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) > 100
    # key numbers appear as rendered text: the strongest attacker's on the main page
    text = browser.find_element("tag name", "body").text
    summary = next(s for s in doc["sections"] if s["id"] == "summary")
    strongest = summary["data"]["systems"]["mcadams"]["strongest"]["oa"]["eer"]
    assert f"{100 * strongest['eer_rocch']:.3g}" in text and strongest["attacker"] in text
    assert "Reproducibility" in text and "Appendix pages" in text
    assert "%) is that of" in text and "semi-informed" in text
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    assert browser.find_elements("tag name", "script") == []
    # every attacker's numbers on the appendix pages; folded sections keep their titles visible and their
    # tables open on a click (no scripts on any page)
    browser.get((out / "appendix.html").as_uri())
    res = summary["data"]["systems"]["mcadams"]["attackers"]["resemblyzer-ge2e/plda/anonymized"]
    assert f"{100 * res['oa']['eer_rocch']:.3g}" in browser.find_element("tag name", "body").text
    browser.get((out / "appendix-mcadams.html").as_uri())
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    assert "1-to-N linkage" in browser.find_element("tag name", "body").text
    fold = browser.find_element("css selector", "section[id^='mcadams-verification-'] details")
    assert fold.get_attribute("open") is None and "Verification and privacy-ZEBRA" in fold.text
    assert browser.find_elements("tag name", "script") == []
    for img in browser.find_elements("tag name", "img"):
        assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) > 100


def test_verdict_in_first_viewport(browser, demo_out):
    """At 1,280 x 800 the verdict block is the first thing read: visible without scrolling, before any table."""
    out = demo_out
    verdict = json.loads((out / "report.json").read_text())["verdicts"]["mcadams"]
    # the viewport itself, not the window (whose height includes the browser's own bars)
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    try:
        browser.get((out / "report.html").as_uri())
        assert browser.execute_script("return [window.innerWidth, window.innerHeight]") == [1280, 800]
        block = browser.find_element("id", "verdict")
        assert block.is_displayed()
        top, bottom = browser.execute_script(
            "const r = arguments[0].getBoundingClientRect(); return [r.top, r.bottom];", block)
        first = browser.find_element("css selector", "#verdict p")
        f_top, f_bottom = browser.execute_script(
            "const r = arguments[0].getBoundingClientRect(); return [r.top, r.bottom];", first)
        assert 0 <= top and 0 <= f_top and f_bottom <= 800  # the verdict sentence is on the first screen
        # the demo audits several systems: each verdict sentence opens with its system's name
        assert first.text.startswith(f"mcadams: {verdict['verdict']}.")
        # in plain words, naming the attacker whose bound decides (leaks: the lower bound)
        assert verdict["profile"]["strongest"]["eps_low"][0] in first.text
        # the scorecard is in the first viewport too, and nothing tabular or pictured comes before the block
        card = browser.find_element("css selector", "#verdict table")
        assert browser.execute_script("return arguments[0].getBoundingClientRect().top", card) < 800
        assert browser.execute_script(
            "const v = document.getElementById('verdict');"
            "return [...document.querySelectorAll('table, img')].every("
            "  e => v.contains(e) || (v.compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING));")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


#: Size bounds of the demo's report: issue 27's targets, the main page at 1,280 px wide at most about 8 screens of
#: 800 px, at most 30 figures on it, the whole folder under 5 MB. Reached (docs/report.md, measured 2026-12-02):
#: 7.9 screens (6,347 px; the verdict block 2.5) with 3 figures, and 4.90 MB, of which report.json is 2.31 MB of
#: numbers at full precision (schema 2.3: no array that is a function of other stored ones); with the channel
#: attackers' intervals and per-gender rows (11:33 UTC) 7.85 screens (6,282 px) and 4.91 MB, report.json 2.53 MB.
#: The bounds are the targets themselves, so that the page cannot grow past them.
MAX_SCREENS, MAX_FIGURES, MAX_FOLDER_BYTES = 8, 30, 5_000_000


def test_demo_report_meets_the_size_targets(browser, demo_out):
    """The demo's main page is read to the end: its height at a 1,280 x 800 viewport in screens, its figures,
    the whole report folder on disk; and on every page a folded section's heading keeps its fold triangle on
    its own line (a long heading wraps beside the triangle, not below it)."""
    out = demo_out
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    assert total < MAX_FOLDER_BYTES, f"report folder {total} bytes"
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    try:
        browser.get((out / "report.html").as_uri())
        height = browser.execute_script("return document.documentElement.scrollHeight")
        assert height <= MAX_SCREENS * 800, f"main page {height} px = {height / 800:.1f} screens"
        assert 1 <= len(browser.find_elements("tag name", "img")) <= MAX_FIGURES
        # the per-gender rows of each system are on the main page, never folded
        for sec in browser.find_elements("css selector", "section[id$='-overview']"):
            assert sec.find_elements("tag name", "details") == [] and "Per gender" in sec.text
        for page in ("report.html", "appendix.html", "appendix-mcadams.html"):
            browser.get((out / page).as_uri())
            assert browser.execute_script("return document.documentElement.scrollWidth") <= 1280
            # the first line of each folded heading sits on the summary's first line (the triangle's line)
            assert browser.execute_script(
                "return [...document.querySelectorAll('section>details>summary')].every(s => {"
                "  const h = s.querySelector('h2'); if (!h) return true;"
                "  const line = parseFloat(getComputedStyle(h).lineHeight) || 30;"
                "  return h.getClientRects()[0].top - s.getBoundingClientRect().top < line; })")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _page_width(browser, page):
    """[document width, viewport width] of ``page`` at a 1,280 x 800 viewport."""
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    try:
        browser.get(page.as_uri())
        return browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_demo_page_not_wider_than_viewport(browser, demo_out):
    """Wide tables (the attacks summary) scroll inside their own box; the page itself never scrolls sideways."""
    width, viewport = _page_width(browser, demo_out / "report.html")
    assert viewport == 1280 and width <= viewport
    # every table sits in a scrolling container
    assert browser.execute_script(
        "return [...document.querySelectorAll('table')].every(t => t.parentElement.classList.contains('scroll'))")


def test_five_systems_page_not_wider_than_viewport(browser, tmp_path):
    """An audit of five systems (issue 11): the summary, scorecard, comparisons and per-sex tables fit or scroll in
    their own box, and the verdict block opens the first 1,280 x 800 screen. Small data (the 10 evaluation
    speakers and 20 distractors of the example, five noisy copies) keeps it fast."""
    npz = EXAMPLE / "embeddings_mfcc.npz"
    if not npz.exists():
        pytest.skip("bundled example missing")
    import numpy as np

    from vpeval.io.embeddings import read_embeddings, write_embeddings
    from vpeval.pipeline import make_protocol

    es = read_embeddings(npz)
    p = make_protocol(es)
    keep = set(p.evaluation_speakers) | set(sorted(p.cohort_speakers)[:20])
    es = es.select(np.isin(es.speaker_id, sorted(keep)))
    rng = np.random.default_rng(0)
    systems = []
    for i, name in enumerate(["A", "B", "C", "D", "E"]):
        d = tmp_path / name
        d.mkdir()
        x = es.embeddings + (i * 0.5) * rng.normal(size=es.embeddings.shape) * (es.condition == "anonymized")[:, None]
        write_embeddings(d / npz.name, type(es)(x, es.utterance_id, es.speaker_id, es.condition, es.extractor))
        shutil.copy(EXAMPLE / "metadata.csv", d)
        systems.append(f"system-with-a-long-name-{name}={d}")
    out = tmp_path / "five"
    r = CliRunner().invoke(app, ["audit", *systems, "--backend", "cosine", "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "report.json").read_text())
    assert len(doc["verdicts"]) == 5 and len({(c["system_a"], c["system_b"]) for c in doc["comparisons"]}) == 10
    width, viewport = _page_width(browser, out / "report.html")
    assert viewport == 1280 and width <= viewport
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    try:
        browser.get((out / "report.html").as_uri())
        # the verdict table opens the block: every system's word and worst case on the first screen
        first = browser.find_element("css selector", "#verdict table")
        rows = first.find_elements("css selector", "tbody tr")
        top, bottom = browser.execute_script(
            "const r = arguments[0].getBoundingClientRect(); return [r.top, r.bottom];", first)
        assert first.is_displayed() and 0 <= top and bottom <= 800 and len(rows) == 5
        assert browser.execute_script(
            "return [...document.querySelectorAll('table')].every(t => t.parentElement.classList.contains('scroll'))")
        # every figure fits the page width (readable without zooming out)
        assert browser.execute_script(
            "return [...document.querySelectorAll('img')].every(i => i.getBoundingClientRect().right <= 1280)")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
