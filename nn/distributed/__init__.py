"""nn.distributed: data-parallel training over MPI, as ``torch.distributed``.

Start the processes with ``mpiexec -n 4 python train.py`` (the mpich wheel of the
``distributed`` extra puts ``mpiexec`` in the virtual environment) or with
``python -m nn.distributed.run -n 4 train.py``; each calls ``init_process_group("mpi")``.
``process_group`` has the process groups, ``collectives`` the collectives on tensors (each
``async_op=True`` returns a ``Work``) and on picklable objects. Nothing imports mpi4py (which
initializes MPI) until a process group is asked for.
"""
from .collectives import (ReduceOp, Work, all_gather, all_gather_into_tensor,  # noqa: F401
                          all_gather_object, all_reduce, all_to_all_single, broadcast,
                          broadcast_object_list, gather, gather_object, reduce, reduce_scatter,
                          reduce_scatter_tensor, scatter, scatter_object_list)
from .process_group import (Backend, GroupMember, ProcessGroup, barrier,  # noqa: F401
                    destroy_process_group, get_backend, get_global_rank, get_group_rank,
                    get_process_group_ranks, get_rank, get_world_size, init_process_group,
                    is_available, is_initialized, is_mpi_available, new_group)

group = GroupMember          # torch.distributed.group.WORLD

__all__ = ["init_process_group", "destroy_process_group", "is_available", "is_mpi_available",
           "is_initialized", "get_rank", "get_world_size", "get_backend", "new_group",
           "get_process_group_ranks", "get_global_rank", "get_group_rank", "barrier",
           "ReduceOp", "Work", "ProcessGroup", "Backend", "GroupMember", "group", "all_reduce",
           "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "gather", "scatter", "all_to_all_single",
           "all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list"]
