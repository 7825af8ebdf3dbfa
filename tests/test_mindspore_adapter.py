"""The framework adapter: track detection, and MindSpore Cells seen by the probes in MindSpore terms."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import grader.frameworks.mindspore_adapter
from grader.frameworks import MINDSPORE, PYTORCH, needs_mindspore, track_of

IMPORTS = [
    "import mindspore",
    "import mindspore as ms",
    "from mindspore import nn, ops",
    "from mindspore.nn import Cell",
    "import numpy, mindspore",
    "import mindspore.ops as ops",
]
NOT_IMPORTS = [
    "import torch",
    "import mindspore_like",
    "from .mindspore import x",
    "# import mindspore",
    "text = 'import mindspore'",
    "import numpy as mindspore_np",
]


@given(
    st.sampled_from(IMPORTS),
    st.lists(st.sampled_from(NOT_IMPORTS + ["x = 1", "def f():\n    return 2"]), max_size=4),
    st.integers(0, 4),
)
def test_a_module_importing_mindspore_anywhere_is_on_the_mindspore_track(line, others, position):
    lines = list(others)
    lines.insert(min(position, len(lines)), line)
    assert needs_mindspore("\n".join(lines))
    assert (
        track_of({"sec3_3_simple_attention": "import mindspore\n", "sec3_4_self_attention": "\n".join(lines)})
        == MINDSPORE
    )
    assert track_of({"sec3_3_simple_attention": "x = 1\n", "sec3_4_self_attention": "\n".join(lines)}) == MINDSPORE


@given(st.integers(1, 7), st.integers(0, 7), st.integers(0, 7))
def test_the_track_is_what_most_modules_import(mindspore, torch_only, both):
    """A PyTorch submission with an `import mindspore` left over in a module stays PyTorch; a port that
    also imports torch somewhere stays a port."""
    sources = {f"ms{i}": "import mindspore\n" for i in range(mindspore)}
    sources |= {f"pt{i}": "import torch\n" for i in range(torch_only)}
    sources |= {f"both{i}": "import torch\nimport mindspore  # left over\n" for i in range(both)}
    assert track_of(sources) == (MINDSPORE if mindspore + both > torch_only else PYTORCH)


@given(st.lists(st.sampled_from(NOT_IMPORTS + ["x = 1"]), max_size=6))
def test_modules_without_a_mindspore_import_are_on_the_pytorch_track(lines):
    assert track_of({"sec3_3_simple_attention": "\n".join(lines)}) == PYTORCH


@given(st.text(max_size=200))
@settings(max_examples=200)
def test_detection_never_fails_on_any_text(text):
    assert track_of({"m": text, "n": text + "\nimport mindspore\n(("}) in (PYTORCH, MINDSPORE)
    assert track_of({"n": text + "\nimport mindspore\n(("}) == MINDSPORE
    assert track_of({"m": text}) in (PYTORCH, MINDSPORE)


def test_a_module_that_does_not_parse_still_shows_its_track():
    assert needs_mindspore("import mindspore as ms\ndef broken(:\n")
    assert not needs_mindspore("import torch\ndef broken(:\n")


# -- the facade, in MindSpore terms ------------------------------------------------------------------
ms = pytest.importorskip("mindspore")


@pytest.fixture(scope="module")
def ns():
    from grader.frameworks import namespace_for
    from grader.reference_code import ModuleNamespace

    return namespace_for(MINDSPORE, ModuleNamespace("solutions.mindspore"))


def cell(facade):
    return facade.__dict__["_cell"]


def test_train_and_eval_are_set_train(ns):
    module = ns.module("sec3_5_causal_attention").CausalAttention(4, 8, 7, 0.5)
    assert cell(module).training is False  # a new Cell is in inference mode
    assert module.train() is module and cell(module).training is True
    assert module.eval() is module and cell(module).training is False


def test_parameters_are_the_trainable_ones_and_buffers_include_the_ports_mask(ns):
    from mindspore import Parameter, nn, ops

    module = ns.module("sec3_6_multi_head_attention").MultiHeadAttention(6, 8, 8, 0.0, num_heads=2)
    names = [name for name, _ in module.named_parameters()]
    assert names == [p.name for p in cell(module).trainable_params()]
    assert [name for name, _ in module.named_buffers()] == ["mask"]

    class PortStyle(nn.Cell):
        def __init__(self):
            super().__init__()
            self.mask = Parameter(ops.triu(ops.ones((3, 3)), diagonal=1), requires_grad=False)

    from grader.frameworks.mindspore_adapter import CellFacade

    port = CellFacade(PortStyle())
    assert list(port.named_parameters()) == [] and [n for n, _ in port.named_buffers()] == ["mask"]


def test_transplanted_weights_reach_the_cell_through_numpy_in_the_dense_layout(ns):
    from grader.probes import transplant

    module = ns.module("sec3_4_self_attention").SelfAttention_v2(3, 2)
    weight = torch.arange(6, dtype=torch.float32).reshape(2, 3)  # nn.Linear / nn.Dense: (out, in)
    transplant(module, {"W_query.weight": weight})
    module(torch.zeros(1, 3))  # the copy into the Cell happens before it runs
    np.testing.assert_array_equal(cell(module).W_query.weight.asnumpy(), weight.numpy())


def test_gradients_are_mindsporess_own(ns):
    module = ns.module("sec3_5_causal_attention").CausalAttention(4, 8, 7, 0.0)
    x = torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(1))
    w = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(2))
    (module(x) * w).sum().backward()
    got = {name: p.grad for name, p in module.named_parameters()}
    c = cell(module)
    expected = ms.grad(lambda x: (c(x) * ms.Tensor(w.numpy())).sum(), grad_position=None, weights=c.trainable_params())(
        ms.Tensor(x.numpy())
    )
    for (name, grad), want in zip(got.items(), expected):
        np.testing.assert_allclose(grad.numpy(), want.asnumpy(), rtol=1e-6, atol=1e-7, err_msg=name)


def test_to_float64_casts_parameters_and_buffers(ns):
    module = ns.module("sec3_5_causal_attention").CausalAttention(4, 8, 7, 0.0).to(torch.float64)
    assert {p.dtype for p in module.parameters()} == {torch.float64}
    assert dict(module.named_buffers())["mask"].dtype == torch.float64
    assert module(torch.randn(2, 5, 4, dtype=torch.float64)).dtype == torch.float64


def test_a_submissions_device_target_is_kept_from_taking_effect():
    from grader.frameworks.mindspore_adapter import NOTES, prepare

    prepare()
    before = len(NOTES)
    ms.set_context(device_target="Ascend", mode=ms.GRAPH_MODE)
    ms.context.set_context(device_target="GPU")
    ms.set_device("Ascend")
    assert ms.get_context("device_target") == "CPU" and ms.get_context("mode") == ms.PYNATIVE_MODE
    assert len(NOTES) == before + 4
    assert float(ms.ops.ones((2,)).sum().asnumpy()) == 2.0  # still computes, on the CPU


# -- generated configurations: the MindSpore reference through the adapter = the PyTorch reference ----
@st.composite
def configurations(draw):
    heads = draw(st.integers(1, 3))
    return {
        "b": draw(st.integers(1, 3)),
        "t": draw(st.integers(1, 6)),
        "d_in": draw(st.integers(1, 5)),
        "head_dim": draw(st.integers(1, 3)),
        "heads": heads,
        "bias": draw(st.booleans()),
        "seed": draw(st.integers(0, 10_000)),
        "context": 6,
    }


@settings(max_examples=15, deadline=None)
@given(configurations())
def test_any_configuration_computes_what_the_pytorch_reference_computes(ns, config):
    from grader.probes import linear_weights, qkv_weights, randn, transplant
    from solutions.sec3_5_causal_attention import CausalAttention
    from solutions.sec3_6_multi_head_attention import MultiHeadAttention

    d_out = config["head_dim"] * config["heads"]
    args = (config["d_in"], d_out, config["context"], 0.0)
    weights = qkv_weights(config["d_in"], d_out, bias=config["bias"], seed=config["seed"])
    mha_weights = weights | linear_weights("out_proj", d_out, d_out, bias=True, seed=config["seed"] + 50)
    x = randn(config["b"], config["t"], config["d_in"], seed=config["seed"] + 1)
    pairs = (
        (
            CausalAttention(*args, qkv_bias=config["bias"]),
            ns.module("sec3_5_causal_attention").CausalAttention(*args, qkv_bias=config["bias"]),
            weights,
        ),
        (
            MultiHeadAttention(*args, num_heads=config["heads"], qkv_bias=config["bias"]),
            ns.module("sec3_6_multi_head_attention").MultiHeadAttention(
                *args, num_heads=config["heads"], qkv_bias=config["bias"]
            ),
            mha_weights,
        ),
    )
    for reference, student, known in pairs:
        transplant(reference, known)
        transplant(student, known)
        with torch.no_grad():
            torch.testing.assert_close(student(x), reference.eval()(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "line", ["import ｍｉｎｄｓｐｏｒｅ as ms", "from ｍｉｎｄｓｐｏｒｅ import nn", "import mindspore"]
)
def test_the_track_is_read_from_the_code_python_runs_not_its_spelling(line):
    """Python reads identifiers NFKC-normalised: fullwidth letters import mindspore too."""
    sources = {"sec3_3_simple_attention": line + "\n", "sec3_4_self_attention": "# ｍｉｎｄｓｐｏｒｅ ok\nx = 1\n"}
    assert track_of(sources) == MINDSPORE
    assert track_of({"sec3_3_simple_attention": "import torch  # ｍｉｎｄｓｐｏｒｅ\n"}) == PYTORCH


def _sibling_imports(package: Path) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports, anywhere in it (inside functions too)."""
    prefix = "grader.frameworks." + package.name + "."
    found: dict[str, set[str]] = {}
    for path in package.glob("*.py"):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            imported |= {name.removeprefix(prefix) for name in names if name.startswith(prefix)}
        found[path.stem] = imported
    return found


def test_the_adapters_modules_import_one_way():
    """No module of the adapter imports one that imports it back (through any others): each can
    be read knowing only the ones below it."""
    imports = _sibling_imports(Path(grader.frameworks.mindspore_adapter.__file__).parent)
    assert {"cells", "shells", "convert"} <= imports.keys()

    def below(module: str, path: tuple[str, ...]) -> None:
        for other in imports.get(module, ()):
            assert other not in path, " -> ".join(path + (other,))
            below(other, path + (other,))

    for module in imports:
        below(module, (module,))
