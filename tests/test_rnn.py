"""The recurrent family (issue 13) against torch on the CPU: the fused LSTM/GRU cells and their
backward kernels (every floating dtype, 0-size and non-contiguous inputs, errors), autocast,
nn.RNN/LSTM/GRU beyond the parity harness (dropout between layers in training, PackedSequence
round trips, state_dict both ways, flatten_parameters, torch's errors) and nn.utils.rnn (pack,
pad, unpad, enforce_sorted both ways, padding_side)."""
import numpy as np
import pytest
import torch

import ampc
import ampc.nn.utils.rnn as arnn
import torch.nn.utils.rnn as trnn

TOL = {"float32": 2e-5, "float64": 1e-12, "float16": 4e-3, "bfloat16": 3e-2}


def pair(a, dtype="float32", grad=False):
    t = torch.from_numpy(np.asarray(a, np.float64)).to(getattr(torch, dtype)).requires_grad_(grad)
    m = ampc.from_numpy(np.asarray(a, np.float64)).to(getattr(ampc, dtype)).requires_grad_(grad)
    return m, t


def close(got, want, tol, what=""):
    g = np.asarray(got.detach().double().numpy() if hasattr(got, "detach") else got, np.float64)
    w = want.detach().double().numpy()
    assert g.shape == w.shape, (what, g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=what)


def torch_lstm_cell_ref(ig, hg, cx, ib, hb):
    """torch's lstm_cell math in float64 (the oracle of the fused kernel)."""
    g = ig + hg + (ib + hb if ib is not None else 0)
    i, f, c, o = g.chunk(4, 1)
    i, f, c, o = i.sigmoid(), f.sigmoid(), c.tanh(), o.sigmoid()
    cy = f * cx + i * c
    return o * cy.tanh(), cy


def torch_gru_cell_ref(ig, hg, hx, ib, hb):
    if ib is not None:
        ig, hg = ig + ib, hg + hb
    ir, iz, inn = ig.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (inn + r * hn).tanh()
    return n + z * (hx - n)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_lstm_cell_forward_backward(dtype, bias):
    rng = np.random.default_rng(1)
    B, H = 5, 7
    arrays = [rng.uniform(-2, 2, (B, 4 * H)), rng.uniform(-2, 2, (B, 4 * H)), rng.uniform(-1, 1, (B, H)),
              rng.uniform(-1, 1, 4 * H), rng.uniform(-1, 1, 4 * H)]
    if not bias:
        arrays[3] = arrays[4] = None
    am, tm = [], []
    for a in arrays:
        if a is None:
            am.append(None), tm.append(None)
            continue
        m, _ = pair(a, dtype, True)
        am.append(m)
        tm.append(torch.from_numpy(a).requires_grad_(True))  # float64 oracle
    hy, cy, ws = ampc._C._thnn_fused_lstm_cell(*am)
    assert hy.dtype == cy.dtype == ws.dtype == getattr(ampc, dtype)
    assert type(hy.grad_fn).__name__ == "ThnnFusedLstmCellBackward0" or hy.grad_fn.name() == "ThnnFusedLstmCellBackward0"
    assert not ws.requires_grad and tuple(ws.shape) == (B, 4 * H)
    thy, tcy = torch_lstm_cell_ref(*tm)
    close(hy, thy, TOL[dtype], "hy")
    close(cy, tcy, TOL[dtype], "cy")
    gh, gc = rng.standard_normal((B, H)), rng.standard_normal((B, H))
    (hy.double() * ampc.tensor(gh) + cy.double() * ampc.tensor(gc)).sum().backward()
    (thy * torch.from_numpy(gh) + tcy * torch.from_numpy(gc)).sum().backward()
    gtol = TOL[dtype] * (8 if dtype in ("float16", "bfloat16") else 10)
    for k, (m, t) in enumerate(zip(am, tm)):
        if m is not None:
            assert m.grad.dtype == m.dtype
            close(m.grad, t.grad, gtol, f"grad {k}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_gru_cell_forward_backward(dtype, bias):
    rng = np.random.default_rng(2)
    B, H = 4, 6
    arrays = [rng.uniform(-2, 2, (B, 3 * H)), rng.uniform(-2, 2, (B, 3 * H)), rng.uniform(-1, 1, (B, H)),
              rng.uniform(-1, 1, 3 * H), rng.uniform(-1, 1, 3 * H)]
    if not bias:
        arrays[3] = arrays[4] = None
    am = [None if a is None else pair(a, dtype, True)[0] for a in arrays]
    tm = [None if a is None else torch.from_numpy(a).requires_grad_(True) for a in arrays]
    hy, ws = ampc._C._thnn_fused_gru_cell(*am)
    assert hy.dtype == ws.dtype == getattr(ampc, dtype) and tuple(ws.shape) == (B, 5 * H)
    thy = torch_gru_cell_ref(*tm)
    close(hy, thy, TOL[dtype], "hy")
    g = rng.standard_normal((B, H))
    (hy.double() * ampc.tensor(g)).sum().backward()
    (thy * torch.from_numpy(g)).sum().backward()
    gtol = TOL[dtype] * (8 if dtype in ("float16", "bfloat16") else 10)
    for k, (m, t) in enumerate(zip(am, tm)):
        if m is not None:
            close(m.grad, t.grad, gtol, f"grad {k}")


def test_fused_backward_functions_directly():
    rng = np.random.default_rng(3)
    B, H = 3, 4
    ig, hg, cx = (ampc.tensor(rng.standard_normal(s)) for s in [(B, 4 * H), (B, 4 * H), (B, H)])
    hy, cy, ws = ampc._C._thnn_fused_lstm_cell(ig, hg, cx)
    ghy = ampc.tensor(rng.standard_normal((B, H)))
    gg, gcx, gb = ampc._C._thnn_fused_lstm_cell_backward_impl(ghy, None, cx, cy, ws, True)
    ti, th, tc = (torch.tensor(t.numpy(), requires_grad=True) for t in (ig, hg, cx))
    thy, _ = torch_lstm_cell_ref(ti, th, tc, None, None)
    thy.backward(torch.tensor(ghy.numpy()))
    close(gg, ti.grad, 1e-12), close(gcx, tc.grad, 1e-12), close(gb, ti.grad.sum(0), 1e-12)
    _, _, none_bias = ampc._C._thnn_fused_lstm_cell_backward_impl(ghy, None, cx, cy, ws, False)
    assert none_bias is None
    x, h, hx = (ampc.tensor(rng.standard_normal(s)) for s in [(B, 3 * H), (B, 3 * H), (B, H)])
    hy, ws = ampc._C._thnn_fused_gru_cell(x, h, hx)
    gi, gh, ghx, gib, ghb = ampc._C._thnn_fused_gru_cell_backward(ghy, ws, True)
    tx, th, thx = (torch.tensor(t.numpy(), requires_grad=True) for t in (x, h, hx))
    torch_gru_cell_ref(tx, th, thx, None, None).backward(torch.tensor(ghy.numpy()))
    close(gi, tx.grad, 1e-12), close(gh, th.grad, 1e-12), close(ghx, thx.grad, 1e-12)
    close(gib, tx.grad.sum(0), 1e-12), close(ghb, th.grad.sum(0), 1e-12)


def test_fused_cells_zero_size_and_non_contiguous():
    hy, cy, ws = ampc._C._thnn_fused_lstm_cell(ampc.zeros(0, 8), ampc.zeros(0, 8), ampc.zeros(0, 2))
    assert tuple(hy.shape) == (0, 2) and tuple(ws.shape) == (0, 8)
    hy, ws = ampc._C._thnn_fused_gru_cell(ampc.zeros(2, 0), ampc.zeros(2, 0), ampc.zeros(2, 0))
    assert tuple(hy.shape) == (2, 0)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((8, 3))
    b = rng.standard_normal((8, 3))
    c = rng.standard_normal((2, 3))
    m = [ampc.tensor(v).t() for v in (a, b, c)]  # transposed views
    assert not m[0].is_contiguous()
    t = [torch.tensor(v).t() for v in (a, b, c)]
    hy, cy, _ = ampc._C._thnn_fused_lstm_cell(*m)
    thy, tcy = torch_lstm_cell_ref(t[0], t[1], t[2], None, None)
    close(hy, thy, 1e-12), close(cy, tcy, 1e-12)


def test_fused_cell_errors():
    x = ampc.zeros(3, 8)
    with pytest.raises(RuntimeError, match="_thnn_fused_lstm_cell: expected input gates"):
        ampc._C._thnn_fused_lstm_cell(x, x, ampc.zeros(3, 3))
    with pytest.raises(RuntimeError, match="differ in shape"):
        ampc._C._thnn_fused_lstm_cell(x, ampc.zeros(2, 8), ampc.zeros(3, 2))
    with pytest.raises(RuntimeError, match="both biases or neither"):
        ampc._C._thnn_fused_lstm_cell(x, x, ampc.zeros(3, 2), ampc.zeros(8))
    with pytest.raises(RuntimeError, match="dtype"):
        ampc._C._thnn_fused_gru_cell(ampc.zeros(3, 6), ampc.zeros(3, 6), ampc.zeros(3, 2, dtype=ampc.float64))
    with pytest.raises(RuntimeError, match="bias of shape"):
        ampc._C._thnn_fused_gru_cell(ampc.zeros(3, 6), ampc.zeros(3, 6), ampc.zeros(3, 2), ampc.zeros(5), ampc.zeros(5))


def _autocast_dtypes(M, lp):
    M.manual_seed(0)
    x = M.randn(3, 4)
    with M.autocast("cpu", dtype=lp):
        h, c = M.nn.LSTMCell(4, 6)(x)
        g = M.nn.GRUCell(4, 6)(x)
        r = M.nn.RNNCell(4, 6)(x)
        out, (hn, cn) = M.nn.LSTM(4, 6)(x.unsqueeze(1))
        go, gh = M.nn.GRU(4, 6)(x.unsqueeze(1))
        ro, rh = M.nn.RNN(4, 6, num_layers=2)(x.unsqueeze(1))
    return [str(t.dtype).split(".")[-1] for t in (h, c, g, r, out, hn, cn, go, gh, ro, rh)]


@pytest.mark.parametrize("name", ["bfloat16"])  # torch's CPU LSTM (oneDNN) has no fp16 kernel
def test_recurrent_dtypes_under_cpu_autocast_are_torchs(name):
    """torch's CPU autocast casts the GEMMs (and the whole LSTM layer: mkldnn_rnn_layer), not the
    cells: LSTMCell / GRUCell / GRU end in fp32 from an fp32 state, RNN and LSTM in the lower type."""
    assert _autocast_dtypes(ampc, getattr(ampc, name)) == _autocast_dtypes(torch, getattr(torch, name))


def test_cell_grads_reach_fp32_weights_under_autocast():
    cell = ampc.nn.LSTMCell(4, 6)
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        h, c = cell(ampc.randn(3, 4))
    h.float().sum().backward()
    assert cell.weight_ih.grad.dtype == ampc.float32


def _copy(am, tm):
    am.load_state_dict({k: ampc.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def test_lstm_dropout_between_layers_in_training_matches_torch():
    tm = torch.nn.LSTM(3, 5, num_layers=3, dropout=0.4)
    am = ampc.nn.LSTM(3, 5, num_layers=3, dropout=0.4)
    _copy(am, tm)
    x = np.random.default_rng(5).standard_normal((6, 2, 3))
    torch.manual_seed(11)
    ampc.manual_seed(11)
    to, (th, tc) = tm(torch.tensor(x, dtype=torch.float32))
    ao, (ah, ac) = am(ampc.tensor(x, dtype=ampc.float32))
    close(ao, to, 1e-5), close(ah, th, 1e-5), close(ac, tc, 1e-5)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_packed_input_equals_per_sequence_runs(mode):
    """A packed batch gives each sequence the output and final state of running it alone."""
    ampc.manual_seed(0)
    m = getattr(ampc.nn, mode)(3, 4, num_layers=2, bidirectional=True)
    rng = np.random.default_rng(6)
    seqs = [ampc.tensor(rng.standard_normal((n, 3)), dtype=ampc.float32) for n in (2, 5, 3)]
    packed = arnn.pack_sequence(seqs, enforce_sorted=False)
    out, state = m(packed)
    assert isinstance(out, arnn.PackedSequence)
    padded, lengths = arnn.pad_packed_sequence(out)
    assert lengths.tolist() == [2, 5, 3]
    h = state[0] if mode == "LSTM" else state
    for b, s in enumerate(seqs):
        o1, st1 = m(s.unsqueeze(1))
        h1 = st1[0] if mode == "LSTM" else st1
        close(padded[: s.shape[0], b], torch.tensor(o1[:, 0].detach().numpy()), 1e-5, f"out {b}")
        close(h[:, b], torch.tensor(h1[:, 0].detach().numpy()), 1e-5, f"h {b}")


def test_state_dict_round_trip_and_names():
    tm = torch.nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2)
    am = ampc.nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2)
    assert list(am.state_dict()) == list(tm.state_dict())
    assert am._flat_weights_names == tm._flat_weights_names
    assert [tuple(w.shape) for w in am._flat_weights] == [tuple(w.shape) for w in tm._flat_weights]
    _copy(am, tm)
    back = torch.nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2)
    back.load_state_dict({k: torch.tensor(v.numpy()) for k, v in am.state_dict().items()})
    for k, v in back.state_dict().items():
        assert torch.equal(v, tm.state_dict()[k]), k
    assert am.flatten_parameters() is None
    assert [[n for n in names] for names in am._all_weights] == tm._all_weights


def test_init_matches_torch_bit_for_bit():
    for build in (lambda M: M.nn.GRU(5, 7, 2, bias=False), lambda M: M.nn.RNNCell(3, 4, nonlinearity="relu")):
        torch.manual_seed(3)
        ampc.manual_seed(3)
        tm, am = build(torch), build(ampc)
        for (kt, vt), (ka, va) in zip(tm.state_dict().items(), am.state_dict().items()):
            assert kt == ka
            np.testing.assert_array_equal(va.numpy(), vt.numpy())


def test_module_errors_match_torch():
    cases = [
        (lambda M: M.nn.LSTM(3, 4)(M.zeros(2, 2, 2)), RuntimeError, "input.size\\(-1\\) must be equal to input_size"),
        (lambda M: M.nn.LSTM(3, 4)(M.zeros(1, 2, 3, 4)), ValueError, "LSTM: Expected input to be 2D or 3D"),
        (lambda M: M.nn.GRU(3, 4)(M.zeros(2, 2, 3), M.zeros(1, 3, 4)), RuntimeError, "Expected hidden size"),
        (lambda M: M.nn.LSTM(3, 4)(M.zeros(2, 2, 3), (M.zeros(1, 2, 4), M.zeros(1, 2, 5))), RuntimeError,
         "Expected hidden\\[1\\] size"),
        (lambda M: M.nn.LSTM(3, 4)(M.zeros(2, 3), (M.zeros(1, 1, 4), M.zeros(1, 1, 4))), RuntimeError,
         "For unbatched 2-D input, hx and cx should also be 2-D"),
        (lambda M: M.nn.RNN(3, 4, nonlinearity="gelu"), ValueError, "Unknown nonlinearity 'gelu'"),
        (lambda M: M.nn.GRU(3, 4, proj_size=2), ValueError, "proj_size argument is only supported for LSTM"),
        (lambda M: M.nn.LSTM(3, 4, proj_size=4), ValueError, "proj_size has to be smaller than hidden_size"),
        (lambda M: M.nn.LSTM(3, 4, dropout=1.5), ValueError, "dropout should be a number in range"),
        (lambda M: M.nn.LSTMCell(3, 4)(M.zeros(1, 1, 3)), ValueError, "LSTMCell: Expected input to be 1D or 2D"),
        (lambda M: M.nn.GRUCell(3, 4)(M.zeros(2, 3), M.zeros(1, 1, 4)), ValueError,
         "GRUCell: Expected hidden to be 1D or 2D"),
        (lambda M: M.nn.LSTM(3, 4)(M.zeros(2, 2, 3, dtype=M.float64)), ValueError, "RNN input dtype \\(.*float64\\) does not match weight dtype"),
        (lambda M: M.nn.GRU(3, 4, bias=1), TypeError, "bias should be of type bool"),
    ]
    for fn, exc, pattern in cases:
        for M in (torch, ampc):
            with pytest.raises(exc, match=pattern):
                fn(M)


def test_reprs():
    for build in (lambda M: M.nn.LSTM(3, 4, 2, bias=False, batch_first=True, dropout=0.5, bidirectional=True,
                                      proj_size=2),
                  lambda M: M.nn.RNN(3, 4, nonlinearity="relu"), lambda M: M.nn.RNNCell(3, 4, False, "relu"),
                  lambda M: M.nn.GRUCell(3, 4, bias=False)):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert repr(build(ampc)) == repr(build(torch))


# ---------------------------------------------------------------------------- nn.utils.rnn

def _seqs(lengths, trailing=(2,), seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((n,) + trailing) for n in lengths]
    return ([ampc.tensor(a, requires_grad=True) for a in arrays], [torch.tensor(a, requires_grad=True) for a in arrays])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence(batch_first, padding_side):
    a, t = _seqs([3, 1, 4])
    pa = arnn.pad_sequence(a, batch_first=batch_first, padding_value=-2.5, padding_side=padding_side)
    pt = trnn.pad_sequence(t, batch_first=batch_first, padding_value=-2.5, padding_side=padding_side)
    close(pa, pt, 0)
    w = np.random.default_rng(1).standard_normal(tuple(pt.shape))
    (pa * ampc.tensor(w)).sum().backward()
    (pt * torch.tensor(w)).sum().backward()
    for x, y in zip(a, t):
        close(x.grad, y.grad, 0)
    with pytest.raises(ValueError, match="padding_side"):
        arnn.pad_sequence(a, padding_side="middle")


@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_pad_round_trip(enforce_sorted, batch_first):
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    a, t = _seqs(lengths, (3,), seed=2)
    pa = arnn.pad_sequence(a, batch_first=batch_first)
    pt = trnn.pad_sequence(t, batch_first=batch_first)
    ka = arnn.pack_padded_sequence(pa, ampc.tensor(lengths), batch_first=batch_first, enforce_sorted=enforce_sorted)
    kt = trnn.pack_padded_sequence(pt, torch.tensor(lengths), batch_first=batch_first, enforce_sorted=enforce_sorted)
    close(ka.data, kt.data, 0)
    assert ka.batch_sizes.tolist() == kt.batch_sizes.tolist() and ka.batch_sizes.dtype == ampc.int64
    for x, y in ((ka.sorted_indices, kt.sorted_indices), (ka.unsorted_indices, kt.unsorted_indices)):
        assert (x is None) == (y is None) and (x is None or x.tolist() == y.tolist())
    ua, la = arnn.pad_packed_sequence(ka, batch_first=batch_first, padding_value=9.0, total_length=7)
    ut, lt = trnn.pad_packed_sequence(kt, batch_first=batch_first, padding_value=9.0, total_length=7)
    close(ua, ut, 0)
    assert la.tolist() == lt.tolist()
    w = np.random.default_rng(3).standard_normal(tuple(ut.shape))
    (ua * ampc.tensor(w)).sum().backward()
    (ut * torch.tensor(w)).sum().backward()
    for x, y in zip(a, t):
        close(x.grad, y.grad, 0)
    for x, y in zip(arnn.unpad_sequence(ua, la, batch_first), trnn.unpad_sequence(ut, lt, batch_first)):
        close(x, y, 0)


def test_pack_sequence_unpack_sequence_and_errors():
    a, t = _seqs([2, 4, 1], seed=4)
    ka, kt = arnn.pack_sequence(a, enforce_sorted=False), trnn.pack_sequence(t, enforce_sorted=False)
    close(ka.data, kt.data, 0)
    for x, y in zip(arnn.unpack_sequence(ka), trnn.unpack_sequence(kt)):
        close(x, y, 0)
    assert ka.double().data.dtype == ampc.float64 and ka.to(ampc.float64).batch_sizes is ka.batch_sizes
    assert not ka.is_cuda
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        arnn.pack_sequence(a)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        trnn.pack_sequence(t)
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        arnn.pad_packed_sequence(ka, total_length=2)
    with pytest.raises(RuntimeError, match="Expected `len\\(lengths\\)` to be equal to batch_size"):
        arnn.pack_padded_sequence(ampc.zeros(4, 2, 1), [3, 2, 1])


def test_top_level_cell_functions_match_torch():
    rng = np.random.default_rng(7)
    x, h, c = rng.standard_normal((3, 4)), rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    for name, g in (("lstm_cell", 4), ("gru_cell", 3), ("rnn_tanh_cell", 1), ("rnn_relu_cell", 1)):
        w_ih, w_hh = rng.standard_normal((g * 5, 4)), rng.standard_normal((g * 5, 5))
        b_ih, b_hh = rng.standard_normal(g * 5), rng.standard_normal(g * 5)
        for bias in (True, False):
            def call(M, conv):
                hx = (conv(h), conv(c)) if name == "lstm_cell" else conv(h)
                bs = (conv(b_ih), conv(b_hh)) if bias else (None, None)
                return getattr(M, name)(conv(x), hx, conv(w_ih), conv(w_hh), *bs)
            got = call(ampc, lambda a: ampc.tensor(a))
            want = call(torch, lambda a: torch.tensor(a))
            for gv, wv in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
                close(gv, wv, 1e-12, name)


def test_lstm_layer_node_equals_the_per_step_graph():
    """A dense LSTM input runs each layer and direction as one node (_LSTMLayer); a PackedSequence
    of full-length sequences runs the per-step graph. Same outputs and gradients."""
    ampc.manual_seed(2)
    m = ampc.nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    x = np.random.default_rng(8).standard_normal((6, 4, 3))
    h0 = np.random.default_rng(9).standard_normal((4, 4, 5))
    res = []
    for packed in (False, True):
        m.zero_grad()
        xt = ampc.tensor(x, dtype=ampc.float32, requires_grad=True)
        ht = ampc.tensor(h0, dtype=ampc.float32, requires_grad=True)
        inp = arnn.pack_padded_sequence(xt, [6] * 4) if packed else xt
        out, (hn, cn) = m(inp, (ht, ht * 0.5))
        data = out.data if packed else out.reshape(24, 10)
        (data.sin().sum() + (hn * cn).sum()).backward()
        res.append([np.array(t.detach().numpy()) for t in (data, hn, cn, xt.grad, ht.grad)]
                   + [np.array(p.grad.numpy()) for p in m.parameters()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
