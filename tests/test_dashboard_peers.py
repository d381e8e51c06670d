"""Each lab kernel against its best peer per case, on stored H200 runs: the dashboard's speedup
view and the table tools/best_peers.py prints for docs/results.md."""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from pathlib import Path

import pytest

from profkit import dashboard, store
from profkit.dashboard import speedup
from profkit.explain import explain_run

ROOT = Path(__file__).parents[1]
RUNS = ROOT / "tests" / "data" / "runs"
PEERS = ROOT / "tests" / "data" / "peers"  # the H200 captures of jobs/peers.toml
# RMSNorm against F.rms_norm, torch.compile and Liger, with device-time samples: compile is the
# fastest baseline at some cases, Liger at others
RMSNORM = "rmsnorm-20261202-023438-vm-1e156f"
SOFTMAX = "softmax-20261202-023732-vm-72bb39"
VECTOR_ADD = "vector_add-20261130-194931-vm-9f781f"  # one baseline: torch.add
NEWPLOT = re.compile(r'Plotly\.newPlot\("([^"]+)"')


@cache
def run_of(run_id: str) -> store.Run:
    return store.load(PEERS / run_id if (PEERS / run_id).is_dir() else RUNS / run_id)


@cache
def page(run_id: str) -> str:
    run = run_of(run_id)
    return dashboard.build_dashboard([run], {run.run_id: explain_run(run)})


def test_the_best_peer_is_the_fastest_baseline_at_each_case() -> None:
    run = run_of(RMSNORM)
    points = speedup.speedups(run)
    best = speedup.best_peers(points)
    cases = run.cases
    timed = cases[cases.correct.astype(bool) & cases.device_p50_ms.gt(0)]
    assert len(best) == len(timed[~timed.baseline.astype(bool)])  # one per lab case
    for p in best:
        here = timed[(timed.dtype == p.dtype) & (timed["shape"] == p.shape)]
        fastest = here[here.baseline.astype(bool)].sort_values("device_p50_ms").iloc[0]
        assert p.baseline == fastest.variant and p.baseline_ms == fastest.device_p50_ms
        # the pair itself is the all-pairs view's point, interval and all
        assert p in points
    assert {p.baseline for p in best} == {"compile", "liger"}


def test_the_page_draws_the_best_peer_with_each_peers_colour() -> None:
    text = page(RMSNORM)
    ids = NEWPLOT.findall(text)
    assert ids.index("run0-plot-best-peer") == ids.index("run0-plot-speedup") + 1
    run = run_of(RMSNORM)
    points = speedup.speedups(run)
    best = speedup.best_peers(points)
    per_dtype = [p for p in best if p.dtype == "float16"]
    peers = ", ".join(
        f"{b} {sum(p.baseline == b for p in per_dtype)}"
        for b in dict.fromkeys(p.baseline for p in per_dtype)
    )
    closest = min(per_dtype, key=lambda p: p.speedup)
    assert (
        f"<tr><td>triton</td><td>float16</td><td>{peers}</td>"
        f"<td>{sum(p.outcome == 'faster' for p in per_dtype)} faster"
    ) in text
    assert f"{closest.speedup:.3g}x over {closest.baseline} at {closest.shape}" in text
    colours = {}
    for fig in (speedup.speedup_figure(run, points), speedup.speedup_figure(run, best)):
        for trace in fig.data:
            colours.setdefault(trace.name, set()).add(trace.marker.color)
    assert all(len(c) == 1 for c in colours.values())  # a peer's colour is the same in both
    best_fig = speedup.speedup_figure(run, best, over="its best peer per case")
    assert {t.name for t in best_fig.data} == {"triton over compile", "triton over liger"}
    assert "over its best peer per case" in best_fig.layout.annotations[0].text


def test_a_run_with_one_baseline_has_no_best_peer_view() -> None:
    ids = NEWPLOT.findall(page(VECTOR_ADD))
    assert "run0-plot-speedup" in ids and "run0-plot-best-peer" not in ids


def _tool():
    path = Path(__file__).parents[1] / "tools" / "best_peers.py"
    spec = importlib.util.spec_from_file_location("best_peers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_results_table_is_the_dashboards_pairs(capsys: pytest.CaptureFixture) -> None:
    vector_add = str(RUNS / VECTOR_ADD)  # a run by its path
    assert _tool().main([RMSNORM, vector_add, "--profiles", str(PEERS)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head, rule, rows = lines[0], lines[1], lines[2:]
    assert rule.count("|") == head.count("|")
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    rmsnorm = [c for c in cells if c[0] == "rmsnorm"]
    best = speedup.best_peers(speedup.speedups(run_of(RMSNORM)))
    assert len(rmsnorm) == len(best) and len(cells) == len(best) + 15  # vector_add: 15 cases
    for c, p in zip(rmsnorm, best, strict=True):
        assert c[1:4] == [p.lab, p.dtype, p.shape] and c[5] == p.baseline
        assert float(c[7].split()[0]) == pytest.approx(p.lab_ms / p.baseline_ms, abs=5e-4)
        assert c[8] == p.outcome


def test_the_results_table_refuses_an_unknown_run_in_one_line(
    capsys: pytest.CaptureFixture,
) -> None:
    assert _tool().main(["no-such-run", "--profiles", str(RUNS)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: no run named 'no-such-run'")


def test_the_results_page_carries_the_tables_own_output(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/results.md's peers table is the tool's output on the stored runs, byte for byte
    monkeypatch.chdir(ROOT)  # the command's paths are the checkout's
    lines = (ROOT / "docs" / "results.md").read_text().splitlines()
    [at] = [i for i, line in enumerate(lines) if line.startswith("<!-- generated: ")]
    command = lines[at].removeprefix("<!-- generated: ").removesuffix(" -->").split()
    assert command[:3] == ["PYTHONPATH=.", "python3", "tools/best_peers.py"]
    assert _tool().main(command[3:]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert lines[at + 1 : at + 1 + len(printed)] == printed
    assert {RMSNORM, SOFTMAX} <= set(command)
