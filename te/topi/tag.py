"""The tags TVM's operators put on their compute ops (``op.tag``), which schedules read to tell
an elementwise stage (inline it) from a reduction (schedule it)."""

ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"


def is_broadcast(tag: str) -> bool:
    """Whether ``tag`` marks an elementwise or broadcast op (a ``tag,rest`` tag counts too)."""
    head = tag.split(",")[0]
    return head in (ELEMWISE, BROADCAST)


def is_injective(tag: str) -> bool:
    """Whether ``tag`` marks an op whose every output element reads its inputs once, at an
    index of its own: elementwise, broadcast and layout ops (``injective,...``)."""
    head = tag.split(",")[0]
    return head in (ELEMWISE, BROADCAST, INJECTIVE)
