"""Rich reprs for Jupyter (issue 18): a tensor shows its shape, dtype, device, grad_fn and a small
preview of its values as an HTML table header plus the usual text; GradScaler and the dict of
scaler.stats() show the scale and the skipped-step counts. Plain `repr` is unchanged."""
import html

__all__ = ["tensor_html", "scaler_html", "ScalerStats"]

_PREVIEW_CHARS = 600


def _row(k, v):
    return f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"


def tensor_html(t):
    """Tensor._repr_html_: the metadata a notebook user checks first, then a preview of the values."""
    meta = [("shape", tuple(t.shape)), ("dtype", str(t.dtype).replace("ampc.", "")), ("device", t.device)]
    if t.grad_fn is not None:
        meta.append(("grad_fn", t.grad_fn.name()))
    elif t.requires_grad:
        meta.append(("requires_grad", True))
    text = repr(t)
    if len(text) > _PREVIEW_CHARS:
        text = text[:_PREVIEW_CHARS] + " ..."
    return ("<div><table style='font-family:monospace'>" + "".join(_row(k, v) for k, v in meta) + "</table>"
            f"<pre>{html.escape(text)}</pre></div>")


class ScalerStats(dict):
    """scaler.stats(): a dict, with a table in notebooks."""

    def _repr_html_(self):
        keys = ("steps", "skipped_steps", "overflow_streak", "last_skipped_step", "scale")
        hist = self.get("scale_history") or []
        rows = [_row(k, self.get(k)) for k in keys]
        if hist:
            rows.append(_row("scale_history", f"{len(hist)} values, last {hist[-1]:g}"))
        return "<table style='font-family:monospace'>" + "".join(rows) + "</table>"


def scaler_html(scaler):
    """GradScaler._repr_html_: its settings and (reading the device counters once) its stats."""
    rows = [_row("enabled", scaler.is_enabled())]
    if scaler.is_enabled():
        s = scaler.stats()
        rows += [_row("scale", f"{s['scale']:g}"), _row("growth_factor", scaler.get_growth_factor()),
                 _row("backoff_factor", scaler.get_backoff_factor()),
                 _row("growth_interval", scaler.get_growth_interval()),
                 _row("steps", s["steps"]), _row("skipped_steps", s["skipped_steps"])]
    return "<div><b>GradScaler</b><table style='font-family:monospace'>" + "".join(rows) + "</table></div>"
