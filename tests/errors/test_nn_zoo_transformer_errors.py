"""Misusing nn's Transformer layers gets an error that names the argument and what to do."""
import pytest

import nn


def test_bad_activation():
    with pytest.raises(RuntimeError, match=r"TransformerEncoderLayer: activation should be "
                                           r"'relu' or 'gelu'.*not 'tanh'"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(TypeError, match="TransformerDecoderLayer: activation should be"):
        nn.TransformerDecoderLayer(8, 2, activation=3)


def test_d_model_not_divisible_by_nhead():
    with pytest.raises(ValueError, match=r"d_model \(10\) must be divisible by nhead \(4\)"):
        nn.TransformerEncoderLayer(10, 4)
    with pytest.raises(ValueError, match="dim_feedforward must be a positive int, got 0"):
        nn.TransformerDecoderLayer(8, 2, dim_feedforward=0)


def test_stack_arguments():
    with pytest.raises(TypeError, match=r"TransformerEncoder: encoder_layer must be a module "
                                        r"to copy, such as nn\.TransformerEncoderLayer"):
        nn.TransformerEncoder("layer", 2)
    with pytest.raises(ValueError, match="TransformerDecoder: num_layers must be a positive "
                                         "int, got 0"):
        nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 0)


def test_transformer_batch_and_feature_mismatch():
    t = nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(RuntimeError, match=r"batch number of src \(3\) and tgt \(2\)"):
        t(nn.randn(5, 3, 8), nn.randn(4, 2, 8))
    with pytest.raises(RuntimeError, match=r"must be equal to d_model \(8\)"):
        t(nn.randn(5, 3, 6), nn.randn(4, 3, 6))


def test_is_causal_without_a_mask():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1)
    with pytest.raises(RuntimeError, match=r"TransformerEncoder: is_causal is only a hint; "
                                           r"pass mask=nn\.Transformer\."
                                           r"generate_square_subsequent_mask"):
        enc(nn.randn(5, 3, 8), is_causal=True)
    dec = nn.TransformerDecoderLayer(8, 2, 16)
    with pytest.raises(RuntimeError, match="pass tgt_mask="):
        dec(nn.randn(4, 3, 8), nn.randn(5, 3, 8), tgt_is_causal=True)
