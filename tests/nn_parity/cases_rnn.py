"""Parity cases of the recurrent family (issue 13): nn.RNN / LSTM / GRU (layers, directions,
batch_first, proj_size, no bias, given states, unbatched and packed input) and the three cells."""
from nn_parity.spec import Case, Sub, X, Xc


def _packed(lengths, batch_first=False, enforce_sorted=True):
    def make(M, x):
        return M.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    return make


def _sub(lengths, shape, **kw):
    return Sub(_packed(lengths, **kw), X(shape))


CASES = [
    Case("nn.LSTM", lambda M: M.nn.LSTM(4, 6), [X((5, 3, 4))], dtypes=("float32", "float64", "bfloat16", "float16")),
    Case("nn.LSTM", lambda M: M.nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True),
         [X((3, 5, 4))], id="nn.LSTM-2layer-bi-batch_first"),
    Case("nn.LSTM", lambda M: M.nn.LSTM(4, 6, proj_size=3, num_layers=2), [X((5, 2, 4)), X((2, 2, 3)), X((2, 2, 6))],
         call=lambda m, x, h, c: m(x, (h, c)), id="nn.LSTM-proj-states"),
    Case("nn.LSTM", lambda M: M.nn.LSTM(4, 5, num_layers=2, bidirectional=True), [X((3, 2, 4)), X((4, 2, 5)),
         X((4, 2, 5))], call=lambda m, x, h, c: m(x, (h, c)), id="nn.LSTM-2layer-bi-states"),
    Case("nn.LSTM", lambda M: M.nn.LSTM(4, 5, bias=False), [X((4, 4))], id="nn.LSTM-nobias-unbatched-noproj"),
    Case("nn.LSTM", lambda M: M.nn.LSTM(4, 5, bias=False, bidirectional=True, proj_size=2), [X((4, 4))],
         id="nn.LSTM-nobias-unbatched"),
    Case("nn.LSTM", lambda M: M.nn.LSTM(3, 4, bidirectional=True), [_sub([5, 3, 2], (5, 3, 3))], id="nn.LSTM-packed"),
    Case("nn.LSTM", lambda M: M.nn.LSTM(3, 4, num_layers=2, dropout=0.3), [X((4, 2, 3))], id="nn.LSTM-dropout-eval"),
    Case("nn.GRU", lambda M: M.nn.GRU(4, 6), [X((5, 3, 4))], dtypes=("float32", "float64", "bfloat16", "float16")),
    Case("nn.GRU", lambda M: M.nn.GRU(4, 5, num_layers=2, bidirectional=True, batch_first=True),
         [X((2, 6, 4)), X((4, 2, 5))], id="nn.GRU-2layer-bi-h0"),
    Case("nn.GRU", lambda M: M.nn.GRU(3, 4, bias=False),
         [_sub([4, 4, 1], (3, 4, 3), batch_first=True, enforce_sorted=False)], id="nn.GRU-packed-unsorted-nobias"),
    Case("nn.RNN", lambda M: M.nn.RNN(4, 6), [X((5, 3, 4))]),
    Case("nn.RNN", lambda M: M.nn.RNN(4, 6, 2, nonlinearity="relu", bidirectional=True), [X((5, 4))],
         id="nn.RNN-relu-bi-unbatched"),
    Case("nn.RNN", lambda M: M.nn.RNN(3, 4, bidirectional=True), [_sub([3, 2, 2, 1], (3, 4, 3))], id="nn.RNN-packed"),
    Case("nn.LSTMCell", lambda M: M.nn.LSTMCell(4, 6), [X((3, 4)), X((3, 6)), X((3, 6))],
         dtypes=("float32", "float64", "bfloat16", "float16"),
         call=lambda m, x, h, c: m(x, (h, c))),
    Case("nn.LSTMCell", lambda M: M.nn.LSTMCell(4, 6, bias=False), [X((4,))], id="nn.LSTMCell-nobias-unbatched"),
    Case("nn.GRUCell", lambda M: M.nn.GRUCell(4, 6), [X((3, 4)), X((3, 6))]),
    Case("nn.GRUCell", lambda M: M.nn.GRUCell(4, 6, bias=False), [X((4,))], id="nn.GRUCell-nobias-unbatched"),
    Case("nn.RNNCell", lambda M: M.nn.RNNCell(4, 6), [X((3, 4)), X((3, 6))]),
    Case("nn.RNNCell", lambda M: M.nn.RNNCell(4, 6, nonlinearity="relu"), [X((3, 4))], id="nn.RNNCell-relu"),
    # the base classes: parameters, names, init and repr (they have no forward of their own)
    Case("nn.RNNBase", lambda M: M.nn.RNNBase("GRU", 3, 4, 2, bidirectional=True), [Xc((1,))],
         call=lambda m, x: [w * x for ws in m.all_weights for w in ws], grad=False),
    Case("nn.RNNCellBase", lambda M: M.nn.RNNCellBase(3, 4, True, 2), [Xc((1,))],
         call=lambda m, x: [m.weight_ih * x, m.weight_hh * x, m.bias_ih * x], grad=False),
]
