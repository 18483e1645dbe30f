"""examples/notebooks/amp_quickstart.ipynb runs top to bottom in a real Jupyter kernel (nbclient +
ipykernel, installed by `make test`), and its outputs say what the notebook claims: AMP reaches
FP32's accuracy, the precision report passes, debug names the layer that was made to overflow,
and the rich displays (tensor, scaler, report, plots) render."""
import json
import os

import nbclient
import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "examples", "notebooks", "amp_quickstart.ipynb")


def run_notebook(monkeypatch):
    # the kernel is a child process: it finds ampc the way the tests do (the in-place build)
    monkeypatch.setenv("PYTHONPATH", os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "2"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}}).execute()
    return nb


def outputs(cell, kind):
    found = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            found.append(o.get("text", "")) if kind == "text/plain" else None
        elif kind in o.get("data", {}):
            found.append(o["data"][kind])
    return found


def test_quickstart_notebook_runs_and_shows_its_results(monkeypatch):
    nb = run_notebook(monkeypatch)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(o.get("output_type") != "error" for c in code for o in c.get("outputs", []))
    summary = json.loads(outputs(code[-1], "text/plain")[-1])
    assert abs(summary["amp_accuracy"] - summary["fp32_accuracy"]) < 0.03, summary
    assert summary["fp32_accuracy"] > 0.8, summary
    assert summary["report_passed"] is True and summary["first_overflow_module"] == "2", summary
    html = [h for c in code for h in outputs(c, "text/html")]
    assert any("shape" in h and "float32" in h for h in html), "the tensor's rich display"
    assert any("GradScaler" in h and "skipped_steps" in h for h in html), "the scaler's rich display"
    md = [m for c in code for m in outputs(c, "text/markdown")]
    assert any("| FP32 |" in m and "| AMP (float16) |" in m for m in md), "the FP32 vs AMP table"
    assert any("compare_precision" in m and "passed" in m for m in md), "the precision report"
    pngs = [p for c in code for p in outputs(c, "image/png")]
    assert len(pngs) >= 2, "the loss/scale plot and the report's plot"
    assert any("gemm in forward of module '2'" in t for c in code for t in outputs(c, "text/plain"))
