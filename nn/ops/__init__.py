"""Operators written in te, with default schedules (``nn.ops.cpu`` for x86 CPUs, ``nn.ops.gpu``
for NVIDIA GPUs)."""
