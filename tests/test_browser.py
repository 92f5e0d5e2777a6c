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


def test_demo_report_in_chromium(browser, tmp_path):
    if not sorted(EXAMPLE.glob("embeddings_*.npz")):
        pytest.skip("bundled example missing")
    out = tmp_path / "demo"
    r = CliRunner().invoke(app, ["demo", "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "report.json").read_text())
    browser.get((out / "report.html").as_uri())
    # loads without console errors
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []
    # every plot is present and decoded
    imgs = browser.find_elements("tag name", "img")
    assert len(imgs) >= 6
    for img in imgs:
        assert browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img) > 100
    # key numbers appear as rendered text
    text = browser.find_element("tag name", "body").text
    res = doc["sections"][0]["data"]["systems"]["mcadams"]["attackers"]["resemblyzer-ge2e/plda/anonymized"]
    assert f"{100 * res['oa']['eer_rocch']:.3g}" in text
    assert "1-to-N linkage" in text and "Reproducibility" in text
    assert "the strongest attacker is" in text and "semi-informed" in text
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
