"""Chapter 3 self-check, MindSpore edition: a few public checks of shapes and basic properties.

Run it in this folder:  python check.py            (checks the files in exercises/)
                        python check.py MY_FOLDER  (checks the files in another folder)
                        python check.py --lang zh  (messages in Chinese)

Passing these checks does not guarantee full marks: the grader checks much more.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODULES = ["sec3_3_simple_attention", "sec3_4_self_attention", "exercise3_1_weight_transfer",
           "sec3_5_causal_attention", "sec3_6_multi_head_attention", "exercise3_2_two_dim_output",
           "exercise3_3_gpt2_attention"]
CHECKS = []  # (module, message key, function)


def check(module, key):
    def register(fn):
        CHECKS.append((module, key, fn))
        return fn
    return register


BOOK = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]


def book_inputs(ms):
    return ms.Tensor(np.array(BOOK, np.float32))


def book_batch(ms):
    return ms.Tensor(np.array([BOOK, BOOK], np.float32))


def rand(ms, *shape):
    return ms.Tensor(np.random.default_rng(sum(shape)).random(shape, dtype=np.float32))


def close(ms, a, b, tol=1e-4):
    if not isinstance(a, ms.Tensor):
        return False
    a, b = a.asnumpy(), np.asarray(b.asnumpy() if isinstance(b, ms.Tensor) else b, dtype=np.float32)
    return a.shape == b.shape and bool(np.allclose(a.astype(np.float32), b, atol=tol))


def shape(t):
    return tuple(t.shape)


# -- 3.3 ------------------------------------------------------------------------------------------
@check("sec3_3_simple_attention", "sec3_3-softmax")
def _(m, ms):
    out = m.softmax_naive(ms.Tensor(np.array([[0.2, -1.0, 3.0, 0.5], [1.0, 2.0, 0.0, -0.5]], np.float32)))
    return close(ms, out.sum(axis=-1), np.ones(2)) and bool((out.asnumpy() > 0).all())


@check("sec3_3_simple_attention", "sec3_3-weights-shape")
def _(m, ms):
    return shape(m.attention_weights(book_inputs(ms))) == (6, 6)


@check("sec3_3_simple_attention", "sec3_3-weights-rows")
def _(m, ms):
    return close(ms, m.attention_weights(book_inputs(ms)).sum(axis=-1), np.ones(6))


@check("sec3_3_simple_attention", "sec3_3-context-shape")
def _(m, ms):
    return shape(m.context_vectors(book_inputs(ms))) == (6, 3)


# -- 3.4 ------------------------------------------------------------------------------------------
@check("sec3_4_self_attention", "sec3_4-qkv-shapes")
def _(m, ms):
    q, k, v = m.project_qkv(rand(ms, 5, 3), rand(ms, 3, 4), rand(ms, 3, 4), rand(ms, 3, 4))
    return all(shape(t) == (5, 4) for t in (q, k, v))


@check("sec3_4_self_attention", "sec3_4-weights-rows")
def _(m, ms):
    w = m.scaled_attention_weights(rand(ms, 5, 4), rand(ms, 5, 4))
    return shape(w) == (5, 5) and close(ms, w.sum(axis=-1), np.ones(5))


@check("sec3_4_self_attention", "sec3_4-v1-book")
def _(m, ms):
    ms.set_seed(123)
    out = m.SelfAttention_v1(3, 2)(book_inputs(ms))
    return shape(out) == (6, 2) and close(ms, out[0], [0.5698, 0.3587], tol=1e-3)


@check("sec3_4_self_attention", "sec3_4-v2-shape")
def _(m, ms):
    return shape(m.SelfAttention_v2(3, 2)(book_inputs(ms))) == (6, 2)


# -- Exercise 3.1 ---------------------------------------------------------------------------------
@check("exercise3_1_weight_transfer", "ex3_1-same-output")
def _(m, ms):
    sa = importlib.import_module("sec3_4_self_attention")
    v2, v1 = sa.SelfAttention_v2(4, 4), sa.SelfAttention_v1(4, 4)
    m.transfer_weights(v2, v1)
    x = rand(ms, 5, 4)
    return close(ms, v1(x), v2(x))


# -- 3.5 ------------------------------------------------------------------------------------------
@check("sec3_5_causal_attention", "sec3_5-simple-mask")
def _(m, ms):
    return close(ms, m.simple_causal_mask(4), np.tril(np.ones((4, 4))))


@check("sec3_5_causal_attention", "sec3_5-renormalize")
def _(m, ms):
    w = m.mask_and_renormalize(ms.ops.softmax(rand(ms, 5, 5), axis=-1)).asnumpy()
    return bool(np.allclose(np.triu(w, 1), 0, atol=1e-6) and np.allclose(w.sum(-1), 1, atol=1e-4))


@check("sec3_5_causal_attention", "sec3_5-masked-weights")
def _(m, ms):
    w = m.masked_attention_weights(rand(ms, 5, 5), 4).asnumpy()
    return bool(np.allclose(np.triu(w, 1), 0, atol=1e-6) and np.allclose(w.sum(-1), 1, atol=1e-4))


@check("sec3_5_causal_attention", "sec3_5-shape")
def _(m, ms):
    ca = m.CausalAttention(3, 2, 6, 0.0)
    ca.set_train(False)
    return shape(ca(book_batch(ms))) == (2, 6, 2)


@check("sec3_5_causal_attention", "sec3_5-causal")
def _(m, ms):
    ca = m.CausalAttention(3, 2, 8, 0.0)
    ca.set_train(False)
    x = rand(ms, 3, 5, 3).asnumpy()
    y = x.copy()
    y[:, -1] = np.random.default_rng(1).random((3, 3))
    return close(ms, ca(ms.Tensor(x))[:, :-1], ca(ms.Tensor(y))[:, :-1])


@check("sec3_5_causal_attention", "sec3_5-dropout-keyword")
def _(m, ms):
    dropout = getattr(m.CausalAttention(3, 2, 6, 0.1), "dropout", None)
    if dropout is None:
        return False
    dropout.set_train(True)
    out = dropout(ms.ops.ones((4000,))).asnumpy()
    dropped = float((out == 0).mean())  # about 0.1 with p=0.1; about 0.9 with a positional keep_prob
    return 0.05 < dropped < 0.15 and bool(np.allclose(out[out != 0], 1 / 0.9, atol=1e-4))


# -- 3.6 ------------------------------------------------------------------------------------------
@check("sec3_6_multi_head_attention", "sec3_6-wrapper-shape")
def _(m, ms):
    mha = m.MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)
    mha.set_train(False)
    return shape(mha(book_batch(ms))) == (2, 6, 4)


@check("sec3_6_multi_head_attention", "sec3_6-mha-shape")
def _(m, ms):
    mha = m.MultiHeadAttention(3, 4, 8, 0.0, num_heads=2)
    mha.set_train(False)
    return shape(mha(rand(ms, 3, 5, 3))) == (3, 5, 4)


@check("sec3_6_multi_head_attention", "sec3_6-mha-raises")
def _(m, ms):
    try:
        m.MultiHeadAttention(3, 5, 8, 0.0, num_heads=2)
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001 - any exception counts as refusing
        return True
    return False


# -- Exercises 3.2 and 3.3 ------------------------------------------------------------------------
@check("exercise3_2_two_dim_output", "ex3_2-shape")
def _(m, ms):
    mha = m.build_two_dim_wrapper(3, 6)
    mha.set_train(False)
    return shape(mha(book_batch(ms))) == (2, 6, 2)


@check("exercise3_3_gpt2_attention", "ex3_3-config")
def _(m, ms):
    mha = m.build_gpt2_small_attention()
    mha.set_train(False)
    out = mha(rand(ms, 1, 4, 768))
    return mha.num_heads == 12 and mha.head_dim == 64 and shape(out) == (1, 4, 768)


# -- the runner -----------------------------------------------------------------------------------
def load_messages(lang):
    data = json.loads((HERE / "check_messages.json").read_text(encoding="utf-8"))
    return data.get(lang) or data["en"], data["en"]


def where(exc, folder):
    """The last traceback frame inside the student's folder: (file, line)."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        try:
            if Path(frame.filename).resolve().parent == folder:
                return Path(frame.filename).name, frame.lineno
        except OSError:
            continue
    return None, None


def place(exc, folder, t):
    """Where in the student's files `exc` was raised ("file, line"), or None."""
    file, line = where(exc, folder)
    return t("where", file=file, line=line) if file else None


def run(folder, messages, fallback):
    def t(key, **params):
        text = messages.get(key, fallback.get(key, key))
        try:
            return text.format(**params)
        except (KeyError, IndexError, ValueError):
            return text

    os.environ.setdefault("GLOG_v", "3")  # MindSpore's own warnings (deprecations) stay out of the report
    import mindspore as ms

    ms.set_device("CPU")
    sys.path.insert(0, str(folder))
    results = []
    loaded = {}
    for module, key, fn in CHECKS:
        row = {"module": module, "section": messages.get("section." + module, module), "text": t("items." + key),
               "code": None}
        if module not in loaded:
            if not (folder / f"{module}.py").is_file():
                loaded[module] = ("missing", t("missing-module", module=module))
            else:
                try:
                    loaded[module] = ("ok", importlib.import_module(module))
                except BaseException as exc:  # noqa: BLE001 - a student's import may raise anything
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    at = place(exc, folder, t) or t("where-module", module=module)
                    loaded[module] = ("error", t("import-error", module=module, error=f"{type(exc).__name__}: {exc}",
                                                 where=at))
        state, value = loaded[module]
        if state != "ok":
            results.append({**row, "status": "fail", "note": value})
            continue
        ms.set_seed(0)
        try:
            ok = bool(fn(value, ms))
            results.append({**row, "status": "pass" if ok else "fail", "note": ""})
        except NotImplementedError as exc:
            at = place(exc, folder, t)
            frame = next((f for f in reversed(traceback.extract_tb(exc.__traceback__))
                          if Path(f.filename).name == f"{module}.py"), None)
            note = (t("not-implemented", function=frame.name, where=at) if at and frame
                    else t("not-implemented-unlocated"))
            results.append({**row, "status": "todo", "note": note})
        except Exception as exc:  # noqa: BLE001 - report any error of the student's code
            error = f"{type(exc).__name__}: {exc}"
            at = place(exc, folder, t)
            results.append({**row, "status": "fail", "note": t("error", error=error, where=at) if at else error})
    return results


def render(results, folder, messages, fallback):
    def t(key, **params):
        text = messages.get(key, fallback.get(key, key))
        return text.format(**params) if params else text

    passed = sum(r["status"] == "pass" for r in results)
    first = next((i for i, r in enumerate(results) if r["status"] != "pass"), None)
    context = {"results": results, "folder": folder, "problems": [], "passed": passed, "total": len(results),
               "first": first, "t": t, "marks": {"pass": "✔", "fail": "✘", "todo": "…"}}
    try:
        import jinja2
    except ImportError:
        lines = [t("title"), t("folder", folder=folder)]
        lines += [f"  {context['marks'][r['status']]} {r['text']} {r['note']}" for r in results]
        lines.append(t("summary", passed=passed, total=len(results)))
        return "\n".join(lines)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE)), trim_blocks=True, lstrip_blocks=True)
    return env.get_template("check_report.txt.j2").render(context)


def main(argv=None):
    defaults = json.loads((HERE / "check_messages.json").read_text(encoding="utf-8"))
    parser = argparse.ArgumentParser(description="Chapter 3 self-check (MindSpore)")
    parser.add_argument("folder", nargs="?", type=Path, default=HERE / "exercises")
    parser.add_argument("--lang", choices=[k for k in defaults if k != "default"], default=defaults.get("default", "en"))
    args = parser.parse_args(argv)
    messages, fallback = load_messages(args.lang)
    folder = args.folder.resolve()
    results = run(folder, messages, fallback)
    out = render(results, folder, messages, fallback)
    sys.stdout.buffer.write((out + "\n").encode("utf-8"))
    return 0 if all(r["status"] == "pass" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
