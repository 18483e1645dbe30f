"""Parity cases of the attention family (issue 13, attn): scaled_dot_product_attention's options,
MultiheadAttention's, and the Transformer stack (encoder/decoder layers, stacks, the full model)."""
from nn_parity.spec import Bool, Case, Const, X, Xc

F = "nn.functional."


def _sdpa(M):
    return M.nn.functional.scaled_dot_product_attention


def _mha(**kw):
    return lambda M: M.nn.MultiheadAttention(8, 2, **kw)


CASES = [
    # ---------------------------------------------------------------- scaled_dot_product_attention
    Case(F + "scaled_dot_product_attention", _sdpa, [X((2, 2, 70, 8)), X((2, 2, 150, 8)), X((2, 2, 150, 4))],
         kwargs=dict(is_causal=True), id="attn-sdpa-causal-tiles"),
    Case(F + "scaled_dot_product_attention", _sdpa, [X((1, 4, 9, 8)), X((1, 2, 11, 8)), X((1, 2, 11, 8))],
         kwargs=dict(enable_gqa=True, scale=0.2), id="attn-sdpa-gqa"),
    Case(F + "scaled_dot_product_attention", _sdpa,
         [X((2, 3, 9, 8)), X((2, 3, 11, 8)), X((2, 3, 11, 8)), Xc((2, 1, 9, 11), -2, 2)], id="attn-sdpa-float-mask"),
    Case(F + "scaled_dot_product_attention", _sdpa, [X((9, 8)), X((11, 8)), X((11, 6)), Bool((9, 11), 0.7)],
         id="attn-sdpa-unbatched-bool-mask"),
    # ---------------------------------------------------------------- MultiheadAttention
    Case("nn.MultiheadAttention", _mha(kdim=5, vdim=3), [X((5, 2, 8)), X((6, 2, 5)), X((6, 2, 3))],
         id="attn-mha-kdim-vdim"),
    Case("nn.MultiheadAttention", _mha(add_bias_kv=True, add_zero_attn=True, bias=False),
         [X((5, 2, 8)), X((6, 2, 8)), X((6, 2, 8))], id="attn-mha-bias-kv-zero-attn"),
    Case("nn.MultiheadAttention", _mha(batch_first=True), [X((2, 5, 8)), X((2, 6, 8)), X((2, 6, 8)),
                                                         Bool((2, 6), 0.8)],
         call=lambda m, q, k, v, kpm: m(q, k, v, key_padding_mask=kpm.logical_not(), average_attn_weights=False),
         id="attn-mha-batch-first-padding"),
    Case("nn.MultiheadAttention", _mha(), [X((5, 2, 8)), X((5, 2, 8)), X((5, 2, 8)), Bool((5, 5), 0.3)],
         call=lambda m, q, k, v, mask: m(q, k, v, need_weights=False, attn_mask=mask.triu(1))[0],
         id="attn-mha-bool-mask-no-weights"),
    Case("nn.MultiheadAttention", _mha(), [X((5, 8)), X((6, 8)), X((6, 8))], id="attn-mha-unbatched"),
    # ---------------------------------------------------------------- Transformer stack
    Case("nn.TransformerEncoderLayer", lambda M: M.nn.TransformerEncoderLayer(8, 2, 16, 0.0, activation="gelu",
                                                                              norm_first=True, batch_first=True),
         [X((2, 5, 8))], id="attn-encoder-layer-gelu-norm-first"),
    Case("nn.TransformerDecoderLayer", lambda M: M.nn.TransformerDecoderLayer(8, 2, 16, 0.0),
         [X((5, 2, 8)), X((6, 2, 8))]),
    Case("nn.TransformerDecoderLayer", lambda M: M.nn.TransformerDecoderLayer(8, 2, 16, 0.0, activation="gelu",
                                                                              norm_first=True, batch_first=True,
                                                                              bias=False),
         [X((2, 5, 8)), X((2, 6, 8)), Bool((2, 6), 0.8)],
         call=lambda m, t, mem, kpm: m(t, mem, memory_key_padding_mask=kpm.logical_not(), tgt_is_causal=False),
         id="attn-decoder-layer-norm-first-nobias"),
    Case("nn.TransformerDecoder",
         lambda M: M.nn.TransformerDecoder(M.nn.TransformerDecoderLayer(8, 2, 16, 0.0), 2, norm=M.nn.LayerNorm(8)),
         [X((5, 2, 8)), X((6, 2, 8))]),
    Case("nn.Transformer", lambda M: M.nn.Transformer(8, 2, 2, 2, 16, 0.0), [X((6, 2, 8)), X((5, 2, 8))]),
    Case("nn.Transformer", lambda M: M.nn.Transformer(8, 2, 1, 1, 16, 0.0, batch_first=True, norm_first=True),
         [X((2, 6, 8)), X((2, 5, 8))],
         call=lambda m, s, t: m(s, t, tgt_mask=m.generate_square_subsequent_mask(5), tgt_is_causal=True),
         id="attn-transformer-causal-batch-first"),
]
