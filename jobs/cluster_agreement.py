"""One H200: `capture --cluster local --workers 1` against the plain capture, case for case.

    python3 jobs/cluster_agreement.py PLAIN_RUN CLUSTER_RUN OUT_DIR

Writes OUT_DIR/cluster_agreement.csv (one row per case: both device medians, the gap, pass) and
OUT_DIR/cluster_agreement.json (wall times, counts). A case passes when the medians are within 5%
or 0.5 us of each other (issue 23's timing-noise bound); counters must be present on both sides.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from profkit import store

KEYS = ["kernel", "variant", "dtype", "shape"]


def main(plain_path: str, cluster_path: str, out: str) -> int:
    plain, clustered = store.load(Path(plain_path)), store.load(Path(cluster_path))
    a = plain.cases.set_index(KEYS)
    b = clustered.cases.set_index(KEYS)
    both = a[["correct", "device_p50_ms", "dram_bytes"]].join(
        b[["correct", "device_p50_ms", "dram_bytes", "gpu", "gpu_uuid", "group"]],
        lsuffix="_plain",
        rsuffix="_cluster",
        how="outer",
    )
    gap_ms = (both.device_p50_ms_cluster - both.device_p50_ms_plain).abs()
    both["gap_us"] = gap_ms * 1e3
    both["gap_pct"] = 100 * gap_ms / both.device_p50_ms_plain
    both["within_noise"] = (both.gap_pct <= 5) | (both.gap_us <= 0.5)
    both["counters_both"] = both.dram_bytes_plain.notna() & both.dram_bytes_cluster.notna()
    Path(out).mkdir(parents=True, exist_ok=True)
    both.reset_index().to_csv(Path(out) / "cluster_agreement.csv", index=False)
    timed = both[both.device_p50_ms_plain.notna() & both.device_p50_ms_cluster.notna()]
    summary = {
        "plain_run": plain.run_id,
        "cluster_run": clustered.run_id,
        "cases": len(both),
        "timed_both": len(timed),
        "within_noise": int(timed.within_noise.sum()),
        "counters_both": int(both.counters_both.sum()),
        "max_gap_pct": float(timed.gap_pct.max()) if len(timed) else None,
        "median_gap_pct": float(timed.gap_pct.median()) if len(timed) else None,
        "plain_timing_wall_s": plain.manifest["timing"].get("wall_s"),
        "cluster_wall_s": clustered.manifest.get("cluster", {}).get("wall_s"),
        "cluster_counters": clustered.manifest["counters"].get("status"),
        "retried": clustered.manifest.get("cluster", {}).get("retried"),
    }
    (Path(out) / "cluster_agreement.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    print(pd.DataFrame(timed).reset_index()[[*KEYS, "gap_us", "gap_pct", "within_noise"]])
    return 0 if len(timed) and timed.within_noise.all() and both.counters_both.all() else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
