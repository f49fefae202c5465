"""Fuzz case 101488: broadcast, cache_read, cache_write, cast, compute_at, dims3, divmod_index, fdiv, floordiv, fuse, gather, if_then_else, index_value, minmax, padded, parallel, reduce, reduce_min, size0, size1, stage_stencil, stencil, storage_align, transpose, unroll, var_int32.

Run it from the repository root: python <this file> (prints the outcome)."""
import sys, os
sys.path.insert(0, os.environ.get("TW_ROOT", "."))
os.environ.setdefault("TW_VERIFY", "1")     # IR checked between passes, as in CI
import numpy as np
import te
from tests.fuzz import harness as H
from tests.fuzz.gen import r_leaf

n0 = te.var('n0', 'int32')
A0 = te.placeholder((0, 1, 2, 5, ), 'int64', name='A0')
A1 = te.placeholder((5, 1, ), 'int16', name='A1')
A2 = te.placeholder((2, 5, 0, 1, ), 'float32', name='A2')
A3 = te.placeholder((5, 1, 0, 2, ), 'int16', name='A3')
I4 = te.placeholder((2, ), 'int32', name='I4')
A5 = te.placeholder((17, ), 'float32', name='A5')
A6 = te.placeholder((1, 2, 5, ), 'float32', name='A6')
I7 = te.placeholder((5, ), 'int32', name='I7')
A8 = te.placeholder((n0, ), 'float32', name='A8')
A9 = te.placeholder((3, ), 'float32', name='A9')
A10 = te.placeholder((1, 2 + 1, 5, ), 'int16', name='A10')
A11 = te.placeholder((1, 2 + 2, 5, ), 'int8', name='A11')
A12 = te.placeholder((1, 2, 5, ), 'int32', name='A12')
A13 = te.placeholder((4, ), 'uint8', name='A13')
I14 = te.placeholder((1, ), 'int32', name='I14')
A15 = te.placeholder((1, ), 'float32', name='A15')
k = te.reduce_axis((0, 0), name='k')
C = te.compute((1, 2, 5, ), lambda i0, i1, i2: te.min((te.if_then_else((A0[k, i0, i1, i2].astype('int16') <= A1[i2, i0]), A2[i1, i2, k, i0], i2.astype('float32')) / (te.abs((te.const(1, 'int32').astype('float32') * A3[i2, i0, k, i1].astype('float64').astype('float32'))) + te.const(1.0, 'float32'))), axis=k), name='C')
B = te.compute((1, 2, 5, ), lambda i0, i1, i2: te.if_then_else((te.const(255, 'uint8')).equal(te.if_then_else((te.min(A10[i0, i1 + 1, i2], A11[i0, i1 + 0, i2].astype('int16')) >= te.if_then_else(te.all(i0 + 2 >= 0, i0 + 2 < 1), A12[i0 + 2, i1, i2], te.const(-18, 'int32')).astype('int16')), te.min(te.max(((te.if_then_else(te.all(i2 + 1 >= 0, i2 + 1 < 5), C[i0, i1, i2 + 1], te.const(-0.5, 'float32')).astype('float64') + te.const(16, 'uint8')) * te.const(0.0, 'float64')), te.const(0.0, 'float64')), te.const(255.0, 'float64')).astype('uint8'), te.min(te.max((te.if_then_else(te.all(i2 + 1 >= 0, i2 + 1 < 5), C[i0, i1, i2 + 1], te.const(2.5, 'float32')) * te.const(0.0, 'float32')), te.const(-1000.0, 'float32')), te.const(1000.0, 'float32')).astype('int32')).astype('uint8')), te.min(te.max((C[i0, i1, i2] * te.const(0.0, 'float32')), te.const(-1000.0, 'float32')), te.const(1000.0, 'float32')).astype('int64'), te.max(te.floordiv(A13[i0 % 4], te.const(3, 'uint8')), te.min(te.max(A15[I14[i0]], te.const(0.0, 'float32')), te.const(255.0, 'float32')).astype('uint8'))), name='B')
s = te.create_schedule(B.op)
# the schedule
A11_r = s.cache_read(A11, 'local', [B])
B_c = s.cache_write(B, 'local')
s[C].storage_align(s[C].op.axis[0], 16, 10)
s[C].fuse(s[C].leaf_iter_vars[1], s[C].leaf_iter_vars[2])
s[B].parallel(s[B].leaf_iter_vars[0])
s[A11_r].unroll(s[A11_r].leaf_iter_vars[2])
s[B_c].fuse(s[B_c].leaf_iter_vars[1], s[B_c].leaf_iter_vars[2])
s[C].compute_at(s[B_c], r_leaf(s[B_c], 1))
s[B_c].compute_at(s[B], r_leaf(s[B], 4))

def reference(A0, A1, A2, A3, I4, A5, A6, I7, A8, A9, A10, A11, A12, A13, I14, A15):
    i0, i1, i2, k = H.grid((1, 2, 5, 0))
    C = H.reduce('min', 'float32', H.fdiv('float32', H.where('float32', H.compare('le', 'int16', H.cast('int16', H.load(A0, k, i0, i1, i2)), H.load(A1, i2, i0)), H.load(A2, i1, i2, k, i0), H.cast('float32', i2)), H.mul('float32', H.cast('float32', np.int32(1)), H.cast('float32', H.cast('float64', H.load(A3, i2, i0, k, i1))))), (1, 2, 5, 0))
    i0, i1, i2 = H.grid((1, 2, 5))
    B = H.full('int64', (1, 2, 5), H.where('int64', H.compare('eq', 'uint8', np.uint8(255), H.cast('uint8', H.where('int32', H.compare('ge', 'int16', H.minimum('int16', H.load(A10, i0, i1 + 1, i2), H.cast('int16', H.load(A11, i0, i1 + 0, i2))), H.cast('int16', H.where('int32', ((i0 + 2) >= 0) & ((i0 + 2) < 1), H.load(A12, i0 + 2, i1, i2), np.int32(-18)))), H.cast('uint8', H.clamp('float64', (H.add('float64', H.cast('float64', H.where('float32', ((i2 + 1) >= 0) & ((i2 + 1) < 5), H.load(C, i0, i1, i2 + 1), np.float32(-0.5))), np.uint8(16)) * np.float64(0.0)), 0.0, 255.0)), H.cast('int32', H.clamp('float32', (H.where('float32', ((i2 + 1) >= 0) & ((i2 + 1) < 5), H.load(C, i0, i1, i2 + 1), np.float32(2.5)) * np.float32(0.0)), -1000.0, 1000.0))))), H.cast('int64', H.clamp('float32', (H.load(C, i0, i1, i2) * np.float32(0.0)), -1000.0, 1000.0)), H.maximum('uint8', H.floordiv('uint8', H.load(A13, i0 % 4), np.uint8(3)), H.cast('uint8', H.clamp('float32', H.load(A15, H.load(I14, i0)), 0.0, 255.0)))))
    return [B]

ARGS = [A0, A1, A2, A3, I4, A5, A6, I7, A8, A9, A10, A11, A12, A13, I14, A15, B]
INPUTS = [H.rand(3146128, (0, 1, 2, 5), 'int64', -40, 40), H.rand(3146129, (5, 1), 'int16', -20, 20), H.rand(3146130, (2, 5, 0, 1), 'float32', -4.0, 4.0), H.rand(3146131, (5, 1, 0, 2), 'int16', -32768, 32767), H.indices(3146132, (2,), 'int32', 17, bad=None), H.rand(3146133, (17,), 'float32', -4.0, 4.0), H.rand(3146134, (1, 2, 5), 'float32', -4.0, 4.0), H.indices(3146135, (5,), 'int32', 16, bad=None), H.rand(3146136, (16,), 'float32', -4.0, 4.0), H.rand(3146137, (3,), 'float32', -4.0, 4.0), H.rand(3146138, (1, 3, 5), 'int16', -32768, 32767), H.rand(3146139, (1, 4, 5), 'int8', -128, 127), H.rand(3146140, (1, 2, 5), 'int32', -40, 40), H.rand(3146141, (4,), 'uint8', 0, 255), H.indices(3146142, (1,), 'int32', 1, bad=None), H.rand(3146143, (1,), 'float32', -4.0, 4.0)]
EXPECT = 'ok'
EXACT = True

if __name__ == "__main__":
    H.main(globals())

