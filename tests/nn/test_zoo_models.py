"""Small versions of well-known PyTorch models, trained a step side by side with torch 2.13 from
the same weights: outputs, the gradient of every parameter and the parameters after the
optimizer step agree at float32 tolerances (ResNet basic blocks, a MobileNetV2 inverted
residual, DCGAN, a Transformer language model with tied weights and a warmup schedule)."""
import math

import numpy as np
import torch

import nn
from torch_compare import close, close_grads, copy_params

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


def close_state(ours, theirs, rtol=1e-4, atol=1e-5):
    mine = ours.state_dict()
    assert list(mine) == list(theirs.state_dict())
    for name, value in theirs.state_dict().items():
        close(mine[name], value, rtol, atol)


def resnet(L):
    class BasicBlock(L.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = L.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = L.BatchNorm2d(cout)
            self.relu = L.ReLU(inplace=True)
            self.conv2 = L.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = L.BatchNorm2d(cout)
            self.downsample = None if stride == 1 and cin == cout else L.Sequential(
                L.Conv2d(cin, cout, 1, stride, bias=False), L.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            out += identity
            return self.relu(out)
    return L.Sequential(L.Conv2d(3, 4, 3, 1, 1, bias=False), L.BatchNorm2d(4), L.ReLU(),
                        BasicBlock(4, 4, 1), BasicBlock(4, 8, 2), L.AdaptiveAvgPool2d((1, 1)),
                        L.Flatten(), L.Linear(8, 3))


def test_resnet_train_step_eval_and_checkpoint(tmp_path):
    torch.manual_seed(0)
    theirs, ours = resnet(torch.nn), resnet(nn)
    copy_params(ours, theirs)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    opt = nn.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x, y = randn(4, 3, 8, 8), np.array([0, 1, 2, 1])
    for _ in range(2):
        topt.zero_grad()
        opt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y))
        loss = nn.functional.cross_entropy(ours(nn.tensor(x)), nn.tensor(y))
        close(loss, tloss)
        tloss.backward()
        loss.backward()
        close_grads(ours, theirs, 1e-3, 1e-5)
        topt.step()
        opt.step()
    close_state(ours, theirs)                          # weights and BatchNorm running stats
    theirs.eval(), ours.eval()
    close(ours(nn.tensor(x)), theirs(torch.tensor(x)), 1e-3, 1e-5)
    with nn.no_grad():
        first = ours(nn.tensor(x)).numpy()
        np.testing.assert_array_equal(first, ours(nn.tensor(x)).numpy())
    nn.save({"model": ours.state_dict(), "optimizer": opt.state_dict()}, tmp_path / "r.nn")
    checkpoint = nn.load(tmp_path / "r.nn")
    again = resnet(nn)
    again.load_state_dict(checkpoint["model"])
    again.eval()
    with nn.no_grad():
        np.testing.assert_array_equal(again(nn.tensor(x)).numpy(), first)


def mobilenet_block(L):
    hidden = 24
    return L.Sequential(L.Conv2d(4, hidden, 1, bias=False), L.BatchNorm2d(hidden),
                        L.ReLU6(inplace=True),
                        L.Conv2d(hidden, hidden, 3, 2, 1, groups=hidden, bias=False),
                        L.BatchNorm2d(hidden), L.ReLU6(inplace=True),
                        L.Conv2d(hidden, 8, 1, bias=False), L.BatchNorm2d(8), L.Hardswish())


def test_mobilenet_inverted_residual():
    torch.manual_seed(1)
    theirs, ours = mobilenet_block(torch.nn), mobilenet_block(nn)
    copy_params(ours, theirs)
    x = randn(2, 4, 8, 8) * 3
    out, tout = ours(nn.tensor(x)), theirs(torch.tensor(x))
    close(out, tout, 1e-3, 1e-5)
    (out ** 2).sum().backward()
    (tout ** 2).sum().backward()
    close_grads(ours, theirs, 1e-3, 1e-4)


def generator(L):
    return L.Sequential(L.ConvTranspose2d(6, 8, 4, 1, 0, bias=False), L.BatchNorm2d(8),
                        L.ReLU(True), L.ConvTranspose2d(8, 1, 4, 2, 1, bias=False), L.Tanh())


def discriminator(L):
    return L.Sequential(L.Conv2d(1, 4, 4, 2, 1, bias=False), L.LeakyReLU(0.2, inplace=True),
                        L.Conv2d(4, 1, 4, 1, 0, bias=False), L.Flatten())


def test_dcgan_discriminator_and_generator_steps():
    torch.manual_seed(2)
    tg, td, g, d = generator(torch.nn), discriminator(torch.nn), generator(nn), discriminator(nn)
    copy_params(g, tg)
    copy_params(d, td)
    adam = dict(lr=2e-4, betas=(0.5, 0.999))
    tgo, tdo = torch.optim.Adam(tg.parameters(), **adam), torch.optim.Adam(td.parameters(), **adam)
    go, do = nn.optim.Adam(g.parameters(), **adam), nn.optim.Adam(d.parameters(), **adam)
    tcrit, crit = torch.nn.BCEWithLogitsLoss(), nn.BCEWithLogitsLoss()
    real, z = np.tanh(randn(3, 1, 8, 8)), randn(3, 6, 1, 1)
    tfake, fake = tg(torch.tensor(z)), g(nn.tensor(z))
    close(fake, tfake, 1e-3, 1e-5)
    tloss = (tcrit(td(torch.tensor(real)).view(-1), torch.ones(3))
             + tcrit(td(tfake.detach()).view(-1), torch.zeros(3)))
    loss = crit(d(nn.tensor(real)).view(-1), nn.ones(3)) + crit(d(fake.detach()).view(-1),
                                                               nn.zeros(3))
    close(loss, tloss)
    tloss.backward()
    loss.backward()
    close_grads(d, td, 1e-3, 1e-5)
    tdo.step()
    do.step()
    tgl, gl = tcrit(td(tfake).view(-1), torch.ones(3)), crit(d(fake).view(-1), nn.ones(3))
    close(gl, tgl)
    tgl.backward()
    gl.backward()
    close_grads(g, tg, 1e-3, 1e-5)
    tgo.step()
    go.step()
    close_state(g, tg)
    close_state(d, td)


def language_model(L):
    lib = torch if L is torch.nn else nn

    class LM(L.Module):
        def __init__(self):
            super().__init__()
            self.emb = L.Embedding(11, 8, padding_idx=0)
            self.enc = L.TransformerEncoder(
                L.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True, norm_first=True), 2,
                **({"enable_nested_tensor": False} if L is torch.nn else {}))
            self.norm = L.LayerNorm(8)
            self.head = L.Linear(8, 11, bias=False)
            self.head.weight = self.emb.weight               # tied weights

        def forward(self, tokens):
            n = tokens.size(1)
            causal = lib.triu(lib.ones(n, n), diagonal=1).bool()
            h = self.enc(self.emb(tokens) * math.sqrt(8), mask=causal,
                         src_key_padding_mask=tokens == 0)
            return self.head(self.norm(h))
    return LM()


def test_transformer_language_model_with_adamw_groups_and_warmup():
    torch.manual_seed(3)
    theirs, ours = language_model(torch.nn), language_model(nn)
    copy_params(ours, theirs)
    assert ours.head.weight is ours.emb.weight

    def groups(model):
        decay = [p for n, p in model.named_parameters() if p.ndim > 1]
        rest = [p for n, p in model.named_parameters() if p.ndim <= 1]
        return [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]

    def schedule(lib, opt):
        s = lib.optim.lr_scheduler
        return s.SequentialLR(opt, [s.LambdaLR(opt, lambda k: (k + 1) / 2),
                                    s.CosineAnnealingLR(opt, 4)], milestones=[2])
    topt, opt = torch.optim.AdamW(groups(theirs), lr=1e-2), nn.optim.AdamW(groups(ours), lr=1e-2)
    tsched, sched = schedule(torch, topt), schedule(nn, opt)
    tokens = rng.integers(1, 11, (3, 6))
    tokens[0, 4:] = 0
    inputs, targets = tokens[:, :-1], tokens[:, 1:].reshape(-1)
    for _ in range(3):
        topt.zero_grad()
        opt.zero_grad()
        tout, out = theirs(torch.tensor(inputs)), ours(nn.tensor(inputs))
        close(out, tout, 1e-4, 1e-5)
        tloss = torch.nn.functional.cross_entropy(tout.reshape(-1, 11), torch.tensor(targets),
                                                  ignore_index=0, label_smoothing=0.1)
        loss = nn.functional.cross_entropy(out.reshape(-1, 11), nn.tensor(targets),
                                           ignore_index=0, label_smoothing=0.1)
        close(loss, tloss)
        tloss.backward()
        loss.backward()
        close(nn.utils.clip_grad_norm_(ours.parameters(), 0.5),
              torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5))
        close_grads(ours, theirs, 1e-3, 1e-5)
        topt.step()
        opt.step()
        tsched.step()
        sched.step()
        np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(), rtol=1e-7)
    # the key third of in_proj_bias has a gradient of exactly 0 in exact arithmetic (softmax
    # ignores a constant added to every score): both gradients are rounding noise (checked
    # above to atol), which AdamW's normalization turns into full-size steps of either sign
    mine = ours.state_dict()
    for name, value in theirs.state_dict().items():
        if name.endswith("in_proj_bias"):
            mine_v, value = mine[name].detach().numpy(), value.detach().numpy()
            keep = np.r_[0:8, 16:24]
            np.testing.assert_allclose(mine_v[keep], value[keep], rtol=1e-4, atol=1e-5)
        else:
            close(mine[name], value)
