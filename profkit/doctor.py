"""`profkit doctor`: what this host has, what is missing, and whether GPU counters can be read."""

from __future__ import annotations

from importlib import metadata

Check = tuple[str, "bool | None", str]  # (name, ok: True / False / None = unknown, detail)


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


def checks(probe: bool = True) -> list[Check]:
    from profkit import ncu

    rows = gpu_checks()
    rows.append(_package("triton", "the lab's kernels need it"))
    rows.append(_package("nvtx", "capture marks each case with an NVTX range"))
    for name in ("pandas", "click", "rich"):
        rows.append(_package(name, "profkit needs it"))
    try:
        from profkit.report import import_ncu_report

        mod = import_ncu_report()
        rows.append(("ncu_report", True, f"NVIDIA's report reader at {mod.__file__}"))
    except Exception as exc:  # a ProfkitError with the fix, or a broken install
        rows.append(("ncu_report", False, str(exc)))
    access = ncu.counter_access(probe=probe)
    rows.extend((c.name, c.ok, c.detail) for c in access)
    return rows
