"""docs/architecture.md stays true: every file path it names exists (paths are written relative
to the repository root, or to csrc/ as `core/...`, `cpu/...`, `cuda/...`, `python/...`)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "architecture.md")
PATH = re.compile(r"`((?:csrc|tests|tools|python|benchmarks|examples|core|cpu|cuda)/[A-Za-z0-9_./*-]+\.(?:c|h|cu|cuh|def|py|sh|md))`")


def candidates(p):
    yield os.path.join(ROOT, p)
    yield os.path.join(ROOT, "csrc", p)


def test_documented_paths_exist():
    text = open(DOC, encoding="utf-8").read()
    named = sorted(set(m.group(1) for m in PATH.finditer(text)))
    assert named, "no paths found in docs/architecture.md"
    missing = [p for p in named if "*" not in p and not any(os.path.exists(c) for c in candidates(p))]
    assert not missing, "docs/architecture.md names files that do not exist: %s" % missing
