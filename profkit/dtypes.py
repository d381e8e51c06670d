"""The dtype words a user may type (`--dtype bf16`, `explain --case fp16`) and the torch dtype
names they stand for. A leaf: the lab's specs and explain both read it."""

from __future__ import annotations

DTYPE_ALIASES = {
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "float": "float32",
    "fp64": "float64",
    "double": "float64",
    "fp8": "float8_e4m3fn",
    "e4m3": "float8_e4m3fn",
    "fp8_e4m3": "float8_e4m3fn",
    "float8_e4m3": "float8_e4m3fn",
    "e5m2": "float8_e5m2",
    "fp8_e5m2": "float8_e5m2",
    "i8": "int8",
}
