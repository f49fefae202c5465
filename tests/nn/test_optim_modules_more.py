"""More of nn.optim, the containers, nn.utils and the losses against torch: NAdam, RAdam,
Adamax and Adadelta training a small model; all-or-nothing ``load_state_dict``; container
operators; ``parameters_to_vector`` / ``vector_to_parameters`` / ``pad_sequence``; 1-d
cross entropy."""
import numpy as np
import pytest
import torch

import nn
from nn import optim

RNG = np.random.default_rng(0)
W1, B1 = RNG.standard_normal((6, 4)).astype("float32"), RNG.standard_normal(6).astype("float32")
W2, B2 = RNG.standard_normal((2, 6)).astype("float32"), RNG.standard_normal(2).astype("float32")
X = RNG.standard_normal((8, 4)).astype("float32")
Y = RNG.standard_normal((8, 2)).astype("float32")


def _model(lib):
    """Linear(4, 6) - Tanh - Linear(6, 2) with the fixed weights above."""
    L = lib.nn if lib is torch else lib
    model = L.Sequential(L.Linear(4, 6), L.Tanh(), L.Linear(6, 2))
    model.load_state_dict({"0.weight": lib.tensor(W1), "0.bias": lib.tensor(B1),
                           "2.weight": lib.tensor(W2), "2.bias": lib.tensor(B2)})
    return model


def _train(lib, make, steps=5, model=None, opt=None):
    """``steps`` optimizer steps on the MSE of the model; returns (model, optimizer)."""
    model = model or _model(lib)
    opt = opt or make(model.parameters())
    F = torch.nn.functional if lib is torch else nn.functional
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(model(lib.tensor(X)), lib.tensor(Y)).backward()
        opt.step()
    return model, opt


def _assert_same_parameters(ours, theirs):
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)


CASES = [
    ("NAdam", dict(), 5),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01), 5),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True), 5),
    ("RAdam", dict(), 5),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.8)), 10),         # rectified from step 7 on
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.8), weight_decay=0.1), 10),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.8), weight_decay=0.1, decoupled_weight_decay=True,
                   maximize=True), 10),
    ("Adamax", dict(), 5),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1), 5),
    ("Adamax", dict(lr=0.01, maximize=True), 5),
    ("Adadelta", dict(), 5),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1), 5),
    ("Adadelta", dict(lr=0.5, maximize=True, eps=1e-4), 5),
]


@pytest.mark.parametrize("name,kw,steps", CASES)
def test_new_optimizers_train_as_torch(name, kw, steps):
    ours, opt = _train(nn, lambda ps: getattr(optim, name)(ps, **kw), steps)
    theirs, topt = _train(torch, lambda ps: getattr(torch.optim, name)(ps, **kw), steps)
    _assert_same_parameters(ours, theirs)
    state, tstate = opt.state_dict()["state"], topt.state_dict()["state"]
    for k in tstate:
        assert list(state[k]) == list(tstate[k])
        for key, value in tstate[k].items():
            np.testing.assert_allclose(state[k][key].numpy(), value.numpy(), rtol=1e-5,
                                       atol=1e-7, err_msg=f"{k} {key}")


@pytest.mark.parametrize("name", ["NAdam", "RAdam", "Adamax", "Adadelta"])
def test_new_optimizers_defaults_are_torchs(name):
    p = nn.zeros(2, requires_grad=True)
    ours = getattr(optim, name)([p]).defaults
    theirs = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)]).defaults
    assert ours == {k: tuple(v) if isinstance(v, tuple) else v for k, v in theirs.items()}


@pytest.mark.parametrize("name", ["NAdam", "RAdam", "Adamax", "Adadelta"])
def test_new_optimizers_param_groups(name):
    def groups(model):
        return lambda ps: getattr(model, name)(
            [{"params": list(ps)[:2], "lr": 0.05}, {"params": list(ps)[2:]}], lr=0.01)
    ours, _ = _train(nn, groups(optim))
    theirs, _ = _train(torch, groups(torch.optim))
    _assert_same_parameters(ours, theirs)


@pytest.mark.parametrize("name", ["NAdam", "RAdam", "Adamax", "Adadelta"])
def test_new_optimizers_resume_from_a_state_dict(name):
    kw = dict(lr=0.01, weight_decay=0.1)
    whole, _ = _train(nn, lambda ps: getattr(optim, name)(ps, **kw), 6)
    model, opt = _train(nn, lambda ps: getattr(optim, name)(ps, **kw), 3)
    saved = {"model": model.state_dict(), "opt": opt.state_dict()}
    resumed = _model(nn)
    resumed.load_state_dict(saved["model"])
    opt2 = getattr(optim, name)(resumed.parameters(), lr=123.0)
    opt2.load_state_dict(saved["opt"])
    assert opt2.param_groups[0]["lr"] == 0.01
    _train(nn, None, 3, model=resumed, opt=opt2)
    _assert_same_parameters(resumed, whole)


# ----------------------------------------------------------------------------- load_state_dict

def test_non_strict_load_still_copies_what_matches():
    results, models = [], []
    for lib in (nn, torch):
        model = _model(lib)
        results.append(model.load_state_dict(
            {"0.weight": lib.full((6, 4), 9.0), "junk": lib.ones(1)}, strict=False))
        models.append(model)
    (ours, theirs), (model, reference) = results, models
    assert (list(ours.missing_keys), list(ours.unexpected_keys)) == (
        list(theirs.missing_keys), list(theirs.unexpected_keys))
    assert ours.missing_keys == ["0.bias", "2.weight", "2.bias"]
    assert ours.unexpected_keys == ["junk"]
    for k, v in reference.state_dict().items():
        np.testing.assert_array_equal(model.state_dict()[k].numpy(), v.numpy())
    assert (model[0].weight.detach().numpy() == 9.0).all()


# ----------------------------------------------------------------------------- containers

def test_module_list_add_is_a_new_list_of_the_same_modules():
    a, b = nn.ModuleList([nn.ReLU()]), nn.ModuleList([nn.Tanh(), nn.Sigmoid()])
    both = a + b
    assert type(both) is nn.ModuleList and len(both) == 3 and len(a) == 1
    assert both[0] is a[0] and both[2] is b[1]
    assert list(dict(both.named_children())) == ["0", "1", "2"]
    assert len(a + [nn.ReLU()]) == 2


def test_sequential_add_and_mul_as_torch():
    relu, tanh = nn.ReLU(), nn.Tanh()
    s = nn.Sequential(relu, tanh)
    assert [type(m) for m in s + s] == [nn.ReLU, nn.Tanh] * 2
    assert len(s * 3) == 6 and len(2 * s) == 4 and (s * 2)[2] is relu
    alias = s
    s += nn.Sequential(nn.Sigmoid())
    assert s is alias and len(s) == 3
    s *= 2
    assert s is alias and len(s) == 6
    x = nn.tensor([[-1.0, 2.0]])
    ts = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()) * 2
    ns = nn.Sequential(nn.Linear(2, 2), nn.ReLU()) * 2
    ns.load_state_dict({k: nn.tensor(v.detach().numpy()) for k, v in ts.state_dict().items()})
    np.testing.assert_allclose(ns(x).detach().numpy(),
                               ts(torch.tensor([[-1.0, 2.0]])).detach().numpy(), rtol=1e-6)


def test_parameter_dict_in_place_or_and_dict_updates():
    d = nn.ParameterDict({"a": nn.Parameter(nn.ones(1))})
    alias = d
    d |= {"b": nn.zeros(2)}
    assert d is alias and list(d) == ["a", "b"] and isinstance(d["b"], nn.Parameter)
    assert list({"c": nn.zeros(1)} | d) == ["c", "a", "b"]
    other = nn.ParameterDict()
    other.update(d)
    assert list(other) == ["a", "b"]
    m = nn.ModuleDict({"x": nn.ReLU()})
    copy = nn.ModuleDict()
    copy.update(m)
    assert list(copy.keys()) == ["x"] and copy["x"] is m["x"]


# ----------------------------------------------------------------------------- nn.utils

def test_parameters_to_vector_and_back_as_torch():
    ours, theirs = _model(nn), _model(torch)
    vec = nn.utils.parameters_to_vector(ours.parameters())
    tvec = torch.nn.utils.parameters_to_vector(theirs.parameters())
    np.testing.assert_array_equal(vec.detach().numpy(), tvec.detach().numpy())
    weights = np.arange(vec.shape[0], dtype="float32")
    (vec * nn.tensor(weights)).sum().backward()
    (tvec * torch.tensor(weights)).sum().backward()
    for a, b in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
    new = RNG.standard_normal(vec.shape[0]).astype("float32")
    nn.utils.vector_to_parameters(nn.tensor(new), ours.parameters())
    torch.nn.utils.vector_to_parameters(torch.tensor(new), theirs.parameters())
    _assert_same_parameters(ours, theirs)
    assert all(p.requires_grad and p.is_leaf for p in ours.parameters())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_as_torch_with_gradients(batch_first, side):
    arrays = [RNG.standard_normal((n, 3)).astype("float32") for n in (2, 4, 1)]
    ours = [nn.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = nn.utils.rnn.pad_sequence(ours, batch_first, -2.0, side)
    tout = torch.nn.utils.rnn.pad_sequence(theirs, batch_first, -2.0, side)
    np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
    weights = RNG.standard_normal(tuple(tout.shape)).astype("float32")
    (out * nn.tensor(weights)).sum().backward()
    (tout * torch.tensor(weights)).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)


# ----------------------------------------------------------------------------- losses

def test_cross_entropy_of_one_sample_with_a_0d_or_1_element_target():
    logits = RNG.standard_normal(5).astype("float32")
    for target in (2, [2]):
        x, tx = nn.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
        loss = nn.functional.cross_entropy(x, nn.tensor(target))
        tloss = torch.nn.functional.cross_entropy(tx, torch.tensor(target))
        assert loss.shape == tuple(tloss.shape) == ()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-6)
        if target == 2:         # torch's backward refuses a (1,) target for a (C,) input
            loss.backward()
            tloss.backward()
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_binary_cross_entropy_with_targets_in_range_as_torch():
    p, t = np.array([0.3, 0.9], "float32"), np.array([0.0, 1.0], "float32")
    np.testing.assert_allclose(
        nn.functional.binary_cross_entropy(nn.tensor(p), nn.tensor(t)).item(),
        torch.nn.functional.binary_cross_entropy(torch.tensor(p), torch.tensor(t)).item(),
        rtol=1e-6)
