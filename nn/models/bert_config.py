"""``BertConfig``: the hyperparameters of a BERT model, with transformers 4.x's names and
defaults (``transformers.BertConfig``); checked when made, each error naming its argument."""
from __future__ import annotations

__all__ = ["BertConfig"]

POSITION_EMBEDDING_TYPES = ("absolute", "relative_key", "relative_key_query")
ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu", "swish", "tanh")
PROBLEM_TYPES = (None, "regression", "single_label_classification",
                 "multi_label_classification")


class BertConfig:
    """The configuration of a BERT model (defaults: bert-base-uncased)."""

    def __init__(self, vocab_size=30522, hidden_size=768, num_hidden_layers=12,
                 num_attention_heads=12, intermediate_size=3072, hidden_act="gelu",
                 hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02,
                 layer_norm_eps=1e-12, pad_token_id=0, position_embedding_type="absolute",
                 classifier_dropout=None, num_labels=2, problem_type=None, is_decoder=False,
                 **kwargs):
        for name, value in (("vocab_size", vocab_size), ("hidden_size", hidden_size),
                            ("num_hidden_layers", num_hidden_layers),
                            ("num_attention_heads", num_attention_heads),
                            ("intermediate_size", intermediate_size),
                            ("max_position_embeddings", max_position_embeddings),
                            ("type_vocab_size", type_vocab_size), ("num_labels", num_labels)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"BertConfig: {name} must be a positive integer, got {value!r}")
        if hidden_size % num_attention_heads:
            raise ValueError(f"BertConfig: hidden_size ({hidden_size}) is not a multiple of "
                             f"num_attention_heads ({num_attention_heads})")
        if position_embedding_type not in POSITION_EMBEDDING_TYPES:
            raise ValueError(f"BertConfig: position_embedding_type must be one of "
                             f"{POSITION_EMBEDDING_TYPES}, got {position_embedding_type!r}")
        if not callable(hidden_act) and hidden_act not in ACTIVATIONS:
            raise ValueError(f"BertConfig: hidden_act must be one of {ACTIVATIONS} or a "
                             f"callable, got {hidden_act!r}")
        for name, p in (("hidden_dropout_prob", hidden_dropout_prob),
                        ("attention_probs_dropout_prob", attention_probs_dropout_prob),
                        ("classifier_dropout", classifier_dropout)):
            if p is not None and not 0.0 <= p <= 1.0:
                raise ValueError(f"BertConfig: {name} must be in [0, 1], got {p!r}")
        if pad_token_id is not None and not 0 <= pad_token_id < vocab_size:
            raise ValueError(f"BertConfig: pad_token_id {pad_token_id} is outside the "
                             f"vocabulary (vocab_size={vocab_size})")
        if problem_type not in PROBLEM_TYPES:
            raise ValueError(f"BertConfig: problem_type must be one of {PROBLEM_TYPES}, got "
                             f"{problem_type!r}")
        if is_decoder:
            raise ValueError("BertConfig: is_decoder=True (causal BERT, cross-attention, "
                             "caches) is not supported; nn.models.BertModel is the encoder")
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.pad_token_id = pad_token_id
        self.position_embedding_type = position_embedding_type
        self.classifier_dropout = classifier_dropout
        self.num_labels = num_labels
        self.problem_type = problem_type
        self.is_decoder = False
        for name, value in kwargs.items():     # transformers' other keys, kept as they are
            setattr(self, name, value)

    FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
              "intermediate_size", "hidden_act", "hidden_dropout_prob",
              "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
              "initializer_range", "layer_norm_eps", "pad_token_id", "position_embedding_type",
              "classifier_dropout", "num_labels", "problem_type")

    def to_dict(self):
        return {name: getattr(self, name) for name in self.FIELDS}

    @classmethod
    def from_transformers(cls, hf_config):
        """The same configuration as a ``transformers.BertConfig``."""
        values = {name: getattr(hf_config, name) for name in cls.FIELDS
                  if hasattr(hf_config, name)}
        return cls(**values)

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"BertConfig({body})"
