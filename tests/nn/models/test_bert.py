"""nn.models' BERT against Hugging Face transformers' (4.x) with the same random weights,
copied through numpy: hidden states and pooled output (float32, eval mode) to 1e-5
relative, the gradient of a loss w.r.t. every parameter to 1e-4 relative, the masked-LM and
sequence-classification heads and their losses."""
import numpy as np
import pytest
import torch
import transformers

import nn
from nn.models import (BertConfig, BertForMaskedLM, BertForSequenceClassification, BertModel,
                       convert_state_dict)

transformers.logging.set_verbosity_error()

CONFIGS = [   # (name, config keywords)
    ("absolute", dict(vocab_size=40, hidden_size=16, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=24, max_position_embeddings=16,
                      type_vocab_size=2, position_embedding_type="absolute")),
    ("relative_key", dict(vocab_size=30, hidden_size=12, num_hidden_layers=1,
                          num_attention_heads=3, intermediate_size=20,
                          max_position_embeddings=10, type_vocab_size=3,
                          position_embedding_type="relative_key", hidden_act="gelu_new")),
    ("relative_key_query", dict(vocab_size=50, hidden_size=24, num_hidden_layers=2,
                                num_attention_heads=4, intermediate_size=32,
                                max_position_embeddings=12, type_vocab_size=2,
                                position_embedding_type="relative_key_query",
                                hidden_act="relu")),
]


def _hf(cls, kw, seed=0):
    torch.manual_seed(seed)
    model = cls(transformers.BertConfig(**kw, attn_implementation="eager")).eval()
    with torch.no_grad():                       # nonzero biases and LayerNorm affines
        for name, p in model.named_parameters():
            if "bias" in name or "LayerNorm" in name:
                p.add_(0.1 * torch.randn(p.shape))
    return model


def _inputs(kw, B=3, L=7, seed=1):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, kw["vocab_size"], (B, L))
    mask = np.ones((B, L), np.int64)
    mask[1, L - 2:] = 0                          # padding
    mask[2, 3:] = 0
    ids[mask == 0] = 0
    types = rng.integers(0, kw["type_vocab_size"], (B, L))
    return ids, mask, types


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("name,kw", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_bert_model_matches_transformers(name, kw):
    hf = _hf(transformers.BertModel, kw)
    ours = BertModel.from_transformers(hf)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in hf.named_parameters()]
    ids, mask, types = _inputs(kw)
    theirs = hf(torch.tensor(ids), attention_mask=torch.tensor(mask),
                token_type_ids=torch.tensor(types), output_hidden_states=True)
    out = ours(nn.tensor(ids), attention_mask=nn.tensor(mask), token_type_ids=nn.tensor(types),
               output_hidden_states=True)
    assert _rel(_np(out.last_hidden_state), _np(theirs.last_hidden_state)) < 1e-5
    assert _rel(_np(out.pooler_output), _np(theirs.pooler_output)) < 1e-5
    assert _rel(_np(out[0]), _np(theirs[0])) < 1e-5 and _rel(_np(out[1]), _np(theirs[1])) < 1e-5
    assert len(out.hidden_states) == kw["num_hidden_layers"] + 1
    for a, b in zip(out.hidden_states, theirs.hidden_states):
        assert _rel(_np(a), _np(b)) < 1e-5
    # a loss of both outputs, back to every parameter
    rng = np.random.default_rng(2)
    g1 = rng.standard_normal(theirs.last_hidden_state.shape).astype("float32")
    g2 = rng.standard_normal(theirs.pooler_output.shape).astype("float32")
    ((theirs.last_hidden_state * torch.tensor(g1)).sum()
     + (theirs.pooler_output * torch.tensor(g2)).sum()).backward()
    ((out.last_hidden_state * nn.tensor(g1)).sum()
     + (out.pooler_output * nn.tensor(g2)).sum()).backward()
    mine = dict(ours.named_parameters())
    scale = max(np.abs(p.grad.numpy()).max() for p in hf.parameters() if p.grad is not None)
    for n, p in hf.named_parameters():
        if p.grad is None:          # unused: the absolute position embeddings, relative modes
            assert mine[n].grad is None, n
            continue
        ref = p.grad.numpy()
        got = mine[n].grad.numpy()
        if n.endswith("attention.self.key.bias"):
            # softmax ignores a shift of every score of a row: this gradient is 0 up to
            # rounding in both (about 1e-10 here), so it is compared with the others' scale
            assert np.abs(got - ref).max() < 1e-6 * scale, n
            continue
        assert _rel(got, ref) < 1e-4, (n, _rel(got, ref))


def test_bert_model_without_mask_and_token_types():
    kw = CONFIGS[0][1]
    hf = _hf(transformers.BertModel, kw, seed=3)
    ours = BertModel.from_transformers(hf)
    ids, _, _ = _inputs(kw, seed=6)
    theirs = hf(torch.tensor(ids))
    out = ours(nn.tensor(ids))
    assert _rel(_np(out.last_hidden_state), _np(theirs.last_hidden_state)) < 1e-5
    assert _rel(_np(out.pooler_output), _np(theirs.pooler_output)) < 1e-5


def test_attentions_and_head_mask_match():
    kw = CONFIGS[0][1]
    hf = _hf(transformers.BertModel, kw)
    ours = BertModel.from_transformers(hf)
    ids, mask, types = _inputs(kw)
    head_mask = np.array([1.0, 0.5], np.float32)
    theirs = hf(torch.tensor(ids), attention_mask=torch.tensor(mask),
                token_type_ids=torch.tensor(types), output_attentions=True,
                head_mask=torch.tensor(head_mask))
    out = ours(nn.tensor(ids), attention_mask=nn.tensor(mask), token_type_ids=nn.tensor(types),
               output_attentions=True, head_mask=nn.tensor(head_mask))
    assert len(out.attentions) == kw["num_hidden_layers"]
    for a, b in zip(out.attentions, theirs.attentions):
        assert _rel(_np(a), _np(b)) < 1e-5
    assert _rel(_np(out.last_hidden_state), _np(theirs.last_hidden_state)) < 1e-5


def test_state_dict_round_trip_strict():
    kw = CONFIGS[2][1]
    hf = _hf(transformers.BertModel, kw)
    ours = BertModel(BertConfig(**kw))
    sd = convert_state_dict(hf.state_dict())
    assert sorted(ours.state_dict()) == sorted(sd)
    ours.load_state_dict(sd, strict=True)
    for name, value in ours.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), hf.state_dict()[name].numpy())


@pytest.mark.parametrize("name,kw", CONFIGS[:2], ids=[c[0] for c in CONFIGS[:2]])
def test_masked_lm_matches_transformers(name, kw):
    hf = _hf(transformers.BertForMaskedLM, kw)
    ours = BertForMaskedLM.from_transformers(hf)
    # the decoder is the word embeddings (tied), as in transformers
    assert ours.cls.predictions.decoder.weight is ours.bert.embeddings.word_embeddings.weight
    assert sorted(ours.state_dict()) == sorted(hf.state_dict())
    ids, mask, types = _inputs(kw)
    labels = np.where(np.random.default_rng(4).random(ids.shape) < 0.4, ids, -100)
    theirs = hf(torch.tensor(ids), attention_mask=torch.tensor(mask),
                token_type_ids=torch.tensor(types), labels=torch.tensor(labels))
    out = ours(nn.tensor(ids), attention_mask=nn.tensor(mask), token_type_ids=nn.tensor(types),
               labels=nn.tensor(labels))
    assert _rel(_np(out.logits), _np(theirs.logits)) < 1e-5
    assert abs(out.loss.item() - theirs.loss.item()) < 1e-5 * abs(theirs.loss.item())
    assert _rel(_np(out[1]), _np(theirs[1])) < 1e-5        # (loss, logits)
    theirs.loss.backward()
    out.loss.backward()
    mine = dict(ours.named_parameters())
    for n, p in hf.named_parameters():
        if n.endswith("attention.self.key.bias") or p.grad is None:
            continue                    # 0 up to rounding (see above), or unused
        assert _rel(mine[n].grad.numpy(), p.grad.numpy()) < 1e-4, n


@pytest.mark.parametrize("problem", ["single_label_classification", "regression",
                                     "multi_label_classification"])
def test_sequence_classification_matches_transformers(problem):
    kw = dict(CONFIGS[0][1], num_labels=1 if problem == "regression" else 3)
    hf = _hf(transformers.BertForSequenceClassification, kw)
    ours = BertForSequenceClassification.from_transformers(hf)
    ids, mask, types = _inputs(kw)
    rng = np.random.default_rng(5)
    if problem == "single_label_classification":
        labels = rng.integers(0, 3, (3,))
    elif problem == "regression":
        labels = rng.standard_normal((3,)).astype("float32")
    else:
        labels = (rng.random((3, 3)) < 0.5).astype("float32")
    theirs = hf(torch.tensor(ids), attention_mask=torch.tensor(mask),
                token_type_ids=torch.tensor(types), labels=torch.tensor(labels))
    out = ours(nn.tensor(ids), attention_mask=nn.tensor(mask), token_type_ids=nn.tensor(types),
               labels=nn.tensor(labels))
    assert hf.config.problem_type == ours.config.problem_type == problem
    assert _rel(_np(out.logits), _np(theirs.logits)) < 1e-5
    assert abs(out.loss.item() - theirs.loss.item()) < 1e-5 * abs(theirs.loss.item())
    theirs.loss.backward()
    out.loss.backward()
    mine = dict(ours.named_parameters())
    for n in ("classifier.weight", "bert.pooler.dense.weight",
              "bert.embeddings.word_embeddings.weight",
              "bert.encoder.layer.0.attention.self.query.weight"):
        assert _rel(mine[n].grad.numpy(), dict(hf.named_parameters())[n].grad.numpy()) < 1e-4


def test_outputs_index_and_key_access():
    kw = CONFIGS[0][1]
    ours = BertModel(BertConfig(**kw)).eval()
    ids, mask, _ = _inputs(kw)
    out = ours(nn.tensor(ids), attention_mask=nn.tensor(mask))
    assert out.keys() == ["last_hidden_state", "pooler_output"]
    assert out[0] is out.last_hidden_state and out["pooler_output"] is out[1]
    assert len(out.to_tuple()) == 2 and out.hidden_states is None
    assert tuple(out.last_hidden_state.shape) == (3, 7, 16)


def test_fresh_model_initialized_as_transformers():
    """transformers' _init_weights: N(0, 0.02) weights, zero biases and padding row,
    LayerNorm ones and zeros."""
    nn.manual_seed(0)
    cfg = BertConfig(vocab_size=500, hidden_size=64, num_hidden_layers=1,
                     num_attention_heads=4, intermediate_size=128)
    model = BertModel(cfg)
    w = model.embeddings.word_embeddings.weight.detach().numpy()
    assert np.all(w[0] == 0)
    assert abs(w[1:].std() - 0.02) < 0.002 and abs(w[1:].mean()) < 0.002
    assert np.all(model.encoder.layer[0].attention.self.query.bias.detach().numpy() == 0)
    assert np.all(model.embeddings.LayerNorm.weight.detach().numpy() == 1)


def test_inputs_embeds_and_position_ids_match_transformers():
    kw = CONFIGS[0][1]
    hf = _hf(transformers.BertModel, kw)
    ours = BertModel.from_transformers(hf)
    ids, mask, types = _inputs(kw)
    pos = np.tile(np.arange(7)[::-1].copy(), (3, 1))
    emb = hf.embeddings.word_embeddings(torch.tensor(ids)).detach().numpy()
    theirs = hf(inputs_embeds=torch.tensor(emb), attention_mask=torch.tensor(mask),
                position_ids=torch.tensor(pos))
    out = ours(inputs_embeds=nn.tensor(emb), attention_mask=nn.tensor(mask),
               position_ids=nn.tensor(pos))
    assert _rel(_np(out.last_hidden_state), _np(theirs.last_hidden_state)) < 1e-5
