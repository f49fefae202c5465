"""``nn.utils.rnn.pad_sequence``, as ``torch.nn.utils.rnn``'s: variable-length sequences
padded into one batch (differentiable)."""
from __future__ import annotations

from ..functions import pad, stack
from ..tensor import Tensor

__all__ = ["pad_sequence"]


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into (max L, B, *), or (B, max L, *) with
    ``batch_first``, each padded with ``padding_value`` on ``padding_side`` ("right" or
    "left"). Gradients flow back to the sequences."""
    if padding_side not in ("left", "right"):
        raise RuntimeError("Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    for k, seq in enumerate(sequences):
        if not isinstance(seq, Tensor):
            raise TypeError(f"pad_sequence(): expected a list of Tensors, but sequence {k} is "
                            f"{type(seq).__name__}")
        if seq.ndim == 0:
            raise RuntimeError(f"pad_sequence(): sequence {k} is 0-d; each sequence must have "
                               "a length dimension first")
    rest = sequences[0].shape[1:]
    for k, seq in enumerate(sequences):
        if seq.shape[1:] != rest:
            raise RuntimeError(f"pad_sequence(): every sequence must have the trailing shape "
                               f"{list(rest)} of sequence 0, but sequence {k} has shape "
                               f"{list(seq.shape)}")
    longest = max(seq.shape[0] for seq in sequences)
    padded = []
    for seq in sequences:           # lengthened along dim 0 on padding_side
        missing = longest - seq.shape[0]
        ends = (0, missing) if padding_side == "right" else (missing, 0)
        padded.append(pad(seq, (0, 0) * (seq.ndim - 1) + ends, value=padding_value)
                      if missing else seq)
    return stack(padded, 0 if batch_first else 1)
