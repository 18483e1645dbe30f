"""ampc.onnx: importable so that scripts with an optional ONNX export step load; export raises.

torch.onnx.export traces the model into a graph (TorchScript or torch.export), and ampc runs
eagerly with no graph capture (see tools/api_not_planned.txt), so there is nothing to translate
into ONNX. To export an ampc-trained model: save its state_dict with ampc.save, load it into the
same model class under PyTorch, and export from there.
"""


def export(model, args=(), f=None, **kwargs):
    raise NotImplementedError(
        "ampc.onnx.export: ampc runs eagerly and has no graph capture (TorchScript/torch.export) to translate "
        "into ONNX; save the state_dict with ampc.save, load it into the model under PyTorch and export there")


def is_in_onnx_export():
    """False: ampc never exports, so code paths that check for an export in progress take the eager branch."""
    return False
