"""Process groups over MPI, as ``torch.distributed`` has them: ``init_process_group("mpi")``
takes the rank and world size from ``MPI.COMM_WORLD`` (started by ``mpiexec`` or, as a world
of one, by a plain ``python``); ``new_group(ranks)`` splits off a communicator of some ranks.

mpi4py is imported on first use, not with ``nn``: importing it initializes MPI, and a process
that never asks for a process group pays nothing. A group holds its MPI communicator and the
world ranks of its members; ranks passed to collectives (``src``, ``dst``) are world ranks, as
in PyTorch, and are translated here.
"""
from __future__ import annotations

__all__ = ["Backend", "ProcessGroup", "GroupMember", "init_process_group",
           "destroy_process_group", "is_available", "is_mpi_available", "is_initialized",
           "get_rank", "get_world_size", "get_backend", "new_group", "get_process_group_ranks",
           "get_global_rank", "get_group_rank", "barrier", "mpi"]

MISSING = ("nn.distributed needs mpi4py and an MPI library; install them with "
           "pip install -e \".[distributed]\" (mpi4py and the mpich wheel, which brings mpiexec)")


_MPI = []                       # the mpi4py.MPI module once imported


def mpi():
    """The ``mpi4py.MPI`` module, or an ImportError that names the extra to install."""
    if _MPI:
        return _MPI[0]
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise ImportError(f"{MISSING} ({err})") from None
    _MPI.append(MPI)
    return MPI


def is_mpi_available() -> bool:
    """Whether mpi4py imports (the MPI backend can be used)."""
    try:
        mpi()
    except ImportError:
        return False
    return True


def is_available() -> bool:
    """Whether the distributed package is available (always: its backend may not be)."""
    return True


class Backend(str):
    """The name of a backend; only ``"mpi"`` exists here."""
    MPI = "mpi"


class ProcessGroup:
    """Some processes of the world and the MPI communicator that connects them."""

    def __init__(self, comm, ranks):
        self.comm = comm
        self.ranks = tuple(ranks)           # world rank of each member, in group-rank order

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def group_rank(self, world_rank, what="rank"):
        """The rank in this group of world rank ``world_rank``; ValueError if not a member."""
        try:
            return self.ranks.index(int(world_rank))
        except ValueError:
            raise ValueError(f"{what}={world_rank} is not a rank of this process group (its "
                             f"world ranks are {list(self.ranks)})") from None

    def __repr__(self):
        return f"ProcessGroup(backend='mpi', ranks={list(self.ranks)})"


class GroupMember:
    """``GroupMember.WORLD``: the default group once initialized; ``NON_GROUP_MEMBER``: what
    ``new_group`` returns on the processes outside it."""
    WORLD = None
    NON_GROUP_MEMBER = object()


def init_process_group(backend="mpi", init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the default process group: every process started by ``mpiexec`` (rank and world
    size from MPI; ``world_size``/``rank``, when given, must agree with MPI's)."""
    if GroupMember.WORLD is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    if str(backend).lower() != Backend.MPI:
        raise ValueError(f"init_process_group: backend must be 'mpi' (the only backend here; "
                         f"gloo and nccl are not provided), got {backend!r}")
    comm = mpi().COMM_WORLD
    for name, given, actual in (("world_size", world_size, comm.Get_size()),
                                ("rank", rank, comm.Get_rank())):
        if given not in (-1, None) and int(given) != actual:
            raise ValueError(f"init_process_group: {name}={given}, but MPI says {actual} (with "
                             f"the mpi backend, mpiexec decides ranks; leave {name} out)")
    GroupMember.WORLD = ProcessGroup(comm.Dup(), range(comm.Get_size()))


def destroy_process_group(group=None):
    """Leave ``group`` (default: the default group, after which collectives need a new
    ``init_process_group``)."""
    if group is None or group is GroupMember.WORLD:
        world = GroupMember.WORLD
        if world is not None:
            world.comm.Free()
        GroupMember.WORLD = None
    elif group is not GroupMember.NON_GROUP_MEMBER:
        group.comm.Free()


def is_initialized() -> bool:
    """Whether the default process group exists."""
    return GroupMember.WORLD is not None


def _world(what):
    if GroupMember.WORLD is None:
        raise RuntimeError(f"Default process group has not been initialized, please make sure to "
                           f"call init_process_group. ({what} was called before "
                           f"nn.distributed.init_process_group(\"mpi\"))")
    return GroupMember.WORLD


def resolve(group, what):
    """``group``, or the default group; errors before init and on non-members."""
    world = _world(what)
    if group is None:
        return world
    if group is GroupMember.NON_GROUP_MEMBER:
        raise RuntimeError(f"{what}: this process is not a member of the group")
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"{what}: group must be a ProcessGroup from new_group() or None, got "
                        f"{type(group).__name__}")
    return group


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (-1 if it is not a member)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve(group, "get_rank").rank()


def get_world_size(group=None) -> int:
    """The number of processes in ``group`` (-1 if this process is not a member)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve(group, "get_world_size").size()


def get_backend(group=None) -> str:
    resolve(group, "get_backend")
    return Backend.MPI


def new_group(ranks=None, timeout=None, backend=None, pg_options=None):
    """A group of the world ranks ``ranks`` (default: all). Every process of the world must
    call it, members or not (MPI creates communicators collectively); non-members get
    ``GroupMember.NON_GROUP_MEMBER``."""
    world = _world("new_group")
    size = world.size()
    members = sorted(range(size)) if ranks is None else sorted({int(r) for r in ranks})
    for r in members:
        if not 0 <= r < size:
            raise ValueError(f"new_group: rank {r} is out of range for a world of {size} "
                             "processes")
    if not members:
        raise ValueError("new_group: ranks must name at least one process")
    inside = world.rank() in members
    comm = world.comm.Split(0 if inside else mpi().UNDEFINED, members.index(world.rank())
                            if inside else 0)
    return ProcessGroup(comm, members) if inside else GroupMember.NON_GROUP_MEMBER


def get_process_group_ranks(group) -> list:
    """The world ranks of ``group``'s members."""
    return list(resolve(group, "get_process_group_ranks").ranks)


def get_global_rank(group, group_rank) -> int:
    """The world rank of the member ``group_rank`` of ``group``."""
    return resolve(group, "get_global_rank").ranks[group_rank]


def get_group_rank(group, global_rank) -> int:
    """The rank in ``group`` of world rank ``global_rank``."""
    return resolve(group, "get_group_rank").group_rank(global_rank, "global_rank")


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every process of ``group`` reaches this call."""
    g = resolve(group, "barrier")
    if async_op:
        from .collectives import Work
        return Work(g.comm.Ibarrier())
    g.comm.Barrier()
    return None
