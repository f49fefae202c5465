"""nn.Module, Parameter, containers and the first layers, against PyTorch's behaviour: naming,
state_dict keys (identical to an equivalent torch model's) and loading reports, forward and full
backward hooks (what torch's see), modes, ``to``, repr, ParameterList/Dict, Linear's init and
gradients, and a small MLP trained by hand."""
import collections
import copy
import math
import warnings

import numpy as np
import pytest
import torch

import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4, bias=False)])
        self.head = nn.Sequential(collections.OrderedDict(out=nn.Linear(4, 2)))
        self.scale = nn.Parameter(nn.ones(1))
        self.register_buffer("steps", nn.zeros(1))
        self.register_buffer("cache", nn.zeros(2), persistent=False)

    def forward(self, x):
        x = self.act(self.fc1(x))
        for block in self.blocks:
            x = self.act(block(x))
        return self.head(x) * self.scale


KEYS = ["scale", "steps", "fc1.weight", "fc1.bias", "blocks.0.weight", "blocks.0.bias",
        "blocks.1.weight", "head.out.weight", "head.out.bias"]


def test_parameter():
    p = nn.Parameter(nn.tensor([1.0, 2.0]))
    assert isinstance(p, nn.Tensor) and p.requires_grad and p.is_leaf
    assert not nn.Parameter(nn.zeros(2), requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert "requires_grad=True" in repr(p)
    t = nn.zeros(2)
    nn.Parameter(t).detach().fill_(3)           # shares storage with the tensor it wraps
    assert t.tolist() == [3.0, 3.0]


def test_registration_and_naming():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "blocks.0.weight", "blocks.0.bias",
                     "blocks.1.weight", "head.out.weight", "head.out.bias"]
    assert len(list(net.parameters())) == 8
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in net.fc1.named_parameters(prefix="fc1")] == ["fc1.weight", "fc1.bias"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "cache"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "blocks", "head"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "blocks", "blocks.0",
                                                   "blocks.1", "head", "head.out"]
    assert list(net.modules())[0] is net and len(list(net.children())) == 4
    assert net.get_submodule("blocks.1") is net.blocks[1]
    assert net.get_parameter("head.out.bias") is net.head.out.bias
    assert net.get_buffer("steps") is net.steps
    with pytest.raises(AttributeError, match="ModuleList has no attribute `7`"):
        net.get_submodule("blocks.7")
    with pytest.raises(AttributeError, match="`act` is not an nn.Parameter"):
        net.get_parameter("act")
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope
    assert net.blocks[1].bias is None


def test_shared_and_reassigned_members():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(seq.parameters())) == 2            # a shared layer counts once
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]
    m = nn.Module()
    m.w = nn.Parameter(nn.zeros(1))
    m.add_module("sub", nn.Identity())
    m.register_parameter("b", None)
    assert list(m._parameters) == ["w", "b"] and [n for n, _ in m.named_parameters()] == ["w"]
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'w'"):
        m.w = nn.zeros(1)
    with pytest.raises(TypeError, match="nn.Parameter or None required"):
        m.register_parameter("v", nn.zeros(1))
    with pytest.raises(KeyError, match="attribute 'w' already exists"):
        m.register_buffer("w", nn.zeros(1))
    with pytest.raises(KeyError, match=r'contain "\."'):
        m.add_module("a.b", nn.Identity())
    m.sub = None
    assert list(m.children()) == []
    m.w = None
    assert m.w is None
    del m.w
    assert "w" not in m._parameters


def test_containers():
    layers = [nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)]
    seq = nn.Sequential(*layers)
    assert len(seq) == 3 and list(seq) == layers and seq[-1] is layers[2]
    assert isinstance(seq[1:], nn.Sequential) and list(seq[1:]) == layers[1:]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1"] and seq[1] is layers[2]
    seq.append(nn.Tanh())
    assert isinstance(seq[2], nn.Tanh)
    named = nn.Sequential(collections.OrderedDict([("enc", nn.Linear(2, 2)), ("act", nn.Tanh())]))
    assert list(named.state_dict()) == ["enc.weight", "enc.bias"] and named[1] is named.act

    ml = nn.ModuleList([nn.ReLU()])
    ml.append(nn.Tanh())
    ml += [nn.Sigmoid()]
    ml.insert(0, nn.Identity())
    assert [type(m).__name__ for m in ml] == ["Identity", "ReLU", "Tanh", "Sigmoid"]
    assert [n for n, _ in ml.named_children()] == ["0", "1", "2", "3"]
    with pytest.raises(NotImplementedError, match="missing the required \"forward\""):
        ml(nn.zeros(1))

    md = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Tanh()})
    md["c"] = nn.Linear(1, 1)
    assert list(md) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert list(md.state_dict()) == ["c.weight", "c.bias"]
    assert isinstance(md.pop("a"), nn.ReLU) and list(md.keys()) == ["b", "c"]


def test_state_dict_keys_and_round_trip():
    nn.manual_seed(1)
    a = Net()
    sd = a.state_dict()
    assert list(sd) == KEYS                           # non-persistent "cache" is excluded
    assert all(not v.requires_grad for v in sd.values())
    assert a.state_dict(keep_vars=True)["fc1.weight"] is a.fc1.weight
    assert list(a.fc1.state_dict(prefix="x.")) == ["x.weight", "x.bias"]
    sd["fc1.bias"].fill_(0.5)                          # detached tensors share storage
    assert np.all(a.fc1.bias.detach().numpy() == 0.5)

    nn.manual_seed(2)
    b = Net()
    x = nn.randn(5, 3)
    assert not np.allclose(a(x).detach().numpy(), b(x).detach().numpy())
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    assert a.fc1.weight is not b.fc1.weight            # copied, not shared
    c = copy.deepcopy(a)
    assert isinstance(c.fc1.weight, nn.Parameter) and c.fc1.weight is not a.fc1.weight
    np.testing.assert_array_equal(a(x).detach().numpy(), c(x).detach().numpy())


def test_load_state_dict_reports():
    net = Net()
    sd = net.state_dict()
    del sd["fc1.bias"]
    sd["blocks.1.bias"] = nn.zeros(4)
    sd["extra"] = nn.zeros(1)
    sd["cache"] = nn.zeros(2)                         # a non-persistent buffer is unexpected
    with pytest.raises(RuntimeError) as err:
        net.load_state_dict(sd)
    assert str(err.value) == (
        "Error(s) in loading state_dict for Net:\n"
        "\tMissing key(s) in state_dict: \"fc1.bias\". \n"
        "\tUnexpected key(s) in state_dict: \"extra\", \"cache\", \"blocks.1.bias\". ")
    missing, unexpected = net.load_state_dict(sd, strict=False)
    assert missing == ["fc1.bias"] and unexpected == ["extra", "cache", "blocks.1.bias"]

    bad = Net().state_dict()
    bad["fc1.weight"] = nn.zeros(3, 4)
    for strict in (True, False):
        with pytest.raises(RuntimeError, match=r"size mismatch for fc1.weight: copying a param "
                           r"with shape \[3, 4\] from checkpoint, the shape in current model is "
                           r"\[4, 3\]\."):
            net.load_state_dict(bad, strict=strict)


def test_hooks():
    lin = nn.Linear(2, 2)
    seen = []
    pre = lin.register_forward_pre_hook(lambda m, args: seen.append(("pre", m)))
    post = lin.register_forward_hook(lambda m, args, out: seen.append(("post", out.shape)))
    lin(nn.zeros(3, 2))
    assert seen == [("pre", lin), ("post", (3, 2))]
    pre.remove()
    post.remove()
    lin(nn.zeros(1, 2))
    assert len(seen) == 2
    # a pre-hook may replace the input, a forward hook the output
    ident = nn.Identity()
    ident.register_forward_pre_hook(lambda m, args: args[0] * 2)
    h = ident.register_forward_hook(lambda m, args, out: out + 1)
    assert ident(nn.tensor([1.0])).tolist() == [3.0]
    order = []
    ident.register_forward_hook(lambda m, a, o: order.append("last"))
    ident.register_forward_hook(lambda m, a, o: order.append("first"), prepend=True)
    h.remove()
    assert ident(nn.tensor([1.0])).tolist() == [2.0] and order == ["first", "last"]


def test_train_eval_zero_grad_apply():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert net.head.out.training
    with pytest.raises(ValueError, match="boolean"):
        net.train("yes")
    net(nn.randn(2, 3)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    visited = []
    assert net.apply(lambda m: visited.append(type(m).__name__)) is net
    assert visited[-1] == "Net" and visited[0] == "Linear"
    net.double()
    assert all(p.dtype == "float64" for p in net.parameters()) and net.steps.dtype == "float64"
    assert net(nn.randn(1, 3, dtype="float64")).dtype == "float64"


def test_repr():
    assert repr(nn.Linear(3, 4, bias=False)) == "Linear(in_features=3, out_features=4, bias=False)"
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(Net()) == """Net(
  (fc1): Linear(in_features=3, out_features=4, bias=True)
  (act): ReLU()
  (blocks): ModuleList(
    (0): Linear(in_features=4, out_features=4, bias=True)
    (1): Linear(in_features=4, out_features=4, bias=False)
  )
  (head): Sequential(
    (out): Linear(in_features=4, out_features=2, bias=True)
  )
)"""
    assert repr(nn.ModuleList([nn.Tanh(), nn.Tanh(), nn.Tanh(), nn.ReLU()])) == """ModuleList(
  (0-2): 3 x Tanh()
  (3): ReLU()
)"""
    assert repr(nn.Sequential()) == "Sequential()"


def test_linear_init_is_seeded_and_bounded():
    nn.manual_seed(0)
    a = nn.Linear(64, 32)
    nn.manual_seed(0)
    b = nn.Linear(64, 32)
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    bound = 1 / math.sqrt(64)
    w = a.weight.detach().numpy()
    assert w.dtype == np.float32 and w.shape == (32, 64)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound      # uniform's std
    assert np.abs(a.bias.detach().numpy()).max() <= bound


def test_linear_gradients_match_numpy():
    rng = np.random.default_rng(0)
    lin = nn.Linear(3, 2, dtype="float64")
    x = nn.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    g = rng.standard_normal((4, 2))
    y = lin(x)
    W, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), x.detach().numpy() @ W.T + b, rtol=1e-12)
    (y * nn.tensor(g)).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), g.T @ x.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(lin.bias.grad.numpy(), g.sum(0), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), g @ W, rtol=1e-12)


def test_activations():
    x = nn.tensor([-1.0, 0.5, 2.0])
    np.testing.assert_allclose(nn.ReLU()(x).numpy(), [0.0, 0.5, 2.0])
    np.testing.assert_allclose(nn.Tanh()(x).numpy(), np.tanh([-1.0, 0.5, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(nn.Sigmoid()(x).numpy(), 1 / (1 + np.exp([1.0, -0.5, -2.0])),
                               rtol=1e-6)
    assert nn.ReLU(inplace=True)(x) is x and x.tolist() == [0.0, 0.5, 2.0]
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        nn.ReLU(inplace=True)(nn.zeros(2, requires_grad=True))


def test_mlp_trains_with_sgd():
    nn.manual_seed(0)
    rng = np.random.default_rng(0)
    x = nn.tensor(rng.standard_normal((32, 4)), dtype="float32")
    y = nn.tensor(np.sin(rng.standard_normal((32, 1))), dtype="float32")
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    losses = []
    for _ in range(20):
        loss = ((model(x) - y) ** 2).mean()
        losses.append(loss.item())
        model.zero_grad()
        loss.backward()
        with nn.no_grad():
            for p in model.parameters():
                p.sub_(p.grad, alpha=0.1)
    assert losses[-1] < 0.7 * losses[0]
    assert all(later <= earlier + 1e-6 for earlier, later in zip(losses, losses[1:]))


# ----------------------------------------------------------------------------- against torch


class TorchNet(torch.nn.Module):
    """Net's structure in PyTorch: its state_dict keys must be Net's."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.act = torch.nn.ReLU()
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(4, 4),
                                           torch.nn.Linear(4, 4, bias=False)])
        self.head = torch.nn.Sequential(collections.OrderedDict(out=torch.nn.Linear(4, 2)))
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("cache", torch.zeros(2), persistent=False)


def test_state_dict_keys_equal_torch_and_load_from_it():
    ref = TorchNet()
    assert list(Net().state_dict()) == list(ref.state_dict()) == KEYS
    assert [n for n, _ in Net().named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert [n for n, _ in Net().named_modules()] == [n for n, _ in ref.named_modules()]
    net = Net()
    net.load_state_dict({k: nn.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    relu = torch.nn.functional.relu
    with torch.no_grad():
        h = relu(ref.fc1(torch.from_numpy(x)))
        for block in ref.blocks:
            h = relu(block(h))
        want = ref.head(h) * ref.scale
    np.testing.assert_allclose(net(nn.tensor(x)).detach().numpy(), want.numpy(), rtol=1e-5,
                               atol=1e-6)


def test_load_state_dict_assign_and_nested_unexpected_keys():
    net, other = Net(), Net()
    net.load_state_dict(other.state_dict(keep_vars=True), assign=True)
    assert isinstance(net.fc1.weight, nn.Parameter) and net.fc1.weight.requires_grad
    assert np.shares_memory(net.fc1.weight.detach().numpy(), other.fc1.weight.detach().numpy())
    sd = Net().state_dict()
    sd["fc1.weight.extra"] = nn.zeros(1)                 # a dotted key under a parameter
    assert net.load_state_dict(sd, strict=False).unexpected_keys == ["fc1.weight.extra"]


def hook_log(lib, module, x_requires_grad):
    """Run a Linear(3, 2) with both full backward hooks; log what they see."""
    log = []

    def values(grads):
        return [None if g is None else g.detach().numpy().round(5).tolist() for g in grads]
    module.register_full_backward_pre_hook(lambda m, go: log.append(("pre", values(go))))
    module.register_full_backward_hook(
        lambda m, gi, go: log.append(("hook", values(gi), values(go))))
    x = lib.tensor(np.arange(6.0, dtype="float32").reshape(2, 3) / 7,
                   requires_grad=x_requires_grad)
    y = module(x)
    log.append(type(y.grad_fn).__name__ if lib is torch else y.grad_fn.name())
    (y * y).sum().backward()
    return log, x


@pytest.mark.parametrize("x_requires_grad", [True, False])
def test_full_backward_hooks_match_torch(x_requires_grad):
    ours, ref = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(ours.weight.detach().numpy()))
        ref.bias.copy_(torch.from_numpy(ours.bias.detach().numpy()))
    got, _ = hook_log(nn, ours, x_requires_grad)
    with warnings.catch_warnings():         # torch warns that the hook fires at the outputs
        warnings.simplefilter("ignore")
        want, _ = hook_log(torch, ref, x_requires_grad)
    assert got[0] == want[0] == "BackwardHookFunctionBackward"
    assert got[1][0] == want[1][0] == "pre"
    np.testing.assert_allclose(np.array(got[1][1]), np.array(want[1][1]), rtol=1e-4)
    assert got[2][0] == "hook" and len(got[2][1]) == len(want[2][1]) == 1
    if x_requires_grad:
        np.testing.assert_allclose(np.array(got[2][1]), np.array(want[2][1]), rtol=1e-4)
    else:
        assert got[2][1] == want[2][1] == [None]


def test_backward_hooks_replace_gradients_and_remove():
    lin = nn.Linear(3, 2)
    x = nn.ones(4, 3, requires_grad=True)
    pre = lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 0,))
    lin(x).sum().backward()
    assert np.all(x.grad.numpy() == 0) and np.all(lin.weight.grad.numpy() == 0)
    pre.remove()
    x.grad = None
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0] + 1,))
    lin(x).sum().backward()
    want = lin.weight.detach().numpy().sum(0) + 1
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(want, (4, 3)), rtol=1e-6)


def test_forward_hooks_with_kwargs():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor
    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": 3.0}),
                                with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(kwargs),
                            with_kwargs=True)
    assert m(nn.tensor([2.0]), factor=5.0).tolist() == [6.0] and seen == [{"factor": 3.0}]


def test_to_and_device_forms():
    net = Net()
    assert net.to("cpu") is net and net.to(nn.zeros(1).device) is net and net.cpu() is net
    net.to("float64")
    assert all(p.dtype == "float64" for p in net.parameters())
    net.to(device="cpu", dtype="float16")
    assert net.fc1.weight.dtype == "float16"
    net.to(nn.zeros(1))                                  # a tensor: its dtype
    assert net.fc1.weight.dtype == "float32" and isinstance(net.fc1.weight, nn.Parameter)
    net.half().float()
    assert net.steps.dtype == "float32"


def test_sequential_and_module_list_editing():
    a, b, c = nn.Linear(2, 2), nn.ReLU(), nn.Tanh()
    seq = nn.Sequential(a, b)
    seq.insert(1, c)
    assert list(seq) == [a, c, b]
    assert seq.pop(1) is c and list(seq) == [a, b] and list(seq._modules) == ["0", "1"]
    seq.extend([c])
    seq[0] = nn.Identity()
    assert [type(m).__name__ for m in seq] == ["Identity", "ReLU", "Tanh"]
    del seq[0:2]
    assert list(seq) == [c] and list(seq._modules) == ["0"]
    ml = nn.ModuleList([a, b, c])
    assert ml.pop(0) is a and list(ml) == [b, c] and list(ml._modules) == ["0", "1"]
    assert list(ml[::-1]) == [c, b] and ml[-1] is c
    ml[0] = a
    assert list(ml) == [a, c]


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.zeros(2, 3), nn.Parameter(nn.ones(3))])
    pl.append(nn.zeros(1))
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 3
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert pl[-1].shape == (1,) and len(pl[1:]) == 2
    ref = torch.nn.ParameterList([torch.zeros(2, 3), torch.nn.Parameter(torch.ones(3))])
    assert repr(pl[:2]) == repr(ref).replace("torch.", "")
    pd = nn.ParameterDict({"b": nn.zeros(2), "a": nn.Parameter(nn.ones(1))})
    pd["c"] = nn.zeros(3)
    assert list(pd) == ["b", "a", "c"] and "a" in pd and len(pd) == 3
    assert list(pd.state_dict()) == ["b", "a", "c"]
    assert pd.pop("b").shape == (2,) and list(pd.keys()) == ["a", "c"]
    assert pd.get("zz") is None and pd.setdefault("d", nn.zeros(1)).shape == (1,)
    assert pd.popitem()[0] == "d"
    assert repr(pd) == ("ParameterDict(\n    (a): Parameter containing: [float32 of size 1]\n"
                        "    (c): Parameter containing: [float32 of size 3]\n)")
    holder = nn.Module()
    holder.params = pl
    holder.named = pd
    assert list(holder.state_dict()) == ["params.0", "params.1", "params.2", "named.a",
                                         "named.c"]
