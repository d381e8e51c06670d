"""Flash-decoding attention for the decode step (kernels/decode.py, issue 11, session 5).

One query token per row against a KV cache [rows, heads, capacity, head_dim] whose row b holds
pos[b] + 1 valid slots (the new token at pos[b]). Two launches:
- split: grid (batch, heads, splits); each program walks its share of the slots in BLOCK_N
  blocks, but only those below pos[b] + 1 (the loop bound is read on the device: the kernel reads
  the valid slots only, and the grid never depends on the lengths, so one CUDA graph serves every
  length). Online softmax in fp32 (running max m, sum l, accumulator acc), written to an fp32
  workspace; a split that starts past the row's length writes m = -inf, l = 0, acc = 0.
- combine: grid (batch, heads); rescales each split's (l, acc) by exp(m_s - max m) and divides.
  With one split (batch x heads alone fills the SMs) the split kernel divides and writes the
  output itself (DIRECT): one launch, no workspace.
  Split 0 always holds slot 0, so the max is finite; empty splits weigh exp(-inf) = 0, never NaN.
Splits come from the capacity and batch x heads only (launch_config): enough programs to fill the
132 SMs a few times over at batch 1, one split per (row, head) once batch x heads alone does.
The leading underscore keeps the file out of the lab's spec listing (profkit.spec.lab_files): it
holds kernels, no KernelSpec; decode.py imports it as profkit_lab._decode_attention.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
SMS = 132  # H200; the split count only needs the order of magnitude
# programs per SM the split rule aims for: 16 beat 4 at 15 of 16 probed shapes (session 5,
# bench/results/h200-20261130-s5/call3/attn5: 24x2048 ragged 202.7 against 257.7 us)
WAVES = 16


@triton.jit
def _split_kernel(
    Q, K, V, POS, M, L, ACC, OUT, so_b,
    sq_b, sq_h,
    sk_b, sk_h, sk_s,
    sv_b, sv_h, sv_s,
    chunk, scale_log2, heads, splits,
    D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr, DIRECT: tl.constexpr,
):  # fmt: skip
    b = tl.program_id(0)
    h = tl.program_id(1)
    s = tl.program_id(2)
    length = tl.load(POS + b).to(tl.int32) + 1
    lo = s * chunk
    hi = tl.minimum(lo + chunk, length)  # <= lo for a split past the row's length: no iterations
    d = tl.arange(0, BLOCK_D)
    dmask = d < D
    q = tl.load(Q + b.to(tl.int64) * sq_b + h * sq_h + d, mask=dmask, other=0.0).to(tl.float32)
    q = q * scale_log2  # scores in the log2 domain: exp2 below
    k_base = K + b.to(tl.int64) * sk_b + h.to(tl.int64) * sk_h
    v_base = V + b.to(tl.int64) * sv_b + h.to(tl.int64) * sv_h
    m = tl.full((), float("-inf"), tl.float32)
    l = tl.zeros((), tl.float32)  # noqa: E741
    acc = tl.zeros((BLOCK_D,), tl.float32)
    n = tl.arange(0, BLOCK_N)
    for start in range(lo, hi, BLOCK_N):
        slots = start + n
        smask = slots < hi
        mask2 = smask[:, None] & dmask[None, :]
        # both tiles issued before any math: twice the bytes in flight per program
        k = tl.load(k_base + slots[:, None] * sk_s + d[None, :], mask=mask2, other=0.0)
        v = tl.load(v_base + slots[:, None] * sv_s + d[None, :], mask=mask2, other=0.0)
        qk = tl.sum(q[None, :] * k.to(tl.float32), axis=1)
        qk = tl.where(smask, qk, float("-inf"))
        m_new = tl.maximum(m, tl.max(qk, axis=0))  # finite: the block holds a valid slot
        alpha = tl.exp2(m - m_new)  # exp2(-inf) = 0 on the first block
        p = tl.exp2(qk - m_new)
        l = l * alpha + tl.sum(p, axis=0)  # noqa: E741
        acc = acc * alpha + tl.sum(p[:, None] * v.to(tl.float32), axis=0)
        m = m_new
    if DIRECT:  # one split: it holds every valid slot (l > 0), so no combine is needed
        o = OUT + b.to(tl.int64) * so_b + h * D + d
        tl.store(o, (acc / l).to(OUT.dtype.element_ty), mask=dmask)
    else:
        row = (b * heads + h) * splits + s
        tl.store(M + row, m)
        tl.store(L + row, l)
        tl.store(ACC + row.to(tl.int64) * BLOCK_D + d, acc)


@triton.jit
def _combine_kernel(
    M, L, ACC, POS, OUT, so_b, chunk, heads, splits,
    BLOCK_S: tl.constexpr, D: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    b = tl.program_id(0)
    h = tl.program_id(1)
    length = tl.load(POS + b).to(tl.int32) + 1
    s = tl.arange(0, BLOCK_S)
    # only the splits that start inside the row: the others were written as empty, and skipping
    # them keeps a stale workspace (or a split count padded to BLOCK_S) out of the sum
    live = (s < splits) & (s * chunk < length)
    row = (b * heads + h) * splits + s
    m = tl.load(M + row, mask=live, other=float("-inf"))
    l = tl.load(L + row, mask=live, other=0.0)  # noqa: E741
    m_max = tl.max(m, axis=0)  # split 0 is always live and non-empty: finite
    w = tl.where(live, tl.exp2(m - m_max), 0.0)
    d = tl.arange(0, BLOCK_D)
    acc = tl.load(
        ACC + row[:, None].to(tl.int64) * BLOCK_D + d[None, :], mask=live[:, None], other=0.0
    )
    out = tl.sum(w[:, None] * acc, axis=0) / tl.sum(w * l, axis=0)
    o = OUT + b.to(tl.int64) * so_b + h * D + d
    tl.store(o, out.to(OUT.dtype.element_ty), mask=d < D)


def launch_config(
    batch: int, heads: int, capacity: int, head_dim: int, waves: int = WAVES, block_n: int = 64
) -> tuple[int, int, int, int]:
    """(block_n, splits, warps, stages) from shapes only (graph-safe: never the lengths).
    Splits: enough (batch, head, split) programs for `waves` per SM, each split at least 2 blocks
    (a shorter one spends more on its prologue and the combine than on reading). BLOCK_N 64 at
    head_dim 128: a 16 KB K tile and a 16 KB V tile in flight per program and iteration over 4
    warps (64 values of each per thread)."""
    blocks = -(-capacity // block_n)
    want = -(-(SMS * waves) // (batch * heads))
    splits = max(1, min(want, blocks // 2))
    return block_n, splits, 4, 2


def decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    pos: torch.Tensor,
    config: tuple[int, int, int, int] | None = None,
) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v over slots 0..pos[b] of rows 0..batch-1: [batch, heads * d].
    q [batch, heads, d]; k_cache, v_cache [rows >= batch, heads, capacity, d] with unit stride
    along d; pos [batch] int64 on the device. config: launch_config's tuple, for tests/probes."""
    batch, heads, dim = q.shape
    capacity = k_cache.shape[2]
    block_n, splits, warps, stages = config or launch_config(batch, heads, capacity, dim)
    # slots per split: a whole number of blocks, so only the row's last block is ragged
    per_split = triton.cdiv(capacity, splits)
    chunk = triton.cdiv(per_split, block_n) * block_n
    splits = triton.cdiv(capacity, chunk)
    block_d = triton.next_power_of_2(dim)
    assert q.stride(-1) == k_cache.stride(-1) == v_cache.stride(-1) == 1
    dev = q.device
    # one split writes `out` directly: a 1-entry workspace (no null pointer handed to the launcher)
    work = 1 if splits == 1 else batch * heads * splits
    m = torch.empty(work, dtype=torch.float32, device=dev)
    l = torch.empty_like(m)  # noqa: E741
    acc = torch.empty(work, block_d, dtype=torch.float32, device=dev)
    out = torch.empty(batch, heads * dim, dtype=q.dtype, device=dev)
    scale_log2 = LOG2E / math.sqrt(dim)
    _split_kernel[(batch, heads, splits)](
        q, k_cache, v_cache, pos, m, l, acc, out, out.stride(0),
        q.stride(0), q.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        chunk, scale_log2, heads, splits,
        D=dim, BLOCK_D=block_d, BLOCK_N=block_n, DIRECT=splits == 1,
        num_warps=warps, num_stages=stages,
    )  # fmt: skip
    if splits == 1:
        return out
    _combine_kernel[(batch, heads)](
        m, l, acc, pos, out, out.stride(0), chunk, heads, splits,
        BLOCK_S=triton.next_power_of_2(splits), D=dim,
        BLOCK_D=block_d, num_warps=4,
    )  # fmt: skip
    return out


def reference(q, k_cache, v_cache, pos) -> torch.Tensor:
    """float64 attention over slots 0..pos[b]: [batch, heads * d]."""
    batch = q.shape[0]
    q, k, v = q.double(), k_cache[:batch].double(), v_cache[:batch].double()
    scores = torch.einsum("bhd,bhsd->bhs", q, k) / math.sqrt(q.shape[-1])
    valid = torch.arange(k.shape[2], device=q.device)[None, :] <= pos[:, None]
    scores = scores.masked_fill(~valid[:, None, :], float("-inf"))
    return torch.einsum("bhs,bhsd->bhd", torch.softmax(scores, -1), v).reshape(batch, -1)
