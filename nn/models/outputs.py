"""Model outputs as Hugging Face transformers returns them: named fields read as attributes
(``out.last_hidden_state``), by key (``out["logits"]``) or by position (``out[0]``), where
positions count only the fields that are set (not None), as ``ModelOutput.to_tuple``."""
from __future__ import annotations

__all__ = ["ModelOutput", "BaseModelOutput", "BaseModelOutputWithPooling", "MaskedLMOutput",
           "SequenceClassifierOutput"]


class ModelOutput:
    """A record of named results; subclasses list their ``FIELDS`` in order."""
    FIELDS: tuple = ()

    def __init__(self, **values):
        unknown = set(values) - set(self.FIELDS)
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(unknown)}; "
                            f"expected some of {list(self.FIELDS)}")
        for name in self.FIELDS:
            object.__setattr__(self, name, values.get(name))

    def keys(self):
        """The names of the fields that are set."""
        return [n for n in self.FIELDS if getattr(self, n) is not None]

    def values(self):
        return [getattr(self, n) for n in self.keys()]

    def items(self):
        return [(n, getattr(self, n)) for n in self.keys()]

    def to_tuple(self):
        """The set fields, in order."""
        return tuple(self.values())

    def __getitem__(self, index):
        if isinstance(index, str):
            if index not in self.keys():
                raise KeyError(index)
            return getattr(self, index)
        return self.to_tuple()[index]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def __contains__(self, name):
        return name in self.keys()

    def __repr__(self):
        body = ", ".join(f"{n}={type(v).__name__}" for n, v in self.items())
        return f"{type(self).__name__}({body})"


class BaseModelOutput(ModelOutput):
    """The encoder's result."""
    FIELDS = ("last_hidden_state", "hidden_states", "attentions")


class BaseModelOutputWithPooling(ModelOutput):
    """``BertModel``'s result: the last hidden states and the pooled first token."""
    FIELDS = ("last_hidden_state", "pooler_output", "hidden_states", "attentions")


class MaskedLMOutput(ModelOutput):
    """``BertForMaskedLM``'s result: the loss (labels given) and the vocabulary logits."""
    FIELDS = ("loss", "logits", "hidden_states", "attentions")


class SequenceClassifierOutput(ModelOutput):
    """``BertForSequenceClassification``'s result."""
    FIELDS = ("loss", "logits", "hidden_states", "attentions")
