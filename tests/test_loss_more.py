"""Issue 13's losses beyond the parity harness (tests/nn_parity/cases_loss.py): CTC against torch
over random lattices (padded and concatenated targets, repeats, blank anywhere, impossible
alignments, zero lengths, float64), the errors torch raises, 0-size and non-contiguous inputs,
the autocast policy (fp32 under autocast, as torch's lists), and the legacy size_average/reduce."""
import math
import warnings

import numpy as np
import pytest
import torch

import ampc

AF, TF = ampc.nn.functional, torch.nn.functional


def pair(a, grad=False, dtype=None):
    """(ampc tensor, torch tensor) of numpy array a"""
    t = torch.from_numpy(np.array(a))
    m = ampc.tensor(np.array(a))
    if dtype is not None:
        t, m = t.to(getattr(torch, dtype)), m.to(getattr(ampc, dtype))
    if grad:
        t.requires_grad_(), m.requires_grad_()
    return m, t


def close(a, t, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a.detach().cpu().numpy(), np.float64),
                               np.asarray(t.detach().numpy(), np.float64), rtol=rtol, atol=atol)


# ---------------------------------------------------------------- CTC

def _ctc_case(rng, T, N, C, S, blank, concat, impossible=False):
    logits = rng.normal(size=(T, N, C)) * 2
    il = rng.integers(max(1, T // 2), T + 1, size=N)
    tl = rng.integers(0, S + 1, size=N)
    if impossible:
        il[0], tl[0] = 1, S  # S labels cannot fit in one frame
    labels = [c for c in range(C) if c != blank]
    tg = rng.choice(labels, size=(N, S))
    if concat:
        tg = np.concatenate([tg[b, :tl[b]] for b in range(N)]).astype(np.int64)
    return logits, tg, il.tolist(), tl.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("concat", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_matches_torch_over_random_lattices(dtype, concat, reduction):
    rng = np.random.default_rng(hash((dtype, concat, reduction)) % 2 ** 32)
    for T, N, C, S, blank in [(30, 4, 6, 8, 0), (17, 3, 3, 6, 2), (5, 2, 4, 2, 1), (1, 2, 3, 1, 0)]:
        logits, tg, il, tl = _ctc_case(rng, T, N, C, S, blank, concat)
        xm, xt = pair(logits, grad=True, dtype=dtype)
        lm, lt = xm.log_softmax(2), xt.log_softmax(2)
        tm, tt = pair(tg)
        out_m = AF.ctc_loss(lm, tm, il, tl, blank=blank, reduction=reduction)
        out_t = TF.ctc_loss(lt, tt, il, tl, blank=blank, reduction=reduction)
        rtol = 1e-4 if dtype == "float32" else 1e-10
        close(out_m, out_t, rtol=rtol, atol=rtol)
        gm = rng.normal(size=out_t.shape)
        out_m.backward(ampc.tensor(gm).to(out_m.dtype))
        out_t.backward(torch.from_numpy(gm).to(out_t.dtype))
        close(xm.grad, xt.grad, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_impossible_alignment_and_zero_infinity(zero_infinity):
    rng = np.random.default_rng(3)
    logits, tg, il, tl = _ctc_case(rng, 10, 3, 5, 4, 0, False, impossible=True)
    xm, xt = pair(logits, grad=True, dtype="float64")
    out_m = AF.ctc_loss(xm.log_softmax(2), ampc.tensor(tg), il, tl, reduction="none", zero_infinity=zero_infinity)
    out_t = TF.ctc_loss(xt.log_softmax(2), torch.from_numpy(tg), il, tl, reduction="none",
                        zero_infinity=zero_infinity)
    assert math.isinf(out_t[0].item()) != zero_infinity
    close(out_m, out_t)
    out_m.sum().backward(), out_t.sum().backward()
    np.testing.assert_array_equal(np.isnan(xm.grad.numpy()), np.isnan(xt.grad.numpy()))
    if zero_infinity:
        close(xm.grad, xt.grad, rtol=1e-10, atol=1e-12)
        assert (xm.grad.numpy()[:, 0] == 0).all()


def test_ctc_zero_lengths_tensor_lengths_and_noncontiguous_log_probs():
    rng = np.random.default_rng(4)
    logits = rng.normal(size=(3, 7, 5))  # (N, T, C), made (T, N, C) by a transpose: not contiguous
    xm, xt = pair(logits, grad=True)
    lm, lt = xm.transpose(0, 1).log_softmax(2), xt.transpose(0, 1).log_softmax(2)
    tg = rng.integers(1, 5, size=(3, 3))
    il, tl = [7, 0, 0], [3, 0, 2]  # an empty input: loss 0 for an empty target, inf otherwise
    out_m = AF.ctc_loss(lm, ampc.tensor(tg), ampc.tensor(il), ampc.tensor(tl, dtype=ampc.int32), reduction="none")
    out_t = TF.ctc_loss(lt, torch.from_numpy(tg), torch.tensor(il), torch.tensor(tl, dtype=torch.int32),
                        reduction="none")
    close(out_m, out_t)
    assert out_m[1].item() == 0 and math.isinf(out_m[2].item())
    out_m[0].backward(), out_t[0].backward()
    close(xm.grad, xt.grad)


def test_ctc_module_and_errors():
    loss = ampc.nn.CTCLoss(blank=1, zero_infinity=True)
    assert repr(loss) == repr(torch.nn.CTCLoss(blank=1, zero_infinity=True))
    lp = ampc.randn(4, 2, 3).log_softmax(2)
    tg = ampc.tensor([[0, 2], [2, 2]])
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        AF.ctc_loss(lp, tg, [4, 4], [2, 2], blank=3)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        AF.ctc_loss(lp, tg, [4], [2, 2])
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 4, but got value 5"):
        AF.ctc_loss(lp, tg, [5, 4], [2, 2])
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 3 at dimension 1"):
        AF.ctc_loss(lp, tg, [4, 4], [3, 2])
    with pytest.raises(IndexError, match="outside"):
        AF.ctc_loss(lp, ampc.tensor([[0, 7], [2, 2]]), [4, 4], [2, 2])
    with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
        AF.ctc_loss(lp.half(), tg, [4, 4], [2, 2])
    with pytest.raises(RuntimeError, match="input_lengths must be integral"):
        AF.ctc_loss(lp, tg, ampc.tensor([4.0, 4.0]), [2, 2])
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        AF.ctc_loss(lp, tg, [4, 4], [2, 2], reduction="avg")


def test_ctc_under_autocast_runs_in_fp32():
    lp = ampc.randn(6, 2, 4).log_softmax(2).to(ampc.bfloat16)
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        out = AF.ctc_loss(lp, ampc.tensor([[1, 2], [3, 1]]), [6, 5], [2, 2], reduction="none")
    assert out.dtype == ampc.float32
    ref = AF.ctc_loss(lp.float(), ampc.tensor([[1, 2], [3, 1]]), [6, 5], [2, 2], reduction="none")
    close(out, torch.from_numpy(ref.numpy()), rtol=0, atol=0)


# ---------------------------------------------------------------- the composed losses

def _all_losses(M):
    F = M.nn.functional
    r = np.random.default_rng(0)
    x = M.tensor(r.uniform(-1, 1, (4, 5)))
    y = M.tensor(r.uniform(-1, 1, (4, 5)))
    sign = M.tensor(r.integers(0, 2, (4, 5)) * 2 - 1)
    cls = M.tensor(r.integers(0, 5, (4,)))
    return {
        "kl_div": lambda: F.kl_div(x, y.abs(), reduction="batchmean"),
        "huber_loss": lambda: F.huber_loss(x, y, delta=0.3),
        "poisson_nll_loss": lambda: F.poisson_nll_loss(x, y.abs(), full=True),
        "margin_ranking_loss": lambda: F.margin_ranking_loss(x, y, sign, margin=0.1),
        "hinge_embedding_loss": lambda: F.hinge_embedding_loss(x, sign),
        "cosine_embedding_loss": lambda: F.cosine_embedding_loss(x, y, sign[:, 0]),
        "soft_margin_loss": lambda: F.soft_margin_loss(x, sign),
        "multi_margin_loss": lambda: F.multi_margin_loss(x, cls, p=2),
        "multilabel_margin_loss": lambda: F.multilabel_margin_loss(x, M.tensor([[1, 2, -1, 0, 0]] * 4)),
        "triplet_margin_loss": lambda: F.triplet_margin_loss(x, y, x * 0.5, swap=True),
    }


@pytest.mark.parametrize("name", sorted(_all_losses(torch)))
def test_fp32_under_autocast_as_torch(name):
    """torch's CPU autocast lists these as fp32: bf16 inputs give a float32 loss equal to the fp32 run"""
    m, t = _all_losses(ampc)[name], _all_losses(torch)[name]
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        out_m = m()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out_t = t()
    assert str(out_m.dtype).split(".")[-1] == str(out_t.dtype).split(".")[-1]
    close(out_m, out_t)


@pytest.mark.parametrize("name", sorted(_all_losses(torch)))
def test_composed_losses_on_empty_inputs(name):
    """a 0-row batch: mean is NaN, sum is 0, as torch"""
    def empty(M):
        F = M.nn.functional
        z = M.zeros(0, 5)
        zi = M.zeros(0, dtype=M.int64)
        return {
            "kl_div": lambda: F.kl_div(z, z, reduction="sum"),
            "huber_loss": lambda: F.huber_loss(z, z),
            "poisson_nll_loss": lambda: F.poisson_nll_loss(z, z),
            "margin_ranking_loss": lambda: F.margin_ranking_loss(z, z, z),
            "hinge_embedding_loss": lambda: F.hinge_embedding_loss(z, z, reduction="sum"),
            "cosine_embedding_loss": lambda: F.cosine_embedding_loss(z, z, zi.float()),
            "soft_margin_loss": lambda: F.soft_margin_loss(z, z),
            "multi_margin_loss": lambda: F.multi_margin_loss(z, zi, reduction="none"),  # torch: sum is uninitialised
            "multilabel_margin_loss": lambda: F.multilabel_margin_loss(z, z.long(), reduction="none"),
            "triplet_margin_loss": lambda: F.triplet_margin_loss(z, z, z),
        }[name]()
    out_m, out_t = empty(ampc), empty(torch)
    assert tuple(out_m.shape) == tuple(out_t.shape)
    np.testing.assert_array_equal(out_m.numpy(), out_t.numpy())


def test_noncontiguous_inputs():
    r = np.random.default_rng(1)
    xm, xt = pair(r.uniform(-1, 1, (5, 4)), grad=True)
    ym, yt = pair(r.uniform(-1, 1, (5, 4)))
    cm, ct = pair(r.integers(0, 5, (4,)))
    for fm, ft in [
        (lambda: AF.multi_margin_loss(xm.t(), cm), lambda: TF.multi_margin_loss(xt.t(), ct)),
        (lambda: AF.huber_loss(xm.t(), ym.t(), delta=0.2), lambda: TF.huber_loss(xt.t(), yt.t(), delta=0.2)),
        (lambda: AF.kl_div(xm.t(), ym.t().abs(), reduction="sum"), lambda: TF.kl_div(xt.t(), yt.t().abs(),
                                                                                     reduction="sum")),
        (lambda: AF.triplet_margin_loss(xm.t(), ym.t(), xm.t() * 2), lambda: TF.triplet_margin_loss(xt.t(), yt.t(),
                                                                                                 xt.t() * 2)),
    ]:
        xm.grad, xt.grad = None, None
        a, b = fm(), ft()
        close(a, b)
        a.backward(), b.backward()
        close(xm.grad, xt.grad)


def test_errors_name_the_op_and_values():
    x = ampc.randn(3, 4)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta"):
        AF.huber_loss(x, x, delta=0)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        AF.multi_margin_loss(x, ampc.tensor([0, 1, 2]), p=3)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        ampc.nn.MultiMarginLoss(p=3)
    with pytest.raises(IndexError, match="target out of range"):
        AF.multi_margin_loss(x, ampc.tensor([0, 1, 4]))
    with pytest.raises(IndexError, match="target out of range"):
        AF.multilabel_margin_loss(x, ampc.tensor([[0, 5, -1, 0]] * 3))
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        AF.triplet_margin_loss(x, x, x, margin=0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        AF.triplet_margin_loss(x, x[0], x)
    with pytest.raises(RuntimeError, match="All input tensors should have same dimension"):
        AF.margin_ranking_loss(x, x, x[0])
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input tensors"):
        AF.cosine_embedding_loss(x[0], x[0], ampc.ones(3))
    with pytest.raises(ValueError, match="var has negative entry"):
        AF.gaussian_nll_loss(x, x, -ampc.ones(3, 4))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        AF.gaussian_nll_loss(x, x, ampc.ones(2, 2))
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        AF.mse_loss(x, x, weight=ampc.ones(4))
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        AF.kl_div(x, x, reduction="avg")
    with pytest.raises(ValueError, match="cutoffs should be a sequence"):
        ampc.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])
    with pytest.raises(RuntimeError, match="Target values should be in"):
        ampc.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4])(ampc.randn(2, 8), ampc.tensor([1, 10]))


def test_kl_div_mean_warns_as_torch_and_legacy_arguments():
    x, y = ampc.randn(3, 4).log_softmax(1), ampc.rand(3, 4)
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        AF.kl_div(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AF.kl_div(x, y, reduction="batchmean")
    # size_average=False -> sum, reduce=False -> none
    xt, yt = torch.from_numpy(x.numpy()), torch.from_numpy(y.numpy())
    close(AF.kl_div(x, y, size_average=False), TF.kl_div(xt, yt, size_average=False))
    for name in ["soft_margin_loss", "hinge_embedding_loss", "multilabel_soft_margin_loss", "poisson_nll_loss"]:
        a = getattr(AF, name)(x, y, reduce=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b = getattr(TF, name)(xt, yt, reduce=False)
        close(a, b)
    assert ampc.nn.SoftMarginLoss(size_average=False).reduction == "sum"


def test_loss_modules_state_dict_and_buffers():
    w = ampc.tensor([1.0, 2.0, 0.5])
    m = ampc.nn.MultiMarginLoss(weight=w)
    assert list(m.state_dict()) == list(torch.nn.MultiMarginLoss(weight=torch.ones(3)).state_dict())
    m2 = ampc.nn.MultiLabelSoftMarginLoss(weight=w)
    assert list(m2.state_dict()) == ["weight"]
    al = ampc.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [5, 10], div_value=2.0)
    tl = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [5, 10], div_value=2.0)
    assert list(al.state_dict()) == list(tl.state_dict())
    assert [tuple(v.shape) for v in al.state_dict().values()] == [tuple(v.shape) for v in tl.state_dict().values()]


# ---------------------------------------------------------------- cross_entropy's (N, C) float32 fast path

@pytest.mark.parametrize("kw", [dict(), dict(label_smoothing=0.15), dict(reduction="none"), dict(reduction="sum"),
                                dict(ignore_index=3), dict(weight=True), dict(weight=True, label_smoothing=0.1)])
def test_cross_entropy_float32_rows_match_torch(kw):
    """the row kernels (cpu/cpu_nn_loss_ce_rows.c): values and grads within float32's reach of
    torch's, for wide rows (a 37-wide tail past the 8-lane loops), logits spread over +-60 (exp
    arguments down to the -87 cut), every option"""
    r = np.random.default_rng(len(str(kw)))
    n, c = 48, 2085
    x = (r.standard_normal((n, c)) * r.uniform(0.1, 20, (n, 1))).astype(np.float32)
    t = r.integers(0, c, n)
    t[::7] = 3
    kw = dict(kw)
    if kw.pop("weight", False):
        kw["weight"] = r.uniform(0.2, 3, c).astype(np.float32)
    xm, xt = pair(x, grad=True)
    km = {k: ampc.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    kt = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    a, b = AF.cross_entropy(xm, ampc.tensor(t), **km), TF.cross_entropy(xt, torch.from_numpy(t), **kt)
    close(a, b, rtol=2e-6, atol=2e-6 * float(b.abs().max()))
    g = r.standard_normal(tuple(b.shape)).astype(np.float32)
    a.backward(ampc.tensor(g)), b.backward(torch.from_numpy(g))
    close(xm.grad, xt.grad, rtol=1e-5, atol=1e-7)


def test_cross_entropy_float32_rows_exp_accuracy_and_nan():
    """softmax probabilities of [0, -d] rows for d across the whole float range of exp (the
    polynomial's reduction intervals, and past -87 where it returns 0), and NaN/inf rows"""
    d = np.concatenate([np.linspace(0, 90, 997), [1e-7, 0.34657359, 0.34657360, 87.2, 87.4, 1e4]]).astype(np.float32)
    x = np.zeros((len(d), 9), np.float32)
    x[:, 1:] = -d[:, None] * np.arange(1, 9)[None, :] / 8
    x[-1, 2], x[-2, 4] = np.nan, np.inf
    xm, xt = pair(x, grad=True)
    tgt = np.ones(len(d), np.int64)
    a = AF.cross_entropy(xm, ampc.tensor(tgt), reduction="none")
    b = TF.cross_entropy(xt, torch.from_numpy(tgt), reduction="none")
    np.testing.assert_array_equal(np.isnan(a.detach().numpy()), np.isnan(b.detach().numpy()))
    close(a[:-2], b[:-2], rtol=2e-6, atol=1e-6)
    a[:-2].sum().backward(), b[:-2].sum().backward()
    close(xm.grad[:-2], xt.grad[:-2], rtol=1e-5, atol=1e-7)
