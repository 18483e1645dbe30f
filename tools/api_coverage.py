"""tools/api_coverage.py: how much of torch's public API ampc has, namespace by namespace.

The goal of ampc is that a PyTorch script runs after `import ampc as torch`; this tool measures
the distance. For each namespace below it takes the public names of the installed torch (the
oracle, never a dependency of ampc), looks each up in the matching ampc namespace, and sorts the
missing ones into "not planned" (matched by a pattern of tools/api_not_planned.txt, each with its
reason) and "missing" (work to do).

    python tools/api_coverage.py                      # summary and missing names per namespace
    python tools/api_coverage.py --markdown           # the table README.md carries
    python tools/api_coverage.py --check --require torch.nn.init --require torch.optim
                                                      # exit 1 if a required namespace misses a planned name
    python tools/api_coverage.py --json               # everything, for tests and scripts

A torch name is public when it does not start with "_", is not a module, and (when the object
says where it was defined) was defined inside torch: `Optional`, `warnings`, `lru_cache` and
the like that torch modules import are not part of its API. Tensor's names are every public
attribute of the class.
"""
import argparse
import fnmatch
import importlib
import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
NOT_PLANNED_FILE = os.path.join(HERE, "api_not_planned.txt")

# (torch path, ampc path): the namespaces a training script reaches.
NAMESPACES = [
    ("torch", "ampc"),
    ("torch.Tensor", "ampc.Tensor"),
    ("torch.nn", "ampc.nn"),
    ("torch.nn.functional", "ampc.nn.functional"),
    ("torch.nn.init", "ampc.nn.init"),
    ("torch.nn.utils", "ampc.nn.utils"),
    ("torch.optim", "ampc.optim"),
    ("torch.optim.lr_scheduler", "ampc.optim.lr_scheduler"),
    ("torch.utils.data", "ampc.utils.data"),
    ("torch.autograd", "ampc.autograd"),
    ("torch.amp", "ampc.amp"),
    ("torch.cuda", "ampc.cuda"),
]


def resolve(path):
    """The object at a dotted path ("torch.Tensor", "ampc.nn.functional"), or None if it does not exist."""
    parts = path.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except ImportError:
        return None
    for i, part in enumerate(parts[1:], 1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(parts[: i + 1]))
        except ImportError:
            return None
    return obj


def defined_in_torch(obj):
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        return True  # constants, dtype objects, ...
    return module == "torch" or module.startswith("torch.")


def public_names(obj, is_class):
    names = set()
    for name in dir(obj):
        if name.startswith("_"):
            continue
        if is_class:
            names.add(name)
            continue
        try:
            value = getattr(obj, name)
        except Exception:  # noqa: BLE001  (a lazily failing attribute is still a name)
            names.add(name)
            continue
        if isinstance(value, types.ModuleType) or not defined_in_torch(value):
            continue
        names.add(name)
    return names


def load_not_planned(path=NOT_PLANNED_FILE):
    """Rows (namespace pattern, [name patterns], reason, line number) of the not-planned list.

    Format, one rule a line: `namespaces | patterns | reason`; both first fields are
    space-separated fnmatch globs ("*" for every namespace); "#" starts a comment line."""
    rules = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = [x.strip() for x in line.split("|")]
            if len(fields) != 3 or not all(fields):
                raise ValueError(f"{path}:{lineno}: expected 'namespaces | patterns | reason', got {line!r}")
            rules.append((fields[0].split(), fields[1].split(), fields[2], lineno))
    return rules


def rule_applies(rule, namespace):
    return any(fnmatch.fnmatchcase(namespace, ns) for ns in rule[0])


def not_planned_reason(rules, namespace, name):
    for rule in rules:
        if rule_applies(rule, namespace) and any(fnmatch.fnmatchcase(name, p) for p in rule[1]):
            return rule[2]
    return None


def coverage(rules=None):
    """Per namespace: torch's names, which ampc has, which are not planned (name -> reason), which are missing."""
    rules = load_not_planned() if rules is None else rules
    result = []
    for torch_path, ampc_path in NAMESPACES:
        tobj = resolve(torch_path)
        aobj = resolve(ampc_path)
        is_class = isinstance(tobj, type)
        names = public_names(tobj, is_class)
        have = sorted(n for n in names if aobj is not None and hasattr(aobj, n))
        not_planned = {}
        missing = []
        for n in sorted(names):
            if aobj is not None and hasattr(aobj, n):
                continue
            reason = not_planned_reason(rules, torch_path, n)
            if reason is None:
                missing.append(n)
            else:
                not_planned[n] = reason
        result.append({
            "namespace": torch_path,
            "ampc": ampc_path,
            "ampc_exists": aobj is not None,
            "torch_names": sorted(names),
            "have": have,
            "not_planned": not_planned,
            "missing": missing,
        })
    return result


def percent(part, whole):
    return 100.0 * part / whole if whole else 100.0


def summary_row(ns):
    total = len(ns["torch_names"])
    have = len(ns["have"])
    planned = total - len(ns["not_planned"])
    return total, have, len(ns["not_planned"]), len(ns["missing"]), percent(have, planned)


def print_text(result, show_missing):
    print(f"{'namespace':28} {'torch':>6} {'ampc':>6} {'n/p':>5} {'miss':>5} {'of planned':>10}")
    for ns in result:
        total, have, np_, miss, pct = summary_row(ns)
        print(f"{ns['namespace']:28} {total:6d} {have:6d} {np_:5d} {miss:5d} {pct:9.1f}%")
    if show_missing:
        for ns in result:
            if ns["missing"]:
                print(f"\n{ns['namespace']} missing ({len(ns['missing'])}):")
                print("  " + " ".join(ns["missing"]))


def print_markdown(result):
    print("| namespace | torch names | in ampc | not planned | missing | coverage of planned |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for ns in result:
        total, have, np_, miss, pct = summary_row(ns)
        print(f"| `{ns['namespace']}` | {total} | {have} | {np_} | {miss} | {pct:.1f}% |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="print the coverage table as Markdown (README.md)")
    ap.add_argument("--json", action="store_true", help="print every list as JSON")
    ap.add_argument("--no-missing", action="store_true", help="print only the summary")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a namespace given with --require misses a name that is not 'not planned'")
    ap.add_argument("--require", action="append", default=[], metavar="NAMESPACE",
                    help="a torch namespace (e.g. torch.nn.init) that --check requires complete; repeatable")
    args = ap.parse_args(argv)

    known = {t for t, _ in NAMESPACES}
    for r in args.require:
        if r not in known:
            ap.error(f"--require {r!r}: not one of {', '.join(sorted(known))}")
    result = coverage()
    if args.json:
        print(json.dumps(result, indent=1))
    elif args.markdown:
        print_markdown(result)
    else:
        print_text(result, not args.no_missing)
    if args.check:
        failed = [ns for ns in result if ns["namespace"] in args.require and ns["missing"]]
        for ns in failed:
            print(f"api_coverage --check: {ns['namespace']} misses {len(ns['missing'])} planned names: "
                  + " ".join(ns["missing"]), file=sys.stderr)
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
