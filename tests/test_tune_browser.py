"""A tune run's page in Chromium (the pattern of test_dashboard_browser.py, one page: the H200
matmul tune run): the path is drawn with one trace per cause answered plus the winner, no console
or page error, no request beyond the page and plotly.min.js, and the winner's sentence is there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_dashboard_browser import CHROMIUM_ARGS, TIMEOUT_MS, chromium
from test_tune import H200, MATMUL_TUNE

from profkit import run_kinds, store

pytestmark = pytest.mark.browser


def test_tune_path_in_chromium(tmp_path: Path) -> None:
    run = store.load(H200 / MATMUL_TUNE)
    page_path = run_kinds.write_dashboard(run, tmp_path / "site" / "tune.html", [run])
    html_text = page_path.read_text()
    assert re.findall(r'Plotly\.newPlot\("([^"]+)"', html_text)[0] == "run0-plot-tune"
    exe = chromium()
    from playwright.sync_api import sync_playwright

    errors, requests = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_path.as_uri(), wait_until="load")
            page.wait_for_function(
                "() => { const d = document.getElementById('run0-plot-tune');"
                " return d && d._fullData && d.querySelector('.main-svg'); }"
            )
            names = page.evaluate(
                "() => document.getElementById('run0-plot-tune').data.map(t => t.name)"
            )
            points = page.evaluate(
                "() => document.querySelectorAll('#run0-plot-tune .scatterlayer .point').length"
            )
            text = page.inner_text("body")
        finally:
            browser.close()
    assert not errors
    assert {Path(u.split("://", 1)[1]).name for u in requests} <= {"tune.html", "plotly.min.js"}
    assert names == ["shipped", "stall", "tensor_underfed", "winner g047"]
    assert points == len(run.cases) + 1  # every configuration, and the winner's star
    assert "g047 (BM=128 BN=256 BK=64 num_stages=4 num_warps=8) is 1.10x faster" in text
