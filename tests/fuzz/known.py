"""Known divergences from torch, each matched narrowly (op + condition) so nothing else hides
behind it. A case whose every difference one entry explains counts as "known", not as a failure.

Three groups, each entry (id, reason, match(case, kind, detail)):
- ISSUE_19: defects filed in issue 19 and being fixed now;
- FOUND: defects this fuzzer found that no issue lists yet (its first runs, 2026-12-02); they
  are reported to be filed and fixed next;
- TORCH: where torch itself is the odd one out (it refuses what it could compute, or its
  formula loses the exact answer) and ampc's answer is the exact one; kept so the decision
  to differ is written down.
The list may only shrink: when a fix lands, delete its entry, and test_fuzz proves the fix.
Never add an entry to silence a difference nobody has explained.
"""
import re



def _says(ops, kind, text):
    """The difference `kind` on one of `ops` whose detail holds `text` (an exception's message)."""
    return lambda c, k, d: c.op in ops and k == kind and text in d


def source_of(case):
    """The case's whole source (its inputs included), for entries that look at input values."""
    return "\n".join(case.lines) + "\n" + case.expr


def _min_literal(text):
    """The smallest number written in the text (inf when none)."""
    values = [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", text)]
    return min(values, default=float("inf"))


def _any(*words):
    return lambda detail: any(w in detail for w in words)


ISSUE_19 = [
    ("empty-result-bad-index", "issue 19: an out-of-range index is not reported when the result is empty",
     lambda c, k, d: k == "error_only_torch" and bool(c.flags & {"bad_index", "neg_index"})
     and "ampc_empty_result" in c.flags),
    ("cross-entropy-huge-logits", "issue 19: cross_entropy backward at |logits| ~ 6.5e4",
     lambda c, k, d: c.op == "cross_entropy" and "huge" in c.flags and k == "grad"),
    ("sdpa-nan-row", "issue 19: sdpa: an all-NaN score row gives zeros (and zero gradients), as torch's CPU flash "
     "kernel does for 4-d inputs, where torch's math path (other ranks) gives NaN",
     lambda c, k, d: c.op == "scaled_dot_product_attention" and "nonfinite" in c.flags and k in ("value", "grad")
     and "nan" in d),
]

FOUND = [
    # surfaced when the sort family's generators (issue 12) reshuffled the fixed seeds' draws
    ("setitem-check-order", "found: x[idx] = v with an out-of-range index and a value of another dtype: torch "
     "reports the dtype mismatch (RuntimeError) first, ampc the index (IndexError)",
     lambda c, k, d: c.op == "setitem" and k == "error_type" and "ampc IndexError, torch RuntimeError" in d
     and bool(c.flags & {"bad_index", "neg_index"})),
    ("cat-legacy-empty-dim", "found: cat skips legacy 1-D empty tensors before it checks dim (torch); ampc checks "
     "the dim against them",
     lambda c, k, d: c.op == "cat" and k == "error_only_ampc" and "Dimension out of range" in d
     and ".reshape(0)" in " ".join(c.lines)),
    ("getitem-several-bool-scalars", "found: a[True, i, True]: torch adds one dim for all bool scalars, ampc one each",
     lambda c, k, d: c.op == "getitem" and k in ("shape", "grad") and len(re.findall(r"\b(True|False)\b", c.expr)) > 1),
    ("hardtanh-nan-grad", "found: hardtanh backward at a NaN input differs from torch (as relu-nan-grad)",
     lambda c, k, d: c.op == "hardtanh" and "nonfinite" in c.flags and k == "grad"),
    ("norm-one-element-subnormal", "found: the 2-norm of a one-element float64 slice squares a subnormal and "
     "underflows to 0 (norm([5e-324]) is 5e-324 in torch, which returns |x| there; [1e-200, 1e-200] is 0 in both), so "
     "the gradient is masked to 0",
     lambda c, k, d: c.op == "reduce:norm" and k == "grad" and re.search(r"\de-3[0-2]\d\b", source_of(c)) is not None),
    ("norm-expanded-bf16-grad", "found: norm backward of an expanded bfloat16 input: the broadcast rows' grads sum "
     "with other rounding than torch's (a few % in bf16)",
     lambda c, k, d: c.op == "reduce:norm" and "expanded" in c.flags and "dtype_bfloat16" in c.flags and k == "grad"),
    ("std-fp16-large-grad", "found: std backward in float16 for values ~1e3: ampc's gradient loses to fp16 rounding "
     "where torch's does not",
     lambda c, k, d: c.op == "reduce:std" and "dtype_float16" in c.flags and k == "grad"),
    ("tensor-type-missing", "found: Tensor.type(dtype) is missing",
     _says(("cast",), "error_only_ampc", "no attribute 'type'")),
    ("tensor-repeat-missing", "found: Tensor.repeat is missing",
     _says(("view_ops",), "error_only_ampc", "no attribute 'repeat'")),
    ("relu-nan-grad", "found: relu backward gives a NaN input zero gradient (torch passes it, as for maximum)",
     lambda c, k, d: c.op == "unary:relu" and "nonfinite" in c.flags and k == "grad"),
    ("prod-grad", "found: prod backward divides the product by each input: NaN where the product or an input is "
     "inf, imprecise for subnormal inputs; with dtype= it computes in the input's dtype",
     lambda c, k, d: c.op == "reduce:prod" and k == "grad"
     and ("nan" in d or "dtype=" in c.expr or bool(c.flags & {"nonfinite", "subnormal", "huge"}))),
    ("max-min-all-nan-grad", "found: max()/min() over all elements backward with a NaN input gives every element NaN",
     lambda c, k, d: c.op in ("reduce:max", "reduce:min") and "nonfinite" in c.flags and k == "grad" and "nan" in d),
    ("norm-grad", "found: norm backward is NaN everywhere for a NaN input (p=inf) and inf in fp16/bf16 where the "
     "squares underflow",
     lambda c, k, d: c.op == "reduce:norm" and k == "grad" and _any("nan", "inf")(d)
     and ("nonfinite" in c.flags or bool(c.flags & {"dtype_float16", "dtype_bfloat16"}))),
    ("index-select-grad-low-precision", "found: index_select/gather backward accumulates repeated indices in "
     "fp16/bf16 (in another order than torch's)",
     lambda c, k, d: c.op in ("index_select", "gather") and k == "grad" and bool(c.flags & {"dtype_float16", "dtype_bfloat16"})),
    ("div-grad-fp16-square", "found: div backward for the divisor squares it in fp16 (0 where |b| > 256)",
     lambda c, k, d: c.op == "binary:div" and k == "grad" and "dtype_float16" in c.flags),
    ("norm-layer-low-precision-grad", "found: group_norm/batch_norm backward in fp16/bf16 amplifies rounding (a "
     "constant bf16 group: gradient 1.94 where the exact one is 0 and torch's -0.06)",
     lambda c, k, d: c.op in ("group_norm", "batch_norm") and k == "grad"
     and bool(c.flags & {"dtype_float16", "dtype_bfloat16"})),
    ("sdpa-equal-keys-cancellation", "found: sdpa with every key equal (an expanded key): the exact key gradient "
     "cancels to 0; ampc's fused backward and torch's composed one both keep rounding noise of eps * |v|, of "
     "different signs",
     lambda c, k, d: c.op == "scaled_dot_product_attention" and k == "grad" and "input 1" in d
     and ".expand(" in source_of(c)),
    ("sdpa-huge-key-cancellation", "found: sdpa with keys near 1e30: the q gradient cancels exactly, ampc keeps "
     "rounding noise of eps * |k| (1e22) where torch gets 0",
     lambda c, k, d: c.op == "scaled_dot_product_attention" and "huge" in c.flags and k == "grad"),
    ("hardtanh-unsigned", "found: hardtanh of an unsigned tensor with negative limits is accepted; torch raises",
     _says(("hardtanh",), "error_only_torch", "unsigned type with negative limits")),
    ("batch-norm-zero-channels", "found: batch_norm of 0 channels raises ZeroDivisionError (a Python-level bug)",
     lambda c, k, d: c.op == "batch_norm" and k == "error_type" and d.startswith("ampc ZeroDivisionError")),
    ("arange-error-type", "found: arange with a zero step raises RuntimeError; torch raises ValueError",
     lambda c, k, d: c.op == "creation" and "arange" in c.expr and d == "ampc RuntimeError, torch ValueError"),
    ("layer-norm-bias-grad-shape", "found: layer_norm with a bias and no weight over a multi-dim normalized_shape "
     "returns the bias gradient flattened (backward raises)",
     _says(("layer_norm",), "error_only_ampc", "invalid gradient at index 2")),
    ("linear-empty-k", "found: linear of a 3-d input with in_features 0 fails in a view",
     _says(("linear",), "error_only_ampc", "view: shape")),
    ("batch-norm-empty-batch", "found: batch_norm of an empty batch raises; torch returns the empty result",
     _says(("batch_norm",), "error_only_ampc", "Expected more than 1 value per channel")),
    ("group-norm-single-value", "found: group_norm in training of one value per group is accepted; torch raises "
     "ValueError",
     _says(("group_norm",), "error_only_torch", "Expected more than 1 value per channel")),
    ("setitem-dtype", "found: x[index_tensor] = value of another dtype converts it; torch's index_put refuses",
     _says(("setitem",), "error_only_torch", "Index put requires the source and")),
    ("arange-bool", "found: arange(dtype=bool) is accepted or raises RuntimeError; torch raises NotImplementedError",
     lambda c, k, d: c.op == "creation" and "M.bool" in c.expr and "arange" in c.expr
     and (k == "error_only_torch" or d == "ampc RuntimeError, torch NotImplementedError")),
    ("clamp-tensor-bound-grad", "found: clamp with tensor bounds gives half the gradient where x equals a bound",
     lambda c, k, d: c.op == "clamp" and "M.tensor(" in c.expr and k == "grad"),
    ("atan2-zero-grad", "found: atan2 backward is NaN/inf where a*a + b*b is 0 (both operands 0, or subnormal)",
     lambda c, k, d: c.op == "binary:atan2" and k == "grad" and _any("nan", "inf")(d)),
    ("int-matmul-float-scale", "found: addmm/baddbmm of integers with a float beta/alpha is accepted; torch refuses",
     _says(("addmm", "baddbmm"), "error_only_torch", "can't be cast to the desired")),
    ("var-std-fp16-overflow", "found: var/std backward in fp16 overflows for values near fp16's max (torch "
     "accumulates in fp32)",
     lambda c, k, d: c.op in ("reduce:var", "reduce:std") and "huge" in c.flags and "dtype_float16" in c.flags
     and k == "grad"),
    ("var-no-dof-grad", "found: var/std backward with correction >= the count has the wrong sign of inf",
     lambda c, k, d: c.op in ("reduce:var", "reduce:std") and "correction=" in c.expr and k == "grad"
     and _any("inf", "nan")(d)),
    # found when issue 12's generators changed the fixed-seed draws (they reproduce on main's build)
    ("embedding-empty-weight-error-type", "found: embedding into a weight of 0 rows raises IndexError; torch's "
     "index_select raises RuntimeError ('self indexing axis dim should be positive')",
     lambda c, k, d: c.op == "embedding" and k == "error_type" and d == "ampc IndexError, torch RuntimeError"),
    ("batch-norm-eval-zero-channels", "found: batch_norm in eval over 0 channels returns; torch raises IndexError",
     _says(("batch_norm",), "error_only_torch", "select(): index 0 out of range")),
    ("threshold-int-value-overflow", "found: threshold of an integer tensor with a value its dtype cannot hold "
     "wraps it; torch raises",
     _says(("threshold",), "error_only_torch", "without overflow")),
    ("cummin-cummax-grad-low-precision", "found: cummax/cummin backward in fp16/bf16 goes through scatter_add, "
     "which accumulates repeated indices in the 16-bit type (as index-select-grad-low-precision)",
     lambda c, k, d: c.op in ("cummax", "cummin") and k == "grad" and bool(c.flags & {"dtype_float16", "dtype_bfloat16"})),
    ("embedding-assert", "found: embedding's padding_idx check is an assert (AssertionError; gone under python -O)",
     lambda c, k, d: c.op == "embedding" and k == "error_type" and d.startswith("ampc AssertionError")),
]

TORCH = [
    ("torch-batch-norm-constant-channel", "torch: batch_norm (training) of a channel whose values are all equal: the "
     "exact input gradient is 0 (x - mean is 0, and the grad's terms cancel); torch returns its rounding noise "
     "times 1/sqrt(eps) (e.g. -0.017 in fp32), ampc the 0",
     lambda c, k, d: c.op == "batch_norm" and k == "grad" and "reshape(1, 1, 1, 1)" in source_of(c)
     and ".expand(" in source_of(c)),
    ("torch-gelu-grad-negative-tail", "torch: gelu's backward forms (1 + erf(x/sqrt2))/2 and (1 + tanh(u))/2, which "
     "lose every digit below x ~ -4 (fp32 opmath), so its grad there is 0 or noise; ampc uses erfc and sigmoid(2u) "
     "and gets the tiny exact grad (issue 14, core/elementwise_math_act_backward.h)",
     lambda c, k, d: c.op == "gelu" and k == "grad" and _min_literal(source_of(c)) <= -4.0),
    ("torch-conv-empty-spatial", "torch: conv refuses an input with a 0-size spatial dim (only zero batch or "
     "channels); ampc computes the empty or padded result",
     lambda c, k, d: c.op in ("conv1d", "conv2d") and k == "error_only_torch" and "Only zero batch or zero channel" in d),
    ("torch-mode-nan", "torch: mode sorts with `<`, which NaN breaks (the order is unspecified), so for a row "
     "holding NaN its answer is the sort's accident (NaN for distinct values); ampc: NaNs are runs of one",
     lambda c, k, d: c.op == "kthvalue" and "M.mode(" in c.expr and "nonfinite" in c.flags and k == "value"),
    ("torch-median-expanded-dim", "torch: median/nanmedian along a dim of stride 0 (an expanded input) read "
     "garbage (torch 2.13: 5.6e-322 for a row of -0.15, the contiguous copy gives -0.15); ampc the median",
     lambda c, k, d: c.op == "kthvalue" and "expanded" in c.flags and k == "value" and "median(" in c.expr),
    ("torch-isin-unviewable-test", "torch: isin flattens test_elements with .view(-1), which fails for an "
     "expanded or strided tensor that no view flattens; ampc reshapes",
     lambda c, k, d: c.op == "searchsorted" and "M.isin(" in c.expr and bool(c.flags & {"expanded", "sliced", "permuted"})
     and k == "error_only_torch" and "view size is not compatible" in d),
    ("torch-conv-zero-channels", "torch: conv with 0 input channels returns 0 output channels; ampc returns "
     "(N, out_channels, L) of zeros, the sum over an empty set",
     lambda c, k, d: c.op in ("conv1d", "conv2d") and "zero_channels" in c.flags and k in ("shape", "value", "grad")),
    ("torch-cast-nonfinite-to-int", "torch: casting inf/NaN/out-of-range floats to an integer is undefined in C; "
     "torch returns x86's INT_MIN, ampc 0 (decide whether to copy torch)",
     lambda c, k, d: c.op in ("cast", "copy_") and k == "value" and bool(c.flags & {"nonfinite", "huge"})
     and bool(c.flags & {"to_int32", "to_int64", "to_uint8"})),
    ("torch-layer-norm-one-element", "torch: layer_norm over one element: the exact normalised value is 0, ampc "
     "gets 0 and torch rounding noise (~|x| * eps * rstd) in the weight's gradient",
     lambda c, k, d: c.op == "layer_norm" and k == "grad" and re.search(r", \((1, )+\), ", c.expr) is not None),
    ("torch-remainder-no-divisor-grad", "torch: remainder has no derivative for a tensor divisor",
     lambda c, k, d: c.op == "binary:remainder" and k == "error_only_torch"
     and "derivative for aten::remainder is not implemented" in d),
    ("torch-pow-bool-grad", "torch: pow backward with a bool exponent fails (it subtracts 1 from a bool)",
     _says(("binary:pow",), "error_only_torch", "with a bool tensor is not supported")),
    ("torch-remainder-subnormal", "torch: remainder by a subnormal divisor computes a - b * floor(a / b) = NaN; ampc "
     "gives the exact +-0",
     lambda c, k, d: c.op == "binary:remainder" and "subnormal" in c.flags and k == "value" and "nan" in d),
    ("torch-fmod-overflowing-quotient", "torch: fmod is NaN on its vectorized path where a / b overflows (a "
     "subnormal divisor, a huge dividend); ampc gives C's exact fmod",
     lambda c, k, d: c.op == "binary:fmod" and bool(c.flags & {"subnormal", "huge"}) and k == "value" and "nan" in d),
    ("torch-logit-grad-code-path", "torch: logit backward at x = -0.0 and at NaN depends on its code path "
     "(vectorized: g / (x (1 - x)), -inf at -0.0, and a NaN x outside [eps, 1 - eps] gives 0, as ampc; the scalar "
     "tail of short tensors: g * inf at -0.0, NaN at a NaN x)",
     lambda c, k, d: c.op == "logit" and k == "grad" and _any("inf", "nan")(d)
     and ("nonfinite" in c.flags or "-0.0" in source_of(c))),
    ("torch-sinc-grad-cancellation", "torch: sinc backward near 0 in float32/16-bit cancels in pi x cos(pi x) - "
     "sin(pi x); 1-ulp differences between torch's SLEEF sin/cos and libm grow to ~1e-3 there, and neither side is "
     "closer to the exact value",
     lambda c, k, d: c.op == "unary:sinc" and k == "grad" and "value" in d and "dtype_float64" not in c.flags),
    ("torch-adaptive-pool-empty-backward", "torch: adaptive_avg_pool2d backward refuses an empty channel dimension",
     lambda c, k, d: c.op == "adaptive_avg_pool2d" and k == "error_only_torch"
     and "Expected grad_output to have non-zero size" in d),
    ("torch-index-error-type-by-path", "torch: the error type of an out-of-range index depends on its code path "
     "(index_select: IndexError for dim 0, RuntimeError for other dims; index_add: IndexError for 1-d or alpha != 1); "
     "ampc raises one type per op (core/index_bounds.h)",
     lambda c, k, d: c.op in ("index_select", "index_add") and k == "error_type"
     and d in ("ampc RuntimeError, torch IndexError", "ampc IndexError, torch RuntimeError")),
    ("torch-fill-one-element-half", "torch: fill_ of a one-element tensor skips the overflow check for fp16/bf16 "
     "(rounds to inf) while every larger fill raises; ampc checks every fill",
     lambda c, k, d: c.op in ("fill_", "creation", "masked_fill", "setitem") and k == "error_only_ampc"
     and "without overflow" in d and ("c10::Half" in d or "c10::BFloat16" in d)),
]

KNOWN = ISSUE_19 + FOUND + TORCH


def classify(case, diffs, got=None):
    """The id of the known divergence that explains every difference of the case, or None.
    got: ampc's outcome (an empty result is a condition some entries match on)."""
    if got is not None and got[0] == "ok" and got[1] and all(r[2].size == 0 for r in got[1] if r[0] != "py"):
        case.flags.add("ampc_empty_result")
    for ident, reason, match in KNOWN:
        if all(match(case, kind, detail) for kind, detail in diffs):
            return ident
    return None
