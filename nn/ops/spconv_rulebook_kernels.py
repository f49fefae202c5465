"""The numba.cuda kernels of nn/ops/spconv_rulebook_gpu.py (described there). This module
imports numba: it is imported on the first GPU rulebook, after NUMBA_ENABLE_CUDASIM is set.
On the simulator the kernels run on ``codegen_cuda.simulate`` (a thread at a time; their
atomics and probing loops wait for no other thread)."""
from codegen_cuda.emit import simulator

if simulator():
    from codegen_cuda.simulate import SimulatedCuda
    cuda = SimulatedCuda()
else:
    from numba import cuda


@cuda.jit(device=True)
def slot_of(key, mask):
    lo = key & 0x7FFFFFFF
    hi = key >> 31
    return (((lo * 2654435761) >> 16) + hi * 40503) & mask


@cuda.jit(device=True)
def find(tkeys, key, mask):
    h = slot_of(key, mask)
    while True:
        t = tkeys[h]
        if t == key:
            return h
        if t == -1:
            return -1
        h = (h + 1) & mask


@cuda.jit
def site_keys(indices, shape, batch_size, keys, bad):
    i = cuda.grid(1)
    if i < keys.shape[0]:
        key = indices[i, 0] + 0 * shape[0]              # int64
        ok = key >= 0 and key < batch_size
        for d in range(shape.shape[0]):
            c = indices[i, d + 1]
            if c < 0 or c >= shape[d]:
                ok = False
            key = key * shape[d] + c
        if ok:
            keys[i] = key
        else:
            keys[i] = -1
            bad[0] = 1


@cuda.jit
def insert_sites(keys, tkeys, tvals, mask, bad):
    i = cuda.grid(1)
    if i < keys.shape[0]:
        key = keys[i]
        if key < 0:
            return
        h = slot_of(key, mask)
        while True:
            old = cuda.atomic.cas(tkeys, h, -1, key)
            if old == -1:
                tvals[h] = i
                return
            if old == key:
                bad[0] = 1
                return
            h = (h + 1) & mask


@cuda.jit
def insert_keys(keys, tkeys, mask, distinct, count):
    t = cuda.grid(1)
    if t < keys.shape[0] * keys.shape[1]:
        key = keys[t // keys.shape[1], t % keys.shape[1]]
        if key < 0:
            return
        h = slot_of(key, mask)
        while True:
            old = cuda.atomic.cas(tkeys, h, -1, key)
            if old == -1:                   # a new key: listed (in any order; sorted later)
                distinct[cuda.atomic.add(count, 0, 1)] = key
                return
            if old == key:
                return
            h = (h + 1) & mask


@cuda.jit
def subm_pairs(indices, shape, offsets, centre, dilation, tkeys, tvals, mask, m):
    t = cuda.grid(1)
    n = m.shape[1]
    if t < m.shape[0] * n:
        k, o = t // n, t % n
        key = indices[o, 0] + 0 * shape[0]
        ok = True
        for d in range(shape.shape[0]):
            c = indices[o, d + 1] + (offsets[k, d] - centre[d]) * dilation[d]
            if c < 0 or c >= shape[d]:
                ok = False
            key = key * shape[d] + c
        row = -1
        if ok:
            h = find(tkeys, key, mask)
            if h >= 0:
                row = tvals[h]
        m[k, o] = row


@cuda.jit
def conv_candidates(indices, out_shape, offsets, stride, padding, dilation, transposed,
                    cand):
    t = cuda.grid(1)
    n = cand.shape[1]
    if t < cand.shape[0] * n:
        k, i = t // n, t % n
        key = indices[i, 0] + 0 * out_shape[0]
        ok = True
        for d in range(out_shape.shape[0]):
            x = indices[i, d + 1]
            if transposed:
                o = x * stride[d] - padding[d] + offsets[k, d] * dilation[d]
            else:
                num = x + padding[d] - offsets[k, d] * dilation[d]
                if num < 0 or num % stride[d] != 0:
                    ok = False
                    num = 0
                o = num // stride[d]
            if o < 0 or o >= out_shape[d]:
                ok = False
            key = key * out_shape[d] + o
        cand[k, i] = key if ok else -1


@cuda.jit
def bitonic_step(a, j, k):
    i = cuda.grid(1)
    if i < a.shape[0]:
        l = i ^ j
        if l > i:
            x, y = a[i], a[l]
            if ((i & k) == 0 and x > y) or ((i & k) != 0 and x < y):
                a[i], a[l] = y, x


@cuda.jit
def set_rank(keys, n, tkeys, tvals, mask):
    r = cuda.grid(1)
    if r < n:
        tvals[find(tkeys, keys[r], mask)] = r


@cuda.jit
def decode(keys, shape, out):
    r = cuda.grid(1)
    if r < out.shape[0]:
        key = keys[r]
        for e in range(shape.shape[0]):
            d = shape.shape[0] - 1 - e
            out[r, d + 1] = key % shape[d]
            key = key // shape[d]
        out[r, 0] = key


@cuda.jit
def conv_scatter(cand, tkeys, tvals, mask, m):
    t = cuda.grid(1)
    n = cand.shape[1]
    if t < cand.shape[0] * n:
        k, i = t // n, t % n
        key = cand[k, i]
        if key >= 0:
            m[k, tvals[find(tkeys, key, mask)]] = i


@cuda.jit
def fill(a, value):
    i = cuda.grid(1)
    if i < a.shape[0]:
        a[i] = value


@cuda.jit
def count_segments(m, seg, counts):
    t = cuda.grid(1)
    nseg = counts.shape[1]
    if t < counts.shape[0] * nseg:
        k, s = t // nseg, t % nseg
        c = 0
        for o in range(s * seg, min(m.shape[1], (s + 1) * seg)):
            if m[k, o] >= 0:
                c += 1
        counts[k, s] = c


@cuda.jit
def scan_segments(counts, totals):
    k = cuda.grid(1)
    if k < counts.shape[0]:
        run = 0
        for s in range(counts.shape[1]):
            c = counts[k, s]
            counts[k, s] = run
            run += c
        totals[k] = run


@cuda.jit
def write_pairs(m, seg, counts, starts, pair_in, pair_out):
    t = cuda.grid(1)
    nseg = counts.shape[1]
    if t < counts.shape[0] * nseg:
        k, s = t // nseg, t % nseg
        p = starts[k] + counts[k, s]
        for o in range(s * seg, min(m.shape[1], (s + 1) * seg)):
            j = m[k, o]
            if j >= 0:
                pair_in[p] = j
                pair_out[p] = o
                p += 1


@cuda.jit
def clamp0(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = max(a[i], 0)


@cuda.jit
def slot_count(rows, counts):
    p = cuda.grid(1)
    if p < rows.shape[0] and rows[p] >= 0:
        cuda.atomic.add(counts, rows[p], 1)


@cuda.jit
def max_of(counts, out):
    i = cuda.grid(1)
    if i < counts.shape[0]:
        cuda.atomic.max(out, 0, counts[i])


@cuda.jit
def slot_fill(rows, fill_counts, table):
    p = cuda.grid(1)
    if p < rows.shape[0] and rows[p] >= 0:
        j = cuda.atomic.add(fill_counts, rows[p], 1)
        table[rows[p], j] = p


@cuda.jit
def slot_sort(table, counts):
    r = cuda.grid(1)
    if r < table.shape[0]:
        for a in range(1, counts[r]):
            v = table[r, a]
            b = a - 1
            while b >= 0 and table[r, b] > v:
                table[r, b + 1] = table[r, b]
                b -= 1
            table[r, b + 1] = v
