"""One decoder layer's decode step on a KV cache resident on the GPU, and the ways to replay it.

The step (Llama-style, no RoPE: a synthetic step, elementwise position work left out):
    h = RMSNorm(x); q, k, v = h @ Wqkv; cache[b, :, pos[b]] = k, v; a = attention(q, cache[:pos])
    x = x + a @ Wo; h = RMSNorm(x); x = x + (silu(h @ Wg) * (h @ Wu)) @ Wd
Hidden 4096, 32 heads of 128, MLP 11008 (Llama-2-7B's layer). Inputs: `x` [batch, hidden], the
cache `k_cache`/`v_cache` [rows, heads, capacity, head_dim] with rows >= batch, and `pos` [batch]:
where each row's new token goes; attention covers slots 0..pos[b] through a mask read on the device,
so the step has fixed shapes while lengths change (what lets one CUDA graph serve every step).
The step rewrites slot pos[b] and leaves pos unchanged: it is idempotent, so a thousand steps all
time "the step at cache length L".

Kernels: "eager" (unfused RMSNorm, eager attention: the baselines eager, graph, piecewise) or
"fused" (the lab's RMSNorm and attention: variants fused, graph_fused, and anything built with
norm="fused", e.g. a DynamicRunner), chosen together through KERNELS.

Runners (every one is a callable `step(i)`; capture=False runs the same code eagerly on the same
static buffers, which is how the CPU tests check the graph variants' math; only capture and replay
themselves need a GPU):
- eager: the step as PyTorch code, every op its own launch (the RMSNorms unfused);
- graph: that step captured once as a CUDA graph at fixed shapes, replayed on the current stream;
- graph_fused: the same graph built with the lab's fused kernels: the Triton RMSNorm
  (kernels/rmsnorm.py) and, since session 5, the flash-decoding attention
  (kernels/_decode_attention.py: reads only each row's pos[b] + 1 valid slots, where the eager
  attention reads the whole capacity under a mask);
- piecewise: graphs before and after attention, attention itself eager over exactly pos+1 slots
  (the part whose shape changes with the cache length), its output copied into the second graph;
- dynamic: one graph per batch bucket; each step's batch is padded to the nearest bucket (rows past
  the real batch keep stale inputs and their outputs are dropped), one stream; a host input is
  copied in through a pinned buffer (non_blocking) or straight from pageable memory.

A measured upper bound for a synthetic step, not an end-to-end serving claim.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from profkit_lab._decode_buckets import (  # noqa: F401 (re-exported)
    batch_walk,
    choose_bucket,
    default_buckets,
    padding_waste,
)

from profkit.spec import KernelSpec, Variant

EPS = 1e-6
STAGES = ("launch", "norm1", "qkv", "append", "attention", "oproj", "norm2", "mlp")


@dataclass(frozen=True)
class Dims:
    hidden: int = 4096
    heads: int = 32
    intermediate: int = 11008

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def params(self) -> int:
        h, i = self.hidden, self.intermediate
        return 3 * h * h + h * h + 3 * h * i + 2 * h


LAYER = Dims()


# ---- the step ------------------------------------------------------------------------------------


def _lab_rmsnorm():
    # looked up at call time: the lab registers kernels/ as `profkit_lab` (profkit.spec.lab_specs)
    # and may re-execute rmsnorm.py, e.g. with Triton's interpreter switched on
    return importlib.import_module("profkit_lab.rmsnorm")


def rms_eager(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return _lab_rmsnorm().rmsnorm_eager({"x": x, "w": w})


def rms_fused(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return _lab_rmsnorm().rmsnorm_triton({"x": x, "w": w, "out": torch.empty_like(x)})


Mark = Callable[[str], None]


def _no_mark(stage: str) -> None:
    return None


def pre_attention(inp: dict, norm: Callable, mark: Mark = _no_mark) -> torch.Tensor:
    """RMSNorm, QKV projection, append k and v at pos; returns q [batch, heads, head_dim]."""
    x = inp["x"]
    batch, heads = x.shape[0], inp["heads"]
    mark("launch")  # the first event on the GPU: before it, the step waited for its launch
    h = norm(x, inp["ln1"])
    mark("norm1")
    qkv = F.linear(h, inp["wqkv"]).view(batch, 3, heads, -1)
    mark("qkv")
    q, k, v = qkv.unbind(1)
    rows, pos = inp["rows"][:batch, None], inp["pos"][:, None]
    inp["k_cache"][rows, inp["head_ids"][None, :], pos] = k
    inp["v_cache"][rows, inp["head_ids"][None, :], pos] = v
    mark("append")
    return q


def attention(inp: dict, q: torch.Tensor, upto: int | None = None) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v over the cache, [batch, hidden]. upto=None: slots 0..pos[b],
    masked on the device (fixed shapes); upto=L: exactly the first L slots of every row, no mask
    (the eager piece of piecewise replay, whose shape follows the cache length)."""
    batch = q.shape[0]
    k, v = inp["k_cache"][:batch], inp["v_cache"][:batch]
    if upto is not None:
        k, v = k[:, :, :upto], v[:, :, :upto]
    q = q.unsqueeze(2) * (1.0 / math.sqrt(q.shape[-1]))
    scores = torch.matmul(q, k.transpose(-1, -2))  # [batch, heads, 1, slots]
    if upto is None:
        valid = inp["slots"][: k.shape[2]] <= inp["pos"][:, None]
        scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    p = torch.softmax(scores, dim=-1, dtype=torch.float32).to(v.dtype)
    return torch.matmul(p, v).reshape(batch, -1)


def attention_fused(inp: dict, q: torch.Tensor) -> torch.Tensor:
    """attention() (upto=None) as the lab's flash-decoding kernel: slots 0..pos[b] only."""
    lab = importlib.import_module("profkit_lab._decode_attention")
    return lab.decode_attention(q, inp["k_cache"], inp["v_cache"], inp["pos"])


NORMS = {"eager": rms_eager, "fused": rms_fused}
ATTENTION = {"eager": attention, "fused": attention_fused}
# (norm, attention) per kernel choice: the `norm=` argument of the runners picks both
KERNELS = {k: (NORMS[k], ATTENTION[k]) for k in NORMS}


def post_attention(
    inp: dict, x: torch.Tensor, a: torch.Tensor, norm: Callable, mark: Mark = _no_mark
) -> torch.Tensor:
    """Output projection and residual, RMSNorm, SwiGLU MLP and residual."""
    x = x + F.linear(a, inp["wo"])
    mark("oproj")
    h = norm(x, inp["ln2"])
    mark("norm2")
    gate, up = F.linear(h, inp["w_gate_up"]).chunk(2, dim=-1)
    x = x + F.linear(F.silu(gate) * up, inp["w_down"])
    mark("mlp")
    return x


def step(
    inp: dict, norm: Callable = rms_eager, mark: Mark = _no_mark, attn: Callable = attention
) -> torch.Tensor:
    """One decode step; returns the layer's output [batch, hidden]."""
    q = pre_attention(inp, norm, mark)
    a = attn(inp, q)
    mark("attention")
    return post_attention(inp, inp["x"], a, norm, mark)


# ---- inputs and the float64 reference ------------------------------------------------------------


def capacity_for(cache_len: int) -> int:
    """Slots for a cache of cache_len tokens plus the new one, rounded up to 16 (aligned rows)."""
    return -(-(cache_len + 1) // 16) * 16


def make_weights(dims: Dims, dtype: str, device: str, gen: torch.Generator) -> dict:
    dt = getattr(torch, dtype)

    def linear(out_f: int, in_f: int) -> torch.Tensor:
        # scaled so activations stay O(1) through the layer, as in a trained model
        w = torch.randn(out_f, in_f, generator=gen, device=device) / math.sqrt(in_f)
        return w.to(dt)

    def norm_w() -> torch.Tensor:
        return (1 + 0.1 * torch.randn(dims.hidden, generator=gen, device=device)).to(dt)

    h, i = dims.hidden, dims.intermediate
    return {
        "heads": dims.heads,
        "ln1": norm_w(),
        "wqkv": linear(3 * h, h),
        "wo": linear(h, h),
        "ln2": norm_w(),
        "w_gate_up": linear(2 * i, h),
        "w_down": linear(h, i),
    }


def make_state(
    dims: Dims,
    rows: int,
    cache_len: int,
    dtype: str,
    device: str,
    gen: torch.Generator,
    lengths: Sequence[int] | None = None,
) -> dict:
    """A filled KV cache of `rows` sequences with room for cache_len + 1 tokens, the row's next
    slots (`lengths`, default cache_len for every row), an input x for every row, index tensors."""
    dt = getattr(torch, dtype)
    cap = capacity_for(cache_len)
    shape = (rows, dims.heads, cap, dims.head_dim)
    lengths = [cache_len] * rows if lengths is None else list(lengths)
    if len(lengths) != rows or not all(0 <= n <= cache_len for n in lengths):
        raise ValueError(f"need {rows} lengths in 0..{cache_len}")
    return {
        "x": torch.randn(rows, dims.hidden, generator=gen, device=device).to(dt),
        "k_cache": torch.randn(shape, generator=gen, device=device).to(dt),
        "v_cache": torch.randn(shape, generator=gen, device=device).to(dt),
        "pos": torch.tensor(lengths, dtype=torch.int64, device=device),
        "rows": torch.arange(rows, device=device),
        "head_ids": torch.arange(dims.heads, device=device),
        "slots": torch.arange(cap, device=device),
    }


def make_inputs(
    shape, dtype: str, device: str, generator: torch.Generator, dims: Dims = LAYER
) -> dict:
    """shape = (batch, cache_len): every row has cache_len tokens cached and decodes the next."""
    batch, cache_len = shape
    weights = make_weights(dims, dtype, device, generator)
    return {**weights, **make_state(dims, batch, cache_len, dtype, device, generator)}


def _rms64(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


def reference(inputs: dict) -> torch.Tensor:
    """The step in float64 from the same inputs; the cache is copied, never written."""
    d = {
        k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v
        for k, v in inputs.items()
    }
    x, pos = d["x"], d["pos"]
    batch, heads = x.shape[0], d["heads"]
    q, k, v = (F.linear(_rms64(x, d["ln1"]), d["wqkv"])).view(batch, 3, heads, -1).unbind(1)
    kc, vc = d["k_cache"][:batch].clone(), d["v_cache"][:batch].clone()
    rows = torch.arange(batch, device=x.device)
    kc[rows, :, pos] = k
    vc[rows, :, pos] = v
    scores = torch.einsum("bhd,bhsd->bhs", q, kc) / math.sqrt(q.shape[-1])
    valid = torch.arange(kc.shape[2], device=x.device)[None, :] <= pos[:, None]
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    a = torch.einsum("bhs,bhsd->bhd", torch.softmax(scores, -1), vc).reshape(batch, -1)
    x = x + F.linear(a, d["wo"])
    gate, up = F.linear(_rms64(x, d["ln2"]), d["w_gate_up"]).chunk(2, dim=-1)
    return x + F.linear(F.silu(gate) * up, d["w_down"])


# ---- runners: eager, captured, piecewise, bucketed -----------------------------------------------


class Replay:
    """fn() over static tensors: captured once as a CUDA graph and replayed (capture=True), or run
    eagerly each call (capture=False, the CPU path). `out` is the static output."""

    def __init__(self, fn: Callable[[], torch.Tensor], capture: bool):
        self.fn, self.graph = fn, None
        if capture:
            # warm up on a side stream (Triton compiles, cuBLAS picks its kernels and workspace)
            # so nothing but the step's own launches lands in the graph
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    fn()
            torch.cuda.current_stream().wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.out = fn()
        else:
            self.out = fn()

    def __call__(self) -> torch.Tensor:
        if self.graph is None:
            self.out = self.fn()
        else:
            self.graph.replay()
        return self.out


def eager_runner(inp: dict, norm: str = "eager", mark: Mark = _no_mark) -> Callable:
    fn, attn = KERNELS[norm]
    return lambda i=0: step(inp, fn, mark, attn)


def graph_runner(inp: dict, capture: bool, norm: str = "eager", mark: Mark = _no_mark) -> Callable:
    fn, attn = KERNELS[norm]
    replay = Replay(lambda: step(inp, fn, mark, attn), capture)
    return lambda i=0: replay()


def piecewise_runner(
    inp: dict, cache_len: int, capture: bool, norm: str = "eager", mark: Mark = _no_mark
) -> Callable:
    """Graphs around attention; attention eager over exactly cache_len + 1 slots (every row's
    pos must be cache_len: the eager piece knows the length on the host, as a serving loop does).
    The attention piece is always the eager one (upto=), whatever the norm."""
    fn = NORMS[norm]
    batch = inp["x"].shape[0]
    a_static = torch.zeros(batch, inp["x"].shape[1], dtype=inp["x"].dtype, device=inp["x"].device)
    first = Replay(lambda: pre_attention(inp, fn, mark), capture)
    second = Replay(lambda: post_attention(inp, inp["x"], a_static, fn, mark), capture)

    def run(i: int = 0) -> torch.Tensor:
        q = first()
        a_static.copy_(attention(inp, q, upto=cache_len + 1))
        mark("attention")
        return second()

    return run


COPY_IN = ("pinned", "pageable")  # how a host input reaches the static device input


class DynamicRunner:
    """One graph per bucket over the first `bucket` rows of shared static buffers; a step copies its
    real rows in, replays the nearest bucket's graph and returns the first n output rows.

    An input already on the GPU is copied device to device (bench/h200_decode.py's default). A
    host input is copied as `copy_in` says (settable between steps): "pageable" copies it
    straight from pageable memory (the host waits while the driver stages it); "pinned" first
    copies it into a pinned buffer of the largest bucket's rows (allocated once), then to the
    device with non_blocking=True on the same stream, so the host returns at once and the graph
    replay queues behind the copy."""

    def __init__(
        self,
        inp: dict,
        buckets: Sequence[int],
        capture: bool,
        norm: str = "eager",
        mark: Mark = _no_mark,
        copy_in: str = "pinned",
    ):
        rows = inp["x"].shape[0]
        if max(buckets) > rows:
            raise ValueError(f"bucket {max(buckets)} exceeds the {rows} cached rows")
        self.buckets, self.mark = tuple(sorted(buckets)), mark
        self.copy_in = copy_in
        self.x = inp["x"]  # the static input: rows past a step's batch keep stale values
        pin = self.x.is_cuda  # pinning needs CUDA; on the CPU path "pinned" is a plain buffer
        self.stage = torch.empty(
            (max(self.buckets), *self.x.shape[1:]), dtype=self.x.dtype, pin_memory=pin
        )
        self.plans: dict[int, tuple[torch.Tensor, torch.Tensor, Replay]] = {}
        # the last pinned copy: the host must not overwrite the buffer before the GPU has read it
        self.copied = torch.cuda.Event() if pin else None
        fn, attn = KERNELS[norm]
        self.graphs = {}
        for b in sorted(self.buckets, reverse=True):
            view = {**inp, "x": self.x[:b], "pos": inp["pos"][:b]}
            self.graphs[b] = Replay(lambda view=view: step(view, fn, mark, attn), capture)

    def _plan(self, n: int) -> tuple[torch.Tensor, torch.Tensor, Replay]:
        """A batch of n rows: the first n rows of the static input and of the pinned stage, and
        its bucket's graph, looked up once per n: a step's copy-in runs on the host before the
        GPU can start, so its Python is latency. Raises as choose_bucket does for a bad n."""
        plan = self.plans.get(n)
        if plan is None:
            replay = self.graphs[choose_bucket(n, self.buckets)]
            plan = self.plans[n] = (self.x[:n], self.stage[:n], replay)
        return plan

    def _copy(self, x_real: torch.Tensor, dst: torch.Tensor, stage: torch.Tensor) -> None:
        if x_real.is_cuda or self.copy_in == "pageable":
            dst.copy_(x_real)
        elif self.copy_in == "pinned":
            if self.copied is not None:
                self.copied.synchronize()  # done already when each step ends in a synchronize
            stage.copy_(x_real)
            dst.copy_(stage, non_blocking=True)
            if self.copied is not None:
                self.copied.record()
        else:
            raise ValueError(f"copy_in must be one of {', '.join(COPY_IN)}, got {self.copy_in!r}")

    def __call__(self, x_real: torch.Tensor) -> torch.Tensor:
        n = x_real.shape[0]
        dst, stage, replay = self._plan(n)
        self._copy(x_real, dst, stage)
        self.mark("copy_in")
        return replay()[:n]


FIXED = ("eager", "fused", "graph", "graph_fused", "piecewise")  # one shape per case


def build(variant: str, inp: dict, cache_len: int, capture: bool, mark: Mark = _no_mark):
    """A fixed-shape variant's step(i) over inp (every row at cache_len)."""
    if variant == "eager":
        return eager_runner(inp, "eager", mark)
    if variant == "fused":
        return eager_runner(inp, "fused", mark)
    if variant == "graph":
        return graph_runner(inp, capture, "eager", mark)
    if variant == "graph_fused":
        return graph_runner(inp, capture, "fused", mark)
    if variant == "piecewise":
        return piecewise_runner(inp, cache_len, capture, "eager", mark)
    raise ValueError(f"unknown variant {variant!r}; known: {', '.join(FIXED)}, dynamic")


def select_rows(inp: dict, rows: Sequence[int]) -> dict:
    """The inputs of some rows only (rows are independent in the step): what the float64
    reference is computed on when the whole batch's cache would be too large to copy."""
    idx = torch.as_tensor(list(rows), device=inp["x"].device)
    picked = {k: inp[k][idx] for k in ("x", "pos", "k_cache", "v_cache")}
    return {**inp, **picked}


# ---- the spec: `profkit capture decode`, and the counter pass's worker ---------------------------


def _bytes_moved(shape, itemsize: int) -> int:
    """Weights once, the cache read up to pos (k and v), x in and out."""
    batch, cache_len = shape
    kv = 2 * batch * (cache_len + 1) * LAYER.hidden
    return (LAYER.params + kv + 2 * batch * LAYER.hidden) * itemsize


def _flops(shape) -> int:
    batch, cache_len = shape
    return 2 * batch * LAYER.params + 4 * batch * (cache_len + 1) * LAYER.hidden


SPEC = KernelSpec(
    name="decode",
    description="one decoder layer's decode step on a resident KV cache (shape: batch x cache len)",
    variants=(
        Variant(
            "fused",
            lambda inp: step(inp, rms_fused, attn=attention_fused),
            description="the step with the lab's fused Triton RMSNorm and decode attention",
        ),
        Variant(
            "eager",
            lambda inp: step(inp, rms_eager),
            baseline=True,
            description="the step in eager PyTorch, unfused RMSNorm",
        ),
    ),
    make_inputs=make_inputs,
    reference=reference,
    # the decode dtypes; float32 (tolerances below) stays available for CPU checks
    dtypes=("bfloat16", "float16"),
    # a default `profkit capture decode` stays small (each step is ~30 launches under ncu); the
    # full sweep is bench/h200_decode.py's
    shapes=((1, 512), (1, 8192), (64, 2048)),
    # output rounding of a residual stream of O(1) values after three matmuls over 4096-11008
    # products (bf16 ulp 2^-8, fp16 2^-11); fp32 on the GPU may run matmuls in TF32
    tolerances={"bfloat16": (1e-1, 5e-2), "float16": (2e-2, 1e-2), "float32": (1e-2, 1e-2)},
    bytes_moved=_bytes_moved,
    flops=_flops,
    interpret_shapes=((1, 16), (2, 33)),
)
