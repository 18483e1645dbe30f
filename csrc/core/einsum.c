/* einsum.c: ampc_einsum, Einstein summation by views and batched GEMMs, no kernels of its own.
 *
 * Each operand becomes a "term": a tensor whose every dim carries one label (a letter, or one of
 * the dims an ellipsis stands for). A label repeated within an operand is its diagonal, a view
 * (as_strided with the summed strides); a size-1 dim broadcasts against the same label elsewhere
 * (expand, stride 0). Terms are then contracted left to right: labels a term alone carries and
 * nobody needs later are summed first (a GEMM against a vector of ones), the rest become one
 * batched matmul: (batch labels, free labels of the left term, contracted labels) @ (batch,
 * contracted, free labels of the right term), so "bhqd,bhkd->bhqk" is a bmm reading the second
 * operand transposed in place. The result is finally permuted into the output's label order. */
#include <string.h>

#include "autocast.h"
#include "ops.h"

#define N_LETTERS 52
#define MAX_LABELS (N_LETTERS + AMPC_MAX_DIMS) /* letters, then the dims of the ellipsis */

typedef struct term {
    ampc_tensor *t; /* owned */
    int n;          /* == t->ndim */
    int labels[AMPC_MAX_DIMS];
} term;

static int letter_label(char ch) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return 26 + (ch - 'a');
    return -1;
}

static char label_char(int l) { return l < 26 ? (char)('A' + l) : l < N_LETTERS ? (char)('a' + l - 26) : '.'; }

/* Sets a RuntimeError and evaluates to NULL. */
#define FAIL(...) (ampc_set_error(AMPC_E_RUNTIME, __VA_ARGS__), (ampc_tensor *)NULL)

/* One operand's subscripts: letter labels and where an ellipsis sits (-1: none). */
typedef struct subscripts {
    int n;              /* letters */
    int letters[64];
    int ellipsis_at;    /* index into letters before which the ellipsis goes */
} subscripts;

/* Parses "ij" / "...ij" / "i...j" of operand `op` (or the output when op < 0) from s[0..len). */
static ampc_status parse_subscripts(const char *eq, int start, int len, int op, subscripts *out) {
    out->n = 0;
    out->ellipsis_at = -1;
    for (int i = start; i < start + len; i++) {
        char ch = eq[i];
        if (ch == ' ') continue;
        if (ch == '.') {
            if (out->ellipsis_at >= 0)
                return op >= 0 ? ampc_set_error(AMPC_E_RUNTIME,
                                                "einsum(): found '.' for operand %d for which an ellipsis was "
                                                "already found", op)
                               : ampc_set_error(AMPC_E_RUNTIME, "einsum(): found '.' for output but an ellipsis "
                                                                "(...) was already found");
            if (i + 2 >= start + len || eq[i + 1] != '.' || eq[i + 2] != '.')
                return op >= 0 ? ampc_set_error(AMPC_E_RUNTIME,
                                                "einsum(): found '.' for operand %d that is not part of any ellipsis",
                                                op)
                               : ampc_set_error(AMPC_E_RUNTIME,
                                                "einsum(): found '.' for output that is not part of any ellipsis (...)");
            out->ellipsis_at = out->n;
            i += 2;
            continue;
        }
        int l = letter_label(ch);
        if (l < 0)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "einsum(): invalid subscript given at index %d in the equation string, subscripts "
                                  "must be in [a-zA-Z]",
                                  i);
        if (out->n >= 64) return ampc_set_error(AMPC_E_RUNTIME, "einsum(): too many subscripts");
        out->letters[out->n++] = l;
    }
    return AMPC_OK;
}

/* The term of an operand: its dims labelled, repeated labels turned into their diagonal. */
static ampc_status make_term(const ampc_tensor *t, const subscripts *s, int op, int n_ellipsis, term *out) {
    out->t = NULL;
    int ell = s->ellipsis_at >= 0 ? t->ndim - s->n : 0;
    if (s->ellipsis_at < 0 && s->n != t->ndim)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "einsum(): the number of subscripts in the equation (%d) does not match the number of "
                              "dimensions (%d) for operand %d and no ellipsis was given",
                              s->n, t->ndim, op);
    if (ell < 0)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "einsum(): the number of subscripts in the equation (%d) is more than the number of "
                              "dimensions (%d) for operand %d",
                              s->n, t->ndim, op);
    int dim_labels[AMPC_MAX_DIMS], d = 0;
    for (int i = 0; i <= s->n; i++) {
        if (i == s->ellipsis_at) /* right-aligned: the last ellipsis dims of every operand line up */
            for (int e = 0; e < ell; e++) dim_labels[d++] = N_LETTERS + n_ellipsis - ell + e;
        if (i < s->n) dim_labels[d++] = s->letters[i];
    }
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++) {
        int j = 0;
        while (j < n && out->labels[j] != dim_labels[i]) j++;
        if (j < n) { /* repeated: walk the diagonal */
            if (shape[j] != t->shape[i])
                return ampc_set_error(AMPC_E_RUNTIME,
                                      "einsum(): subscript %c is repeated for operand %d but the sizes don't match, "
                                      "%lld != %lld",
                                      label_char(dim_labels[i]), op, (long long)t->shape[i], (long long)shape[j]);
            strides[j] += t->strides[i];
        } else {
            out->labels[n] = dim_labels[i];
            shape[n] = t->shape[i];
            strides[n] = t->strides[i];
            n++;
        }
    }
    out->n = n;
    out->t = n == t->ndim ? ampc_alias(t) : ampc_as_strided(t, n, shape, strides, t->offset);
    return out->t ? AMPC_OK : ampc_last_status();
}

static int find(const term *x, int label) {
    for (int i = 0; i < x->n; i++)
        if (x->labels[i] == label) return i;
    return -1;
}

/* Replaces x's tensor by `t` (stealing it) with labels `labels`; NULL t keeps the error. */
static ampc_status replace(term *x, ampc_tensor *t, int n, const int *labels) {
    ampc_tensor_decref(x->t);
    x->t = t;
    x->n = n;
    memmove(x->labels, labels, sizeof(int) * (size_t)n);
    return t ? AMPC_OK : ampc_last_status();
}

/* x's dims reordered as `order` (labels x carries), then grouped: dims [0, g0) stay, and each
 * following group of sizes[i] dims merges into one. Copies only when the merge needs it. */
static ampc_tensor *permute_group(const term *x, int n, const int *order, int n_keep, int n_groups, const int *group_len) {
    int64_t perm[AMPC_MAX_DIMS], shape[AMPC_MAX_DIMS];
    for (int i = 0; i < n; i++) perm[i] = find(x, order[i]);
    ampc_tensor *p = ampc_permute(x->t, n, perm);
    if (!p) return NULL;
    int nd = 0, pos = 0;
    for (; pos < n_keep; pos++) shape[nd++] = p->shape[pos];
    for (int g = 0; g < n_groups; g++) {
        int64_t s = 1;
        for (int i = 0; i < group_len[g]; i++) s *= p->shape[pos++];
        shape[nd++] = s;
    }
    ampc_tensor *r = ampc_reshape(p, nd, shape);
    ampc_tensor_decref(p);
    return r;
}

/* Sums x over every label not in `keep` (a bit mask of labels). */
static ampc_status sum_labels(term *x, uint64_t keep) {
    int order[AMPC_MAX_DIMS], n_kept = 0, n_sum = 0;
    int64_t kept_shape[AMPC_MAX_DIMS];
    for (int i = 0; i < x->n; i++)
        if (keep >> x->labels[i] & 1) kept_shape[n_kept] = x->t->shape[i], order[n_kept++] = x->labels[i];
    if (n_kept == x->n) return AMPC_OK;
    for (int i = 0; i < x->n; i++)
        if (!(keep >> x->labels[i] & 1)) order[n_kept + n_sum++] = x->labels[i];
    /* (kept..., summed...) -> (P, S) @ ones(S) -> (P) -> kept shape */
    int groups[2] = {n_kept, n_sum};
    ampc_tensor *ps = permute_group(x, x->n, order, 0, 2, groups);
    if (!ps) return ampc_last_status();
    ampc_tensor *ones = ampc_full(1, &ps->shape[1], ampc_scalar_int(1), ps->dtype, ps->device);
    ampc_tensor *p = ones ? ampc_mv(ps, ones) : NULL;
    ampc_tensor *r = p ? ampc_reshape(p, n_kept, kept_shape) : NULL;
    ampc_tensor_decref(ps);
    ampc_tensor_decref(ones);
    ampc_tensor_decref(p);
    return replace(x, r, n_kept, order);
}

/* x := x contracted with y, keeping the labels in `keep` (both terms already summed over what
 * only they carry and nobody keeps). Result labels: batch, x's free, y's free. */
static ampc_status contract(term *x, const term *y, uint64_t keep) {
    int batch[AMPC_MAX_DIMS], xf[AMPC_MAX_DIMS], yf[AMPC_MAX_DIMS], con[AMPC_MAX_DIMS];
    int nb = 0, nxf = 0, nyf = 0, nc = 0;
    for (int i = 0; i < x->n; i++) {
        int l = x->labels[i];
        if (find(y, l) < 0) xf[nxf++] = l;
        else if (keep >> l & 1) batch[nb++] = l;
        else con[nc++] = l;
    }
    for (int i = 0; i < y->n; i++)
        if (find(x, y->labels[i]) < 0) yf[nyf++] = y->labels[i];
    if (nb + 2 > AMPC_MAX_DIMS || nb + nxf + nyf > AMPC_MAX_DIMS)
        return ampc_set_error(AMPC_E_VALUE, "einsum(): the contraction needs more than %d dims", AMPC_MAX_DIMS);
    int xorder[AMPC_MAX_DIMS], yorder[AMPC_MAX_DIMS], out[AMPC_MAX_DIMS];
    memcpy(xorder, batch, sizeof(int) * (size_t)nb);
    memcpy(xorder + nb, xf, sizeof(int) * (size_t)nxf);
    memcpy(xorder + nb + nxf, con, sizeof(int) * (size_t)nc);
    memcpy(yorder, batch, sizeof(int) * (size_t)nb);
    memcpy(yorder + nb, con, sizeof(int) * (size_t)nc);
    memcpy(yorder + nb + nc, yf, sizeof(int) * (size_t)nyf);
    int xg[2] = {nxf, nc}, yg[2] = {nc, nyf};
    ampc_tensor *a = permute_group(x, x->n, xorder, nb, 2, xg); /* (batch..., N, K) */
    ampc_tensor *b = a ? permute_group(y, y->n, yorder, nb, 2, yg) : NULL; /* (batch..., K, M) */
    ampc_tensor *c = b ? ampc_matmul(a, b) : NULL;                          /* (batch..., N, M) */
    int64_t shape[AMPC_MAX_DIMS];
    int nd = 0;
    if (c) {
        for (int i = 0; i < nb; i++) shape[nd++] = c->shape[i];
        for (int i = 0; i < nxf; i++) shape[nd++] = x->t->shape[find(x, xf[i])];
        for (int i = 0; i < nyf; i++) shape[nd++] = y->t->shape[find(y, yf[i])];
    }
    ampc_tensor *r = c ? ampc_reshape(c, nd, shape) : NULL;
    ampc_tensor_decref(a);
    ampc_tensor_decref(b);
    ampc_tensor_decref(c);
    memcpy(out, batch, sizeof(int) * (size_t)nb);
    memcpy(out + nb, xf, sizeof(int) * (size_t)nxf);
    memcpy(out + nb + nxf, yf, sizeof(int) * (size_t)nyf);
    return replace(x, r, nd, out);
}

ampc_tensor *ampc_einsum(const char *equation, int n_ops, const ampc_tensor *const *ops) {
    if (n_ops >= 1 && n_ops <= 8) { /* autocast: rerun on the cast operands */
        ampc_autocast_scope ac;
        int acr = ampc_autocast_enter(AMPC_OP_EINSUM, n_ops, ops, false, &ac);
        if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_einsum(equation, n_ops, (const ampc_tensor *const *)ac.t));
    }
    if (n_ops < 1) return FAIL("einsum(): must provide at least one operand");
    if (n_ops > 8) return FAIL("einsum(): at most 8 operands are supported, got %d", n_ops);
    for (int i = 1; i < n_ops; i++) {
        if (!ampc_device_eq(ops[i]->device, ops[0]->device))
            return FAIL("einsum(): Expected all tensors to be on the same device, but operand %d is on another "
                        "device than operand 0", i);
        if (ops[i]->dtype != ops[0]->dtype)
            return FAIL("einsum(): expected all operands to have the same dtype, but got %s and %s",
                        ampc_dtype_name(ops[0]->dtype), ampc_dtype_name(ops[i]->dtype));
    }
    /* ---- parse: operands' subscripts, then the output's */
    int len = (int)strlen(equation);
    const char *arrow = strstr(equation, "->");
    int lhs_len = arrow ? (int)(arrow - equation) : len;
    subscripts subs[8], out_subs;
    int n_found = 0, start = 0;
    for (int i = 0; i <= lhs_len; i++) {
        if (i < lhs_len && equation[i] != ',') continue;
        if (n_found == n_ops) return FAIL("einsum(): fewer operands were provided than specified in the equation");
        if (parse_subscripts(equation, start, i - start, n_found, &subs[n_found]) != AMPC_OK) return NULL;
        n_found++;
        start = i + 1;
    }
    if (n_found < n_ops) return FAIL("einsum(): more operands were provided than specified in the equation");
    int n_ellipsis = 0;
    for (int i = 0; i < n_ops; i++)
        if (subs[i].ellipsis_at >= 0 && ops[i]->ndim - subs[i].n > n_ellipsis) n_ellipsis = ops[i]->ndim - subs[i].n;

    /* ---- terms, and the size of every label (broadcasting size 1) */
    term terms[8];
    memset(terms, 0, sizeof terms);
    int64_t size[MAX_LABELS];
    for (int l = 0; l < MAX_LABELS; l++) size[l] = -1;
    uint64_t seen = 0, counted = 0, seen_twice = 0;
    ampc_tensor *result = NULL;
    for (int i = 0; i < n_ops; i++) {
        if (make_term(ops[i], &subs[i], i, n_ellipsis, &terms[i]) != AMPC_OK) goto done;
        for (int d = 0; d < terms[i].n; d++) {
            int l = terms[i].labels[d];
            int64_t s = terms[i].t->shape[d];
            if (size[l] == -1 || size[l] == 1) size[l] = s;
            else if (s != 1 && s != size[l]) {
                ampc_set_error(AMPC_E_RUNTIME,
                               "einsum(): subscript %c has size %lld for operand %d which does not broadcast with "
                               "previously seen size %lld",
                               label_char(l), (long long)s, i, (long long)size[l]);
                goto done;
            }
            seen |= 1ull << l;
        }
        for (int j = 0; j < subs[i].n; j++) { /* counted in the equation: "ii" has i twice */
            int l = subs[i].letters[j];
            if (counted >> l & 1) seen_twice |= 1ull << l;
            counted |= 1ull << l;
        }
    }
    int out_labels[MAX_LABELS], n_out = 0;
    uint64_t out_mask = 0;
    if (arrow) {
        if (parse_subscripts(equation, lhs_len + 2, len - lhs_len - 2, -1, &out_subs) != AMPC_OK) goto done;
        for (int i = 0; i <= out_subs.n; i++) {
            if (i == out_subs.ellipsis_at)
                for (int e = 0; e < n_ellipsis; e++) out_labels[n_out++] = N_LETTERS + e;
            if (i == out_subs.n) break;
            int l = out_subs.letters[i];
            if (out_mask >> l & 1) {
                ampc_set_error(AMPC_E_RUNTIME, "einsum(): output subscript %c appears more than once in the output",
                               label_char(l));
                goto done;
            }
            if (!(seen >> l & 1)) {
                ampc_set_error(AMPC_E_RUNTIME,
                               "einsum(): output subscript %c does not appear in the equation for any input operand",
                               label_char(l));
                goto done;
            }
            out_labels[n_out++] = l;
            out_mask |= 1ull << l;
        }
        for (int i = 0; i < n_out; i++) out_mask |= 1ull << out_labels[i];
    } else { /* implicit output: the ellipsis dims, then labels seen once, alphabetically */
        for (int e = 0; e < n_ellipsis; e++) out_labels[n_out++] = N_LETTERS + e;
        for (int l = 0; l < N_LETTERS; l++)
            if ((seen >> l & 1) && !(seen_twice >> l & 1)) out_labels[n_out++] = l;
        for (int i = 0; i < n_out; i++) out_mask |= 1ull << out_labels[i];
    }
    if (n_out > AMPC_MAX_DIMS) {
        ampc_set_error(AMPC_E_VALUE, "einsum(): the output has more than %d dims", AMPC_MAX_DIMS);
        goto done;
    }
    for (int i = 0; i < n_ops; i++) { /* broadcast size-1 dims to their label's size */
        int64_t shape[AMPC_MAX_DIMS];
        for (int d = 0; d < terms[i].n; d++) shape[d] = size[terms[i].labels[d]];
        if (replace(&terms[i], ampc_expand(terms[i].t, terms[i].n, shape), terms[i].n, terms[i].labels) != AMPC_OK)
            goto done;
    }

    /* ---- contract left to right, summing early what no later term or the output needs */
    term *acc = &terms[0];
    for (int i = 1; i <= n_ops; i++) {
        uint64_t later = out_mask;
        for (int j = i + 1; j < n_ops; j++)
            for (int d = 0; d < terms[j].n; d++) later |= 1ull << terms[j].labels[d];
        if (i == n_ops) {
            if (sum_labels(acc, later) != AMPC_OK) goto done;
            break;
        }
        uint64_t in_acc = 0, in_next = 0;
        for (int d = 0; d < acc->n; d++) in_acc |= 1ull << acc->labels[d];
        for (int d = 0; d < terms[i].n; d++) in_next |= 1ull << terms[i].labels[d];
        if (sum_labels(acc, later | in_next) != AMPC_OK || sum_labels(&terms[i], later | in_acc) != AMPC_OK ||
            contract(acc, &terms[i], later) != AMPC_OK)
            goto done;
    }
    /* ---- into the output's order */
    int64_t perm[AMPC_MAX_DIMS];
    for (int i = 0; i < n_out; i++) perm[i] = find(acc, out_labels[i]);
    result = ampc_permute(acc->t, n_out, perm);
done:
    for (int i = 0; i < n_ops; i++) ampc_tensor_decref(terms[i].t);
    return result;
}
