"""Misuses of nn.models' BERT and of the fused attention kernels: each raises an error that
names the argument."""
import numpy as np
import pytest

import nn
import te
from nn.models import BertConfig, BertModel, convert_state_dict
from nn.ops import attention

TINY = dict(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=12, max_position_embeddings=6)


@pytest.mark.parametrize("kwargs,match", [
    (dict(hidden_size=10, num_attention_heads=4), r"hidden_size \(10\) is not a multiple of "
                                                  r"num_attention_heads \(4\)"),
    (dict(position_embedding_type="rotary"), "position_embedding_type must be one of"),
    (dict(hidden_act="gelu_fast"), "hidden_act must be one of"),
    (dict(hidden_dropout_prob=1.5), r"hidden_dropout_prob must be in \[0, 1\]"),
    (dict(pad_token_id=20), "pad_token_id 20 is outside the vocabulary"),
    (dict(num_hidden_layers=0), "num_hidden_layers must be a positive integer"),
    (dict(vocab_size=2.5), "vocab_size must be a positive integer"),
    (dict(problem_type="ranking"), "problem_type must be one of"),
    (dict(is_decoder=True), "is_decoder=True .* is not supported"),
])
def test_config_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BertConfig(**dict(TINY, **kwargs))


def test_model_needs_a_config():
    with pytest.raises(TypeError, match="config must be a BertConfig, got dict"):
        BertModel(TINY)


def test_forward_argument_errors():
    model = BertModel(BertConfig(**TINY)).eval()
    ids = nn.tensor(np.ones((2, 4), np.int64))
    with pytest.raises(ValueError, match="either input_ids or inputs_embeds"):
        model()
    with pytest.raises(ValueError, match="both input_ids and inputs_embeds"):
        model(ids, inputs_embeds=nn.zeros(2, 4, 8))
    with pytest.raises(ValueError, match=r"sequence length 7 exceeds max_position_embeddings=6"):
        model(nn.tensor(np.ones((2, 7), np.int64)))
    with pytest.raises(ValueError, match=r"input_ids must be \(batch, seq_len\)"):
        model(nn.tensor(np.ones((2, 4, 1), np.int64)))
    with pytest.raises(TypeError, match="input_ids must be an nn.Tensor, got ndarray"):
        model(np.ones((2, 4), np.int64))
    with pytest.raises(ValueError, match="Wrong shape for input_ids .* attention_mask"):
        model(ids, attention_mask=nn.tensor(np.ones((2, 1, 1, 4), np.int64)))


def test_strict_load_names_the_missing_and_unexpected_keys():
    model = BertModel(BertConfig(**TINY))
    sd = convert_state_dict({k: v.numpy() for k, v in model.state_dict().items()})
    del sd["pooler.dense.bias"]
    sd["pooler.extra"] = nn.zeros(1)
    with pytest.raises(RuntimeError, match="pooler.dense.bias"):
        model.load_state_dict(sd, strict=True)


def test_convert_needs_a_mapping():
    with pytest.raises(TypeError, match="state_dict must be a mapping of names to tensors"):
        convert_state_dict([np.zeros(2)])


def _declare(shapes, **params):
    ins = [te.placeholder(s, "float32", name=f"x{k}") for k, s in enumerate(shapes)]
    return attention.flash_attention(*ins, **params)


@pytest.mark.parametrize("shapes,params,match", [
    ([(2, 5, 8), (2, 6), (2, 6, 8)], {}, r"k must be 3-d, got shape \(2, 6\)"),
    ([(2, 5, 8), (3, 6, 8), (2, 6, 8)], {}, "q, k and v need one batch size, got 2, 3 and 2"),
    ([(2, 5, 8), (2, 6, 4), (2, 6, 8)], {}, "k has 4 features per key, q 8"),
    ([(2, 5, 8), (2, 6, 8), (2, 7, 8)], {}, "v has 7 rows, k 6"),
    ([(2, 5, 8), (2, 6, 8), (2, 6, 8)], dict(heads=3), "heads=3 must be a positive divisor"),
    ([(2, 5, 8), (2, 6, 8), (2, 6, 8), (1, 1, 5, 6)], {},
     r"maskT has shape \(1, 1, 5, 6\); expected \(1 or 2, 1 or 1, 6, 1 or 5\)"),
    ([(2, 0, 8), (2, 6, 8), (2, 6, 8)], {}, "q has an empty axis"),
    ([(2, 5, 8), (2, 6, 8), (2, 6, 8)], dict(layout="lbhe"), "layout must be 'bhle' or"),
])
def test_flash_attention_declaration_errors(shapes, params, match):
    with pytest.raises(ValueError, match=match):
        _declare(shapes, **params)


def test_flash_attention_dtype_error():
    q = te.placeholder((1, 4, 4), "float64", name="q")
    k = te.placeholder((1, 4, 4), "float32", name="k")
    with pytest.raises(ValueError, match="q must be float32, got float64"):
        attention.flash_attention(q, k, k)


def test_sdpa_causal_with_mask_error():
    q = nn.zeros(1, 1, 4, 4)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=nn.zeros(4, 4),
                                                   is_causal=True)
