"""fuse_modules / prepare / convert / prepare_qat vs torch.ao.quantization on the same models
with the same weights: module structure (types, observers), folded BatchNorm weights,
quantization parameters, and the quantized integer outputs (equal up to 1 LSB at ties)."""
import warnings

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import nn
from nn import quantization as nq

from quant_twins import (BN_FUSIONS, BnNet, Net, TorchBnNet, TorchNet, batches,
                          randomize_bn, twin)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def kind(m):
    """A module's class name and whether it is a quantized / QAT class."""
    path = type(m).__module__
    return type(m).__name__, "quantized" in path, ".qat" in path


def structure(model):
    """Submodule name -> kind, without the root, observers and torch's packed-weight holder
    (``fc._packed_params``: ours keep the packed weight in the module itself)."""
    return {name: kind(m) for name, m in model.named_modules()
            if name and not name.endswith(("activation_post_process", "weight_fake_quant",
                                             "_packed_params"))
            and ".activation_post_process." not in name}


def observers(model):
    return {name: type(m).__name__ for name, m in model.named_modules()
            if name.endswith("activation_post_process") and type(m).__name__ != "Identity"}


def capture(model, name):
    """The integers and parameters of submodule ``name``'s quantized output."""
    out = {}

    def hook(mod, args, output):
        ints = output.int_repr()
        out["q"] = np.asarray(ints.numpy(), dtype=np.int64)
        out["params"] = (output.q_scale(), output.q_zero_point())
    model.get_submodule(name).register_forward_hook(hook)
    return out


def ptq(model, fusions, qconfig, data, inplace=True, torch_side=False):
    lib = tq if torch_side else nq
    model.qconfig = qconfig
    if fusions:
        lib.fuse_modules(model, fusions, inplace=True)
    lib.prepare(model, inplace=True)
    for x in data:
        model(torch.from_numpy(x) if torch_side else nn.tensor(x))
    return lib.convert(model, inplace=inplace)


def assert_within_one_lsb(ours, theirs):
    assert ours["params"][1] == theirs["params"][1]
    np.testing.assert_allclose(ours["params"][0], theirs["params"][0], rtol=1e-6)
    diff = np.abs(ours["q"] - theirs["q"])
    assert diff.max() <= 1, diff.max()
    assert (diff == 0).mean() > 0.97


@pytest.mark.parametrize("backend", ["x86", "qnnpack"])
def test_issue_example_matches_torch(backend):
    nn.manual_seed(0)
    ours = Net().eval()
    theirs = twin(ours, TorchNet()).eval()
    calib = batches(1, 3, (4, 1, 8, 8))
    prev = torch.backends.quantized.engine
    torch.backends.quantized.engine = "qnnpack" if backend == "qnnpack" and \
        "qnnpack" in torch.backends.quantized.supported_engines else "x86"
    try:
        ptq(ours, [["conv", "relu"]], nq.get_default_qconfig(backend), calib)
        ptq(theirs, [["conv", "relu"]], tq.get_default_qconfig(backend), calib,
            torch_side=True)
        assert structure(ours) == structure(theirs)
        assert ours.quant.scale.tolist() == theirs.quant.scale.tolist()
        assert ours.quant.zero_point.tolist() == theirs.quant.zero_point.tolist()
        for name in ("conv", "fc", "skip"):
            mine, ref = ours.get_submodule(name), theirs.get_submodule(name)
            assert mine.scale == pytest.approx(float(ref.scale), rel=1e-7, abs=0)
            assert mine.zero_point == int(ref.zero_point)
        x = batches(2, 1, (3, 1, 8, 8))[0]
        caught = [capture(ours, "fc"), capture(theirs, "fc")]
        ours(nn.tensor(x))
        theirs(torch.from_numpy(x))
        assert_within_one_lsb(*caught)
    finally:
        torch.backends.quantized.engine = prev


def test_prepare_attaches_observers_as_torch():
    ours = Net().eval()
    theirs = TorchNet().eval()
    for model, lib in ((ours, nq), (theirs, tq)):
        model.qconfig = lib.get_default_qconfig("x86")
        lib.fuse_modules(model, [["conv", "relu"]], inplace=True)
    prepared = nq.prepare(ours)                      # not in place: a copy
    assert not observers(ours)
    assert observers(prepared) == observers(tq.prepare(theirs))
    assert structure(prepared) == structure(tq.prepare(theirs))


def test_bn_folding_matches_torch():
    nn.manual_seed(3)
    ours = BnNet().eval()
    randomize_bn(ours, 4)
    theirs = twin(ours, TorchBnNet()).eval()
    fused = nq.fuse_modules(ours, BN_FUSIONS)
    fused_t = tq.fuse_modules(theirs, BN_FUSIONS)
    assert structure(fused) == structure(fused_t)
    for key, value in fused_t.state_dict().items():
        np.testing.assert_array_equal(fused.state_dict()[key].numpy(), value.numpy(), key)
    x = batches(5, 1, (2, 2, 8, 8))[0]
    np.testing.assert_allclose(fused(nn.tensor(x)).detach().numpy(),
                               ours(nn.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_ptq_of_fused_bn_net_matches_torch():
    nn.manual_seed(5)
    ours = BnNet().eval()
    randomize_bn(ours, 6)
    theirs = twin(ours, TorchBnNet()).eval()
    calib = batches(7, 3, (4, 2, 8, 8))
    ptq(ours, BN_FUSIONS, nq.get_default_qconfig("fbgemm"), calib)
    ptq(theirs, BN_FUSIONS, tq.get_default_qconfig("fbgemm"), calib, torch_side=True)
    assert structure(ours) == structure(theirs)
    x = batches(8, 1, (4, 2, 8, 8))[0]
    caught = [capture(ours, "fc"), capture(theirs, "fc")]
    ours(nn.tensor(x))
    theirs(torch.from_numpy(x))
    assert_within_one_lsb(*caught)


def test_qat_flow_structure_and_forward_match_torch():
    nn.manual_seed(9)
    ours = BnNet().train()
    randomize_bn(ours, 10)
    theirs = twin(ours, TorchBnNet()).train()
    for model, lib in ((ours, nq), (theirs, tq)):
        model.qconfig = lib.get_default_qat_qconfig("x86")
        lib.fuse_modules_qat(model, BN_FUSIONS, inplace=True)
        lib.prepare_qat(model, inplace=True)
    assert structure(ours) == structure(theirs)
    assert observers(ours) == observers(theirs)
    x = batches(11, 1, (4, 2, 8, 8))[0]
    y = ours(nn.tensor(x))
    yt = theirs(torch.from_numpy(x))
    step = float(theirs.fc.activation_post_process.scale)
    diff = np.abs(y.detach().numpy() - yt.detach().numpy())
    assert diff.max() <= step * 1.01          # at most one quantum, where rounding ties
    assert (diff < 1e-6).mean() > 0.95
    np.testing.assert_array_equal(ours.conv1.bn.running_mean.numpy().round(4),
                                  theirs.conv1.bn.running_mean.detach().numpy().round(4))
    for model, lib in ((ours, nq), (theirs, tq)):
        model.eval()
        lib.convert(model, inplace=True)
    assert structure(ours) == structure(theirs)


def test_convert_not_inplace_keeps_the_prepared_model():
    m = Net().eval()
    m.qconfig = nq.default_qconfig
    nq.prepare(m, inplace=True)
    m(nn.tensor(batches(0, 1, (2, 1, 8, 8))[0]))
    q = nq.convert(m)
    assert type(m.fc) is nn.Linear and hasattr(m.fc, "activation_post_process")
    assert type(q.fc).__module__.startswith("nn.quantized")
    assert not hasattr(q.fc, "qconfig") and not hasattr(q, "qconfig")


def test_qconfig_propagation_and_opt_out():
    m = Net().eval()
    m.qconfig = nq.default_qconfig
    m.fc.qconfig = None                        # keep fc float: no observer, not converted
    nq.prepare(m, inplace=True)
    assert not hasattr(m.fc, "activation_post_process")
    assert m.conv.qconfig is m.qconfig
    nq.propagate_qconfig_(Net(), {"fc": nq.default_qconfig})
    n = Net()
    nq.propagate_qconfig_(n, {nn.Linear: nq.default_qconfig})
    assert n.fc.qconfig is nq.default_qconfig and n.conv.qconfig is None


def test_quant_wrapper_and_quantize_one_call():
    nn.manual_seed(1)
    float_model = nn.Sequential(nn.Linear(6, 5), nn.ReLU())
    float_model.qconfig = nq.default_qconfig
    wrapped = nq.QuantWrapper(float_model).eval()
    data = batches(3, 2, (4, 6))
    q = nq.quantize(wrapped, lambda m, xs: [m(nn.tensor(x)) for x in xs], [data])
    assert kind(q.quant)[:2] == ("Quantize", True) and kind(q.module[0])[:2] == ("Linear", True)
    ref = float_model(nn.tensor(data[0])).detach().numpy()
    out = q(nn.tensor(data[0])).numpy()
    assert np.abs(out - ref).max() <= 3 * q.module[0].scale    # a few output quanta


def test_converted_model_state_dict_round_trip():
    """A converted model saved with nn.save loads into another converted model (its
    quantization parameters included) and computes the same integers; the keys are
    PyTorch's where PyTorch's entries are plain tensors."""
    import io
    calib = batches(12, 2, (2, 2, 8, 8))
    models = []
    for seed in (0, 1):
        nn.manual_seed(seed)
        model = BnNet().eval()
        randomize_bn(model, seed)
        models.append(ptq(model, BN_FUSIONS, nq.get_default_qconfig("x86"), calib))
    buffer = io.BytesIO()
    nn.save(models[0].state_dict(), buffer)
    buffer.seek(0)
    models[1].load_state_dict(nn.load(buffer))
    x = nn.tensor(batches(13, 1, (2, 2, 8, 8))[0])
    np.testing.assert_array_equal(models[0](x).numpy(), models[1](x).numpy())
    theirs = ptq(TorchBnNet().eval(), BN_FUSIONS, tq.get_default_qconfig("x86"), calib,
                 torch_side=True)
    plain = {k for k, v in theirs.state_dict().items() if isinstance(v, torch.Tensor)
             and not v.is_quantized}
    assert plain <= set(models[0].state_dict())


def test_qat_conv_bn_relu_module_matches_torch():
    """nn.intrinsic.qat.ConvBnReLU2d vs torch's (same weights, statistics): the forward in
    training mode, the BN running statistics it updates, and the gradients."""
    nn.manual_seed(2)
    conv, bn = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4)
    fused = nn.intrinsic.ConvBnReLU2d(conv, bn, nn.ReLU()).train()
    fused.qconfig = nq.get_default_qat_qconfig("x86", version=0)
    ours = nn.intrinsic.qat.ConvBnReLU2d.from_float(fused)
    tconv, tbn = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4)
    tconv.weight.data = torch.from_numpy(conv.weight.detach().numpy().copy())
    tconv.bias.data = torch.from_numpy(conv.bias.detach().numpy().copy())
    tfused = torch.ao.nn.intrinsic.ConvBnReLU2d(tconv, tbn, torch.nn.ReLU()).train()
    tfused.qconfig = tq.get_default_qat_qconfig("x86", version=0)
    theirs = torch.ao.nn.intrinsic.qat.ConvBnReLU2d.from_float(tfused)
    x = batches(14, 1, (2, 3, 6, 6))[0]
    xn, xt = nn.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    y, yt = ours(xn), theirs(xt)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.bn.running_var.numpy(), theirs.bn.running_var.numpy(),
                               rtol=1e-5)
    g = batches(15, 1, y.shape)[0]
    y.backward(nn.tensor(g))
    yt.backward(torch.from_numpy(g))
    np.testing.assert_allclose(xn.grad.numpy(), xt.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(ours.bn.weight.grad.numpy(), theirs.bn.weight.grad.numpy(),
                               rtol=1e-3, atol=1e-4)
    ours.freeze_bn_stats()
    assert ours.freeze_bn and not ours.bn.training


def test_sequential_with_unfused_relu_and_pooling_matches_torch():
    """Unfused ReLU / MaxPool2d / Flatten get no observer (as in PyTorch); after convert
    they run on the quantized tensor (nn swaps ReLU and MaxPool2d for nn.quantized's,
    which keep the input's parameters, where PyTorch keeps its float modules); the output
    integers agree with torch's."""
    nn.manual_seed(4)
    ours = nn.Sequential(nq.QuantStub(), nn.Conv2d(2, 4, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 3 * 3, 5), nq.DeQuantStub()).eval()
    theirs = twin(ours, torch.nn.Sequential(
        tq.QuantStub(), torch.nn.Conv2d(2, 4, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(4 * 3 * 3, 5), tq.DeQuantStub())).eval()
    calib = batches(16, 2, (3, 2, 8, 8))
    ptq(ours, [], nq.get_default_qconfig("x86"), calib)
    ptq(theirs, [], tq.get_default_qconfig("x86"), calib, torch_side=True)
    assert not hasattr(ours[2], "activation_post_process")
    translated = {"2": ("ReLU", True, False), "3": ("MaxPool2d", True, False)}
    expected = {**structure(theirs), **translated}
    assert structure(ours) == expected
    x = batches(17, 1, (3, 2, 8, 8))[0]
    caught = [capture(ours, "5"), capture(theirs, "5")]
    ours(nn.tensor(x))
    theirs(torch.from_numpy(x))
    assert_within_one_lsb(*caught)


def test_memoryless_observer_watches_the_input_as_torch():
    """A moving average with ``averaging_constant=1`` is memoryless: PyTorch hooks it before
    the module (on its input), and so does ``prepare``."""
    def qconfig(lib):
        return lib.QConfig(activation=lib.MovingAverageMinMaxObserver.with_args(
            averaging_constant=1), weight=lib.default_weight_observer)
    nn.manual_seed(6)
    ours = Net().eval()
    theirs = twin(ours, TorchNet()).eval()
    data = batches(18, 2, (2, 1, 8, 8))
    for model, lib, wrap in ((ours, nq, nn.tensor), (theirs, tq, torch.from_numpy)):
        model.qconfig = qconfig(lib)
        lib.prepare(model, inplace=True)
        for x in data:
            model(wrap(x))
    assert len(ours.fc._forward_pre_hooks) == 1 and not ours.fc._forward_hooks
    for name in ("quant", "conv", "fc"):
        mine = ours.get_submodule(name).activation_post_process
        ref = theirs.get_submodule(name).activation_post_process
        assert mine.min_val.item() == ref.min_val.item()
        assert mine.max_val.item() == ref.max_val.item()


def test_fusion_moves_hooks_to_the_fused_module():
    calls = []
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU()).eval()
    m[0].register_forward_pre_hook(lambda mod, args: calls.append("pre"))
    m[1].register_forward_hook(lambda mod, args, out: calls.append("post"))
    fused = nq.fuse_modules(m, ["0", "1"])
    assert type(fused[0]).__name__ == "ConvReLU2d" and type(fused[1]).__name__ == "Identity"
    fused(nn.tensor(batches(0, 1, (1, 1, 5, 5))[0]))
    assert calls == ["pre", "post"]
    assert not fused[0][0]._forward_pre_hooks and not fused[0][1]._forward_hooks


def test_qat_conv_bn_to_float_matches_torch():
    nn.manual_seed(8)
    model = BnNet().train()
    randomize_bn(model, 9)
    theirs = twin(model, TorchBnNet()).train()
    for m, lib in ((model, nq), (theirs, tq)):
        m.qconfig = lib.get_default_qat_qconfig("x86")
        lib.fuse_modules_qat(m, BN_FUSIONS, inplace=True)
        lib.prepare_qat(m, inplace=True)
    for name in ("conv1", "conv2"):
        mine, ref = model.get_submodule(name).to_float(), theirs.get_submodule(name).to_float()
        assert kind(mine)[0] == kind(ref)[0]
        for key, value in ref.state_dict().items():
            np.testing.assert_array_equal(mine.state_dict()[key].numpy(), value.numpy(), key)


def test_issue_example_qat_trained_and_converted_matches_torch():
    """prepare_qat, two SGD steps through the fake-quantized model, convert: the quantized
    outputs agree with torch's doing the same."""
    nn.manual_seed(9)
    ours = Net().train()
    theirs = twin(ours, TorchNet()).train()
    for model, lib in ((ours, nq), (theirs, tq)):
        model.qconfig = lib.get_default_qat_qconfig("x86")
        lib.fuse_modules_qat(model, [["conv", "relu"]], inplace=True)
        lib.prepare_qat(model, inplace=True)
    opt = nn.optim.SGD(ours.parameters(), lr=0.1)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.1)
    for step, x in enumerate(batches(20, 3, (4, 1, 8, 8))):
        y, yt = ours(nn.tensor(x)), theirs(torch.from_numpy(x))
        if step < 2:
            opt.zero_grad()
            topt.zero_grad()
            (y * y).sum().backward()
            (yt * yt).sum().backward()
            opt.step()
            topt.step()
    for model, lib in ((ours, nq), (theirs, tq)):
        model.eval()
        lib.convert(model, inplace=True)
    assert structure(ours) == structure(theirs)
    x = batches(21, 1, (4, 1, 8, 8))[0]
    caught = [capture(ours, "fc"), capture(theirs, "fc")]
    ours(nn.tensor(x))
    theirs(torch.from_numpy(x))
    assert_within_one_lsb(*caught)


def test_qat_model_moved_to_gpu():
    """A prepared QAT model (conv-bn-relu, linear) moved with .cuda() (numba's simulator in
    the test suite) trains there: outputs as on the CPU, gradients on the GPU."""
    import copy
    nn.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                      nn.Linear(2 * 3 * 3, 3)).train()
    m.qconfig = nq.get_default_qat_qconfig()
    nq.fuse_modules_qat(m, [["0", "1", "2"]], inplace=True)
    nq.prepare_qat(m, inplace=True)
    g = copy.deepcopy(m).cuda()
    x = batches(22, 1, (2, 1, 5, 5))[0]
    a, b = m(nn.tensor(x)), g(nn.tensor(x).cuda())
    assert b.device == "cuda"
    np.testing.assert_allclose(b.detach().cpu().numpy(), a.detach().numpy(), atol=1e-5)
    b.sum().backward()
    assert g[0].weight.grad.device == "cuda"


def test_issue_example_state_dict_keeps_the_float_functional_qparams():
    """The issue's Net (with its FloatFunctional, converted to QFunctional) saved with nn.save
    and loaded into a second converted Net: ``skip.scale`` / ``skip.zero_point`` are in the
    state dict as in PyTorch's, and the loaded model computes the same integers."""
    import io
    models = []
    for seed in (0, 1):
        nn.manual_seed(seed)
        models.append(ptq(Net().eval(), [["conv", "relu"]], nq.get_default_qconfig("x86"),
                          batches(20 + seed, 2, (2, 1, 8, 8))))
    assert models[0].skip.scale != models[1].skip.scale
    theirs = ptq(TorchNet().eval(), [["conv", "relu"]], tq.get_default_qconfig("x86"),
                 batches(20, 2, (2, 1, 8, 8)), torch_side=True)
    assert {"skip.scale", "skip.zero_point"} <= set(theirs.state_dict())
    assert {"skip.scale", "skip.zero_point"} <= set(models[0].state_dict())
    buffer = io.BytesIO()
    nn.save(models[0].state_dict(), buffer)
    buffer.seek(0)
    models[1].load_state_dict(nn.load(buffer))
    assert (models[1].skip.scale, models[1].skip.zero_point) == \
        (models[0].skip.scale, models[0].skip.zero_point)
    x = nn.tensor(batches(23, 1, (2, 1, 8, 8))[0])
    np.testing.assert_array_equal(models[0](x).numpy(), models[1](x).numpy())
