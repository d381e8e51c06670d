"""The dashboard in a real browser: Debian's chromium driven by Playwright (tests/install.sh
installs both; Playwright's own browser download is not used).

One page of the newest stored run (with the history of both) and a copy of it whose kernel and
variant names carry markup (constructed), written as `profkit dashboard` writes it (plotly.min.js
beside the page). Checked:
no console error, no page error, no dialog, no request beyond the page and its plotly.min.js, every
plot drawn with its traces, hover shows a case's counters on the roofline, the filters change the
rows shown, the hostile names show as text. Screenshots are saved to tests/artifacts/.

The module's tests share one Chromium (its start costs seconds of CPU).

Without chromium or playwright this test FAILS (CI installs them); set PROFKIT_BROWSER_TESTS=0 to
skip it on a machine that cannot have them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from functools import cache
from pathlib import Path

import pytest
from stored_runs import all_runs, v1_v2_profiles

from profkit import dashboard, run_kinds, store

pytestmark = pytest.mark.browser

ROOT = Path(__file__).parents[1]
PROFILES = v1_v2_profiles()  # the two schema-1 RMSNorm runs alone
ARTIFACTS = Path(__file__).parent / "artifacts"
EVIL_VARIANT = "<script>alert(1)</script>"
EVIL_KERNEL = "rms<img src=x onerror=alert(2)>"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 30_000
# the views saved as element screenshots (run0: the newest stored run)
SHOTS = (
    "run0-plot-speedup",
    "run0-plot-roofline",
    "run0-plot-launches",
    "run0-plot-latency",
    "history0-plot",
)


def chromium() -> str:
    """The chromium executable, or fail (skip only when asked to with PROFKIT_BROWSER_TESTS=0)."""
    if os.environ.get("PROFKIT_BROWSER_TESTS") == "0":
        pytest.skip("PROFKIT_BROWSER_TESTS=0: the browser test was turned off on this machine")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.fail("the Python package playwright is missing: run `bash tests/install.sh`")
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed: run `bash tests/install.sh` (apt-get chromium)")
    return exe


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    """One Chromium context for the module, 1400x1000; each test opens its own pages."""
    exe = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("user-data")),
            executable_path=exe,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        yield context
        context.close()


@cache
def every_run() -> tuple[store.Run, ...]:
    """Every stored run, loaded once for the module (the tests only read them)."""
    return tuple(store.load(p) for p in store.list_runs(all_runs()))


@pytest.fixture(scope="module")
def page_of(tmp_path_factory: pytest.TempPathFactory):
    """run id -> that run's page as `profkit dashboard RUN` writes it (the history: every stored
    run), written once for the module: two tests draw the newest RMSNorm run's page."""
    site = tmp_path_factory.mktemp("site")

    @cache
    def write(run_id: str) -> Path:
        run = next(r for r in every_run() if r.run_id == run_id)
        return run_kinds.write_dashboard(run, site / f"{run_id}.html", every_run())

    return write


def evil_run(tmp_path: Path) -> store.Run:
    """A copy of the newest run, renamed, with markup in its kernel and variant names."""
    src = store.resolve(None, PROFILES)
    dest = tmp_path / "evil-run"
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("*.ncu-rep*"))
    df = store.load(dest).cases
    df["variant"] = df["variant"].replace("native", EVIL_VARIANT)
    df["kernel"] = EVIL_KERNEL
    df["case"] = df["case"].str.replace(".native.", f".{EVIL_VARIANT}.", regex=False)
    df.to_csv(dest / store.CASES, index=False)
    for name in (store.KERNELS, store.RULES):
        store.table_file(dest, name).unlink()
    manifest = json.loads((dest / store.MANIFEST).read_text())
    manifest.update(kernel=EVIL_KERNEL, run_id="evil-run")
    (dest / store.MANIFEST).write_text(json.dumps(manifest))
    store.seal(dest)  # it vouches for its edited files (else they read as damaged)
    return store.load(dest)


# Boxes as Chromium lays them out: each plot's drawn extent (its div, grown by any text that
# spills out of it, e.g. rotated tick labels), each heading, and inside each plot its panels,
# panel titles and tick labels. Returns the pairs that overlap (by more than 1 px).
LAYOUT_JS = """() => {
  const box = e => { const r = e.getBoundingClientRect();
    return {l: r.left + scrollX, t: r.top + scrollY,
            r: r.right + scrollX, b: r.bottom + scrollY}; };
  const grow = (a, b) => ({l: Math.min(a.l, b.l), t: Math.min(a.t, b.t),
                           r: Math.max(a.r, b.r), b: Math.max(a.b, b.b)});
  const cross = (a, b) => Math.min(a.r, b.r) - Math.max(a.l, b.l) > 1 &&
                          Math.min(a.b, b.b) - Math.max(a.t, b.t) > 1;
  const visible = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const found = [];
  const outer = [];
  for (const h of document.querySelectorAll('h1, h2, h3, h4'))
    outer.push(['title ' + h.textContent.slice(0, 40), box(h)]);
  for (const d of document.querySelectorAll('.plotly-graph-div')) {
    let b = box(d);
    for (const t of d.querySelectorAll('text')) if (visible(t)) b = grow(b, box(t));
    outer.push(['plot ' + d.id, b]);
    // inside one plot: a panel's tick labels must not cross another panel or any panel title
    const panels = [...d.querySelectorAll('.bglayer rect.bg')].filter(visible).map(box);
    const titles = [...d.querySelectorAll('.annotation-text, .gtitle')].filter(visible).map(box);
    const ticks = [...d.querySelectorAll('.xtick text, .x2tick text, .x3tick text, .x4tick text')]
      .filter(visible).map(box);
    for (const k of ticks) {
      for (const t of titles)
        if (cross(k, t)) found.push([d.id + ' tick label', d.id + ' panel title']);
      for (const p of panels)
        if (cross(k, p)) found.push([d.id + ' tick label', d.id + ' panel']);
    }
  }
  for (let i = 0; i < outer.length; i++)
    for (let j = i + 1; j < outer.length; j++)
      if (cross(outer[i][1], outer[j][1])) found.push([outer[i][0], outer[j][0]]);
  return found;
}"""


def test_dashboard_in_chromium(tmp_path: Path, browser) -> None:
    stored = [store.load(p) for p in store.list_runs(PROFILES)]
    runs = [stored[-1], evil_run(tmp_path)]  # history0: both stored runs of rmsnorm
    page_path = run_kinds.write_dashboard(runs, tmp_path / "site" / "pr.html", stored)
    html_text = page_path.read_text()
    plot_ids = re.findall(r'Plotly\.newPlot\("([^"]+)"', html_text)
    assert {*SHOTS, "run0-plot-bandwidth", "run1-plot-speedup", "run1-plot-roofline"} <= set(
        plot_ids
    )

    console, errors, requests, dialogs = [], [], [], []
    page = browser.new_page()
    try:
        page.set_default_timeout(TIMEOUT_MS)
        page.on("console", lambda m: console.append((m.type, m.text)))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(page_path.as_uri(), wait_until="load")
        # every plot drawn: plotly's svg in each div, with as many traces as the page sent
        page.wait_for_function(
            "ids => ids.every(id => { const d = document.getElementById(id);"
            " return d && d._fullData && d.querySelector('.main-svg'); })",
            arg=plot_ids,
        )
        drawn = page.evaluate(
            "ids => ids.map(id => { const d = document.getElementById(id);"
            " return [id, d.data.length, d._fullData.length,"
            " d.querySelectorAll('.main-svg').length, d.getBoundingClientRect().height]; })",
            plot_ids,
        )
        for div_id, sent, full, svgs, height in drawn:
            assert sent > 0 and full == sent and svgs >= 1 and height > 100, div_id

        # layout: no plot, heading, panel title or tick label drawn over another
        overlaps = page.evaluate(LAYOUT_JS)
        assert overlaps == [], overlaps[:10]

        # hover on a roofline point shows its case and counters
        hover = page.evaluate(
            """() => { const d = document.getElementById('run0-plot-roofline');
            const i = d.data.findIndex(t => t.mode === 'markers');
            Plotly.Fx.hover(d, [{curveNumber: i, pointNumber: 0}], d.data[i].xaxis
              ? d.data[i].xaxis + d.data[i].yaxis : 'xy');
            const t = d.querySelector('.hovertext');
            return t ? t.textContent : ''; }"""
        )
        assert "rmsnorm." in hover and "DRAM throughput" in hover, hover

        rows = page.locator("#findings tbody tr")
        total = rows.count()
        count = page.locator("#findings-count")
        assert count.inner_text() == f"{total} of {total} findings shown"

        def visible() -> list[dict]:
            return page.evaluate(
                "() => [...document.querySelectorAll('#findings tbody tr')]"
                ".filter(tr => !tr.hidden).map(tr => ({...tr.dataset}))"
            )

        page.select_option("select[data-key='dtype']", "bfloat16")
        shown = visible()
        assert 0 < len(shown) < total and {r["dtype"] for r in shown} == {"bfloat16"}
        assert count.inner_text() == f"{len(shown)} of {total} findings shown"
        page.select_option("select[data-key='variant']", EVIL_VARIANT)
        evil = visible()
        assert evil and {(r["dtype"], r["variant"]) for r in evil} == {("bfloat16", EVIL_VARIANT)}
        # the hostile names are text in the table, and no element was made from them
        assert EVIL_VARIANT in page.locator("#findings tbody tr:not([hidden])").first.inner_text()
        assert page.locator("img").count() == 0
        legend = page.locator("#run1-plot-latency .legendtext").all_text_contents()
        assert f"{EVIL_VARIANT} (baseline)" in legend, legend
        page.select_option("select[data-key='kernel']", EVIL_KERNEL)
        assert len(visible()) == len(evil)
        page.select_option("select[data-key='kernel']", "rmsnorm")
        assert visible() == []
        for key in ("kernel", "variant", "dtype"):
            page.select_option(f"select[data-key='{key}']", "")
        assert len(visible()) == total

        # screenshots: the top of the page, then each kind of view and the filtered table
        ARTIFACTS.mkdir(exist_ok=True)
        for old in ARTIFACTS.glob("*.png"):  # only this run's screenshots stay
            old.unlink()
        page.screenshot(path=str(ARTIFACTS / "dashboard.png"))
        for div_id in SHOTS:
            page.locator(f"#{div_id}").screenshot(path=str(ARTIFACTS / f"{div_id}.png"))
        page.select_option("select[data-key='variant']", "triton")
        page.locator("#findings-filters").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "findings.png"))
        for name in ("dashboard", *SHOTS, "findings"):
            assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000, name
    finally:
        page.close()

    assert [m for m in console if m[0] == "error"] == []
    assert errors == [] and dialogs == []
    allowed = {page_path.as_uri(), (page_path.parent / dashboard.PLOTLY_ASSET).as_uri()}
    assert set(requests) == allowed, sorted(set(requests) - allowed)


def plot_kinds(path: Path) -> set[str]:
    """The kinds of plot on a page: its plot ids without the run's prefix and any dtype."""
    ids = re.findall(r'Plotly\.newPlot\("([^"]+)"', path.read_text())
    dtypes = "|".join(("float16", "bfloat16", "float32", "float64", "int8", "int32"))
    return {re.sub(rf"-({dtypes})$", "", i.split("-", 1)[-1]) for i in ids}


def test_every_stored_runs_page_draws_in_chromium(browser, page_of) -> None:
    """The pages of the stored runs (every kernel's, the decode step's, the suite's, a profile
    run's), generated as `profkit dashboard RUN` writes them, drawn until every kind of plot has
    been: no console or page error, no request beyond the page and its plotly.min.js, every plot
    drawn with the traces it was sent."""
    every = every_run()
    # one page per kernel and run schema (the newest) is written; Chromium draws the fewest of
    # them that hold every kind of plot and both schemas between them: another page's plots of the
    # same kinds draw through the same code, and each page costs Chromium seconds on 2 cores
    kinds = {(r.manifest.get("kernel"), r.manifest.get("schema")): r for r in every}
    written = {r.manifest.get("schema", 1): [] for r in kinds.values()}
    for r in kinds.values():
        written[r.manifest.get("schema", 1)].append(page_of(r.run_id))
    assert sum(map(len, written.values())) >= 10
    pages, drawn_kinds = [], set()
    for schema_pages in written.values():
        by_kinds = sorted(schema_pages, key=lambda path: -len(plot_kinds(path)))
        pages.append(by_kinds[0])  # each schema's page with the most kinds of plot
        drawn_kinds |= plot_kinds(by_kinds[0])
    for path in sorted({p for ps in written.values() for p in ps}, key=lambda p: p.name):
        if plot_kinds(path) - drawn_kinds:
            pages.append(path)
            drawn_kinds |= plot_kinds(path)
    every_kind = set().union(*(plot_kinds(p) for ps in written.values() for p in ps))
    assert drawn_kinds == every_kind and len(pages) < sum(map(len, written.values()))
    for path in pages:
        console, errors, requests = [], [], []
        page = browser.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.on("console", lambda m, c=console: c.append((m.type, m.text)))
        page.on("pageerror", lambda e, c=errors: c.append(str(e)))
        page.on("request", lambda r, c=requests: c.append(r.url))
        try:
            page.goto(path.as_uri(), wait_until="load")
            ids = re.findall(r'Plotly\.newPlot\("([^"]+)"', path.read_text())
            assert ids, path.name
            page.wait_for_function(
                "ids => ids.every(id => { const d = document.getElementById(id);"
                " return d && d._fullData && d.querySelector('.main-svg'); })",
                arg=ids,
            )
            drawn = page.evaluate(
                "ids => ids.map(id => { const d = document.getElementById(id);"
                " return [id, d.data.length, d._fullData.length]; })",
                ids,
            )
        finally:
            page.close()
        for div_id, sent, full in drawn:
            assert sent > 0 and full == sent, (path.name, div_id)
        assert not errors, (path.name, errors)
        assert not [m for m in console if m[0] == "error"], (path.name, console)
        allowed = {path.as_uri(), (path.parent / "plotly.min.js").as_uri()}
        assert set(requests) <= allowed, (path.name, set(requests) - allowed)


def test_a_long_history_is_laid_out_without_overlaps(browser, page_of) -> None:
    """The page of the newest RMSNorm run with the history of every stored RMSNorm run (eight:
    long run ids on the x axis): nothing drawn over anything else, from Chromium's own boxes."""
    stored = every_run()
    rms = [r for r in stored if r.manifest.get("kernel") == "rmsnorm" and not r.interpret]
    assert len(rms) >= 6
    page_path = page_of(rms[-1].run_id)
    ids = re.findall(r'Plotly\.newPlot\("([^"]+)"', page_path.read_text())
    assert "history0-plot" in ids
    page = browser.new_page()
    try:
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(page_path.as_uri(), wait_until="load")
        page.wait_for_function(
            "ids => ids.every(id => { const d = document.getElementById(id);"
            " return d && d._fullData && d.querySelector('.main-svg'); })",
            arg=ids,
        )
        overlaps = page.evaluate(LAYOUT_JS)
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#history0-plot").screenshot(path=str(ARTIFACTS / "history-long.png"))
    finally:
        page.close()
    assert overlaps == [], overlaps[:10]
