"""Bad input to the tensor core raises clean Python exceptions with PyTorch's wording where
PyTorch has one: wrong types to every creation function, negative and out-of-range dims, bad
dtype and device values, impossible views and number conversions."""
import operator

import numpy as np
import pytest

import ampc
from helpers import raises_each

CREATORS = ["zeros", "ones", "empty"]


@pytest.mark.parametrize("name", CREATORS)
def test_sized_creation_bad_input(name):
    f = getattr(ampc, name)
    raises_each(
        (TypeError, rf"{name}\(\): argument 'size' must be tuple of ints, but found element of type str at pos 1",
         lambda: f(2, "a")),
        (TypeError, "found element of type float at pos 0", lambda: f(1.5)),
        (TypeError, "must be tuple of ints, but found element of type dict at pos 0", lambda: f({})),
        (RuntimeError, r"Trying to create tensor with negative dimension -1: \[2, -1\]", lambda: f(2, -1)),
        (TypeError, rf"{name}\(\) missing 1 required positional argument: 'size'", lambda: f()),
        (TypeError, "argument 'dtype' must be ampc.dtype, not str", lambda: f(2, dtype="float32")),
        (TypeError, "argument 'dtype' must be ampc.dtype, not type", lambda: f(2, dtype=np.float32)),
        (RuntimeError, "Expected one of cpu, cuda device type at start of device string: gpu",
         lambda: f(2, device="gpu")),
        (TypeError, "argument 'device' must be ampc.device, str or int, not float", lambda: f(2, device=1.5)),
        (TypeError, "unexpected keyword argument 'colour'", lambda: f(2, colour=1)),
        (RuntimeError, "more than 8 dims", lambda: f(*([1] * 9))),
        (RuntimeError, "only Tensors of floating point dtype can require gradients",
         lambda: f(2, dtype=ampc.int32, requires_grad=True)),
        (TypeError, "multiple values for argument 'size'", lambda: f(2, size=(2,))),
        (OverflowError, None, lambda: f(2**70)),
    )


def test_python_dtype_types_are_accepted():
    assert ampc.zeros(1, dtype=float).dtype is ampc.float64
    assert ampc.zeros(1, dtype=int).dtype is ampc.int64
    assert ampc.zeros(1, dtype=bool).dtype is ampc.bool


def test_full_and_like_bad_input():
    raises_each(
        (TypeError, "full\\(\\) missing required argument 'fill_value'", lambda: ampc.full((2,))),
        (TypeError, "argument 'fill_value' must be Number, not str", lambda: ampc.full((2,), "x")),
        (TypeError, "argument 'fill_value' must be Number, not list", lambda: ampc.full((2,), [1])),
        (TypeError, r"zeros_like\(\): argument 'input' must be Tensor, not list", lambda: ampc.zeros_like([1, 2])),
        (TypeError, r"ones_like\(\): argument 'input' must be Tensor, not numpy.ndarray",
         lambda: ampc.ones_like(np.zeros(2))),
        (TypeError, "full_like\\(\\) takes", lambda: ampc.full_like(ampc.zeros(2))),
        (TypeError, "argument 'dtype' must be ampc.dtype", lambda: ampc.empty_like(ampc.zeros(2), dtype="half")),
    )


def test_tensor_bad_data():
    raises_each(
        (TypeError, "tensor\\(\\): invalid data type 'str'", lambda: ampc.tensor("abc")),
        (TypeError, "invalid data type 'str'", lambda: ampc.tensor([1, "a"])),
        (TypeError, "invalid data type 'NoneType'", lambda: ampc.tensor([1.0, None])),
        (TypeError, "invalid data type 'dict'", lambda: ampc.tensor({1: 2})),
        (TypeError, "invalid data type 'object'", lambda: ampc.tensor(object())),
        (ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)", lambda: ampc.tensor([[1, 2], [3]])),
        (ValueError, "expected sequence of length 2 at dim 1 \\(got a number\\)", lambda: ampc.tensor([[1, 2], 3])),
        (ValueError, "expected a number at dim 1, got a sequence", lambda: ampc.tensor([1, [2]])),
        (ValueError, "only one element tensors can be converted to Python scalars",
         lambda: ampc.tensor([ampc.ones(2), ampc.ones(2)])),
        (ValueError, "more than 8 dims", lambda: ampc.tensor([[[[[[[[[1]]]]]]]]])),
        (OverflowError, None, lambda: ampc.tensor([2**64])),
        (TypeError, "can't convert np.ndarray of type numpy.int16", lambda: ampc.tensor(np.zeros(2, np.int16))),
        (TypeError, "takes 1 positional argument", lambda: ampc.tensor(1, 2)),
        (TypeError, "argument 'dtype' must be ampc.dtype, not str", lambda: ampc.tensor([1], dtype="int64")),
        (RuntimeError, "Invalid device string: 'cuda:x'", lambda: ampc.tensor([1], device="cuda:x")),
        (TypeError, "must be ampc.dtype", lambda: ampc.as_tensor([1], dtype=3)),
    )


def test_range_bad_input():
    raises_each(
        (RuntimeError, "step must be nonzero", lambda: ampc.arange(0, 10, 0)),
        (RuntimeError, "upper bound and lower bound inconsistent with step sign", lambda: ampc.arange(10, 0, 1)),
        (RuntimeError, "upper bound and lower bound inconsistent with step sign", lambda: ampc.arange(0, 10, -1)),
        (RuntimeError, "unsupported range", lambda: ampc.arange(0, float("inf"))),
        (TypeError, r"arange\(\): argument 'end' must be Number, not str", lambda: ampc.arange("5")),
        (TypeError, "missing required argument 'end'", lambda: ampc.arange()),
        (TypeError, "at most 3 positional arguments", lambda: ampc.arange(1, 2, 3, 4)),
        (RuntimeError, "one-element tensor", lambda: ampc.arange(ampc.ones(3))),
        (RuntimeError, "number of steps must be non-negative", lambda: ampc.linspace(0, 1, -1)),
        (TypeError, "argument 'steps' must be int, not float", lambda: ampc.linspace(0, 1, 2.5)),
        (TypeError, "argument 'start' must be Number, not list", lambda: ampc.linspace([0], 1, 5)),
        (RuntimeError, "n must be greater or equal to 0, got -1", lambda: ampc.eye(-1)),
        (RuntimeError, "m must be greater or equal to 0, got -2", lambda: ampc.eye(2, -2)),
        (TypeError, r"eye\(\): argument 'n' must be int, not float", lambda: ampc.eye(2.5)),
        (TypeError, r"eye\(\): argument 'm' must be int, not str", lambda: ampc.eye(2, "3")),
    )


def test_dtype_query_bad_input():
    raises_each(
        (TypeError, "only floating-point types are supported as the default type",
         lambda: ampc.set_default_dtype(ampc.int64)),
        (TypeError, "must be ampc.dtype, not str", lambda: ampc.set_default_dtype("float64")),
    )
    assert ampc.get_default_dtype() is ampc.float32
    raises_each(
        (TypeError, r"promote_types\(\): arguments must be ampc.dtype, not str",
         lambda: ampc.promote_types(ampc.float32, "x")),
        (TypeError, "can_cast\\(\\): arguments must be ampc.dtype", lambda: ampc.can_cast(1, ampc.float32)),
        (TypeError, "argument 'tensor2' must be Number, not str", lambda: ampc.result_type(ampc.zeros(1), "a")),
        (TypeError, r"numel\(\): argument 'input' must be Tensor, not list", lambda: ampc.numel([1])),
    )


def test_device_bad_input():
    for s, msg in [("gpu", "Expected one of cpu, cuda device type at start of device string: gpu"),
                   ("cuda:x", "Invalid device string: 'cuda:x'"), ("cuda:", "Invalid device string: 'cuda:'"),
                   ("cuda:-1", "Invalid device string: 'cuda:-1'"), ("", "device type at start of device string")]:
        with pytest.raises(RuntimeError, match=msg):
            ampc.device(s)
    raises_each(
        (RuntimeError, "Device index must not be negative", lambda: ampc.device(-1)),
        (RuntimeError, "Device index must not be negative", lambda: ampc.device("cuda", -3)),
        (RuntimeError, "must not include an index", lambda: ampc.device("cuda:0", 1)),
        (TypeError, "argument 'type' must be str, not list", lambda: ampc.device([1])),
        (TypeError, "argument 'index' must be int, not str", lambda: ampc.device("cuda", "0")),
        (RuntimeError, "out of range", lambda: ampc.device("cuda:1000")),
    )


def test_view_errors():
    t = ampc.zeros(2, 3)
    raises_each(
        (RuntimeError, r"shape '\[4\]' is invalid for input of size 6", lambda: t.view(4)),
        (RuntimeError, "only one dimension can be inferred", lambda: t.view(-1, -1)),
        (RuntimeError, "view size is not compatible with input tensor's size and stride", lambda: t.t().view(6)),
        (TypeError, r"view\(\): argument 'size' must be tuple of ints, but found element of type float",
         lambda: t.view(1.5)),
        (RuntimeError, r"shape '\[5, -1\]' is invalid for input of size 6", lambda: t.reshape(5, -1)),
        (RuntimeError, "invalid shape dimension -2", lambda: t.reshape(-2, 3)),
        (IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
         lambda: t.transpose(0, 2)),
        (IndexError, "Dimension out of range", lambda: t.unsqueeze(3)),
        (IndexError, "Dimension out of range", lambda: t.squeeze(-3)),
        (IndexError, "Dimension out of range", lambda: t.size(5)),
        (IndexError, "Dimension out of range", lambda: t.stride(-3)),
        (IndexError, "Dimension out of range", lambda: t.flatten(0, 4)),
        (RuntimeError, "start_dim cannot come after end_dim", lambda: t.flatten(1, 0)),
        (RuntimeError, "permute\\(\\): duplicate dims are not allowed", lambda: t.permute(0, 0)),
        (RuntimeError, "input.dim\\(\\) = 2 is not equal to len\\(dims\\) = 1", lambda: t.permute(0)),
        (RuntimeError, r"The expanded size of the tensor \(3\) must match the existing size \(2\)",
         lambda: t.expand(3, 3)),
        (RuntimeError, "must be greater or equal to the number of dimensions", lambda: t.expand(3)),
        (IndexError, r"start \(1\) \+ length \(5\) exceeds dimension size \(2\)", lambda: t.narrow(0, 1, 5)),
        (TypeError, "narrow\\(\\): argument 'start' must be int, not float", lambda: t.narrow(0, 0.5, 1)),
        (RuntimeError, "t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D",
         lambda: ampc.zeros(1, 2, 3).t()),
        (RuntimeError, "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.",
         lambda: ampc.zeros(3).mT),
        (TypeError, "view_as\\(\\): argument 'other' must be Tensor, not list", lambda: t.view_as([6])),
        (TypeError, r"unsqueeze\(\): argument 'dim' must be int, not str", lambda: t.unsqueeze("0")),
        (TypeError, r"transpose\(\): argument 'dim1' must be int, not float", lambda: t.transpose(0, 1.0)),
        (TypeError, r"flatten\(\): argument 'start_dim' must be int, not str", lambda: t.flatten("a")),
    )


def test_conversion_errors():
    t = ampc.zeros(2)
    raises_each(
        (RuntimeError, "a Tensor with 2 elements cannot be converted to Scalar", lambda: t.item()),
        (ValueError, "only one element tensors can be converted to Python scalars", lambda: float(t)),
        (ValueError, "only one element tensors can be converted to Python scalars", lambda: int(t)),
        (RuntimeError, "Boolean value of Tensor with more than one value is ambiguous", lambda: bool(t)),
        (RuntimeError, "Boolean value of Tensor with no values is ambiguous", lambda: bool(ampc.zeros(0))),
        (TypeError, "only integer tensors of a single element can be converted to an index",
         lambda: operator.index(ampc.tensor(1.0))),
        (TypeError, "only integer tensors of a single element can be converted to an index",
         lambda: [1, 2][ampc.tensor([0, 1])]),
        (TypeError, "len\\(\\) of a 0-d tensor", lambda: len(ampc.tensor(1.0))),
        (TypeError, "iteration over a 0-d tensor", lambda: iter(ampc.tensor(1.0))),
    )
    try:
        ampc.zeros(1, device="cuda")
        has_cuda = True
    except RuntimeError:
        has_cuda = False
    if has_cuda:
        assert t.cuda().device.type == "cuda" and t.to("cuda").cpu().tolist() == [0.0, 0.0]
    else:  # .cuda() without a GPU: a clear RuntimeError (SPEC 8)
        raises_each(
            (RuntimeError, "cuda: CUDA is not available", lambda: t.cuda()),
            (RuntimeError, "to: CUDA is not available", lambda: t.to("cuda:0")),
        )
    raises_each(
        (RuntimeError, "Invalid device, must be cuda device", lambda: t.cuda("cpu")),
        (TypeError, "to\\(\\) received an invalid combination of arguments", lambda: t.to(1.5)),
        (TypeError, "unexpected keyword argument 'colour'", lambda: t.to(colour="red")),
        (TypeError, "copy_\\(\\): argument 'src' must be Tensor, not list", lambda: t.copy_([1, 2])),
        (RuntimeError, r"copy_: The size of tensor a \(2\) must match the size of tensor b \(3\)",
         lambda: t.copy_(ampc.zeros(3))),
        (RuntimeError, "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions",
         lambda: t.fill_(ampc.zeros(1))),
        (TypeError, "fill_\\(\\): argument 'value' must be Number, not str", lambda: t.fill_("x")),
        (TypeError, "unsupported format string", lambda: format(t, ".2f")),
        (TypeError, "new_full\\(\\) missing required argument 'fill_value'", lambda: t.new_full((2,))),
        (TypeError, "_make_subclass\\(\\): cls must be a subclass of ampc.Tensor",
         lambda: ampc.Tensor._make_subclass(int, t)),
        (TypeError, "must be Tensor", lambda: ampc.Tensor._make_subclass(ampc.Tensor, [1])),
    )
    with pytest.raises(TypeError, match="cannot delete .data"):
        del t.data
