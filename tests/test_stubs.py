"""The student stubs in exercises/ import, match the solutions' API and are unimplemented."""

import importlib
import inspect
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "grader" / "exercises"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CONTRACT = {
    "sec3_3_simple_attention": [
        "attention_scores_for_query",
        "softmax_naive",
        "context_vector_for_query",
        "attention_scores",
        "attention_weights",
        "context_vectors",
    ],
    "sec3_4_self_attention": ["project_qkv", "scaled_attention_weights", "SelfAttention_v1", "SelfAttention_v2"],
    "sec3_5_causal_attention": [
        "simple_causal_mask",
        "mask_and_renormalize",
        "masked_attention_weights",
        "CausalAttention",
    ],
    "sec3_6_multi_head_attention": ["MultiHeadAttentionWrapper", "MultiHeadAttention"],
    "exercise3_1_weight_transfer": ["transfer_weights"],
    "exercise3_2_two_dim_output": ["build_two_dim_wrapper"],
    "exercise3_3_gpt2_attention": ["build_gpt2_small_attention"],
}

ITEMS = [(module, name) for module, names in CONTRACT.items() for name in names]


@pytest.fixture(scope="module")
def stubs():
    """Import the stubs as top-level sibling modules, then restore sys.path and sys.modules."""
    saved_path = list(sys.path)
    saved_modules = {name: sys.modules.pop(name) for name in CONTRACT if name in sys.modules}
    sys.path.insert(0, str(EXERCISES))
    try:
        yield {name: importlib.import_module(name) for name in CONTRACT}
    finally:
        for name in CONTRACT:
            sys.modules.pop(name, None)
        sys.modules.update(saved_modules)
        sys.path[:] = saved_path


def solution(module, name):
    return getattr(importlib.import_module(f"solutions.{module}"), name)


def sample_args(fn):
    """Plausible arguments for calling a stub: small tensors and ints."""
    args = []
    for param in inspect.signature(fn).parameters.values():
        if param.default is not inspect.Parameter.empty:
            continue
        if param.name in ("inputs", "x", "attn_scores", "attn_weights", "queries", "keys"):
            args.append(torch.rand(6, 3))
        elif param.name.startswith("W_"):
            args.append(torch.rand(3, 2))
        elif param.name in ("sa_v1", "sa_v2"):
            args.append(torch.nn.Module())
        elif param.name in ("num_tokens", "context_length"):
            args.append(6)
        else:  # d_in, d_out, d_k, query_index, dropout, num_heads
            args.append(1)
    return args


def test_no_package_marker():
    assert not (EXERCISES / "__init__.py").exists()


@pytest.mark.parametrize("module", list(CONTRACT))
def test_stub_imports(stubs, module):
    assert stubs[module].__name__ == module


def test_stubs_use_sibling_imports():
    for module in CONTRACT:
        source = (EXERCISES / f"{module}.py").read_text()
        assert "from ." not in source and "solutions" not in source


@pytest.mark.parametrize("module,name", ITEMS)
def test_stub_matches_contract(stubs, module, name):
    stub = getattr(stubs[module], name)
    ref = solution(module, name)
    assert inspect.isclass(stub) == inspect.isclass(ref)
    doc = inspect.getdoc(stub)
    assert doc and "section" in doc.lower()
    if inspect.isclass(ref):
        assert issubclass(stub, torch.nn.Module)
        for method in ("__init__", "forward"):
            assert inspect.signature(getattr(stub, method)) == inspect.signature(getattr(ref, method))
    else:
        assert inspect.signature(stub) == inspect.signature(ref)


@pytest.mark.parametrize("module,name", ITEMS)
def test_stub_raises_not_implemented(stubs, module, name):
    stub = getattr(stubs[module], name)
    if inspect.isclass(stub):
        args = sample_args(stub.__init__)[1:]  # without self
        with pytest.raises(NotImplementedError):
            stub(*args)
        blank = stub.__new__(stub)
        torch.nn.Module.__init__(blank)
        with pytest.raises(NotImplementedError):
            blank.forward(torch.rand(2, 6, 3))
    else:
        with pytest.raises(NotImplementedError):
            stub(*sample_args(stub))


def test_readme_lists_every_module():
    readme = (EXERCISES / "README.md").read_text()
    for module in CONTRACT:
        assert f"{module}.py" in readme
