"""profkit.counters.ncu_rep on real H200 reports (tests/fixtures), checked against ncu_report
directly."""

from __future__ import annotations

import importlib.abc
import json
import math
import sys
from importlib.machinery import PathFinder
from pathlib import Path

import ncu_report
import pytest
from stored_runs import run_path

from profkit.counters import ncu_rep
from profkit.counters.metrics import COUNTER_COLUMNS, METRICS
from profkit.errors import ProfkitError

TRITON = "rmsnorm.triton.float16.4096x8192"
EAGER = "rmsnorm.eager.float16.4096x4096"
MATMUL = "matmul.cublas.bfloat16.4096x4096x4096"


def lib_actions(path: Path) -> list:
    """Every action of a report, straight from NVIDIA's library (the independent reading)."""
    ctx = ncu_report.load_report(str(path))
    return [
        ctx.range_by_idx(i).action_by_idx(j)
        for i in range(ctx.num_ranges())
        for j in range(ctx.range_by_idx(i).num_actions())
    ]


def launch(tables, case: str) -> dict:
    rows = tables.kernels[tables.kernels["case"] == case]
    assert len(rows) == 1
    return rows.iloc[0].to_dict()


# --- kernels ----------------------------------------------------------------------------------


def test_kernel_columns_follow_tables_md(ncu_tables) -> None:
    identity = [
        "case",
        "kernel",
        "variant",
        "dtype",
        "shape",
        "nvtx_range",
        "launch",
        "kernel_name",
    ]
    assert list(ncu_tables("fx_rmsnorm").kernels.columns) == identity + list(COUNTER_COLUMNS)


def test_triton_launch(ncu_tables, ncu_rep_path) -> None:
    row = launch(ncu_tables("fx_rmsnorm"), TRITON)
    assert (row["kernel"], row["variant"], row["dtype"], row["shape"]) == (
        "rmsnorm",
        "triton",
        "float16",
        "4096x8192",
    )
    assert row["nvtx_range"] == f"profkit@{TRITON}"
    assert (row["launch"], row["kernel_name"], row["kernel_count"]) == (0, "_rmsnorm_kernel", 1)
    direct = lib_actions(ncu_rep_path("fx_rmsnorm"))[0].metric_by_name("gpu__time_duration.sum")
    assert row["ncu_duration_ms"] == pytest.approx(direct.as_double() * 1e-6, rel=1e-12)
    assert row["ncu_duration_ms"] == pytest.approx(0.032416, rel=1e-9)  # 32416 ns, read by hand
    assert row["dram_throughput_pct"] == pytest.approx(69.5869, abs=1e-3)
    assert (row["grid_size"], row["block_size"], row["registers_per_thread"]) == (4096, 256, 64)


def test_every_metric_matches_the_library(ncu_tables, ncu_rep_path) -> None:
    kernels = ncu_tables("fx_rmsnorm").kernels
    actions = lib_actions(ncu_rep_path("fx_rmsnorm"))
    assert len(kernels) == len(actions) == 9
    for row, action in zip(kernels.to_dict("records"), actions, strict=True):
        assert row["kernel_name"] == action.name(action.NameBase_FUNCTION)
        for m in METRICS:
            metric = action.metric_by_name(m.ncu)
            if metric is None:  # a name added to the set after this fixture was captured
                assert math.isnan(row[m.column]), m.column
                continue
            assert row[m.column] == pytest.approx(metric.as_double() * m.scale, rel=1e-12), m.column
        assert row["dram_bytes"] == row["dram_bytes_read"] + row["dram_bytes_write"]
        assert row["shared_mem_bytes"] == (
            row["shared_mem_static_bytes"] + row["shared_mem_dynamic_bytes"]
        )


def test_eager_case_has_eight_aten_launches(ncu_tables) -> None:
    eager = ncu_tables("fx_rmsnorm").kernels.query("case == @EAGER")
    assert list(eager["launch"]) == list(range(1, 9))
    assert set(eager["kernel_name"]) == {
        "unrolled_elementwise_kernel",
        "reduce_kernel",
        "vectorized_elementwise_kernel",
        "elementwise_kernel",
    }
    assert (eager["variant"] == "eager").all() and (eager["shape"] == "4096x4096").all()


def test_matmul_runs_on_tensor_cores(ncu_tables) -> None:
    row = launch(ncu_tables("fx_matmul"), MATMUL)
    assert (row["kernel"], row["variant"], row["dtype"], row["shape"]) == (
        "matmul",
        "cublas",
        "bfloat16",
        "4096x4096x4096",
    )
    assert row["kernel_name"].startswith("nvjet_sm90_")
    assert row["tensor_pipe_pct"] > 90
    assert row["shared_mem_dynamic_bytes"] == 213188


def test_plain_report_has_no_case(ncu_tables) -> None:
    row = ncu_tables("fx_plain").kernels.iloc[0].to_dict()
    assert all(row[c] == "" for c in ("case", "kernel", "variant", "dtype", "shape"))
    # captured by hand (ncu --nvtx -k regex:rmsnorm) inside torch's default-domain range
    assert row["nvtx_range"] == "user_region"
    assert row["kernel_name"] == "_rmsnorm_kernel"
    assert row["ncu_duration_ms"] == pytest.approx(0.016480, rel=1e-9)
    assert row["grid_size"] == 2048  # the 4096x4096 input at two rows per program


class _Domain:
    def __init__(self, name: str, ranges: list[str]) -> None:
        self._name, self._ranges = name, ranges

    def name(self) -> str:
        return self._name

    def push_pop_ranges(self) -> list[str]:
        return self._ranges


class _Action:
    """Stands in for an IAction's nvtx_state(): ncu lists each domain's stack outermost first."""

    def __init__(self, domains: list[_Domain] | None) -> None:
        self._domains = domains

    def nvtx_state(self):
        return self if self._domains is not None else None

    def domains(self) -> list[int]:
        return list(range(len(self._domains)))

    def domain_by_id(self, i: int) -> _Domain:
        return self._domains[i]


@pytest.mark.parametrize(
    ("domains", "expected"),
    [
        (None, ""),
        ([_Domain("<default domain>", [])], ""),
        ([_Domain("<default domain>", ["outer", "user_region"])], "user_region"),
        (
            [_Domain("<default domain>", []), _Domain("profkit", ["p_outer", "p_inner"])],
            "profkit@p_inner",
        ),
        ([_Domain("<default domain>", ["mine"]), _Domain("profkit", [TRITON])], "mine"),
        ([_Domain("profkit", []), _Domain("userdom", ["r"])], "userdom@r"),
    ],
)
def test_nvtx_range_format(domains, expected) -> None:
    assert ncu_rep._innermost(ncu_rep._nvtx_stacks(_Action(domains))) == expected


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        (TRITON, ("rmsnorm", "triton", "float16", "4096x8192")),
        ("softmax.liger.v2.bfloat16.1x4096", ("softmax", "liger.v2", "bfloat16", "1x4096")),
        ("p_inner", ("", "", "", "")),
        ("", ("", "", "", "")),
    ],
)
def test_parse_case(name: str, parts: tuple) -> None:
    parsed = ncu_rep._parse_case(name)
    assert parsed["case"] == name
    assert tuple(parsed[k] for k in ("kernel", "variant", "dtype", "shape")) == parts


# --- n/a metrics --------------------------------------------------------------------------------


def test_requested_but_unknown_metric_is_na(ncu_rep_path) -> None:
    # fx_na was captured with --metrics gpu__time_duration.sum,dram__bogus_not_a_metric.sum
    requested = ["gpu__time_duration.sum", "dram__bogus_not_a_metric.sum"]
    tables = ncu_rep.read_report(ncu_rep_path("fx_na"), requested)
    assert tables.metrics_na == ["dram__bogus_not_a_metric.sum"]
    row = tables.kernels.iloc[0]
    assert row["ncu_duration_ms"] == pytest.approx(0.03424, rel=1e-9)
    # not requested: no value, and not n/a either
    assert math.isnan(row["dram_throughput_pct"]) and math.isnan(row["dram_bytes"])
    assert row["grid_size"] == 4096  # launch figures come with every report


# the metric names profkit requested when the fixtures were captured, as that run recorded them
ROOT = Path(__file__).parents[1]
FIXTURE_ERA_METRICS = json.loads(
    (run_path("rmsnorm-20261130-014917-vm-4bc5") / "manifest.json").read_text()
)["counters"]["metrics"]


@pytest.mark.parametrize("name", ["fx_rmsnorm", "fx_matmul", "fx_plain"])
def test_fully_collected_reports_have_no_na(ncu_rep_path, name: str) -> None:
    assert ncu_rep.read_report(ncu_rep_path(name), FIXTURE_ERA_METRICS).metrics_na == []


@pytest.mark.parametrize("name", ["fx_rmsnorm", "fx_matmul"])
def test_every_verified_metric_has_a_value_in_the_h200_reports(ncu_rep_path, name: str) -> None:
    # reports captured with the sections hold their metrics too: each name marked verified was
    # seen there (or in gpu-facts.md); the unverified ones await the next H200 capture; the cause
    # catalogue's counters came after these reports (seen in tests/fixtures/causes_probe.csv.xz)
    verified = [m.ncu for m in METRICS if m.verified and m.group != "catalogue"]
    assert ncu_rep.read_report(ncu_rep_path(name), verified).metrics_na == []


def test_nothing_requested_nothing_na(ncu_tables) -> None:
    assert ncu_tables("fx_na").metrics_na == []


# --- rules -----------------------------------------------------------------------------------


def test_rule_columns_and_counts(ncu_tables, ncu_rep_path) -> None:
    rules = ncu_tables("fx_rmsnorm").rules
    assert list(rules.columns) == [
        "launch",
        "case",
        "kernel_name",
        "section",
        "rule",
        "type",
        "message",
        "speedup_pct",
        "title",
    ]
    actions = lib_actions(ncu_rep_path("fx_rmsnorm"))
    assert list(rules.groupby("launch").size()) == [len(a.rule_results()) for a in actions]
    assert set(rules["type"]) <= {"OK", "OPTIMIZATION", "WARNING", "ERROR", "NONE"}
    assert not rules["message"].str.contains("@(?:section|url|sass|source):").any()


def test_triton_sol_rule(ncu_tables) -> None:
    rules = ncu_tables("fx_rmsnorm").rules
    sol = rules[(rules["launch"] == 0) & (rules["rule"] == "SOLBottleneck")].iloc[0]
    assert (sol["case"], sol["kernel_name"], sol["section"]) == (
        TRITON,
        "_rmsnorm_kernel",
        "SpeedOfLight",
    )
    assert (sol["type"], sol["title"]) == ("OPTIMIZATION", "High Memory Throughput")
    assert sol["message"].startswith(
        "Memory is more heavily utilized than Compute: Look at the Memory Workload Analysis section"
    )
    assert math.isnan(sol["speedup_pct"])
    pipe = rules[(rules["launch"] == 0) & (rules["rule"] == "HighPipeUtilization")].iloc[0]
    assert pipe["speedup_pct"] == pytest.approx(81.612, abs=1e-3)


def test_matmul_sol_rule_is_ok(ncu_tables) -> None:
    rules = ncu_tables("fx_matmul").rules
    sol = rules[rules["rule"] == "SOLBottleneck"].iloc[0]
    assert (sol["case"], sol["type"], sol["title"]) == (MATMUL, "OK", "High Throughput")


def test_reports_without_sections_have_empty_rules(ncu_tables) -> None:
    assert ncu_tables("fx_na").rules.empty
    assert list(ncu_tables("fx_na").rules.columns) == list(ncu_rep.RULE_COLUMNS)


def test_plain_text_strips_markup() -> None:
    text = (
        "See @section:LaunchStats:Launch Statistics@ and @url:the Guide:https://x.y/z#a@, "
        "@sass:0x1f0:this line@, @source:k.py:12:line 12@."
    )
    assert ncu_rep.plain_text(text) == (
        "See Launch Statistics and the Guide (https://x.y/z#a), this line, line 12."
    )


# --- files that are not reports ------------------------------------------------------------------


def _bad_files(tmp: Path, reports: dict[str, Path]) -> dict[str, Path]:
    matmul, na = (reports[name].read_bytes() for name in ("fx_matmul", "fx_na"))
    files = {
        "empty": b"",
        "garbage": bytes(range(256)) * 40,
        "cut_in_result": matmul[: len(matmul) // 2],  # loads as one nameless, metric-less launch
        "cut_in_module": na[: len(na) // 2],  # loads with no launches
        "csv": b"kernel,variant,device_p50_ms\nrmsnorm,triton,0.03\n",
        "header_only": b"NVR\0\x02\0\0\0\x08\x07",
    }
    for name, data in files.items():
        (tmp / f"{name}.ncu-rep").write_bytes(data)
    return {name: tmp / f"{name}.ncu-rep" for name in files} | {
        "missing": tmp / "missing.ncu-rep",
        "directory": tmp,
    }


@pytest.mark.parametrize(
    "kind",
    [
        "empty",
        "garbage",
        "cut_in_result",
        "cut_in_module",
        "csv",
        "header_only",
        "missing",
        "directory",
    ],
)
def test_unreadable_file_is_one_line_error(kind: str, tmp_path: Path, ncu_rep_path) -> None:
    reports = {name: ncu_rep_path(name) for name in ("fx_matmul", "fx_na")}
    bad = _bad_files(tmp_path, reports)[kind]
    with pytest.raises(ProfkitError) as err:
        ncu_rep.read_report(bad)
    assert str(bad) in str(err.value) and "\n" not in str(err.value)


# --- finding the library -------------------------------------------------------------------------


class _OnlyFrom(importlib.abc.MetaPathFinder):
    """Hides every ncu_report but one in `allowed` folders (once those are on sys.path)."""

    def __init__(self, allowed: list[Path]) -> None:
        self.allowed = [str(p) for p in allowed]

    def find_spec(self, name, path=None, target=None):
        if name != "ncu_report":
            return None
        spec = PathFinder.find_spec(name, [p for p in self.allowed if p in sys.path])
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return spec


def _hide_ncu_report(monkeypatch: pytest.MonkeyPatch, bin_dir: Path, allowed: list[Path]) -> None:
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("PROFKIT_NCU", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "meta_path", [_OnlyFrom(allowed), *sys.meta_path])
    monkeypatch.delitem(sys.modules, "ncu_report")


def _fake_install(folder: Path, ncu_at: str = "ncu") -> Path:
    """A Nsight Compute layout with an `ncu` and an extras/python/ncu_report.py that says FAKE."""
    (folder / "extras" / "python").mkdir(parents=True)
    (folder / "extras" / "python" / "ncu_report.py").write_text("FAKE = True\n")
    ncu = folder / ncu_at
    ncu.parent.mkdir(parents=True, exist_ok=True)
    ncu.write_text("#!/bin/sh\n")
    ncu.chmod(0o755)
    return ncu


def test_import_falls_back_to_nsight_compute_install(tmp_path, monkeypatch) -> None:
    ncu = _fake_install(tmp_path / "nsight-compute" / "2025.3.1")
    _hide_ncu_report(monkeypatch, ncu.parent, [ncu.parent / "extras" / "python"])
    assert ncu_rep.import_ncu_report().FAKE


def test_cuda_toolkit_layout_is_searched(tmp_path, monkeypatch) -> None:
    cuda = tmp_path / "cuda-13.0"
    _fake_install(cuda / "nsight-compute-2025.3.1")
    ncu = cuda / "bin" / "ncu"
    ncu.parent.mkdir()
    ncu.write_text("#!/bin/sh\n")
    ncu.chmod(0o755)
    monkeypatch.setenv("PROFKIT_NCU", str(ncu))
    assert cuda / "nsight-compute-2025.3.1" / "extras" / "python" in ncu_rep.ncu_python_dirs()


def test_missing_library_is_one_line_error(tmp_path, monkeypatch) -> None:
    _hide_ncu_report(monkeypatch, tmp_path, [])
    with pytest.raises(ProfkitError, match="pip install ncu-report") as err:
        ncu_rep.import_ncu_report()
    assert "\n" not in str(err.value)
