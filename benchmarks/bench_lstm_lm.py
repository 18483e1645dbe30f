"""A word-language-model LSTM train step on the CPU, ampc beside PyTorch in one process (issue 13):
pytorch/examples' word_language_model (embedding 10000 x 200, 2-layer LSTM 200 with dropout 0.2,
linear decoder to 10000 + cross_entropy, batch 20, bptt 35, clip_grad_norm_ 0.25, SGD by hand,
the hidden state carried and detached between steps), printed as time ratios. The parts of the
step are timed too (the LSTM alone forward + backward, the decoder + cross_entropy forward +
backward), so a slow part shows where the time goes.

Usage: python benchmarks/bench_lstm_lm.py [--quick]"""
import sys

import numpy as np

from common import machine_line, print_table, time_per_call, try_import_torch

import ampc

V, E, H, L, B, T = 10000, 200, 200, 2, 20, 35


def build(M):
    M.manual_seed(0)
    nn = M.nn

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.2)
            self.encoder = nn.Embedding(V, E)
            self.rnn = nn.LSTM(E, H, L, dropout=0.2)
            self.decoder = nn.Linear(H, V)

        def forward(self, x, hidden):
            emb = self.drop(self.encoder(x))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            return self.decoder(output).view(-1, V), hidden

    return RNNModel()


def train_step(M, model, state, data, targets):
    model.zero_grad()
    hidden = tuple(h.detach() for h in state[0])
    out, state[0] = model(data, hidden)
    loss = M.nn.functional.cross_entropy(out, targets)
    loss.backward()
    M.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    with M.no_grad():
        for p in model.parameters():
            p.add_(p.grad, alpha=-20.0)
    return loss


def setup(M):
    rng = np.random.default_rng(1)
    data = M.tensor(rng.integers(0, V, (T, B)))
    targets = M.tensor(rng.integers(0, V, (T * B,)))
    model = build(M)
    model.train()
    state = [(M.zeros(L, B, H), M.zeros(L, B, H))]
    lstm = M.nn.LSTM(E, H, L)
    x = M.randn(T, B, E, requires_grad=True)
    dec = M.nn.Linear(H, V)
    hid = M.randn(T * B, H, requires_grad=True)
    logits = M.randn(T * B, V, requires_grad=True)
    parts = {
        "train step": lambda: train_step(M, model, state, data, targets),
        "LSTM fwd+bwd": lambda: lstm(x)[0].sum().backward(),
        "decoder+cross_entropy fwd+bwd": lambda: M.nn.functional.cross_entropy(dec(hid), targets).backward(),
        "cross_entropy fwd+bwd": lambda: M.nn.functional.cross_entropy(logits, targets).backward(),
    }
    return parts


def main():
    quick = "--quick" in sys.argv
    torch = try_import_torch()
    min_time = 0.3 if quick else 1.5
    libs = [("ampc", ampc)] + ([("torch", torch)] if torch is not None else [])
    times = {}
    for name, M in libs:
        for part, fn in setup(M).items():
            times[(name, part)] = time_per_call(fn, min_time=min_time, repeat=3) * 1e3
    rows = []
    for part in setup(ampc):
        row = [part, f"{times[('ampc', part)]:.2f}"]
        if torch is not None:
            t = times[("torch", part)]
            row += [f"{t:.2f}", f"{times[('ampc', part)] / t:.2f}"]
        rows.append(row)
    header = ["part", "ampc ms", "torch ms", "ampc/torch"][:len(rows[0])]
    print(machine_line())
    print(f"torch threads {torch.get_num_threads() if torch else '-'}")
    print_table(f"word-LM LSTM train step on the CPU (V={V}, emb {E}, {L}x LSTM {H}, batch {B}, bptt {T}; "
                "lower is better)", header, rows)


if __name__ == "__main__":
    main()
