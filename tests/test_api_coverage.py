"""tests/test_api_coverage.py: tools/api_coverage.py runs, its counts add up, and its not-planned list is honest.

Coverage itself is not required to be 100% here (ops are being added); what is checked is that
the tool's numbers can be trusted and that tools/api_not_planned.txt only excuses names torch
really has and ampc really lacks.
"""
import fnmatch
import json
import os
import subprocess
import sys

import pytest

import ampc

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import api_coverage  # noqa: E402

# Names every training script reaches: no not-planned rule may ever cover them.
CORE = {
    "torch": ["tensor", "zeros", "add", "matmul", "cat", "stack", "sum", "mean", "softmax", "reshape",
              "quantile", "index_copy", "sort", "is_complex", "int32", "float16", "bfloat16", "compile",
              "manual_seed", "where", "no_grad", "save", "load"],
    "torch.Tensor": ["backward", "view", "to", "cuda", "item", "numpy", "index_copy", "is_complex",
                     "is_sparse", "is_quantized", "type", "storage_offset", "data_ptr"],
    "torch.nn.functional": ["linear", "relu", "cross_entropy", "scaled_dot_product_attention"],
}


@pytest.fixture(scope="module")
def result():
    """The tool's report from a fresh process, as README.md's table is made: in this process other
    tests may have imported torch submodules that add names to torch's namespaces."""
    js = run_tool("--json")
    assert js.returncode == 0, js.stderr
    return json.loads(js.stdout)


def test_every_namespace_is_reported_and_counts_add_up(result):
    assert [ns["namespace"] for ns in result] == [t for t, _ in api_coverage.NAMESPACES]
    for ns in result:
        names = set(ns["torch_names"])
        have, np_, missing = set(ns["have"]), set(ns["not_planned"]), set(ns["missing"])
        assert len(names) > 0, ns["namespace"]
        assert have | np_ | missing == names
        assert not (have & np_) and not (have & missing) and not (np_ & missing)
        ampc_ns = api_coverage.resolve(ns["ampc"])
        for n in have:
            assert hasattr(ampc_ns, n), (ns["namespace"], n)
        for n in missing | np_:
            assert ampc_ns is None or not hasattr(ampc_ns, n), (ns["namespace"], n)


def test_torch_names_exist_and_are_public(result):
    for ns in result:
        obj = api_coverage.resolve(ns["namespace"])
        for n in ns["torch_names"]:
            assert not n.startswith("_") and hasattr(obj, n), (ns["namespace"], n)


def test_imported_helpers_are_not_counted(result):
    by_ns = {ns["namespace"]: set(ns["torch_names"]) for ns in result}
    assert "Optional" not in by_ns["torch.nn.functional"]
    assert "nn" not in by_ns["torch"]  # a module, not a function
    assert "matmul" in by_ns["torch"] and "relu" in by_ns["torch.nn.functional"]


def test_every_not_planned_pattern_matches_a_torch_name(result):
    rules = api_coverage.load_not_planned()
    assert 0 < len(rules) < 40, "keep the not-planned list short: patterns, not names"
    names = {ns["namespace"]: ns["torch_names"] for ns in result}
    for namespaces, patterns, reason, lineno in rules:
        assert len(reason) > 20, f"line {lineno}: give a reason"
        applies = [n for n in names if any(fnmatch.fnmatchcase(n, g) for g in namespaces)]
        assert applies, f"line {lineno}: namespaces {namespaces} match none of the tool's"
        for p in patterns:
            assert any(fnmatch.fnmatchcase(x, p) for ns in applies for x in names[ns]), \
                f"api_not_planned.txt line {lineno}: {p!r} matches no torch name in {applies}"


def test_no_rule_excuses_a_name_ampc_has_or_a_core_name(result):
    rules = api_coverage.load_not_planned()
    for ns in result:
        for n in ns["have"]:
            assert api_coverage.not_planned_reason(rules, ns["namespace"], n) is None, \
                f"{ns['namespace']}.{n} is in ampc but a not-planned rule matches it"
    for namespace, core in CORE.items():
        for n in core:
            assert api_coverage.not_planned_reason(rules, namespace, n) is None, (namespace, n)


def run_tool(*args):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ampc.__file__)))
    return subprocess.run([sys.executable, os.path.join(ROOT, "tools", "api_coverage.py"), *args],
                          capture_output=True, text=True, env=env, timeout=300)


def test_in_process_report_agrees(result):
    """coverage() in this process sorts every name the fresh process found the same way."""
    here = {ns["namespace"]: ns for ns in api_coverage.coverage()}
    for ns in result:
        mine = here[ns["namespace"]]
        assert set(ns["torch_names"]) <= set(mine["torch_names"])
        assert set(ns["have"]) <= set(mine["have"]) and set(ns["not_planned"]) <= set(mine["not_planned"])


def test_cli_markdown_and_check(result, capsys):
    """The options in this process (the fresh-process run is the fixture's --json)."""
    assert api_coverage.main(["--markdown"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("| namespace |") and len(lines) == 2 + len(result)
    # a namespace without missing names passes the check; one with missing names fails and names them
    here = api_coverage.coverage()
    complete = [ns["namespace"] for ns in here if not ns["missing"]]
    incomplete = [ns for ns in here if ns["missing"]]
    if complete:
        assert api_coverage.main(["--check", "--no-missing", "--require", complete[0]]) == 0
    if incomplete:
        assert api_coverage.main(["--check", "--no-missing", "--require", incomplete[0]["namespace"]]) == 1
        assert incomplete[0]["missing"][0] in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        api_coverage.main(["--check", "--require", "torch.nope"])
    assert e.value.code == 2


def test_readme_table_is_the_tools_output():
    """README.md carries the table between markers; it must have the tool's columns and namespaces
    (not its numbers, which change as helpers add ops)."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    start = readme.index("<!-- api-coverage:start -->")
    end = readme.index("<!-- api-coverage:end -->")
    table = [ln for ln in readme[start:end].splitlines() if ln.startswith("|")]
    assert table[0] == "| namespace | torch names | in ampc | not planned | missing | coverage of planned |"
    assert [row.split("|")[1].strip().strip("`") for row in table[2:]] == [t for t, _ in api_coverage.NAMESPACES]
