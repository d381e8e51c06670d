"""The host a run was captured on: an environment fingerprint and the measured ceilings."""

from __future__ import annotations

import platform
import shutil
import socket
import subprocess
from importlib import metadata


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def nvidia_smi(fields: str) -> list[str] | None:
    """One GPU's values for nvidia-smi --query-gpu fields (None where nvidia-smi is missing)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    first = out.strip().splitlines()[:1]
    return [v.strip() for v in first[0].split(",")] if first else None


def fingerprint() -> dict:
    """GPU, SM count, driver, CUDA, library versions, clocks now, hostname."""
    info: dict = {
        "hostname": socket.gethostname(),
        "python": platform.python_version(),
        "torch": _version("torch"),
        "triton": _version("triton"),
    }
    try:
        import torch

        info["cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            info.update(
                gpu=props.name,
                sm_count=props.multi_processor_count,
                compute_capability=f"{props.major}.{props.minor}",
                memory_gib=round(props.total_memory / 2**30, 1),
            )
    except ImportError:
        pass
    smi = nvidia_smi("driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem")
    if smi:
        info["driver"] = smi[0]
        info["clocks_mhz"] = dict(zip(("sm", "mem", "max_sm", "max_mem"), smi[1:], strict=False))
    return info


def measure_ceilings() -> dict:
    """The host's own ceilings, measured once per run (they drift between machines and days):
    device-to-device copy bandwidth (bytes read + written) and a large bf16 matmul's rate."""
    import torch

    from profkit.measure.devicetime import measure, measure_copy

    copy = measure_copy(2**30)
    m = 8192
    a = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)  # random, never zeros
    b = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
    mm_ms = measure(lambda: a @ b).summary()["device_p50_ms"]
    return {
        "copy_gbps": round(copy["gbps"], 1),
        "copy_iqr_ms": round(copy["device_iqr_ms"], 5),
        "matmul_tflops": round(2 * m**3 / (mm_ms * 1e-3) / 1e12, 1),
        "matmul_dtype": "bfloat16",
        "matmul_shape": f"{m}x{m}x{m}",
        "method": "copy: spin-held events; matmul: CUDA-graph replay; L2 flushed before each",
    }
