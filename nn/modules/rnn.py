"""RNN, LSTM, GRU and their cells, as torch.nn has them: the same parameter names
(``weight_ih_l{k}[_reverse]``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}``), gate
orders (LSTM: i, f, g, o; GRU: r, z, n), initialization (U(-1/sqrt(hidden), 1/sqrt(hidden)))
and output shapes, so state dicts move between the two.

Each step is composed from differentiable operators (a fused linear for the hidden state,
sigmoid/tanh, products), so backpropagation through time is the autograd graph of the loop.
The input projection of all time steps of a layer is one linear call before the loop.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import functional as F
from .. import init
from ..tensor import get_default_dtype, zeros
from .module import Module, Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _zeros(shape, like):
    return zeros(*shape, dtype=like.dtype, device=like.device)


def _rnn_step(mode, gi, h, w_hh, b_hh, c=None):
    """One step given ``gi`` = the input projection (with ``b_ih``): the new h (and c)."""
    gh = F.linear(h, w_hh, b_hh)
    if mode == "RNN_TANH":
        return (gi + gh).tanh(), None
    if mode == "RNN_RELU":
        return F.relu(gi + gh), None
    if mode == "LSTM":
        i, f, g, o = (gi + gh).chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        return o.sigmoid() * c.tanh(), c
    ri, zi, ni = gi.chunk(3, -1)
    rh, zh, nh = gh.chunk(3, -1)
    r, z = (ri + rh).sigmoid(), (zi + zh).sigmoid()
    n = (ni + r * nh).tanh()
    return n + z * (h - n), None            # (1 - z) * n + z * h


class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters, initialization, the layer/direction loop."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        if not (0 <= dropout <= 1) or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}")
        if hidden_size <= 0 or num_layers <= 0:
            raise ValueError("hidden_size and num_layers must be greater than 0")
        if proj_size:
            raise NotImplementedError("proj_size is not supported")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        dirs = 2 if bidirectional else 1
        gates = _GATES[mode] * hidden_size
        dtype = np.dtype(dtype or get_default_dtype()).name
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(dirs):
                size = input_size if layer == 0 else hidden_size * dirs
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                shapes = [("weight_ih", (gates, size)), ("weight_hh", (gates, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(np.empty(shape, dtype)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()
        if device is not None:
            self.to(device=device)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _weights(self, layer, d):
        suffix = f"_l{layer}" + ("_reverse" if d else "")

        def get(name):
            return getattr(self, name + suffix) if self.bias or "weight" in name else None
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _run(self, input, h0, c0):
        """``input`` (T, N, I): the output (T, N, D * H) and the final states, each
        (L * D, N, H)."""
        dirs = 2 if self.bidirectional else 1
        T = input.shape[0]
        x, h_n, c_n = input, [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                gi_all = F.linear(x, w_ih, b_ih)
                k = layer * dirs + d
                h = h0[k]
                c = None if c0 is None else c0[k]
                steps = [None] * T
                for t in (range(T - 1, -1, -1) if d else range(T)):
                    h, c = _rnn_step(self.mode, gi_all[t], h, w_hh, b_hh, c)
                    steps[t] = h
                outs.append(F.stack(steps, 0) if T else _zeros((0,) + tuple(h.shape), h))
                h_n.append(h)
                c_n.append(c)
            x = outs[0] if dirs == 1 else F.cat(outs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, F.stack(h_n, 0), (F.stack(c_n, 0) if c0 is not None else None)

    def forward(self, input, hx=None):
        batched = input.ndim == 3
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.ndim}D instead")
        if not batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        N = input.shape[1]
        dirs = 2 if self.bidirectional else 1
        state_shape = (self.num_layers * dirs, N, self.hidden_size)
        lstm = self.mode == "LSTM"
        if hx is None:
            h0 = _zeros(state_shape, input)
            c0 = _zeros(state_shape, input) if lstm else None
        else:
            h0, c0 = hx if lstm else (hx, None)
            if not batched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            for name, s in (("hx", h0), ("cx", c0)):
                if s is not None and tuple(s.shape) != state_shape:
                    raise RuntimeError(f"Expected hidden size {state_shape}, got "
                                       f"{list(s.shape)}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        out, h_n, c_n = self._run(input, h0, c0)
        if not batched:
            out, h_n = out.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        elif self.batch_first:
            out = out.transpose(0, 1)
        return (out, (h_n, c_n)) if lstm else (out, h_n)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)

    def extra_repr(self):
        s = super().extra_repr()
        return s + (", nonlinearity='relu'" if self.nonlinearity != "tanh" else "")


class LSTM(RNNBase):
    """Long short-term memory; forward(input, (h0, c0)) -> (output, (h_n, c_n))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit; forward(input, h0) -> (output, h_n)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)


class RNNCellBase(Module):
    """One step of an RNN, LSTM or GRU: parameters ``weight_ih``, ``weight_hh``, ``bias_ih``,
    ``bias_hh``; inputs (N, input_size) or (input_size,)."""
    mode = "RNN_TANH"

    def __init__(self, input_size, hidden_size, bias=True, num_chunks=1, device=None,
                 dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        dtype = np.dtype(dtype or get_default_dtype()).name
        self.weight_ih = Parameter(np.empty((num_chunks * hidden_size, input_size), dtype))
        self.weight_hh = Parameter(np.empty((num_chunks * hidden_size, hidden_size), dtype))
        if bias:
            self.bias_ih = Parameter(np.empty(num_chunks * hidden_size, dtype))
            self.bias_hh = Parameter(np.empty(num_chunks * hidden_size, dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()
        if device is not None:
            self.to(device=device)

    reset_parameters = RNNBase.reset_parameters

    def _step(self, input, hx, cx=None):
        batched = input.ndim == 2
        if input.ndim not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.ndim}D instead")
        x = input if batched else input.unsqueeze(0)
        shape = (x.shape[0], self.hidden_size)
        h = _zeros(shape, x) if hx is None else (hx if batched else hx.unsqueeze(0))
        c = None
        if self.mode == "LSTM":
            c = _zeros(shape, x) if cx is None else (cx if batched else cx.unsqueeze(0))
        gi = F.linear(x, self.weight_ih, self.bias_ih)
        h, c = _rnn_step(self.mode, gi, h, self.weight_hh, self.bias_hh, c)
        if not batched:
            h = h.squeeze(0)
            c = c.squeeze(0) if c is not None else None
        return h, c

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        return s


class RNNCell(RNNCellBase):
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"

    def forward(self, input, hx=None):
        return self._step(input, hx)[0]


class LSTMCell(RNNCellBase):
    """One LSTM step: forward(input, (h, c)) -> (h', c')."""
    mode = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        h, c = (None, None) if hx is None else hx
        return self._step(input, h, c)


class GRUCell(RNNCellBase):
    """One GRU step: forward(input, h) -> h'."""
    mode = "GRU"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._step(input, hx)[0]
