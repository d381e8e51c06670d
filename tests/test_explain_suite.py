"""The hold-out suite (tests/explain_suite.py): explain's conclusions against the expectations
written down before the H200 capture, and the suite's Triton kernels checked on the CPU.

The conclusions are checked on the newest stored run of each suite kernel (tests/data/runs/); a
kernel without one skips and says so. A counter the check depends on that
ncu printed n/a (a metric name not valid on the GPU) also skips, naming it.
"""

from __future__ import annotations

import ast
import json
import os
from functools import cache
from pathlib import Path

import pytest
from stored_runs import DATA_RUNS

from profkit import store
from profkit.explain import FindingKind, explain_run
from profkit.explain.phrases import advice_text, finding_text

ROOT = Path(__file__).parents[1]
SUITE = ROOT / "tests" / "explain_suite.py"
CAPTURE = "python3 jobs/run.py jobs/explain_suite.toml, then the runs' tables to tests/data/runs/"
# a cause -> the counter columns it cannot be seen without
NEEDS = {
    "uncoalesced": ("global_ld_sectors",),
    "bank_conflicts": ("shared_bank_conflicts", "shared_wavefronts"),
    "tensor_underfed": ("ncu_sm_clock_mhz",),
}


def expected() -> list[dict]:
    """EXPECTED from the suite file, read without importing it (no torch needed)."""
    tree = ast.parse(SUITE.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "EXPECTED":
            return ast.literal_eval(node.value)
    raise AssertionError("tests/explain_suite.py has no EXPECTED list")


@cache
def newest_run(kernel: str) -> store.Run | None:
    runs = [p for p in store.list_runs(DATA_RUNS)
            if json.loads((p / "manifest.json").read_text()).get("kernel") == kernel]  # fmt: skip
    return store.load(runs[-1]) if runs else None


@cache
def findings(kernel: str) -> tuple:
    return tuple(explain_run(newest_run(kernel)))


def _matches(f, e: dict) -> bool:
    return (
        f.variant == e["variant"]
        and e.get("dtype", "*") in ("*", f.dtype)
        and e.get("shape", "*") in ("*", f.shape)
    )


def test_every_expectation_names_real_identifiers() -> None:
    from profkit.explain import Action, Bottleneck, Cause, Unit, Verdict

    assert len(expected()) >= 10
    for e in expected():
        for c in [*e.get("causes", []), *e.get("not_causes", [])]:
            Cause(c)
        for a in [*e.get("steps", []), *e.get("not_steps", [])]:
            Action(a)
        if "bottleneck" in e:
            Bottleneck(e["bottleneck"])
        if "unit" in e:
            Unit(e["unit"])
        if "verdict" in e:
            Verdict(e["verdict"])
        if "outcome" in e:
            assert e["outcome"] in ("faster", "slower", "noise", "unstable")
    kernels = {e["kernel"] for e in expected()}
    assert kernels == {"suite_matmul", "suite_strided", "suite_bank", "suite_chain"}


def problems(e: dict, run: store.Run, found: tuple) -> list[str]:
    """How explain's findings on `run` miss expectation `e` (empty: it reaches the conclusion).
    A cause whose counters the run lacks raises pytest.skip, naming them."""
    if "verdict" in e or "outcome" in e:
        (v,) = [f for f in found if f.kind == FindingKind.VERDICT and f.variant == e["variant"]]
        if "verdict" in e:
            return (
                []
                if str(v.verdict) == e["verdict"]
                else [f"verdict {v.verdict}: {finding_text(v)}"]
            )
        outcomes = [c.outcome for c in v.comparisons if e["dtype"] in ("*", c.dtype)]
        ok = outcomes and all(o == e["outcome"] for o in outcomes)
        return [] if ok else [f"outcomes {outcomes} at {e['dtype']}: {finding_text(v)}"]
    cases = [f for f in found if f.kind == FindingKind.CASE and _matches(f, e)]
    if not cases:
        return [f"no case of {e['kernel']} {e['variant']} {e.get('dtype')} {e.get('shape')}"]
    out = []
    for f in cases:
        row = run.cases[run.cases["case"] == f.case].iloc[0]
        for cause in e.get("causes", []):
            missing = [c for c in NEEDS.get(cause, ()) if c not in row or row.isna()[c]]
            if missing:
                na = (run.manifest.get("counters") or {}).get("metrics_na", [])
                pytest.skip(f"{f.subject}: {cause} needs {missing}, not captured (n/a: {na})")
        named = {str(r.cause) for r in f.reasons}
        steps = {str(s.action) for s in f.next}
        said = f"{f.subject}: {finding_text(f)} | next: {[advice_text(s) for s in f.next]}"
        if e.get("host"):
            hosted = [h for h in found if h.kind == FindingKind.HOST and h.case == f.case]
            if not hosted or str(hosted[0].next[0].action) != "cuda_graph":
                out.append(f"not called host-bound: {said}")
        checks = [
            (not e.get("multi_launch") or len(f.launches) > 1, "one launch"),
            (set(e.get("causes", [])) <= named, f"causes {named}"),
            (not set(e.get("not_causes", [])) & named, f"causes {named}"),
            (set(e.get("steps", [])) <= steps, f"steps {steps}"),
            (not set(e.get("not_steps", [])) & steps, f"steps {steps}"),
            (e.get("bottleneck") in (None, str(f.bottleneck)), f"bottleneck {f.bottleneck}"),
            (e.get("unit") in (None, str(f.unit)), f"unit {f.unit}"),
        ]
        out += [f"{why}: {said}" for ok, why in checks if not ok]
    return out


@pytest.mark.parametrize("e", expected(), ids=lambda e: f"{e['kernel']}-{e['variant']}-"
                         f"{e.get('dtype', 'v')}-{e.get('shape', '')}")  # fmt: skip
def test_explain_reaches_the_expected_conclusion(e: dict) -> None:
    run = newest_run(e["kernel"])
    if run is None:
        pytest.skip(f"no {e['kernel']} run stored yet (capture on a GPU: {CAPTURE})")
    assert problems(e, run, findings(e["kernel"])) == []


def test_the_check_itself_on_constructed_chain_runs() -> None:
    """The checker on constructed tables (not measured): an eager chain and a fused kernel that
    fit the expectations pass; the same chain with one launch and no host cost fails."""
    import pandas as pd

    def row(variant, shape, **cols):
        return {"kernel": "suite_chain", "variant": variant, "baseline": variant == "eager",
                "dtype": "float32", "shape": shape,
                "case": f"suite_chain.{variant}.float32.{shape}",
                "correct": True, "device_p50_ms": 0.05 if shape != "4096" else 0.002,
                "device_iqr_ms": 0.0001, "device_reps": 100, "bytes": 2 * 4 * int(shape),
                "flops": 10 * int(shape), **cols}  # fmt: skip

    big, tiny = "16777216", "4096"
    stream = {"memory_throughput_pct": 90.0, "dram_throughput_pct": 90.0,
              "sm_throughput_pct": 20.0, "kernel_count": 1}  # fmt: skip
    rows = [
        row("fused", big, **stream),
        row("eager", big, device_p50_ms=0.4, kernel_count=8, memory_throughput_pct=70.0,
            dram_throughput_pct=70.0, sm_throughput_pct=30.0, dram_bytes=8 * 2 * 4 * int(big)),
        row("fused", tiny, host_us=25.0, **stream),
        row("eager", tiny, host_us=60.0, device_p50_ms=0.01, **stream),
    ]  # fmt: skip
    eager_case = f"suite_chain.eager.float32.{big}"
    kernels = pd.DataFrame(
        [{"case": eager_case, "launch": i, "kernel_name": "vectorized_elementwise_kernel",
          "ncu_duration_ms": 0.05, "dram_throughput_pct": 88.0, "memory_throughput_pct": 88.0,
          "sm_throughput_pct": 10.0, "waves_per_sm": 50.0} for i in range(8)]
    )  # fmt: skip
    manifest = {"run_id": "suite-test", "kernel": "suite_chain", "schema": 2, "mode": "gpu",
                "counters": {"status": "ok"}, "ceilings": {"copy_gbps": 4000.0},
                "fingerprint": {"sm_count": 132, "compute_capability": "9.0"}}  # fmt: skip
    run = store.Run(Path("/nonexistent/suite-test"), manifest, pd.DataFrame(rows), kernels, None)
    found = tuple(explain_run(run, []))
    chain = [e for e in expected() if e["kernel"] == "suite_chain"]
    assert {i: problems(e, run, found) for i, e in enumerate(chain)} == dict.fromkeys(
        range(len(chain)), []
    )
    broken = store.Run(run.path, manifest, pd.DataFrame([{**r, "host_us": None} for r in rows]),
                       kernels.iloc[:1], None)  # fmt: skip
    found = tuple(explain_run(broken, []))
    assert sum(bool(problems(e, broken, found)) for e in chain) >= 3


# --- the suite's own kernels, correct on the CPU (Triton's interpreter) ---------------------------


@pytest.fixture(scope="module")
def specs():
    os.environ["TRITON_INTERPRET"] = "1"  # before the suite file is imported below
    from profkit.spec import load_module_specs

    return load_module_specs(SUITE, "profkit_explain_suite_interpret")


@pytest.mark.parametrize(
    ("kernel", "variant", "shape"),
    [
        ("suite_matmul", "tiny_tiles", (32, 32, 32)),
        ("suite_matmul", "tiny_tiles", (48, 16, 32)),
        ("suite_matmul", "cublas", (32, 32, 32)),
        ("suite_strided", "strided", (1000,)),
        ("suite_strided", "torch_strided", (1000,)),
        ("suite_chain", "fused", (5000,)),
        ("suite_chain", "eager", (64,)),
        ("suite_bank", "torch_transpose", (64,)),
    ],
)
def test_suite_variants_match_their_float64_reference(specs, kernel, variant, shape) -> None:
    from profkit.measure.correctness import check

    spec = specs[kernel]
    result = check(spec, spec.variant(variant).fn, shape, "float32", "cpu", seed=5)
    assert result.correct, result.error


def test_a_wrong_suite_kernel_fails_its_check(specs) -> None:
    from profkit.measure.correctness import check

    spec = specs["suite_chain"]
    result = check(spec, lambda i: spec.variant("eager").fn(i) * 1.001, (64,), "float32", "cpu", 1)
    assert not result.correct
