# %% [markdown]
# # BERT from compiled layers
#
# ``nn.models`` builds BERT as Hugging Face transformers does, module for module and name for
# name (``encoder.layer.0.attention.self.query.weight``...), out of nn's compiled layers:
# every Linear, LayerNorm, GELU and embedding runs a te kernel, and self-attention runs
# FlashAttention's recurrence as one fused te kernel per batch and head (the scores are never
# stored whole). This tutorial
#
# 1. copies the weights of a transformers ``BertModel`` into ours and checks that the two
#    compute the same hidden states;
# 2. fine-tunes a 2-layer BERT on a synthetic sequence-classification task for a few steps;
# 3. trains ``BertForMaskedLM`` (decoder tied to the word embeddings) on a synthetic language
#    and watches the masked-LM loss fall.
#
# ``TW_TUTORIAL_SMALL=1`` (the test suite sets it) runs fewer steps.

# %%
import os
import time

import numpy as np

import nn
import nn.optim
from nn.models import (BertConfig, BertForMaskedLM, BertForSequenceClassification, BertModel,
                       convert_state_dict)

SMALL = os.environ.get("TW_TUTORIAL_SMALL") == "1"
nn.manual_seed(0)
rng = np.random.default_rng(0)
config = BertConfig(vocab_size=24, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=64, max_position_embeddings=16, type_vocab_size=2,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, num_labels=2)
BATCH, SEQ = 16, 12
CLS, MASK = 1, 2                    # token 0 pads; 1 opens every sequence; 2 hides a token

# %% [markdown]
# ## 1. The same numbers as transformers
#
# A transformers model's ``state_dict`` converts tensor by tensor through numpy and loads
# with ``strict=True``: the names are the same. With a padding mask and token types, the
# last hidden states agree to float32 rounding.

# %%
try:
    import torch
    import transformers
except ImportError:             # the comparison needs the reference; the rest does not
    torch = transformers = None
if transformers is not None:
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(**config.to_dict(), attn_implementation="eager")
    theirs = transformers.BertModel(hf_config).eval()
    ours = BertModel(config).eval()
    ours.load_state_dict(convert_state_dict(theirs.state_dict()), strict=True)
    ids = rng.integers(3, config.vocab_size, (2, SEQ))
    mask = np.ones((2, SEQ), np.int64)
    mask[1, 8:] = 0
    types = (np.arange(SEQ) >= 6).astype(np.int64)[None].repeat(2, 0)
    with torch.no_grad():
        ref = theirs(torch.tensor(ids), attention_mask=torch.tensor(mask),
                     token_type_ids=torch.tensor(types)).last_hidden_state.numpy()
    with nn.no_grad():
        got = ours(nn.tensor(ids), attention_mask=nn.tensor(mask),
                   token_type_ids=nn.tensor(types)).last_hidden_state.numpy()
    err = np.abs(got - ref).max() / np.abs(ref).max()
    print(f"last_hidden_state vs transformers: max relative difference {err:.1e}")
    assert err < 1e-5


# %% [markdown]
# ## 2. Fine-tuning on a synthetic classification task
#
# Each sequence is ``[CLS]`` and random tokens of one of two overlapping vocabularies (tokens
# 3..9 or 7..13); the label says which. Padding (token 0, masked out by ``attention_mask``)
# shortens some sequences. The pooled ``[CLS]`` state feeds the classifier; ``labels`` give the
# cross-entropy loss, as in transformers.

# %%
def classification_batch(n):
    labels = rng.integers(0, 2, n)
    ids = rng.integers(3, 10, (n, SEQ)) + 4 * labels[:, None]
    ids[:, 0] = CLS
    mask = np.ones((n, SEQ), np.int64)
    mask[n // 2:, SEQ - 3:] = 0
    ids[mask == 0] = 0
    return nn.tensor(ids), nn.tensor(mask), nn.tensor(labels)


model = BertForSequenceClassification(config)
opt = nn.optim.AdamW(model.parameters(), lr=3e-3)
test_ids, test_mask, test_labels = classification_batch(64)


def accuracy():
    model.eval()
    with nn.no_grad():
        pred = model(test_ids, attention_mask=test_mask).logits.numpy().argmax(1)
    model.train()
    return (pred == test_labels.numpy()).mean()


before = accuracy()
steps = 25 if SMALL else 100
t0 = time.time()
for step in range(steps):
    ids, mask, labels = classification_batch(BATCH)
    loss = model(ids, attention_mask=mask, labels=labels).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % (steps // 4) == 0:
        print(f"step {step:3d}  classification loss {loss.item():.3f}")
after = accuracy()
print(f"test accuracy {before:.2f} -> {after:.2f} after {steps} steps ({time.time() - t0:.1f} s)")
assert after > before and after >= 0.8


# %% [markdown]
# ## 3. Masked-language modelling
#
# A tiny language: each sequence counts up (tokens 3..22, mod 20) from one of two starts, 0 or
# 10, so a hidden token follows from its position and its neighbours. 15% of the tokens are
# replaced by ``[MASK]``; the labels are the originals there and -100 elsewhere (ignored by
# the loss).

# %%
def mlm_batch(n):
    start = 10 * rng.integers(0, 2, (n, 1))
    ids = 3 + (start + np.arange(SEQ - 1)) % 20
    ids = np.concatenate([np.full((n, 1), CLS), ids], 1)
    hide = rng.random(ids.shape) < 0.15
    hide[:, 0] = False
    hide[np.arange(n), rng.integers(1, SEQ, n)] = True      # at least one per sequence
    labels = np.where(hide, ids, -100)
    return nn.tensor(np.where(hide, MASK, ids)), nn.tensor(labels)


mlm = BertForMaskedLM(config)
assert mlm.cls.predictions.decoder.weight is mlm.bert.embeddings.word_embeddings.weight
opt = nn.optim.AdamW(mlm.parameters(), lr=1e-2)
losses = []
steps = 25 if SMALL else 100
for step in range(steps):
    ids, labels = mlm_batch(BATCH)
    loss = mlm(ids, labels=labels).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
    if step % (steps // 4) == 0:
        print(f"step {step:3d}  masked-LM loss {loss.item():.3f}")
first, last = np.mean(losses[:5]), np.mean(losses[-5:])
print(f"masked-LM loss {first:.3f} -> {last:.3f}")
assert last < 0.8 * first
