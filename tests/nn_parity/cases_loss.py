"""Parity cases of issue 13's losses: every torch loss module and its functional form, with the
options that change the math (reduction, log_target, delta, weights, pos_weight, K-dim targets,
probability targets, label smoothing, margins, p, swap, full, eps)."""
from nn_parity.spec import Case, Const, I, Sub, X, Xc

F = "nn.functional."


def _f(name):
    return lambda M: getattr(M.nn.functional, name)


def _sign(shape):
    """a target of +-1 values"""
    return Sub(lambda M, t: t * 2 - 1, I(shape, 2))


def _weight_kw(f, x, t, w, **kwargs):
    return f(x, t, weight=w, **kwargs)


def _w(M, values):
    return M.tensor(values)


_MLM_TARGET = [[3, 0, -1, 1, 2], [1, 2, 4, -1, 0], [0, 1, 2, 3, 4], [-1, 2, 0, 0, 0]]

CASES = [
    # ---------------------------------------------------------------- the core losses, the options they lacked
    Case("nn.MSELoss", lambda M: M.nn.MSELoss(reduction="none"), [X((3, 4)), X((3, 4))], id="nn.MSELoss-none-tgrad"),
    Case(F + "mse_loss", _f("mse_loss"), [X((3, 4)), Xc((3, 4)), Xc((3, 4), 0.1, 1)], id="mse_loss-weight",
         call=_weight_kw),
    Case(F + "l1_loss", _f("l1_loss"), [X((3, 4)), Xc((3, 4)), Xc((3, 4), 0.1, 1)], id="l1_loss-weight", call=_weight_kw),
    Case("nn.NLLLoss", lambda M: M.nn.NLLLoss(weight=_w(M, [0.2, 1.0, 0.5, 2.0]), ignore_index=2),
         [X((3, 4, 5, 2)), I((3, 5, 2), 4)], id="nn.NLLLoss-kdim-weight-ignore"),
    Case("nn.NLLLoss", lambda M: M.nn.NLLLoss(reduction="sum"), [X((4,)), Sub(lambda M, t: t[0], I((1,), 4))],
         id="nn.NLLLoss-unbatched"),
    Case("nn.CrossEntropyLoss", lambda M: M.nn.CrossEntropyLoss(weight=_w(M, [0.3, 1.0, 2.0]), label_smoothing=0.2),
         [X((4, 3, 5)), I((4, 5), 3)], id="nn.CrossEntropyLoss-kdim-weight-smooth"),
    Case("nn.CrossEntropyLoss", lambda M: M.nn.CrossEntropyLoss(label_smoothing=0.1),
         [X((4, 5)), X((4, 5), 0, 1)], id="nn.CrossEntropyLoss-probs-smooth"),
    Case("nn.CrossEntropyLoss", lambda M: M.nn.CrossEntropyLoss(weight=_w(M, [0.3, 1.0, 2.0]), reduction="none"),
         [X((2, 3, 4)), X((2, 3, 4), 0, 1)], id="nn.CrossEntropyLoss-probs-kdim-weight"),
    Case("nn.BCEWithLogitsLoss", lambda M: M.nn.BCEWithLogitsLoss(pos_weight=_w(M, [0.5, 2.0, 3.0])),
         [X((2, 4, 3)), Xc((2, 4, 3), 0, 1)], id="nn.BCEWithLogitsLoss-posweight-broadcast"),
    Case("nn.BCELoss", lambda M: M.nn.BCELoss(weight=_w(M, [0.5, 2.0, 3.0]), reduction="sum"),
         [X((4, 3), 0.05, 0.95), Xc((4, 3), 0, 1)], id="nn.BCELoss-weight"),
    Case("nn.SmoothL1Loss", lambda M: M.nn.SmoothL1Loss(size_average=False), [X((4, 3)), Xc((4, 3))],
         id="nn.SmoothL1Loss-legacy"),

    # ---------------------------------------------------------------- divergence and regression
    Case("nn.KLDivLoss", lambda M: M.nn.KLDivLoss(reduction="batchmean"), [X((4, 5), -3, 0), X((4, 5), 0.01, 1)]),
    Case("nn.KLDivLoss", lambda M: M.nn.KLDivLoss(reduction="none", log_target=True),
         [X((4, 5), -3, 0), X((4, 5), -3, 0)], id="nn.KLDivLoss-logtarget"),
    Case(F + "kl_div", _f("kl_div"), [X((3, 4), -3, 0), Xc((3, 4), 0, 1)], kwargs=dict(reduction="sum")),
    Case("nn.HuberLoss", lambda M: M.nn.HuberLoss(delta=0.4), [X((4, 5)), X((4, 5))],
         dtypes=("float32", "float64", "float16", "bfloat16")),
    Case(F + "huber_loss", _f("huber_loss"), [X((3, 4), -2, 2), Xc((3, 4))], kwargs=dict(reduction="none")),
    Case(F + "huber_loss", _f("huber_loss"), [X((3, 4), -2, 2), Xc((3, 4)), Xc((3, 4), 0.1, 1)],
         kwargs=dict(delta=0.5), id="huber_loss-weight", call=_weight_kw),
    Case("nn.PoissonNLLLoss", lambda M: M.nn.PoissonNLLLoss(), [X((4, 5)), Xc((4, 5), 0, 3)]),
    Case("nn.PoissonNLLLoss", lambda M: M.nn.PoissonNLLLoss(log_input=False, full=True, reduction="sum"),
         [X((4, 5), 0.1, 2), Xc((4, 5), 0, 4)], id="nn.PoissonNLLLoss-full"),
    Case(F + "poisson_nll_loss", _f("poisson_nll_loss"), [X((6,)), X((6,), 0, 3)], kwargs=dict(reduction="none")),
    Case("nn.GaussianNLLLoss", lambda M: M.nn.GaussianNLLLoss(), [X((4, 3)), Xc((4, 3)), X((4, 3), 0.1, 1)]),
    Case("nn.GaussianNLLLoss", lambda M: M.nn.GaussianNLLLoss(full=True, reduction="none"),
         [X((4, 3)), X((4, 3)), X((4,), 0.1, 1)], id="nn.GaussianNLLLoss-homoscedastic"),
    Case(F + "gaussian_nll_loss", _f("gaussian_nll_loss"), [X((2, 3, 4)), Xc((2, 3, 4)), X((2, 1, 4), 0.1, 1)],
         kwargs=dict(reduction="sum")),

    # ---------------------------------------------------------------- margin and embedding losses
    Case("nn.MarginRankingLoss", lambda M: M.nn.MarginRankingLoss(margin=0.2), [X((6,)), X((6,)), _sign((6,))]),
    Case(F + "margin_ranking_loss", _f("margin_ranking_loss"), [X((6,)), X((6,)), _sign((6,))],
         kwargs=dict(reduction="none")),
    Case("nn.HingeEmbeddingLoss", lambda M: M.nn.HingeEmbeddingLoss(margin=0.5), [X((4, 5)), _sign((4, 5))]),
    Case(F + "hinge_embedding_loss", _f("hinge_embedding_loss"), [X((7,)), _sign((7,))], kwargs=dict(reduction="sum")),
    Case("nn.CosineEmbeddingLoss", lambda M: M.nn.CosineEmbeddingLoss(margin=0.1), [X((5, 6)), X((5, 6)), _sign((5,))]),
    Case(F + "cosine_embedding_loss", _f("cosine_embedding_loss"),
         [X((6,)), X((6,)), Sub(lambda M, t: t[0] * 2 - 1, I((1,), 2))], id="cosine_embedding_loss-0d"),
    Case(F + "cosine_embedding_loss", _f("cosine_embedding_loss"), [X((4, 6)), X((4, 6)), _sign((4,))],
         kwargs=dict(reduction="none")),
    Case("nn.SoftMarginLoss", lambda M: M.nn.SoftMarginLoss(), [X((4, 5), -3, 3), _sign((4, 5))]),
    Case(F + "soft_margin_loss", _f("soft_margin_loss"), [X((6,), -3, 3), _sign((6,))], kwargs=dict(reduction="none")),
    Case("nn.MultiMarginLoss", lambda M: M.nn.MultiMarginLoss(), [X((4, 5)), I((4,), 5)]),
    Case("nn.MultiMarginLoss", lambda M: M.nn.MultiMarginLoss(p=2, margin=0.7, weight=_w(M, [1.0, 0.5, 2.0, 0.1, 1.5]),
                                                            reduction="none"),
         [X((4, 5)), I((4,), 5)], id="nn.MultiMarginLoss-p2-weight"),
    Case(F + "multi_margin_loss", _f("multi_margin_loss"), [X((5,)), Sub(lambda M, t: t[0], I((1,), 5))]),
    Case("nn.MultiLabelMarginLoss", lambda M: M.nn.MultiLabelMarginLoss(),
         [X((4, 5)), Sub(lambda M, t: M.tensor(_MLM_TARGET, device=t.device), I((1,), 2))]),
    Case(F + "multilabel_margin_loss", _f("multilabel_margin_loss"),
         [X((5,)), Sub(lambda M, t: M.tensor(_MLM_TARGET[1], device=t.device), I((1,), 2))],
         kwargs=dict(reduction="none")),
    Case("nn.MultiLabelSoftMarginLoss", lambda M: M.nn.MultiLabelSoftMarginLoss(weight=_w(M, [1.0, 0.5, 2.0, 0.1, 1.5])),
         [X((4, 5)), Xc((4, 5), 0, 1)]),
    Case(F + "multilabel_soft_margin_loss", _f("multilabel_soft_margin_loss"), [X((3, 4)), Xc((3, 4), 0, 1)],
         kwargs=dict(reduction="none")),
    Case("nn.TripletMarginLoss", lambda M: M.nn.TripletMarginLoss(), [X((4, 6)), X((4, 6)), X((4, 6))]),
    Case("nn.TripletMarginLoss", lambda M: M.nn.TripletMarginLoss(margin=0.5, p=1, swap=True, reduction="none"),
         [X((4, 6)), X((4, 6)), X((4, 6))], id="nn.TripletMarginLoss-p1-swap"),
    Case(F + "triplet_margin_loss", _f("triplet_margin_loss"), [X((6,)), X((6,)), X((6,))],
         kwargs=dict(p=3, reduction="sum")),
    Case("nn.TripletMarginWithDistanceLoss", lambda M: M.nn.TripletMarginWithDistanceLoss(), [X((4, 6)), X((4, 6)),
                                                                                             X((4, 6))]),
    Case("nn.TripletMarginWithDistanceLoss",
         lambda M: M.nn.TripletMarginWithDistanceLoss(distance_function=lambda a, b: (a - b).abs().sum(-1), swap=True,
                                                      margin=2.0, reduction="sum"),
         [X((4, 6)), X((4, 6)), X((4, 6))], id="nn.TripletMarginWithDistanceLoss-l1-swap", repr=False),
    Case(F + "triplet_margin_with_distance_loss", _f("triplet_margin_with_distance_loss"),
         [X((3, 5)), X((3, 5)), X((3, 5))], kwargs=dict(reduction="none")),

    # ---------------------------------------------------------------- adaptive softmax
    Case("nn.AdaptiveLogSoftmaxWithLoss", lambda M: M.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0),
         [X((6, 8)), Sub(lambda M, t: M.tensor([0, 4, 9, 2, 7, 5], device=t.device), I((1,), 2))]),
    Case("nn.AdaptiveLogSoftmaxWithLoss", lambda M: M.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4], head_bias=True),
         [X((8,)), Sub(lambda M, t: M.tensor(7, device=t.device), I((1,), 2))],
         id="nn.AdaptiveLogSoftmaxWithLoss-unbatched"),
    Case("nn.AdaptiveLogSoftmaxWithLoss", lambda M: M.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0),
         [X((5, 8))], call=lambda m, x: (m.log_prob(x), m.predict(x)), id="nn.AdaptiveLogSoftmaxWithLoss-log_prob"),
]


def _logp(shape):
    """log-probabilities over the last dim, differentiable through the drawn logits"""
    return Sub(lambda M, t: t.log_softmax(-1), X(shape, -2, 2))


def _longs(values):
    return Sub(lambda M, t: M.tensor(values, device=t.device), I((1,), 2))


CASES += [
    # ---------------------------------------------------------------- CTC
    Case("nn.CTCLoss", lambda M: M.nn.CTCLoss(), [_logp((12, 3, 5)), I((3, 4), 5, low=1), _longs([12, 10, 9]),
                                                  _longs([4, 2, 3])]),
    Case("nn.CTCLoss", lambda M: M.nn.CTCLoss(blank=4, reduction="sum", zero_infinity=True),
         [_logp((6, 3, 5)), I((3, 5), 4), _longs([6, 3, 5]), _longs([2, 5, 0])], id="nn.CTCLoss-blank-zeroinf"),
    Case("nn.CTCLoss", lambda M: M.nn.CTCLoss(reduction="none"),
         [_logp((9, 2, 4)), Sub(lambda M, t: M.tensor([1, 1, 2, 3, 3], device=t.device), I((1,), 2)), Const((9, 7)),
          Const((3, 2))],
         id="nn.CTCLoss-concatenated"),
    Case(F + "ctc_loss", _f("ctc_loss"), [_logp((8, 6)), I((3,), 6, low=1), _longs(8), _longs(3)],
         kwargs=dict(reduction="none"), id="ctc_loss-unbatched"),
    Case(F + "ctc_loss", _f("ctc_loss"), [_logp((20, 4, 7)), I((4, 6), 7, low=1), _longs([20, 18, 5, 20]),
                                          _longs([6, 6, 5, 1])], kwargs=dict(zero_infinity=True)),
]

CASES += [
    # ---------------------------------------------------------------- pdist
    Case(F + "pdist", _f("pdist"), [X((6, 4))]),
    Case(F + "pdist", _f("pdist"), [X((5, 3))], kwargs=dict(p=1), id="pdist-p1"),
    Case(F + "pdist", _f("pdist"), [X((5, 3))], kwargs=dict(p=3.5), id="pdist-p3.5"),
    Case(F + "pdist", _f("pdist"), [X((5, 3))], kwargs=dict(p=0.5), id="pdist-p0.5"),
    Case(F + "pdist", _f("pdist"), [X((4, 3))], kwargs=dict(p=float("inf")), id="pdist-inf"),
    Case(F + "pdist", _f("pdist"), [X((4, 3))], kwargs=dict(p=0), id="pdist-p0"),
    Case(F + "pdist", _f("pdist"), [Sub(lambda M, t: t.t(), X((3, 7)))], id="pdist-noncontiguous"),
]
