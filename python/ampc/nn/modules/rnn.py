"""The recurrent layers: RNN (tanh / relu), LSTM (with proj_size), GRU and their cells, as torch.nn.

A layer runs one direction of one layer as: one GEMM for the input gates of every time step
(x W_ih^T + b_ih over the whole (T, B, I) input or packed data), then per step one GEMM for the
hidden gates (h W_hh^T + b_hh) and one fused cell kernel (torch's _thnn_fused_lstm_cell /
_thnn_fused_gru_cell, csrc/core/nn_rnn.c; forward and backward one kernel each). RNN_TANH/RELU
compose tanh/relu(input gates + hidden gates), as torch's rnn_tanh_cell. A PackedSequence
shrinks the batch per step (forward direction) or grows it (reverse) as torch's packed RNN
does. Parameters, their names, order, initialisation and reprs are torch's.
"""
import math
import numbers
import warnings

from ... import _C
from ... import _rnn_toplevel as _cells
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _packed_sequence():
    from ..utils.rnn import PackedSequence
    return PackedSequence


def _apply_permutation(tensor, permutation, dim=1):
    return tensor.index_select(dim, permutation)


# ---------------------------------------------------------------------------- one step of a cell

def _lstm_step(gi, state, w_hh_t, b_hh, w_hr_t):
    h, c = state
    hg = _C.addmm(b_hh, h, w_hh_t) if b_hh is not None else _C.mm(h, w_hh_t)
    gi, hg, c = _cells._same_dtype(gi, hg, c)  # a CPU autocast region casts the GEMMs, not the cells
    hy, cy, _ = _C._thnn_fused_lstm_cell(gi, hg, c)
    if w_hr_t is not None:
        hy = _C.mm(hy, w_hr_t)
    return hy, (hy, cy)


def _gru_step(gi, state, w_hh_t, b_hh, w_hr_t):
    (h,) = state
    hg = _C.addmm(b_hh, h, w_hh_t) if b_hh is not None else _C.mm(h, w_hh_t)
    gi, hg, h = _cells._same_dtype(gi, hg, h)
    hy, _ = _C._thnn_fused_gru_cell(gi, hg, h)
    return hy, (hy,)


def _rnn_tanh_step(gi, state, w_hh_t, b_hh, w_hr_t):
    (h,) = state
    hg = _C.addmm(b_hh, h, w_hh_t) if b_hh is not None else _C.mm(h, w_hh_t)
    hy = _C.tanh(gi + hg)
    return hy, (hy,)


def _rnn_relu_step(gi, state, w_hh_t, b_hh, w_hr_t):
    (h,) = state
    hg = _C.addmm(b_hh, h, w_hh_t) if b_hh is not None else _C.mm(h, w_hh_t)
    hy = _C.relu(gi + hg)
    return hy, (hy,)


_STEPS = {"LSTM": _lstm_step, "GRU": _gru_step, "RNN_TANH": _rnn_tanh_step, "RNN_RELU": _rnn_relu_step}


def _run_direction(step, gates, batch_sizes, state, w_hh, b_hh, w_hr, reverse):
    """One direction of one layer. gates: the per-step input gates (a list of (bs_t, G) tensors);
    batch_sizes: their rows (non-increasing); state: the initial states (B0, *). Returns the
    per-step outputs (in time order) and the final states of every sequence (B0, *)."""
    w_hh_t = w_hh.t()
    w_hr_t = w_hr.t() if w_hr is not None else None
    n = len(gates)
    outs = [None] * n
    if not reverse:
        finished = []  # states of the sequences that ended, last rows first
        last = batch_sizes[0] if n else state[0].shape[0]
        state = tuple(s.narrow(0, 0, last) for s in state) if n and last != state[0].shape[0] else state
        for t in range(n):
            bs = batch_sizes[t]
            if bs < last:
                finished.append(tuple(s.narrow(0, bs, last - bs) for s in state))
                state = tuple(s.narrow(0, 0, bs) for s in state)
                last = bs
            outs[t], state = step(gates[t], state, w_hh_t, b_hh, w_hr_t)
        if finished:
            parts = [state] + finished[::-1]
            state = tuple(_C.cat([p[k] for p in parts], 0) for k in range(len(state)))
        return outs, state
    full = state
    last = batch_sizes[n - 1] if n else 0
    state = tuple(s.narrow(0, 0, last) for s in full) if n else full
    for t in range(n - 1, -1, -1):
        bs = batch_sizes[t]
        if bs > last:
            state = tuple(_C.cat([s, f.narrow(0, last, bs - last)], 0) for s, f in zip(state, full))
            last = bs
        outs[t], state = step(gates[t], state, w_hh_t, b_hh, w_hr_t)
    return outs, state


class RNNBase(Module):
    """The shared body of RNN, LSTM and GRU (torch.nn.RNNBase): parameters per layer and
    direction named weight_ih_l{k}{_reverse}, weight_hh_l..., bias_ih_l..., bias_hh_l...,
    weight_hr_l... (LSTM with proj_size), listed in _flat_weights_names / _flat_weights."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                real_hidden_size = proj_size if proj_size > 0 else hidden_size
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                w_ih = Parameter(_C.empty((gate_size, layer_input_size), device=device, dtype=dtype))
                w_hh = Parameter(_C.empty((gate_size, real_hidden_size), device=device, dtype=dtype))
                b_ih = Parameter(_C.empty(gate_size, device=device, dtype=dtype))
                b_hh = Parameter(_C.empty(gate_size, device=device, dtype=dtype))
                if proj_size == 0:
                    layer_params = (w_ih, w_hh, b_ih, b_hh) if bias else (w_ih, w_hh)
                else:
                    w_hr = Parameter(_C.empty((proj_size, hidden_size), device=device, dtype=dtype))
                    layer_params = (w_ih, w_hh, b_ih, b_hh, w_hr) if bias else (w_ih, w_hh, w_hr)
                suffix = "_reverse" if direction == 1 else ""
                param_names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    param_names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    param_names += ["weight_hr_l{}{}"]
                param_names = [x.format(layer, suffix) for x in param_names]
                for name, param in zip(param_names, layer_params):
                    setattr(self, name, param)
                self._flat_weights_names.extend(param_names)
                self._all_weights.append(param_names)
        self._init_flat_weights()
        self.reset_parameters()

    def _init_flat_weights(self):
        self._flat_weights = [getattr(self, wn) if hasattr(self, wn) else None for wn in self._flat_weights_names]
        self.flatten_parameters()

    def __setattr__(self, attr, value):
        if hasattr(self, "_flat_weights_names") and attr in self._flat_weights_names:
            self._flat_weights[self._flat_weights_names.index(attr)] = value
        super().__setattr__(attr, value)

    def flatten_parameters(self):
        """torch compacts the weights into one cuDNN buffer here; ampc's kernels read the
        parameters where they are, so there is nothing to do (kept so scripts that call it run)."""

    def _update_flat_weights(self):
        self._flat_weights = [getattr(self, wn) if hasattr(self, wn) else None for wn in self._flat_weights_names]

    def _apply(self, fn, recurse=True):
        ret = super()._apply(fn, recurse)
        self._init_flat_weights()
        return ret

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def all_weights(self):
        return [[getattr(self, weight) for weight in weights] for weights in self._all_weights]

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ------------------------------------------------------------------ torch's checks
    def check_input(self, input, batch_sizes):
        if input.dtype != self._flat_weights[0].dtype and not (_C.is_autocast_enabled("cpu") or _C.is_autocast_enabled("cuda")):
            w = self._flat_weights[0].dtype
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w}). "
                             f"Convert input: input.to({w}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return _apply_permutation(hx, permutation)

    # ------------------------------------------------------------------ the layers
    def _run(self, input, batch_sizes, states):
        """input: (T, B, I) or packed data (N, I) with batch_sizes; states: tuple of the initial
        (L * D, B, *) state tensors. Returns the output ((T, B, D*H) or (N, D*H)) and the final
        states of the same shapes as `states`."""
        step = _STEPS[self.mode]
        num_directions = 2 if self.bidirectional else 1
        packed = batch_sizes is not None
        sizes = batch_sizes if packed else [input.shape[1]] * input.shape[0]
        per_param = len(self._flat_weights_names) // (self.num_layers * num_directions)
        weights = self._flat_weights
        finals = [[] for _ in states]
        # dense LSTM without projection outside autocast: one autograd node per layer and direction
        fast = (self.mode == "LSTM" and self.proj_size == 0 and not packed and input.shape[0] > 0
                and not (_C.is_autocast_enabled("cpu") or _C.is_autocast_enabled("cuda")))
        layer_input = input
        for layer in range(self.num_layers):
            dir_outs = []
            for d in range(num_directions):
                k = layer * num_directions + d
                ws = weights[k * per_param:(k + 1) * per_param]
                w_ih, w_hh = ws[0], ws[1]
                b_ih, b_hh = (ws[2], ws[3]) if self.bias else (None, None)
                w_hr = ws[-1] if self.proj_size > 0 else None
                if b_ih is not None and self.mode != "GRU":
                    # both biases join the input GEMM (one add and one bias grad per layer, not per
                    # step); GRU keeps b_hh in the hidden GEMM, as r multiplies (h W_hn^T + b_hn)
                    b_ih, b_hh = b_ih + b_hh, None
                gates_all = F.linear(layer_input, w_ih, b_ih)
                init_state = tuple(s[k] for s in states)
                if fast:
                    out, hn, cn = _LSTMLayer.apply(gates_all, init_state[0], init_state[1], w_hh, d == 1)
                    dir_outs.append(out)
                    final = (hn, cn)
                else:
                    gates = list(gates_all.split(list(sizes), 0)) if packed else list(gates_all.unbind(0))
                    outs, final = _run_direction(step, gates, sizes, init_state, w_hh, b_hh, w_hr, d == 1)
                    dir_outs.append(_C.cat(outs, 0) if packed else _C.stack(outs, 0))
                for lst, f in zip(finals, final):
                    lst.append(f)
            layer_input = dir_outs[0] if num_directions == 1 else _C.cat(dir_outs, -1)
            if self.dropout != 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        return layer_input, tuple(_C.stack(lst, 0) for lst in finals)

    def _forward_impl(self, input, hx, n_states):
        """The common forward of RNN/GRU (n_states 1) and LSTM (2): unbatched input, batch_first,
        PackedSequence, default zero states, torch's checks and messages."""
        self._update_flat_weights()
        PackedSequence = _packed_sequence()
        orig_input = input
        num_directions = 2 if self.bidirectional else 1
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        is_batched = True
        batch_sizes = None
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            max_batch_size = int(batch_sizes[0])
            if hx is not None:
                hx = self._permute_states(hx, sorted_indices, n_states)
        else:
            if input.dim() not in (2, 3):
                suffix = "D tensor instead" if name == "RNN" else "D instead"
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}{suffix}")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            max_batch_size = input.size(0) if self.batch_first else input.size(1)
            sorted_indices = unsorted_indices = None
            if hx is not None:
                hx = self._check_state_dims(hx, is_batched, n_states)
        if hx is None:
            shapes = [(self.num_layers * num_directions, max_batch_size, real_hidden_size)]
            if n_states == 2:
                shapes.append((self.num_layers * num_directions, max_batch_size, self.hidden_size))
            hx = tuple(_C.zeros(s, dtype=input.dtype, device=input.device) for s in shapes)
        elif n_states == 1:
            hx = (hx,)
        if n_states == 2:
            self.check_input(input, batch_sizes)
            self.check_hidden_size(hx[0], self.get_expected_hidden_size(input, batch_sizes),
                                   "Expected hidden[0] size {}, got {}")
            cell = self.get_expected_hidden_size(input, batch_sizes)
            self.check_hidden_size(hx[1], (cell[0], cell[1], self.hidden_size), "Expected hidden[1] size {}, got {}")
        else:
            self.check_forward_args(input, hx[0], batch_sizes)
        data = input
        if batch_sizes is None and self.batch_first:
            data = input.transpose(0, 1)
        dev = data.device.type
        if _C.is_autocast_enabled(dev) and (dev == "cuda" or self.mode == "LSTM") and data.dtype in (
                _C.float32, _C.float16, _C.bfloat16):
            # torch's autocast runs the whole layer in the lower precision: _cudnn_rnn on CUDA, the CPU's
            # mkldnn_rnn_layer (LSTM only; the CPU's GRU and RNN run their cells as called)
            lp = _C.get_autocast_dtype(dev)
            data = data.to(lp)
            hx = tuple(h.to(lp) if h.dtype in (_C.float32, _C.float16, _C.bfloat16) else h for h in hx)
        sizes = None if batch_sizes is None else [int(b) for b in batch_sizes.tolist()]
        output, hidden = self._run(data, sizes, tuple(hx))
        if batch_sizes is None and self.batch_first:
            output = output.transpose(0, 1)
        if isinstance(orig_input, PackedSequence):
            output = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
            return output, self._permute_states(hidden if n_states == 2 else hidden[0], unsorted_indices, n_states)
        if not is_batched:
            output = output.squeeze(0 if self.batch_first else 1)
            hidden = tuple(h.squeeze(1) for h in hidden)
        return output, (hidden if n_states == 2 else hidden[0])

    def _permute_states(self, hx, permutation, n_states):
        if permutation is None:
            return hx
        if n_states == 2:
            return (_apply_permutation(hx[0], permutation), _apply_permutation(hx[1], permutation))
        return _apply_permutation(hx, permutation)

    def _check_state_dims(self, hx, is_batched, n_states):
        if n_states == 2:
            if is_batched:
                if hx[0].dim() != 3 or hx[1].dim() != 3:
                    raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                       f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                return hx
            if hx[0].dim() != 2 or hx[1].dim() != 2:
                raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            return (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        if is_batched:
            if hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            return hx
        if hx.dim() != 2:
            raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
        return hx.unsqueeze(1)


class RNN(RNNBase):
    """Elman RNN, h_t = tanh or relu(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_impl(input, hx, 1)


class LSTM(RNNBase):
    """LSTM with torch's gates (i, f, g, o), optional projection of h (proj_size)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def forward(self, input, hx=None):
        return self._forward_impl(input, hx, 2)


class GRU(RNNBase):
    """GRU with torch's gates (r, z, n); n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_impl(input, hx, 1)


# ---------------------------------------------------------------------------- cells

class RNNCellBase(Module):
    """weight_ih (G*H, I), weight_hh (G*H, H), bias_ih, bias_hh (G*H), uniform in +-1/sqrt(H)."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_C.empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(_C.empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_C.empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(_C.empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)


def _cell_input(name, input, hx, what="hidden"):
    if input.dim() not in (1, 2):
        raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
    if hx is not None and hx.dim() not in (1, 2):
        raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {hx.dim()}D instead")
    return input.dim() == 2


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        is_batched = _cell_input("RNNCell", input, hx)
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = _C.zeros((input.size(0), self.hidden_size), dtype=input.dtype, device=input.device)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        if self.nonlinearity == "tanh":
            ret = _cells.rnn_tanh_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        elif self.nonlinearity == "relu":
            ret = _cells.rnn_relu_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = _C.zeros((input.size(0), self.hidden_size), dtype=input.dtype, device=input.device)
            hx = (zeros, zeros)
        elif not is_batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        ret = _cells.lstm_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if not is_batched:
            ret = (ret[0].squeeze(0), ret[1].squeeze(0))
        return ret


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        is_batched = _cell_input("GRUCell", input, hx)
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = _C.zeros((input.size(0), self.hidden_size), dtype=input.dtype, device=input.device)
        elif not is_batched:
            hx = hx.unsqueeze(0)
        ret = _cells.gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return ret if is_batched else ret.squeeze(0)


# ---------------------------------------------------------------------------- LSTM layer, one node

from ...autograd import Function as _Function  # noqa: E402


class _LSTMLayer(_Function):
    """One direction of one LSTM layer (no projection) as one autograd node. Forward: per step the
    hidden GEMM and the fused cell, nothing recorded. Backward: per step one add, the fused cell
    backward and one GEMM (dh = dgates W_hh); then W_hh's grad for all steps in one GEMM
    (dgates^T H_prev over T*B rows) instead of a GEMM and an add per step. The input gates
    (x W_ih^T + b, all steps) come from outside, so their GEMM's backward gives dx, dW_ih and db."""

    @staticmethod
    def forward(ctx, gates, h0, c0, w_hh, reverse):
        n = gates.shape[0]
        w_t = w_hh.t()
        hs, cs, wss = [None] * n, [None] * n, [None] * n
        h, c = h0, c0
        for t in (range(n - 1, -1, -1) if reverse else range(n)):
            h, c, wss[t] = _C._thnn_fused_lstm_cell(gates[t], _C.mm(h, w_t), c)
            hs[t], cs[t] = h, c
        out = _C.stack(hs, 0)
        ctx.reverse = reverse
        # the per-step tensors only this node reads stay as they are (not stacked); the last c is
        # an output, so it goes through save_for_backward (no cycle output -> node -> ctx -> output)
        last = 0 if reverse else n - 1
        c_last, cs[last] = cs[last], None
        ctx.cs, ctx.wss = cs, wss
        ctx.save_for_backward(h0, c0, w_hh, out, c_last)
        return out, h, c

    @staticmethod
    def backward(ctx, dout, dhn, dcn):
        h0, c0, w_hh, out, c_last = ctx.saved_tensors
        cs, wss = list(ctx.cs), ctx.wss
        cs[0 if ctx.reverse else len(cs) - 1] = c_last
        n, b, hsz = out.shape[0], out.shape[1], out.shape[2]
        dgates = _C.empty((n, b, 4 * hsz), dtype=out.dtype, device=out.device)
        dh = dhn if dhn is not None else _C.zeros_like(h0)
        dc = dcn if dcn is not None else _C.zeros_like(c0)
        order = range(n) if ctx.reverse else range(n - 1, -1, -1)
        first = n - 1 if ctx.reverse else 0  # the step whose previous state is (h0, c0)
        for t in order:
            if dout is not None:
                dh = dh + dout[t]
            prev = c0 if t == first else cs[t + 1 if ctx.reverse else t - 1]
            dg, dc, _ = (
                _C._thnn_fused_lstm_cell_backward_impl(dh, dc, prev, cs[t], wss[t], False))
            dgates[t].copy_(dg)
            dh = _C.mm(dg, w_hh)
        # the hidden state each step read: h0 then the outputs, shifted by one step
        if ctx.reverse:
            h_prev = _C.cat([out[1:], h0.unsqueeze(0)], 0)
        else:
            h_prev = _C.cat([h0.unsqueeze(0), out[:-1]], 0)
        dw = _C.mm(dgates.reshape(n * b, 4 * hsz).t(), h_prev.reshape(n * b, hsz))
        return dgates, dh, dc, dw, None
