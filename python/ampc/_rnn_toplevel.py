"""ampc._rnn_toplevel: torch's top-level recurrent cell functions (torch.lstm_cell, gru_cell,
rnn_tanh_cell, rnn_relu_cell), which nn.LSTMCell & co. and the layers' steps call.

As torch's: the gates are input @ w_ih^T and hx @ w_hh^T (two GEMMs); LSTM and GRU then run their
fused cell kernel (_thnn_fused_lstm_cell / _thnn_fused_gru_cell: biases, gate math and the saved
workspace in one kernel, its backward in one kernel), the Elman cells tanh/relu of the sum. Under
autocast the GEMMs and the fused cells run in the lower-precision dtype (torch's CUDA list).
"""
from . import _C


def _gates(input, hx, w_ih, w_hh):
    return _C.mm(input, w_ih.t()), _C.mm(hx, w_hh.t())


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """(hy, cy) of one LSTM step; hx = (h, c)."""
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell: Expected hx to be a pair (h, c), got {len(hx)} tensors")
    ig, hg = _gates(input, hx[0], w_ih, w_hh)
    hy, cy, _ = _C._thnn_fused_lstm_cell(ig, hg, hx[1], b_ih, b_hh)
    return hy, cy


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    ig, hg = _gates(input, hx, w_ih, w_hh)
    hy, _ = _C._thnn_fused_gru_cell(ig, hg, hx, b_ih, b_hh)
    return hy


def _elman(act, input, hx, w_ih, w_hh, b_ih, b_hh):
    ig = _C.addmm(b_ih, input, w_ih.t()) if b_ih is not None else _C.mm(input, w_ih.t())
    hg = _C.addmm(b_hh, hx, w_hh.t()) if b_hh is not None else _C.mm(hx, w_hh.t())
    return act(ig + hg)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _elman(_C.tanh, input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _elman(_C.relu, input, hx, w_ih, w_hh, b_ih, b_hh)
