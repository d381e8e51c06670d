"""`profkit doctor`: what this host has, what is missing, and whether GPU counters can be read.

Its exit status tells scripts what `profkit capture` can do here (documented in `doctor --help`
and the README): 0 capture collects counters, 1 capture runs timing only (or counters are
unconfirmed), 2 capture cannot run here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

Check = tuple[str, "bool | None", str]  # (name, ok: True / False / None = unknown, detail)

COUNTERS_OK, TIMING_ONLY, NO_CAPTURE = 0, 1, 2
EXIT_HELP = (
    "Exit status: 0 capture collects GPU counters here (the probe read one; with --no-probe: a "
    "GPU is visible and ncu answers); 1 capture runs timing only here, or counters are "
    "unconfirmed (ncu missing or broken, no permission, the probe failed); 2 capture cannot run "
    "here (no torch, or no CUDA GPU visible)."
)


@dataclass
class SetupCheck:
    rows: list[Check]
    verdict: str
    exit_status: int


def _package(name: str, why: str) -> Check:
    try:
        return (name, True, metadata.version(name))
    except metadata.PackageNotFoundError:
        return (name, False, f"not installed: {why}")


def gpu_checks() -> list[Check]:
    from profkit.hostenv import nvidia_smi

    out: list[Check] = []
    try:
        import torch
    except ImportError:
        return [("torch", False, "not installed: capture needs torch with CUDA")]
    out.append(("torch", True, f"{torch.__version__} (CUDA {torch.version.cuda or 'none'})"))
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        out.append(
            (
                "GPU",
                True,
                f"{p.name}, {p.multi_processor_count} SMs, compute capability {p.major}.{p.minor}",
            )
        )
    else:
        out.append(
            (
                "GPU",
                False,
                "no CUDA GPU visible to torch: capture needs one "
                "(`capture --interpret` checks correctness on the CPU)",
            )
        )
    smi = nvidia_smi("driver_version")
    out.append(("driver", bool(smi), smi[0] if smi else "nvidia-smi not found"))
    return out


def check_setup(
    probe: bool = True,
    timeout_s: float | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> SetupCheck:
    from profkit.counters import ncu

    rows = gpu_checks()
    gpu = {name: ok for name, ok, _ in rows}.get("GPU") is True
    rows.append(_package("triton", "the lab's kernels need it"))
    rows.append(_package("nvtx", "capture marks each case with an NVTX range"))
    for name in ("pandas", "click", "rich"):
        rows.append(_package(name, "profkit needs it"))
    try:
        from profkit.counters.ncu_rep import import_ncu_report

        mod = import_ncu_report()
        rows.append(("ncu_report", True, f"NVIDIA's report reader at {mod.__file__}"))
    except Exception as exc:  # a ProfkitError with the fix, or a broken install
        rows.append(("ncu_report", False, str(exc)))
    limit = {} if timeout_s is None else {"timeout_s": timeout_s}
    access = ncu.counter_access(probe=probe, gpu_visible=gpu, say=say, **limit)
    rows.extend((c.name, c.ok, c.detail) for c in access)
    return SetupCheck(rows, *_verdict(rows, gpu, probe))


def _verdict(rows: list[Check], gpu: bool, probe: bool) -> tuple[str, int]:
    ok = {name: flag for name, flag, _ in rows}
    if not gpu:
        if ok.get("torch") is False:
            what = "torch is not installed (on a GPU host: pip install -e '.[gpu]')"
        else:
            what = "no CUDA GPU is visible (`capture --interpret` checks correctness on the CPU)"
        return (
            f"Capture can not run here: {what}. show, explain, compare and dashboard read "
            "stored runs anywhere.",
            NO_CAPTURE,
        )
    if ok.get("ncu") is not True:
        return (
            "ncu is missing or does not work (see the ncu row): captures will be timing only "
            "until it is fixed.",
            TIMING_ONLY,
        )
    if not probe:
        return "Counter probe skipped (--no-probe): ncu answers, counters not checked.", 0
    counters = ok.get("counters")
    if counters is True:
        return "GPU counters CAN be read on this host.", COUNTERS_OK
    if counters is False:
        return (
            "GPU counters can NOT be read on this host: captures will be timing only.",
            TIMING_ONLY,
        )
    return (
        "Whether GPU counters can be read here is unknown (see the counters row): captures may "
        "be timing only.",
        TIMING_ONLY,
    )
