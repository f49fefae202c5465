"""nn.quantized's other layers vs torch 2.13 on the same integers: ReLU, ReLU6, MaxPool2d,
AdaptiveAvgPool2d, BatchNorm2d (1 LSB at ties), Embedding (float out), Quantize /
DeQuantize; quantized tensors through flatten / reshape / cat / slicing into a Linear;
state dicts with PyTorch's keys through nn.save / nn.load."""
import io

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as tnnq

import nn
from qref import RNG, assert_lsb, qw, qx

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_relu_relu6_match_torch():
    x, tx = qx((2, 3, 4, 5), 0.02, 100, hi=256)
    y = nn.quantized.ReLU()(x)
    np.testing.assert_array_equal(y.int_repr().numpy(), torch.relu(tx).int_repr().numpy())
    assert (y.q_scale(), y.q_zero_point()) == (0.02, 100)
    assert_lsb(nn.quantized.ReLU6()(x), tnnq.ReLU6()(tx), max_frac=0)
    assert_lsb(nn.quantized.functional.relu6(x), tnnq.ReLU6()(tx), max_frac=0)


@pytest.mark.parametrize("args", [dict(kernel_size=3, stride=2, padding=1),
                                  dict(kernel_size=(2, 3), stride=1, dilation=2,
                                       ceil_mode=True)])
def test_max_pool2d_matches_torch(args):
    x, tx = qx((2, 3, 9, 8), 0.05, 30, hi=256)
    ours = nn.quantized.MaxPool2d(**args)(x)
    assert_lsb(ours, torch.nn.functional.max_pool2d(tx, **args), max_frac=0)


@pytest.mark.parametrize("size", [(3, 4), 1, (5, None)])
def test_adaptive_avg_pool2d_matches_torch(size):
    x, tx = qx((2, 3, 7, 9), 0.05, 30, hi=256)
    ours = nn.quantized.AdaptiveAvgPool2d(size)(x)
    theirs = torch.nn.functional.adaptive_avg_pool2d(tx, size)
    assert_lsb(ours, theirs, max_frac=0)


def test_adaptive_avg_pool_rounds_ties_to_even():
    x, tx = qx((4, 8, 1, 2), 0.1, 3, hi=256)
    assert_lsb(nn.quantized.functional.adaptive_avg_pool2d(x, 1),
               torch.nn.functional.adaptive_avg_pool2d(tx, 1), max_frac=0)


def test_batch_norm2d_matches_torch():
    c = 5
    ours, theirs = nn.quantized.BatchNorm2d(c), tnnq.BatchNorm2d(c)
    stats = [RNG.uniform(0.5, 2, c), RNG.normal(0, 1, c), RNG.normal(0, 1, c),
             RNG.uniform(0.2, 3, c)]
    for name, v in zip(("weight", "bias", "running_mean", "running_var"), stats):
        setattr(ours, name, nn.Tensor(v.astype("float32")))
        getattr(theirs, name).data = torch.tensor(v, dtype=torch.float32)
    ours.scale, ours.zero_point = 0.03125, 64
    theirs.scale, theirs.zero_point = torch.tensor(0.03125), torch.tensor(64)
    x, tx = qx((2, c, 4, 6), 0.02, 80, hi=256)
    assert_lsb(ours(x), theirs(tx))
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_embedding_matches_torch():
    rows, dim = 10, 12
    ints = RNG.integers(0, 256, (rows, dim)).astype("uint8")
    scales = RNG.uniform(0.01, 0.1, rows)
    zps = RNG.integers(0, 256, rows)
    w = nn.quantized.QTensor(nn.Tensor(ints), nn.quint8, scales=scales, zero_points=zps,
                             axis=0)
    ours = nn.quantized.Embedding(rows, dim)
    ours.set_weight(w)
    tw = torch._make_per_channel_quantized_tensor(
        torch.from_numpy(ints), torch.from_numpy(scales), torch.from_numpy(zps), 0)
    theirs = tnnq.Embedding(rows, dim)
    theirs.set_weight(torch.quantize_per_channel(
        tw.dequantize(), torch.from_numpy(scales), torch.from_numpy(zps.astype("float64")),
        0, torch.quint8))
    idx = RNG.integers(0, rows, (3, 4))
    out = ours(nn.Tensor(idx))
    assert out.dtype == "float32" and out.shape == (3, 4, dim)
    np.testing.assert_allclose(out.numpy(), theirs(torch.from_numpy(idx)).numpy(),
                               rtol=1e-6, atol=1e-6)


def test_quantize_dequantize_modules():
    f = RNG.normal(0, 1, (3, 7)).astype("float32")
    q = nn.quantized.Quantize(0.02, 120, nn.quint8)(nn.Tensor(f))
    tq = tnnq.Quantize(0.02, 120, torch.quint8)(torch.from_numpy(f))
    assert_lsb(q, tq, max_frac=0)
    np.testing.assert_array_equal(nn.quantized.DeQuantize()(q).numpy(),
                                  tnnq.DeQuantize()(tq).numpy())
    assert list(nn.quantized.Quantize(0.02, 120, nn.quint8).state_dict()) == \
        list(tnnq.Quantize(0.02, 120, torch.quint8).state_dict())


def test_shapes_flatten_reshape_cat_slice_into_linear():
    x, tx = qx((2, 3, 4), 0.03, 10)
    flat, tflat = x.flatten(1), tx.flatten(1)
    both = nn.cat([flat, flat[:, :6].reshape(2, 6)], 1)
    tboth = torch.cat([tflat, tflat[:, :6].reshape(2, 6)], 1)
    w, tw = qw((5, 18), True)
    ours, theirs = nn.quantized.Linear(18, 5), tnnq.Linear(18, 5)
    ours.set_weight_bias(w, None)
    theirs.set_weight_bias(tw, None)
    assert_lsb(ours(both), theirs(tboth))


def _conv_and_linear():
    w, tw = qw((4, 2, 3, 3), True)
    c, tc = nn.quantized.Conv2d(2, 4, 3), tnnq.Conv2d(2, 4, 3)
    c.set_weight_bias(w, nn.Tensor(np.arange(4, dtype="float32")))
    tc.set_weight_bias(tw, torch.arange(4, dtype=torch.float32))
    lw, tlw = qw((3, 6), False)
    lin, tlin = nn.quantized.Linear(6, 3), tnnq.Linear(6, 3)
    lin.set_weight_bias(lw, nn.Tensor(np.ones(3, "float32")))
    tlin.set_weight_bias(tlw, torch.ones(3))
    for m in (c, tc):
        m.scale, m.zero_point = 0.04, 7
    for m in (lin, tlin):
        m.scale, m.zero_point = 0.07, 70
    return (c, lin), (tc, tlin)


def test_state_dict_keys_match_torch_and_round_trip_through_nn_save():
    (c, lin), (tc, tlin) = _conv_and_linear()
    model, tmodel = nn.Sequential(c, lin), torch.nn.Sequential(tc, tlin)
    sd = model.state_dict()
    assert list(sd) == list(tmodel.state_dict())
    buf = io.BytesIO()
    nn.save(sd, buf)
    buf.seek(0)
    fresh = nn.Sequential(nn.quantized.Conv2d(2, 4, 3), nn.quantized.Linear(6, 3))
    fresh.load_state_dict(nn.load(buf))
    assert fresh[1].scale == 0.07 and fresh[1].zero_point == 70
    x, tx = qx((1, 2, 5, 5), 0.02, 3)
    a = model[0](x)
    b = fresh[0](x)
    np.testing.assert_array_equal(a.int_repr().numpy(), b.int_repr().numpy())
    np.testing.assert_array_equal(fresh[0].weight().int_repr().numpy(),
                                  c.weight().int_repr().numpy())
    np.testing.assert_array_equal(fresh[0].weight().q_per_channel_scales().numpy(),
                                  c.weight().q_per_channel_scales().numpy())
    assert_lsb(b, tc(tx))


def test_load_state_dict_reports_missing_keys():
    lin = nn.quantized.Linear(6, 3)
    sd = lin.state_dict()
    del sd["scale"]
    with pytest.raises(RuntimeError, match="Missing key.*scale"):
        nn.quantized.Linear(6, 3).load_state_dict(sd)


def test_embedding_from_float_with_a_per_row_observer():
    from nn import quantization as tq
    emb = nn.Embedding(10, 4)
    emb.qconfig = tq.QConfig(activation=tq.PlaceholderObserver,
                             weight=tq.PerChannelMinMaxObserver.with_args(
                                 dtype=nn.quint8, qscheme=nn.per_channel_affine, ch_axis=0))
    q = nn.quantized.Embedding.from_float(emb)
    w = q.weight()
    assert w.q_per_channel_axis() == 0 and w.dtype == nn.quint8
    idx = np.array([[1, 3], [9, 0]])
    out = q(nn.Tensor(idx)).numpy()
    expected = w.dequantize().numpy()[idx]
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
    scales = w.q_per_channel_scales().numpy()[idx][..., None]
    assert np.all(np.abs(out - emb.weight.detach().numpy()[idx]) <= scales / 2 + 1e-6)


def test_deepcopy_of_used_modules():
    import copy
    (c, lin), _ = _conv_and_linear()
    x, _ = qx((1, 2, 5, 5), 0.02, 3)
    y = c(x)
    c2 = copy.deepcopy(c)
    np.testing.assert_array_equal(c2(x).int_repr().numpy(), y.int_repr().numpy())
    feats = nn.quantized.AdaptiveAvgPool2d((2, 3))(y)[:, 0]         # (1, 2, 3)
    z = lin(feats.flatten(1))
    lin2 = copy.deepcopy(lin)
    np.testing.assert_array_equal(lin2(feats.flatten(1)).int_repr().numpy(),
                                  z.int_repr().numpy())


def _rewrite_header(raw, edit):
    """A checkpoint's bytes with its JSON header changed by ``edit`` (checksum redone)."""
    import json
    import struct
    import zlib
    prefix = struct.Struct("<8sQI")
    magic, n, _ = prefix.unpack_from(raw)
    header = json.loads(raw[prefix.size:prefix.size + n])
    edit(header["object"])
    text = json.dumps(header, separators=(",", ":")).encode()
    return prefix.pack(magic, len(text), zlib.crc32(text)) + text + raw[prefix.size + n:]


@pytest.mark.parametrize("edit,match", [
    (lambda o: o.update(scale=(-1.0).hex()), "scale"),
    (lambda o: o.update(zero_point=300), "zero_point 300 is above"),
    (lambda o: o.update(qdtype="quint4"), "unknown quantized dtype"),
])
def test_damaged_quantized_tensor_in_a_checkpoint_is_refused(edit, match):
    q = nn.quantize_per_tensor(nn.Tensor(np.ones(3, "float32")), 0.1, 5, nn.quint8)
    buf = io.BytesIO()
    nn.save(q, buf)
    bad = _rewrite_header(buf.getvalue(), edit)
    with pytest.raises(nn.CheckpointError, match=match):
        nn.load(io.BytesIO(bad))
