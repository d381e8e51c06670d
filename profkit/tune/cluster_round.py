"""One tune round as a Dask sweep: each configuration its own case group (profkit.cluster's
groups are a whole (dtype, shape); a round is one case of many configurations), so the round's
configurations spread over the workers; stored as the cluster stores a capture."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console

from profkit import cluster
from profkit.capture import CaptureOptions, check_names
from profkit.spec import KernelSpec, format_shape


@dataclass(frozen=True)
class ConfigGroup(cluster.Group):
    @property
    def name(self) -> str:
        return f"{self.kernel}/{self.dtype}/{format_shape(self.shape)}/{self.opts.variants[0]}"


def cluster_round(
    spec: KernelSpec, opts: CaptureOptions, address: str, workers: int | None, console: Console
) -> Path:
    check_names(spec)
    (dtype,), (shape,) = opts.dtypes, opts.shapes
    groups = [
        ConfigGroup(spec.name, dtype, shape, replace(opts, variants=(v,), case_offset=i))
        for i, v in enumerate(opts.variants)
    ]
    with cluster._ctrl_c_deferred() as interrupted:  # Ctrl-C: the cluster closed in order
        client, dask_cluster = cluster._connect(address, workers, opts.interpret)
        try:
            started = time.perf_counter()
            before = cluster._workers(client)
            console.print(f"cluster: {len(groups)} configuration(s) over {len(before)} worker(s)")
            done, attempts = cluster.run_groups(client, groups, console, interrupted)
            wall_s = round(time.perf_counter() - started, 1)
            now = cluster._workers(client)
        finally:
            client.close()
            if dask_cluster is not None:
                dask_cluster.close()
    gone = set(before) - set(now)
    block = {
        "scheduler": "local (127.0.0.1)" if address == "local" else address,
        "wall_s": wall_s,
        "workers": cluster._worker_block(groups, done),
        "groups": [g.name for g in groups],
        "retried": cluster.retried(groups, done, attempts, gone),
    }
    return cluster.store_run(spec, opts, [done[g.name] for g in groups], block)
