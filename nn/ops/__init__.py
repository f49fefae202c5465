"""Operators written in te, with default schedules (``nn.ops.gpu`` for NVIDIA GPUs)."""
