"""Counting fuzz records and printing them: per op, per outcome, and one reproducer per failure class.

A failure class is (op, kind of difference, the difference's wording with numbers masked), so
the thousand cases of one defect show as one line with a count and the first case's reproducer.
"""
import collections
import re

from cases import make_case, reproducer


def failure_class(rec):
    kind, detail = rec["diffs"][0]
    if kind in ("value", "grad", "dtype", "grad_dtype", "shape"):
        detail = re.sub(r"\(max rel err [^)]*\)", "", detail)
    detail = re.sub(r"\d+(\.\d+)?(e-?\d+)?", "N", detail)[:90]
    return (rec["op"], kind, detail)


def failures(records):
    """{failure class: [records]} of the records that are neither passes nor known divergences."""
    out = collections.OrderedDict()
    for rec in records:
        if rec["status"] in ("fail", "crash", "hang"):
            out.setdefault(failure_class(rec), []).append(rec)
    return out


def describe(cls, recs, ops=None):
    first = recs[0]
    head = "%d x %s / %s: %s\n  first: seed=%d index=%d; all diffs: %s" % (
        len(recs), cls[0], cls[1], cls[2], first["seed"], first["index"], first["diffs"])
    if first["op"] == "?":
        return head
    return head + "\n" + "\n".join("    " + line for line in reproducer(make_case(first["seed"], first["index"], ops)).split("\n"))


def summary(records, ops=None, reproducers=True):
    per_op = collections.defaultdict(collections.Counter)
    for rec in records:
        per_op[rec["op"]][rec["status"]] += 1
    statuses = ["pass", "known", "fail", "crash", "hang"]
    lines = ["%-34s %7s " % ("op", "cases") + " ".join("%6s" % s for s in statuses)]
    total = collections.Counter()
    for name in sorted(per_op):
        c = per_op[name]
        total.update(c)
        lines.append("%-34s %7d " % (name, sum(c.values())) + " ".join("%6d" % c[s] for s in statuses))
    lines.append("%-34s %7d " % ("TOTAL", sum(total.values())) + " ".join("%6d" % total[s] for s in statuses))
    known = collections.Counter(rec["known"] for rec in records if rec["known"])
    if known:
        lines.append("\nknown divergences (tests/fuzz/known.py):")
        lines += ["  %6d  %s" % (n, k) for k, n in known.most_common()]
    fails = failures(records)
    if fails:
        lines.append("\nfailure classes (%d):" % len(fails))
        for cls, recs in sorted(fails.items(), key=lambda kv: -len(kv[1])):
            lines.append(describe(cls, recs, ops) if reproducers else "%6d x %s / %s: %s  [--show %d:%d]" % (
                (len(recs),) + cls + (recs[0]["seed"], recs[0]["index"])))
    return "\n".join(lines)
