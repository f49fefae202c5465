"""What the CUDA emitter's modules (emit.py, emit_expr.py, emit_stmt.py) share: the numba
type of each dtype and ``CudaCodegenError``.
"""
from __future__ import annotations

from schedule.stage import ScheduleError


NUMBA_TYPE = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8",
              "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
              "uint32": "u32", "uint64": "u64", "bool": "b1"}


class CudaCodegenError(ScheduleError):
    """A schedule that cannot run as CUDA kernels; the message says what to change."""
