"""torch.compile for a lab baseline swept over many shapes: one graph per (dtype, shape)."""

from __future__ import annotations

from collections.abc import Callable


def compile_per_shape(fn: Callable) -> Callable:
    """dynamic=False gives each shape its own kernel; dynamo's recompile limit (default 8) is
    lifted so the later shapes of a sweep are not silently run eagerly."""
    import torch
    import torch._dynamo

    for knob in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 1024)
    return torch.compile(fn, dynamic=False)
