"""ampc._rnn_toplevel: torch's top-level recurrent cell functions (torch.lstm_cell, gru_cell,
rnn_tanh_cell, rnn_relu_cell), which nn.LSTMCell & co. and the layers' steps call.

As torch's: the gates are input @ w_ih^T and hx @ w_hh^T (two GEMMs); LSTM and GRU then run their
fused cell kernel (_thnn_fused_lstm_cell / _thnn_fused_gru_cell: biases, gate math and the saved
workspace in one kernel, its backward in one kernel), the Elman cells tanh/relu of the sum. Under
autocast the GEMMs and the fused cells run in the lower-precision dtype (torch's CUDA list); on
the CPU, whose list has the GEMMs but not the cells, the cell runs in the promoted dtype of its
operands, as torch's composed CPU cell does (fp32 gates from an fp32 state: an fp32 result).
"""
from . import _C


def _same_dtype(*ts):
    """The tensors (None kept) in their promoted dtype, when they differ."""
    present = [t for t in ts if t is not None]
    dt = present[0].dtype
    for t in present[1:]:
        dt = _C.promote_types(dt, t.dtype)
    return [t if t is None or t.dtype == dt else t.to(dt) for t in ts]


def _gates(input, hx, w_ih, w_hh):
    return _C.mm(input, w_ih.t()), _C.mm(hx, w_hh.t())


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """(hy, cy) of one LSTM step; hx = (h, c)."""
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell: Expected hx to be a pair (h, c), got {len(hx)} tensors")
    ig, hg = _gates(input, hx[0], w_ih, w_hh)
    if not _C.is_autocast_enabled(ig.device.type) or ig.device.type == "cpu":
        ig, hg, cx, b_ih, b_hh = _same_dtype(ig, hg, hx[1], b_ih, b_hh)
    else:
        cx = hx[1]
    hy, cy, _ = _C._thnn_fused_lstm_cell(ig, hg, cx, b_ih, b_hh)
    return hy, cy


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    ig, hg = _gates(input, hx, w_ih, w_hh)
    if not _C.is_autocast_enabled(ig.device.type) or ig.device.type == "cpu":
        ig, hg, hx, b_ih, b_hh = _same_dtype(ig, hg, hx, b_ih, b_hh)
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
