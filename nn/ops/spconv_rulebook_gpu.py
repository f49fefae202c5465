"""CUDA kernels that build sparse convolution rulebooks on the device (numba.cuda, compiled
on first use; numba's simulator when ``NUMBA_ENABLE_CUDASIM=1``). nn/spconv/rulebook_gpu.py
runs them in order.

The active sites' linearized keys go into an open-addressing hash table (``capacity`` a
power of two, linear probing, empty slots -1, inserts by ``atomic.cas``): no dense grid of
the spatial shape. These kernels are written in numba rather than te because a hash insert
is a compare-and-swap loop, which te's loop IR has no node for.

    site_keys       key of each site (-1 and ``bad`` set where it is out of range)
    insert_sites    key -> row; a key met twice sets ``bad`` (a duplicate site)
    subm_pairs      M[k, o] = the row of site o's neighbour at offset k, or -1
    conv_candidates C[k, i] = the key of the output that input i reaches at offset k, or -1
    insert_keys / bitonic_step / set_rank / decode
                    the distinct output keys listed as inserted, sorted on the device
                    (bitonic), numbered by rank
    conv_scatter    M[k, rank(C[k, i])] = i
    count_segments / scan_segments / write_pairs
                    M compacted, per offset in output order, into the padded pair lists
    slot_count / max_of / slot_fill / slot_sort
                    each row's pair positions in increasing order (the slot tables)

Every result is independent of thread timing: atomics only count, claim hash slots or
collect keys that are sorted afterwards, and slot rows are sorted after they are filled.
"""
from __future__ import annotations

import functools

from codegen_cuda.emit import simulator

__all__ = ["kernels", "THREADS"]

THREADS = 32 if simulator() else 128      # (the simulator runs each thread as a Python thread)


@functools.lru_cache(maxsize=None)
def kernels():
    """The kernels' module (numba is imported, and the kernels compiled, on first use)."""
    from . import spconv_rulebook_kernels
    return spconv_rulebook_kernels
