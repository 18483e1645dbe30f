"""The CUDA fused recurrent cells against the CPU backend (issue 13): _thnn_fused_lstm_cell and
_thnn_fused_gru_cell forward and backward (with and without biases, fp32/fp16/bf16/fp64, 0-size
batches), and whole layers (multi-layer bidirectional LSTM with proj_size, GRU on a
PackedSequence, RNN relu) with their parameter gradients, on the same inputs on both devices.
The nn parity harness runs the rnn cases on CUDA too (test_cuda_nn_parity.py)."""
import numpy as np
import pytest

import ampc
from helpers import check_runs, run_on_cpu_and_cuda

TOL = {ampc.float32: 2e-5, ampc.float16: 2e-3, ampc.bfloat16: 1.6e-2, ampc.float64: 1e-12}
DTYPES = [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64]


def arrays(rng, B, G, H, bias):
    a = [rng.uniform(-2, 2, (B, G * H)), rng.uniform(-2, 2, (B, G * H)), rng.uniform(-1, 1, (B, H))]
    return a + ([rng.uniform(-1, 1, G * H), rng.uniform(-1, 1, G * H)] if bias else [None, None])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
def test_fused_lstm_cell(cuda, dtype, bias):
    a = arrays(np.random.default_rng(1), 5, 4, 7, bias)

    def fn(*t):
        hy, cy, ws = ampc._C._thnn_fused_lstm_cell(*t)
        return hy * 1.5 + cy, hy, cy, ws  # one output whose backward reaches both hy and cy

    runs = run_on_cpu_and_cuda(fn, a, dtype, cuda, grad=(0, 1, 2, 3, 4) if bias else (0, 1, 2))
    check_runs(runs, TOL[dtype], "lstm cell", gtol=TOL[dtype] * 4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
def test_fused_gru_cell(cuda, dtype, bias):
    a = arrays(np.random.default_rng(2), 4, 3, 6, bias)
    runs = run_on_cpu_and_cuda(lambda *t: ampc._C._thnn_fused_gru_cell(*t), a, dtype, cuda,
                               grad=(0, 1, 2, 3, 4) if bias else (0, 1, 2))
    check_runs(runs, TOL[dtype], "gru cell", gtol=TOL[dtype] * 4)


def test_fused_cells_zero_batch_and_backward_kernels(cuda):
    hy, cy, ws = ampc._C._thnn_fused_lstm_cell(*(ampc.zeros(s, device=cuda) for s in [(0, 8), (0, 8), (0, 2)]))
    assert tuple(hy.shape) == (0, 2) and hy.device == ampc.zeros(1, device=cuda).device
    rng = np.random.default_rng(3)
    x = [rng.standard_normal(s) for s in [(3, 12), (3, 12), (3, 4)]]
    g = rng.standard_normal((3, 4))
    res = []
    for dev in ("cpu", cuda):
        hy, ws = ampc._C._thnn_fused_gru_cell(*(ampc.tensor(v, device=dev) for v in x))
        res.append([r.cpu().numpy() for r in ampc._C._thnn_fused_gru_cell_backward(ampc.tensor(g, device=dev), ws, True)])
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("build,packed", [
    (lambda: ampc.nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2), False),
    (lambda: ampc.nn.LSTM(3, 6, num_layers=2, bidirectional=True), False),
    (lambda: ampc.nn.GRU(3, 5, bidirectional=True), True),
    (lambda: ampc.nn.RNN(3, 4, nonlinearity="relu", num_layers=2), False),
])
def test_layers_on_cuda_match_cpu(cuda, build, packed):
    ampc.manual_seed(0)
    m = build()
    x = np.random.default_rng(4).standard_normal((5, 3, 3))
    outs, grads = [], []
    for dev in ("cpu", cuda):
        m.to(dev)
        m.zero_grad()
        xt = ampc.tensor(x, dtype=ampc.float32, device=dev, requires_grad=True)
        inp = ampc.nn.utils.rnn.pack_padded_sequence(xt, [5, 4, 2]) if packed else xt
        out, state = m(inp)
        data = out.data if packed else out
        h = state[0] if isinstance(state, tuple) else state
        (data.sum() + (h * h).sum()).backward()
        # copies: a CPU tensor's numpy() shares its memory, which m.to() below releases
        outs.append([np.array(data.detach().cpu().numpy()), np.array(h.detach().cpu().numpy())])
        grads.append([np.array(xt.grad.cpu().numpy())] + [np.array(p.grad.cpu().numpy()) for p in m.parameters()])
    for a, b in zip(outs[0] + grads[0], outs[1] + grads[1]):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
