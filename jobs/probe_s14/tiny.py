"""One vector-add launch through the CUDA driver API (ctypes, a PTX kernel): a program that
starts in a fraction of a second, so ncu's replay-pass count can be read for many metric sets."""

import ctypes
import sys

PTX = rb"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry add(.param .u64 a, .param .u64 b, .param .u32 n)
{
  .reg .pred p; .reg .b32 r<6>; .reg .f32 f<4>; .reg .b64 rd<8>;
  ld.param.u64 rd1, [a]; ld.param.u64 rd2, [b]; ld.param.u32 r1, [n];
  mov.u32 r2, %ctaid.x; mov.u32 r3, %ntid.x; mov.u32 r4, %tid.x;
  mad.lo.s32 r5, r2, r3, r4;
  setp.ge.s32 p, r5, r1;
  @p bra DONE;
  cvta.to.global.u64 rd3, rd1; cvta.to.global.u64 rd4, rd2;
  mul.wide.s32 rd5, r5, 4;
  add.s64 rd6, rd3, rd5; add.s64 rd7, rd4, rd5;
  ld.global.f32 f1, [rd6]; ld.global.f32 f2, [rd7];
  add.f32 f3, f1, f2; st.global.f32 [rd6], f3;
DONE:
  ret;
}
"""


def check(rc, what):
    if rc != 0:
        sys.exit(f"tiny: {what} failed ({rc})")


cu = ctypes.CDLL("libcuda.so.1")
check(cu.cuInit(0), "cuInit")
dev = ctypes.c_int()
check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
mod = ctypes.c_void_p()
check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(PTX)), "cuModuleLoadData")
fn = ctypes.c_void_p()
check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"add"), "cuModuleGetFunction")
n = 1 << 22
a, b = ctypes.c_uint64(), ctypes.c_uint64()
check(cu.cuMemAlloc_v2(ctypes.byref(a), ctypes.c_size_t(n * 4)), "cuMemAlloc a")
check(cu.cuMemAlloc_v2(ctypes.byref(b), ctypes.c_size_t(n * 4)), "cuMemAlloc b")
nn = ctypes.c_uint32(n)
args = (ctypes.c_void_p * 3)(*(ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in (a, b, nn)))
check(cu.cuLaunchKernel(fn, n // 256, 1, 1, 256, 1, 1, 0, None, args, None), "cuLaunchKernel")
check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
print("tiny: ok")
