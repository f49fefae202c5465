"""nn.Module, Parameter, containers and the first layers, against PyTorch's behaviour: naming,
state_dict keys and loading reports, hooks, modes, repr, Linear's init and gradients, and a
small MLP trained by hand."""
import collections
import copy
import math

import numpy as np
import pytest

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
