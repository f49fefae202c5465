"""PyTorch scripts' module names and top-level helpers: ``import nn as torch`` then
``torch.nn.Linear``, ``torch.utils.data``, ``nn.Generator``, threads, backends, cuda queries;
each compared with what torch itself offers under the same spelling."""
import importlib
import subprocess
import sys

import numpy as np
import pytest
import torch

import nn


def test_torch_spellings_resolve_to_nn_objects():
    import nn as torch_like
    assert torch_like.nn is torch_like
    assert torch_like.nn.Linear is nn.modules.Linear
    assert torch_like.nn.functional is nn.functional
    assert torch_like.utils.data.DataLoader is nn.data.DataLoader
    assert torch_like.nn.utils.clip_grad_norm_ is nn.utils.clip_grad_norm_
    assert torch_like.optim.Adam is nn.optim.Adam


def test_alias_imports_are_the_same_module_objects():
    import nn.nn.functional as F
    import nn.utils.data as D
    from nn.utils.data import DataLoader, random_split
    from nn import nn as nn_pkg, optim
    assert F is nn.functional and D is nn.data and nn_pkg is nn and optim is nn.optim
    assert DataLoader is nn.data.DataLoader and random_split is nn.data.random_split
    sampler = importlib.import_module("nn.utils.data.sampler")
    assert sampler is nn.data.sampler and sampler.__spec__.name == "nn.data.sampler"
    init = importlib.import_module("nn.nn.init")
    assert init is nn.init and init.__name__ == "nn.init"


def test_alias_import_of_a_module_not_yet_imported_makes_no_second_copy():
    code = ("import sys, nn; assert 'nn.optim.lr_scheduler' in sys.modules or True\n"
            "import nn.nn.optim.lr_scheduler as a\nimport nn.optim.lr_scheduler as b\n"
            "assert a is b, (a, b)\nimport nn.nn.nn.functional as f\nassert f is nn.functional\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_generator_methods_match_torch():
    for name in ("manual_seed", "seed", "initial_seed", "get_state", "set_state"):
        assert hasattr(torch.Generator(), name) and hasattr(nn.Generator(), name)
    g = nn.Generator()
    assert g.manual_seed(7) is g and g.initial_seed() == 7
    a = nn.randperm(20, generator=g).tolist()
    state = g.get_state()
    assert state.dtype == "uint8" and state.shape == (37,)
    b = nn.rand(5, generator=g).numpy().copy()
    g.set_state(state)
    assert np.array_equal(nn.rand(5, generator=g).numpy(), b)
    assert nn.randperm(20, generator=nn.Generator().manual_seed(7)).tolist() == a
    assert sorted(a) == list(range(20))
    s = g.seed()
    assert g.initial_seed() == s


def test_generator_is_accepted_where_torch_takes_one():
    def draws(seed):
        g = nn.Generator().manual_seed(seed)
        out = [nn.rand(3, generator=g).tolist(), nn.randn(3, generator=g).tolist(),
               nn.randint(0, 9, (4,), generator=g).tolist(), nn.randperm(6, generator=g).tolist(),
               nn.normal(0.0, 1.0, (2,), generator=g).tolist(),
               nn.empty(3).uniform_(generator=g).tolist()]
        w = nn.empty(3, 4)
        nn.init.normal_(w, generator=g)
        out.append(w.tolist())
        split = nn.data.random_split(range(10), [7, 3], generator=g)
        out.append(list(split[1].indices))
        sampler = nn.data.RandomSampler(range(8), generator=g)
        out.append(list(sampler))
        loader = nn.data.DataLoader(nn.arange(8), batch_size=4, shuffle=True, generator=g)
        out.append([b.tolist() for b in loader])
        return out
    assert draws(3) == draws(3)
    assert draws(3) != draws(4)


def test_manual_seed_reseeds_the_default_generator_in_place():
    g = nn.manual_seed(11)
    assert g is nn.default_generator and isinstance(g, nn.Generator)
    assert nn.initial_seed() == 11
    a = nn.rand(4).tolist()
    nn.manual_seed(11)
    assert nn.rand(4).tolist() == a
    state = nn.get_rng_state()
    b = nn.randn(3).tolist()
    nn.default_generator.set_state(state)
    assert nn.randn(3).tolist() == b
    # torch's: manual_seed returns the default generator too
    assert torch.manual_seed(0) is torch.default_generator


def test_threads_version_backends():
    n = nn.get_num_threads()
    assert n >= 1 and isinstance(n, int)
    nn.set_num_threads(1)
    assert nn.get_num_threads() == 1
    nn.set_num_threads(n)
    assert nn.get_num_threads() == n
    assert isinstance(nn.__version__, str) and nn.__version__[0].isdigit()
    for flag in ("benchmark", "deterministic", "enabled"):
        assert isinstance(getattr(nn.backends.cudnn, flag), bool)
        assert isinstance(getattr(torch.backends.cudnn, flag), bool)
    nn.backends.cudnn.benchmark = True
    assert nn.backends.cudnn.benchmark is True
    nn.backends.cudnn.benchmark = False
    with nn.backends.cudnn.flags(enabled=False, deterministic=True):
        assert nn.backends.cudnn.deterministic and not nn.backends.cudnn.enabled
    assert nn.backends.cudnn.enabled and not nn.backends.cudnn.deterministic
    assert nn.backends.cudnn.is_available() is False


def test_cuda_queries_as_torch_names_them():
    for name in ("current_device", "get_device_name", "get_device_properties", "mem_get_info",
                 "empty_cache", "device_count", "is_available", "synchronize",
                 "memory_allocated", "manual_seed_all"):
        assert callable(getattr(torch.cuda, name)) and callable(getattr(nn.cuda, name))
    nn.cuda.empty_cache()           # never raises, as torch's
    torch.cuda.empty_cache()
    if nn.cuda.is_available():      # a GPU, or numba's simulator (tests/conftest.py)
        assert nn.cuda.current_device() == 0 and nn.cuda.device_count() == 1
        props = nn.cuda.get_device_properties(0)
        assert nn.cuda.get_device_name() == props.name and props.major >= 1
        free, total = nn.cuda.mem_get_info()
        assert 0 <= free <= total
    else:
        with pytest.raises(RuntimeError, match="no CUDA GPU"):
            nn.cuda.current_device()
        assert nn.cuda.memory_allocated() == 0 == torch.cuda.memory_allocated()


def test_cuda_queries_without_a_gpu_raise_clearly():
    code = ("import nn\nassert not nn.cuda.is_available()\nnn.cuda.empty_cache()\n"
            "for f in (nn.cuda.current_device, nn.cuda.get_device_name, "
            "nn.cuda.get_device_properties, nn.cuda.mem_get_info):\n"
            "    try:\n        f()\n    except RuntimeError as e:\n"
            "        assert 'no CUDA GPU is available' in str(e), e\n"
            "    else:\n        raise AssertionError(f)\nprint('ok')")
    env = {**__import__("os").environ, "NUMBA_ENABLE_CUDASIM": "0", "CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_remaining_random_fills_take_a_generator_and_match_torchs_distributions():
    def draw(seed):
        g = nn.Generator().manual_seed(seed)
        return [nn.empty(2000).random_(3, 7, generator=g).numpy().copy(),
                nn.empty(2000).cauchy_(generator=g).numpy().copy(),
                nn.empty(2000).log_normal_(0.5, 0.25, generator=g).numpy().copy(),
                nn.empty(2000).geometric_(0.25, generator=g).numpy().copy(),
                nn.poisson(nn.full((2000,), 3.0), generator=g).numpy().copy()]
    a, b = draw(1), draw(1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    rand, cauchy, lognormal, geometric, poisson = a
    t = torch.Generator().manual_seed(1)
    t_rand = torch.empty(2000).random_(3, 7, generator=t).numpy()
    assert set(rand.tolist()) == set(t_rand.tolist()) == {3.0, 4.0, 5.0, 6.0}
    assert abs(np.median(cauchy)) < 0.15                     # the median of Cauchy(0, 1)
    assert abs(np.log(lognormal).mean() - 0.5) < 0.03
    assert abs(np.log(lognormal).std() - 0.25) < 0.03
    assert geometric.min() >= 1 and abs(geometric.mean() - 4.0) < 0.35      # 1 / p
    t_geo = torch.empty(2000).geometric_(0.25, generator=t).numpy()
    assert t_geo.min() >= 1 and abs(t_geo.mean() - 4.0) < 0.35
    assert abs(poisson.mean() - 3.0) < 0.2 and abs(poisson.var() - 3.0) < 0.4
    ints = nn.empty(3000, dtype="int64").random_(5)
    assert set(ints.tolist()) == set(range(5))
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to'"):
        nn.empty(3).random_(5, 2)
