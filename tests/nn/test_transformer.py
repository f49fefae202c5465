"""TransformerEncoderLayer / TransformerEncoder / TransformerDecoderLayer / TransformerDecoder /
Transformer against PyTorch: the same state-dict keys, forward values (with key padding and
causal masks) and the gradients of inputs and every parameter, given the same weights."""
import copy

import numpy as np
import pytest
import torch

import nn
from torch_compare import close, close_grads, copy_params, pair

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape).astype("float32")


def padding_mask():
    m = np.zeros((3, 5), bool)
    m[0, 3:] = True
    m[2, 4] = True
    return m


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True, activation="gelu"),
                                dict(batch_first=False)], ids=["post", "pre_gelu", "seq_first"])
@pytest.mark.parametrize("mask", ["padding", "causal"])
def test_encoder_matches_torch(kw, mask):
    base = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
    base.update(kw)
    torch.manual_seed(0)
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(**base), 2,
                                         enable_nested_tensor=False)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(**base), 2)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_params(ours, theirs)
    x, tx = pair(randn(*((3, 5, 8) if base["batch_first"] else (5, 3, 8))))
    if mask == "padding":
        m = padding_mask()
        out, tout = ours(x, src_key_padding_mask=nn.tensor(m)), \
            theirs(tx, src_key_padding_mask=torch.tensor(m))
    else:
        cm = torch.nn.Transformer.generate_square_subsequent_mask(5)
        out = ours(x, mask=nn.Transformer.generate_square_subsequent_mask(5), is_causal=True)
        tout = theirs(tx, mask=cm, is_causal=True)
    close(out, tout)
    g = randn(*out.shape)
    out.backward(nn.tensor(g))
    tout.backward(torch.tensor(g))
    close(x.grad, tx.grad, 1e-3, 1e-5)
    close_grads(ours, theirs, 1e-3, 1e-5)


def test_encoder_layer_eval_unbatched_and_activation_module():
    torch.manual_seed(1)
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.1, activation=torch.nn.GELU())
    ours = nn.TransformerEncoderLayer(8, 2, 16, 0.1, activation=nn.GELU())
    copy_params(ours, theirs)
    theirs.eval(), ours.eval()
    x, tx = pair(randn(5, 8))
    close(ours(x), theirs(tx))
    with nn.no_grad():                               # dropout off in eval: deterministic
        np.testing.assert_array_equal(ours(x).numpy(), ours(x).numpy())


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True, batch_first=True)],
                         ids=["post", "pre_batch_first"])
def test_transformer_matches_torch(kw):
    base = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                dim_feedforward=16, dropout=0.0)
    base.update(kw)
    torch.manual_seed(0)
    theirs, ours = torch.nn.Transformer(**base), nn.Transformer(**base)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_params(ours, theirs)
    bf = base.get("batch_first", False)
    src, tsrc = pair(randn(*((3, 5, 8) if bf else (5, 3, 8))))
    tgt, ttgt = pair(randn(*((3, 4, 8) if bf else (4, 3, 8))))
    sk = padding_mask()
    tk = np.zeros((3, 4), bool)
    tk[2, 3] = True
    cm = nn.Transformer.generate_square_subsequent_mask(4)
    tcm = torch.nn.Transformer.generate_square_subsequent_mask(4)
    close(cm, tcm)
    out = ours(src, tgt, tgt_mask=cm, src_key_padding_mask=nn.tensor(sk),
               tgt_key_padding_mask=nn.tensor(tk), memory_key_padding_mask=nn.tensor(sk),
               tgt_is_causal=True)
    tout = theirs(tsrc, ttgt, tgt_mask=tcm, src_key_padding_mask=torch.tensor(sk),
                  tgt_key_padding_mask=torch.tensor(tk),
                  memory_key_padding_mask=torch.tensor(sk), tgt_is_causal=True)
    close(out, tout)
    (out ** 2).sum().backward()
    (tout ** 2).sum().backward()
    close(src.grad, tsrc.grad, 1e-3, 1e-5)
    close(tgt.grad, ttgt.grad, 1e-3, 1e-5)
    close_grads(ours, theirs, 1e-3, 1e-5)


def test_layers_are_independent_copies_and_init():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    enc = nn.TransformerEncoder(layer, 3)
    ws = [m.linear1.weight for m in enc.layers]
    assert len({id(w) for w in ws}) == 3 and all(w is not layer.linear1.weight for w in ws)
    np.testing.assert_array_equal(ws[0].detach().numpy(), ws[2].detach().numpy())
    t = nn.Transformer(8, 2, 1, 1, 16)
    # xavier_uniform_ on every matrix: |w| <= sqrt(6 / (fan_in + fan_out))
    w = t.encoder.layers[0].linear1.weight.detach().numpy()
    assert np.abs(w).max() <= np.sqrt(6 / (8 + 16)) + 1e-6
    assert len(list(t.parameters())) == len(list(torch.nn.Transformer(8, 2, 1, 1, 16)
                                                 .parameters()))
    copy.deepcopy(t)                                  # modules stay deep-copyable
