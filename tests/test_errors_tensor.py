"""Bad input to the tensor core raises clean Python exceptions with PyTorch's wording where
PyTorch has one: wrong types to every creation function, negative and out-of-range dims, bad
dtype and device values, impossible views and number conversions."""
import operator

import numpy as np
import pytest

import ampc

CREATORS = ["zeros", "ones", "empty"]


@pytest.mark.parametrize("name", CREATORS)
def test_sized_creation_bad_input(name):
    f = getattr(ampc, name)
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'size' must be tuple of ints, but found element of type str at pos 1"):
        f(2, "a")
    with pytest.raises(TypeError, match="found element of type float at pos 0"):
        f(1.5)
    with pytest.raises(TypeError, match="must be tuple of ints, but found element of type dict at pos 0"):
        f({})
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension -1: \[2, -1\]"):
        f(2, -1)
    with pytest.raises(TypeError, match=rf"{name}\(\) missing 1 required positional argument: 'size'"):
        f()
    with pytest.raises(TypeError, match="argument 'dtype' must be ampc.dtype, not str"):
        f(2, dtype="float32")
    with pytest.raises(TypeError, match="argument 'dtype' must be ampc.dtype, not type"):
        f(2, dtype=np.float32)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type at start of device string: gpu"):
        f(2, device="gpu")
    with pytest.raises(TypeError, match="argument 'device' must be ampc.device, str or int, not float"):
        f(2, device=1.5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        f(2, colour=1)
    with pytest.raises(RuntimeError, match="more than 8 dims"):
        f(*([1] * 9))
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        f(2, dtype=ampc.int32, requires_grad=True)
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        f(2, size=(2,))
    with pytest.raises(OverflowError):
        f(2**70)


def test_python_dtype_types_are_accepted():
    assert ampc.zeros(1, dtype=float).dtype is ampc.float64
    assert ampc.zeros(1, dtype=int).dtype is ampc.int64
    assert ampc.zeros(1, dtype=bool).dtype is ampc.bool


def test_full_and_like_bad_input():
    with pytest.raises(TypeError, match="full\\(\\) missing required argument 'fill_value'"):
        ampc.full((2,))
    with pytest.raises(TypeError, match="argument 'fill_value' must be Number, not str"):
        ampc.full((2,), "x")
    with pytest.raises(TypeError, match="argument 'fill_value' must be Number, not list"):
        ampc.full((2,), [1])
    with pytest.raises(TypeError, match=r"zeros_like\(\): argument 'input' must be Tensor, not list"):
        ampc.zeros_like([1, 2])
    with pytest.raises(TypeError, match=r"ones_like\(\): argument 'input' must be Tensor, not numpy.ndarray"):
        ampc.ones_like(np.zeros(2))
    with pytest.raises(TypeError, match="full_like\\(\\) takes"):
        ampc.full_like(ampc.zeros(2))
    with pytest.raises(TypeError, match="argument 'dtype' must be ampc.dtype"):
        ampc.empty_like(ampc.zeros(2), dtype="half")


def test_tensor_bad_data():
    with pytest.raises(TypeError, match="tensor\\(\\): invalid data type 'str'"):
        ampc.tensor("abc")
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        ampc.tensor([1, "a"])
    with pytest.raises(TypeError, match="invalid data type 'NoneType'"):
        ampc.tensor([1.0, None])
    with pytest.raises(TypeError, match="invalid data type 'dict'"):
        ampc.tensor({1: 2})
    with pytest.raises(TypeError, match="invalid data type 'object'"):
        ampc.tensor(object())
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):
        ampc.tensor([[1, 2], [3]])
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1 \\(got a number\\)"):
        ampc.tensor([[1, 2], 3])
    with pytest.raises(ValueError, match="expected a number at dim 1, got a sequence"):
        ampc.tensor([1, [2]])
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        ampc.tensor([ampc.ones(2), ampc.ones(2)])
    with pytest.raises(ValueError, match="more than 8 dims"):
        ampc.tensor([[[[[[[[[1]]]]]]]]])
    with pytest.raises(OverflowError):
        ampc.tensor([2**64])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.int16"):
        ampc.tensor(np.zeros(2, np.int16))
    with pytest.raises(TypeError, match="takes 1 positional argument"):
        ampc.tensor(1, 2)
    with pytest.raises(TypeError, match="argument 'dtype' must be ampc.dtype, not str"):
        ampc.tensor([1], dtype="int64")
    with pytest.raises(RuntimeError, match="Invalid device string: 'cuda:x'"):
        ampc.tensor([1], device="cuda:x")
    with pytest.raises(TypeError, match="must be ampc.dtype"):
        ampc.as_tensor([1], dtype=3)


def test_range_bad_input():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ampc.arange(0, 10, 0)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        ampc.arange(10, 0, 1)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        ampc.arange(0, 10, -1)
    with pytest.raises(RuntimeError, match="unsupported range"):
        ampc.arange(0, float("inf"))
    with pytest.raises(TypeError, match=r"arange\(\): argument 'end' must be Number, not str"):
        ampc.arange("5")
    with pytest.raises(TypeError, match="missing required argument 'end'"):
        ampc.arange()
    with pytest.raises(TypeError, match="at most 3 positional arguments"):
        ampc.arange(1, 2, 3, 4)
    with pytest.raises(RuntimeError, match="one-element tensor"):
        ampc.arange(ampc.ones(3))
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ampc.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="argument 'steps' must be int, not float"):
        ampc.linspace(0, 1, 2.5)
    with pytest.raises(TypeError, match="argument 'start' must be Number, not list"):
        ampc.linspace([0], 1, 5)
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        ampc.eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, got -2"):
        ampc.eye(2, -2)
    with pytest.raises(TypeError, match=r"eye\(\): argument 'n' must be int, not float"):
        ampc.eye(2.5)
    with pytest.raises(TypeError, match=r"eye\(\): argument 'm' must be int, not str"):
        ampc.eye(2, "3")


def test_dtype_query_bad_input():
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        ampc.set_default_dtype(ampc.int64)
    with pytest.raises(TypeError, match="must be ampc.dtype, not str"):
        ampc.set_default_dtype("float64")
    assert ampc.get_default_dtype() is ampc.float32
    with pytest.raises(TypeError, match=r"promote_types\(\): arguments must be ampc.dtype, not str"):
        ampc.promote_types(ampc.float32, "x")
    with pytest.raises(TypeError, match="can_cast\\(\\): arguments must be ampc.dtype"):
        ampc.can_cast(1, ampc.float32)
    with pytest.raises(TypeError, match="argument 'tensor2' must be Number, not str"):
        ampc.result_type(ampc.zeros(1), "a")
    with pytest.raises(TypeError, match=r"numel\(\): argument 'input' must be Tensor, not list"):
        ampc.numel([1])


def test_device_bad_input():
    for s, msg in [("gpu", "Expected one of cpu, cuda device type at start of device string: gpu"),
                   ("cuda:x", "Invalid device string: 'cuda:x'"), ("cuda:", "Invalid device string: 'cuda:'"),
                   ("cuda:-1", "Invalid device string: 'cuda:-1'"), ("", "device type at start of device string")]:
        with pytest.raises(RuntimeError, match=msg):
            ampc.device(s)
    with pytest.raises(RuntimeError, match="Device index must not be negative"):
        ampc.device(-1)
    with pytest.raises(RuntimeError, match="Device index must not be negative"):
        ampc.device("cuda", -3)
    with pytest.raises(RuntimeError, match="must not include an index"):
        ampc.device("cuda:0", 1)
    with pytest.raises(TypeError, match="argument 'type' must be str, not list"):
        ampc.device([1])
    with pytest.raises(TypeError, match="argument 'index' must be int, not str"):
        ampc.device("cuda", "0")
    with pytest.raises(RuntimeError, match="out of range"):
        ampc.device("cuda:1000")


def test_view_errors():
    t = ampc.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"shape '\[4\]' is invalid for input of size 6"):
        t.view(4)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        t.view(-1, -1)
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size and stride"):
        t.t().view(6)
    with pytest.raises(TypeError, match=r"view\(\): argument 'size' must be tuple of ints, but found element of type float"):
        t.view(1.5)
    with pytest.raises(RuntimeError, match=r"shape '\[5, -1\]' is invalid for input of size 6"):
        t.reshape(5, -1)
    with pytest.raises(RuntimeError, match="invalid shape dimension -2"):
        t.reshape(-2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        t.transpose(0, 2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.unsqueeze(3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.squeeze(-3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.size(5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.stride(-3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.flatten(0, 4)
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        t.flatten(1, 0)
    with pytest.raises(RuntimeError, match="permute\\(\\): duplicate dims are not allowed"):
        t.permute(0, 0)
    with pytest.raises(RuntimeError, match="input.dim\\(\\) = 2 is not equal to len\\(dims\\) = 1"):
        t.permute(0)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match the existing size \(2\)"):
        t.expand(3, 3)
    with pytest.raises(RuntimeError, match="must be greater or equal to the number of dimensions"):
        t.expand(3)
    with pytest.raises(IndexError, match=r"start \(1\) \+ length \(5\) exceeds dimension size \(2\)"):
        t.narrow(0, 1, 5)
    with pytest.raises(TypeError, match="narrow\\(\\): argument 'start' must be int, not float"):
        t.narrow(0, 0.5, 1)
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"):
        ampc.zeros(1, 2, 3).t()
    with pytest.raises(RuntimeError, match="tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor."):
        ampc.zeros(3).mT
    with pytest.raises(TypeError, match="view_as\\(\\): argument 'other' must be Tensor, not list"):
        t.view_as([6])
    with pytest.raises(TypeError, match=r"unsqueeze\(\): argument 'dim' must be int, not str"):
        t.unsqueeze("0")
    with pytest.raises(TypeError, match=r"transpose\(\): argument 'dim1' must be int, not float"):
        t.transpose(0, 1.0)
    with pytest.raises(TypeError, match=r"flatten\(\): argument 'start_dim' must be int, not str"):
        t.flatten("a")


def test_conversion_errors():
    t = ampc.zeros(2)
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        t.item()
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        float(t)
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        int(t)
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(t)
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(ampc.zeros(0))
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        operator.index(ampc.tensor(1.0))
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        [1, 2][ampc.tensor([0, 1])]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ampc.tensor(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(ampc.tensor(1.0))
    try:
        ampc.zeros(1, device="cuda")
        has_cuda = True
    except RuntimeError:
        has_cuda = False
    if has_cuda:
        assert t.cuda().device.type == "cuda" and t.to("cuda").cpu().tolist() == [0.0, 0.0]
    else:  # .cuda() without a GPU: a clear RuntimeError (SPEC 8)
        with pytest.raises(RuntimeError, match="cuda: CUDA is not available"):
            t.cuda()
        with pytest.raises(RuntimeError, match="to: CUDA is not available"):
            t.to("cuda:0")
    with pytest.raises(RuntimeError, match="Invalid device, must be cuda device"):
        t.cuda("cpu")
    with pytest.raises(TypeError, match="to\\(\\) received an invalid combination of arguments"):
        t.to(1.5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        t.to(colour="red")
    with pytest.raises(TypeError, match="copy_\\(\\): argument 'src' must be Tensor, not list"):
        t.copy_([1, 2])
    with pytest.raises(RuntimeError, match=r"copy_: The size of tensor a \(2\) must match the size of tensor b \(3\)"):
        t.copy_(ampc.zeros(3))
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions"):
        t.fill_(ampc.zeros(1))
    with pytest.raises(TypeError, match="fill_\\(\\): argument 'value' must be Number, not str"):
        t.fill_("x")
    with pytest.raises(TypeError, match="unsupported format string"):
        format(t, ".2f")
    with pytest.raises(TypeError, match="new_full\\(\\) missing required argument 'fill_value'"):
        t.new_full((2,))
    with pytest.raises(TypeError, match="_make_subclass\\(\\): cls must be a subclass of ampc.Tensor"):
        ampc.Tensor._make_subclass(int, t)
    with pytest.raises(TypeError, match="must be Tensor"):
        ampc.Tensor._make_subclass(ampc.Tensor, [1])
    with pytest.raises(TypeError, match="cannot delete .data"):
        del t.data
