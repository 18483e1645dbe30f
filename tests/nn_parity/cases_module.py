"""Parity cases of issue 13's containers and Module API family: Sequential, ModuleList,
ModuleDict, ParameterList, ParameterDict and nn.DataParallel (on a machine without a GPU it runs
its module, as torch's does). The containers have no forward of their own (but Sequential), so
`call` runs the contained modules the way a model's forward would; the checks (state_dict keys,
init, repr, values, grads of inputs and parameters) are the runner's."""
from nn_parity.spec import Case, X

ALL = ("float32", "float64", "float16", "bfloat16")

CASES = [
    Case("nn.Sequential", lambda M: M.nn.Sequential(M.nn.Linear(5, 4), M.nn.ReLU(), M.nn.Linear(4, 3)), [X((3, 5))],
         dtypes=ALL),
    Case("nn.Sequential",
         lambda M: M.nn.Sequential(__import__("collections").OrderedDict(
             [("fc", M.nn.Linear(4, 6)), ("act", M.nn.Tanh()), ("out", M.nn.Linear(6, 2))])),
         [X((2, 4))], id="nn.Sequential-ordereddict"),
    Case("nn.Sequential", lambda M: (M.nn.Sequential(M.nn.Linear(3, 3), M.nn.GELU()) * 2)[1:],
         [X((2, 3))], id="nn.Sequential-mul-slice"),
    Case("nn.Sequential",
         lambda M: M.nn.Sequential(M.nn.Linear(3, 4)).extend([M.nn.SiLU()]).insert(0, M.nn.Linear(3, 3))
         .append(M.nn.Linear(4, 2)),
         [X((2, 3))], id="nn.Sequential-extend-insert-append"),
    Case("nn.ModuleList", lambda M: M.nn.ModuleList([M.nn.Linear(4, 4) for _ in range(3)]),
         [X((2, 4))], call=lambda m, x: m[2](m[1](m[0](x)).relu()) + m[-1](x)),
    Case("nn.ModuleList", lambda M: (M.nn.ModuleList([M.nn.Linear(3, 5)]) + [M.nn.Tanh(), M.nn.Linear(5, 2)])[::2],
         [X((4, 3))], call=lambda m, x: m[1](m[0](x)), id="nn.ModuleList-add-slice"),
    Case("nn.ModuleDict", lambda M: M.nn.ModuleDict({"b": M.nn.Linear(3, 4), "a": M.nn.Linear(4, 2)}),
         [X((2, 3))], call=lambda m, x: m["a"](m["b"](x))),
    Case("nn.ModuleDict", lambda M: M.nn.ModuleDict([("enc", M.nn.Linear(3, 3)), ("act", M.nn.ReLU())]),
         [X((2, 3))], call=lambda m, x: m["act"](m["enc"](x)), id="nn.ModuleDict-pairs"),
    Case("nn.ParameterList",
         lambda M: M.nn.ParameterList([M.nn.Parameter(M.randn(4, 3)), M.randn(3), M.nn.Parameter(M.zeros(3, 2))]),
         [X((2, 4))], call=lambda m, x: (x @ m[0] + m[1]) @ m[-1], repr=False, dtypes=ALL),
    Case("nn.ParameterDict",
         lambda M: M.nn.ParameterDict({"w": M.nn.Parameter(M.randn(4, 3)), "b": M.randn(3)}),
         [X((2, 4))], call=lambda m, x: x @ m["w"] + m["b"], repr=False),
    Case("nn.DataParallel", lambda M: M.nn.DataParallel(M.nn.Sequential(M.nn.Linear(4, 3), M.nn.Sigmoid())),
         [X((5, 4))], cuda=False),
]
