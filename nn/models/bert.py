"""BERT as Hugging Face transformers 4.x builds it (``transformers.models.bert``), from nn's
compiled layers: the same module tree and parameter names (``embeddings.word_embeddings.
weight``, ``encoder.layer.0.attention.self.query.weight``...), so that a state dict converted
from transformers loads with ``strict=True`` (``nn.models.convert``), and the same arithmetic.

Self-attention with ``position_embedding_type="absolute"`` runs through
``nn.functional.scaled_dot_product_attention`` (one fused te kernel per batch and head on the
CPU, see nn/ops/attention.py); the relative modes ("relative_key", "relative_key_query": a
``distance_embedding`` of the ``2 * max_position_embeddings - 1`` distances, embedded and
dotted with the queries [and keys], added to the scores, no absolute position embeddings),
``output_attentions`` and ``head_mask`` compose the scores explicitly, as transformers' eager
attention does.
"""
from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from .. import init
from ..modules import Dropout, Embedding, LayerNorm, Linear, Module, ModuleList, Tanh
from ..modules.module import Parameter
from ..tensor import Tensor, arange, zeros
from .bert_config import BertConfig
from .outputs import (BaseModelOutput, BaseModelOutputWithPooling, MaskedLMOutput,
                      SequenceClassifierOutput)

__all__ = ["BertEmbeddings", "BertSelfAttention", "BertSelfOutput", "BertAttention",
           "BertIntermediate", "BertOutput", "BertLayer", "BertEncoder", "BertPooler",
           "BertPredictionHeadTransform", "BertLMPredictionHead", "BertOnlyMLMHead",
           "BertPreTrainedModel", "BertModel", "BertForMaskedLM",
           "BertForSequenceClassification"]

# the additive mask of a padded key: float32's lowest value, as transformers'
# get_extended_attention_mask (torch.finfo(dtype).min)
MASK_MIN = float(np.finfo(np.float32).min)

_ACTIVATIONS = {
    "gelu": lambda x: F.gelu(x),
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": lambda x: F.relu(x),
    "silu": lambda x: F.silu(x),
    "swish": lambda x: F.silu(x),
    "tanh": lambda x: x.tanh(),
}


def _activation(name):
    if callable(name):
        return name
    return _ACTIVATIONS[name]


class BertEmbeddings(Module):
    """Word + token-type (+ absolute position) embeddings, LayerNorm, dropout."""

    def __init__(self, config):
        super().__init__()
        self.word_embeddings = Embedding(config.vocab_size, config.hidden_size,
                                         padding_idx=config.pad_token_id)
        self.position_embeddings = Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)
        self.position_embedding_type = config.position_embedding_type
        self.register_buffer("position_ids", arange(config.max_position_embeddings,
                                                    dtype="int64").reshape(1, -1),
                             persistent=False)

    def forward(self, input_ids=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None):
        shape = tuple(input_ids.shape) if input_ids is not None else \
            tuple(inputs_embeds.shape[:-1])
        seq_length = shape[1]
        if position_ids is None:
            position_ids = self.position_ids[:, :seq_length]
        if token_type_ids is None:
            token_type_ids = zeros(*shape, dtype="int64", device=self.position_ids.device)
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        embeddings = inputs_embeds + self.token_type_embeddings(token_type_ids)
        if self.position_embedding_type == "absolute":
            embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class BertSelfAttention(Module):
    """Multi-head self-attention: query/key/value projections, scaled scores (with relative
    position terms in the relative modes), the additive mask, softmax, dropout, times V."""

    def __init__(self, config, position_embedding_type=None):
        super().__init__()
        if config.hidden_size % config.num_attention_heads:
            raise ValueError(f"The hidden size ({config.hidden_size}) is not a multiple of the "
                             f"number of attention heads ({config.num_attention_heads})")
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = Linear(config.hidden_size, self.all_head_size)
        self.key = Linear(config.hidden_size, self.all_head_size)
        self.value = Linear(config.hidden_size, self.all_head_size)
        self.dropout = Dropout(config.attention_probs_dropout_prob)
        self.position_embedding_type = position_embedding_type or config.position_embedding_type
        if self.position_embedding_type in ("relative_key", "relative_key_query"):
            self.max_position_embeddings = config.max_position_embeddings
            self.distance_embedding = Embedding(2 * config.max_position_embeddings - 1,
                                                self.attention_head_size)

    def _heads(self, x):
        B, L, _ = x.shape
        return x.reshape(B, L, self.num_attention_heads, self.attention_head_size) \
                .transpose(1, 2)

    def forward(self, hidden_states, attention_mask=None, head_mask=None,
                output_attentions=False):
        B, L, _ = hidden_states.shape
        q = self._heads(self.query(hidden_states))
        k = self._heads(self.key(hidden_states))
        v = self._heads(self.value(hidden_states))
        d = self.attention_head_size
        if self.position_embedding_type == "absolute" and not output_attentions and \
                head_mask is None:
            p = self.dropout.p if self.training else 0.0
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask,
                                                     dropout_p=p, scale=1.0 / math.sqrt(d))
            probs = None
        else:
            scores = q.matmul(k.transpose(-1, -2))
            if self.position_embedding_type in ("relative_key", "relative_key_query"):
                S = k.shape[2]
                distance = arange(L, dtype="int64").reshape(-1, 1) - \
                    arange(S, dtype="int64").reshape(1, -1)
                pos = self.distance_embedding(distance + (self.max_position_embeddings - 1))
                scores = scores + F.einsum("bhld,lrd->bhlr", q, pos)
                if self.position_embedding_type == "relative_key_query":
                    scores = scores + F.einsum("bhrd,lrd->bhlr", k, pos)
            scores = scores / math.sqrt(d)
            if attention_mask is not None:
                scores = scores + attention_mask
            # the weights returned are those used: after dropout and the head mask
            probs = self.dropout(F.softmax(scores, dim=-1))
            if head_mask is not None:
                probs = probs * head_mask
            context = probs.matmul(v)
        context = context.transpose(1, 2).reshape(B, L, self.all_head_size)
        return (context, probs) if output_attentions else (context,)


class BertSelfOutput(Module):
    """Dense, dropout, then LayerNorm of the sum with the attention's input."""

    def __init__(self, config):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertAttention(Module):
    """Self-attention (``self``) followed by its output block (``output``)."""

    def __init__(self, config, position_embedding_type=None):
        super().__init__()
        self.self = BertSelfAttention(config, position_embedding_type)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states, attention_mask=None, head_mask=None,
                output_attentions=False):
        outs = self.self(hidden_states, attention_mask, head_mask, output_attentions)
        return (self.output(outs[0], hidden_states),) + outs[1:]


class BertIntermediate(Module):
    """The feed-forward block's first half: dense to ``intermediate_size``, activation."""

    def __init__(self, config):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = _activation(config.hidden_act)

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(Module):
    """The feed-forward block's second half: dense back, dropout, add & LayerNorm."""

    def __init__(self, config):
        super().__init__()
        self.dense = Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)


class BertLayer(Module):
    """One transformer encoder layer: attention, then the feed-forward block."""

    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, attention_mask=None, head_mask=None,
                output_attentions=False):
        outs = self.attention(hidden_states, attention_mask, head_mask, output_attentions)
        attention_output = outs[0]
        layer_output = self.output(self.intermediate(attention_output), attention_output)
        return (layer_output,) + outs[1:]


class BertEncoder(Module):
    """``num_hidden_layers`` BertLayers (``layer.0``, ``layer.1``...)."""

    def __init__(self, config):
        super().__init__()
        self.layer = ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None, head_mask=None,
                output_attentions=False, output_hidden_states=False):
        all_hidden = (hidden_states,) if output_hidden_states else None
        all_attn = () if output_attentions else None
        for i, layer in enumerate(self.layer):
            outs = layer(hidden_states, attention_mask,
                         None if head_mask is None else head_mask[i], output_attentions)
            hidden_states = outs[0]
            if output_attentions:
                all_attn = all_attn + (outs[1],)
            if output_hidden_states:
                all_hidden = all_hidden + (hidden_states,)
        return BaseModelOutput(last_hidden_state=hidden_states, hidden_states=all_hidden,
                               attentions=all_attn)


class BertPooler(Module):
    """tanh(dense(first token's hidden state))."""

    def __init__(self, config):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size)
        self.activation = Tanh()

    def forward(self, hidden_states):
        return self.activation(self.dense(hidden_states[:, 0]))


class BertPredictionHeadTransform(Module):
    """Dense, activation, LayerNorm: the masked-LM head's transform."""

    def __init__(self, config):
        super().__init__()
        self.dense = Linear(config.hidden_size, config.hidden_size)
        self.transform_act_fn = _activation(config.hidden_act)
        self.LayerNorm = LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states):
        return self.LayerNorm(self.transform_act_fn(self.dense(hidden_states)))


class BertLMPredictionHead(Module):
    """The transform, then the decoder to the vocabulary (its weight tied to the word
    embeddings by ``BertForMaskedLM``; its bias is ``bias``)."""

    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = Parameter(np.zeros(config.vocab_size, dtype="float32"))
        self.decoder.bias = self.bias

    def forward(self, hidden_states):
        return self.decoder(self.transform(hidden_states))


class BertOnlyMLMHead(Module):
    """``predictions``: the masked-LM head."""

    def __init__(self, config):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)

    def forward(self, sequence_output):
        return self.predictions(sequence_output)


class BertPreTrainedModel(Module):
    """Weights initialized as transformers' ``_init_weights``: linear and embedding weights
    from N(0, initializer_range), biases zero (and the padding row), LayerNorm 1 and 0."""

    def __init__(self, config):
        if not isinstance(config, BertConfig):
            raise TypeError(f"config must be a BertConfig, got {type(config).__name__}")
        super().__init__()
        self.config = config

    def _init_weights(self):
        std = self.config.initializer_range
        for module in self.modules():
            if isinstance(module, Linear):
                init.normal_(module.weight, 0.0, std)
                if module.bias is not None:
                    init.zeros_(module.bias)
            elif isinstance(module, Embedding):
                init.normal_(module.weight, 0.0, std)
                if module.padding_idx is not None:
                    module.weight.detach()._data[module.padding_idx] = 0
            elif isinstance(module, LayerNorm):
                init.ones_(module.weight)
                init.zeros_(module.bias)
            elif isinstance(module, BertLMPredictionHead):
                init.zeros_(module.bias)

    @classmethod
    def from_state_dict(cls, config, state_dict, strict=True):
        """A model of ``config`` holding ``state_dict`` (nn tensors, or arrays / torch tensors:
        see ``nn.models.convert.convert_state_dict``)."""
        from .convert import convert_state_dict
        model = cls(config)
        model.load_state_dict(convert_state_dict(state_dict), strict=strict)
        return model

    @classmethod
    def from_transformers(cls, hf_model):
        """This model with the config and weights of a transformers model of the same class
        (copied through numpy), in eval mode."""
        model = cls.from_state_dict(BertConfig.from_transformers(hf_model.config),
                                    hf_model.state_dict())
        return model.eval()


def _extended_mask(attention_mask, shape):
    """transformers' ``get_extended_attention_mask``: 1 = attend, 0 = masked, as an additive
    (batch, 1, 1 or from, to) mask, 0 or float32's lowest value."""
    if attention_mask.ndim == 3:
        ext = attention_mask[:, None, :, :]
    elif attention_mask.ndim == 2:
        ext = attention_mask[:, None, None, :]
    else:
        raise ValueError(f"Wrong shape for input_ids (shape {shape}) or attention_mask (shape "
                         f"{tuple(attention_mask.shape)})")
    return (1.0 - ext.to("float32")) * MASK_MIN


def _head_mask(head_mask, num_layers):
    """transformers' ``get_head_mask``: None, or one (1, heads, 1, 1) multiplier per layer."""
    if head_mask is None:
        return None
    if head_mask.ndim == 1:
        head_mask = head_mask.reshape(1, -1).expand(num_layers, head_mask.shape[0])
    return [head_mask[i].reshape(1, -1, 1, 1) for i in range(num_layers)]


class BertModel(BertPreTrainedModel):
    """Embeddings, encoder and (``add_pooling_layer``) the pooler."""

    def __init__(self, config, add_pooling_layer=True):
        super().__init__(config)
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self._init_weights()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, head_mask=None, inputs_embeds=None,
                output_attentions=False, output_hidden_states=False):
        if input_ids is not None and inputs_embeds is not None:
            raise ValueError("You cannot specify both input_ids and inputs_embeds at the same "
                             "time")
        if input_ids is None and inputs_embeds is None:
            raise ValueError("You have to specify either input_ids or inputs_embeds")
        ids = input_ids if input_ids is not None else inputs_embeds
        if input_ids is not None and not isinstance(input_ids, Tensor):
            raise TypeError(f"input_ids must be an nn.Tensor, got {type(input_ids).__name__}")
        shape = tuple(ids.shape[:2])
        if len(shape) != 2 or (input_ids is not None and input_ids.ndim != 2):
            raise ValueError(f"input_ids must be (batch, seq_len), got shape {tuple(ids.shape)}")
        if shape[1] > self.config.max_position_embeddings:
            raise ValueError(f"input_ids: sequence length {shape[1]} exceeds "
                             f"max_position_embeddings={self.config.max_position_embeddings}")
        embedding_output = self.embeddings(input_ids, token_type_ids, position_ids,
                                           inputs_embeds)
        mask = None if attention_mask is None else _extended_mask(attention_mask, shape)
        enc = self.encoder(embedding_output, mask,
                           _head_mask(head_mask, self.config.num_hidden_layers),
                           output_attentions, output_hidden_states)
        sequence_output = enc.last_hidden_state
        pooled = self.pooler(sequence_output) if self.pooler is not None else None
        return BaseModelOutputWithPooling(last_hidden_state=sequence_output,
                                          pooler_output=pooled,
                                          hidden_states=enc.hidden_states,
                                          attentions=enc.attentions)


class BertForMaskedLM(BertPreTrainedModel):
    """``bert`` (no pooler) and the masked-LM head ``cls``, its decoder weight the word
    embeddings; ``labels`` give the cross-entropy loss (-100 ignored)."""

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertOnlyMLMHead(config)
        self._init_weights()
        self.tie_weights()

    def tie_weights(self):
        """The decoder's weight is the word embeddings' (one parameter)."""
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight
        self.cls.predictions.decoder.bias = self.cls.predictions.bias

    def load_state_dict(self, state_dict, strict=True, assign=False):
        result = super().load_state_dict(state_dict, strict=strict, assign=assign)
        if assign:
            self.tie_weights()
        return result

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, head_mask=None, inputs_embeds=None, labels=None,
                output_attentions=False, output_hidden_states=False):
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, head_mask,
                        inputs_embeds, output_attentions, output_hidden_states)
        logits = self.cls(out.last_hidden_state)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.reshape(-1, self.config.vocab_size),
                                   labels.reshape(-1), ignore_index=-100)
        return MaskedLMOutput(loss=loss, logits=logits, hidden_states=out.hidden_states,
                              attentions=out.attentions)


class BertForSequenceClassification(BertPreTrainedModel):
    """``bert``, dropout and a linear ``classifier`` of the pooled output; ``labels`` give
    the loss of ``config.problem_type`` (regression: MSE; single-label: cross-entropy;
    multi-label: BCE with logits), inferred as transformers does when unset."""

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = BertModel(config)
        p = config.classifier_dropout if config.classifier_dropout is not None else \
            config.hidden_dropout_prob
        self.dropout = Dropout(p)
        self.classifier = Linear(config.hidden_size, config.num_labels)
        self._init_weights()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None,
                position_ids=None, head_mask=None, inputs_embeds=None, labels=None,
                output_attentions=False, output_hidden_states=False):
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, head_mask,
                        inputs_embeds, output_attentions, output_hidden_states)
        logits = self.classifier(self.dropout(out.pooler_output))
        loss = None
        if labels is not None:
            problem = self.config.problem_type
            if problem is None:
                if self.num_labels == 1:
                    problem = "regression"
                elif labels.dtype in ("int64", "int32"):
                    problem = "single_label_classification"
                else:
                    problem = "multi_label_classification"
                self.config.problem_type = problem
            if problem == "regression":
                loss = F.mse_loss(logits.squeeze(), labels.squeeze()) if self.num_labels == 1 \
                    else F.mse_loss(logits, labels)
            elif problem == "single_label_classification":
                loss = F.cross_entropy(logits.reshape(-1, self.num_labels), labels.reshape(-1))
            else:
                loss = F.binary_cross_entropy_with_logits(logits, labels)
        return SequenceClassifierOutput(loss=loss, logits=logits,
                                        hidden_states=out.hidden_states,
                                        attentions=out.attentions)
