"""A class of hostile submissions against the trusted side (intake, names, notebooks, reports).

`build(base)` writes the class folder and returns, per student, what must come out: the control
whose tests theirs must equal (`same_as`), the integrity notes (kind, detail) that must appear,
and any other expectation. Every student is the reference solutions with one attack; the
controls are the solutions without the attacked module (what a refused file must cost).
"""
from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = ["sec3_3_simple_attention", "sec3_4_self_attention", "sec3_5_causal_attention",
           "sec3_6_multi_head_attention", "exercise3_1_weight_transfer", "exercise3_2_two_dim_output",
           "exercise3_3_gpt2_attention"]
M33, M34, M35, M36 = MODULES[:4]
GBK_NAME = os.fsdecode("张三".encode("gbk"))
INJECTION_TYPE = "<img src=x onerror=alert(1)>"
INJECTION_TEXT = ("\n<img src=x onerror=alert(1)>\n[click](javascript:alert(1))\n# Heading\n```\n"
                  "This is a problem of the grader, not of your code. {exc_type} {0}")
FORMULA_NAMES = ["=cmd|' \\C calc'!A0", "+SUM(1,1)", "-1+1", "@SUM(1)"]  # (no "/" in a folder name)


@dataclass
class Expect:
    same_as: str | None = None  # a control whose tests (status, points) this student's must equal
    notes: list[tuple[str, str]] = field(default_factory=list)  # integrity notes (kind, detail) required
    all_fail: bool = False  # nothing passes
    extra: dict = field(default_factory=dict)


def solution(module: str) -> str:
    source = (ROOT / "solutions" / f"{module}.py").read_text()
    return re.sub(r"^from \.(\w+) import", r"from \1 import", source, flags=re.M)


def student(klass: Path, name: str, without: tuple[str, ...] = ()) -> Path:
    folder = klass / name
    folder.mkdir(parents=True)
    for module in MODULES:
        if module not in without:
            (folder / f"{module}.py").write_text(solution(module))
    return folder


def notebook(cells: list) -> str:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def code(source: str, **metadata) -> dict:
    return {"cell_type": "code", "metadata": metadata, "source": source, "outputs": [], "execution_count": None}


def build(base: Path) -> tuple[Path, dict[str, Expect]]:
    klass = base / "class"
    expect: dict[str, Expect] = {}
    student(klass, "honest")
    expect["honest"] = Expect()
    for module in (M33, M34, M35, M36):
        student(klass, f"no_{module[:6]}", without=(module,))
        expect[f"no_{module[:6]}"] = Expect()

    def refused(name: str, module: str, kind: str, make) -> None:
        folder = student(klass, name, without=(module,))
        detail = make(folder)
        expect[name] = Expect(same_as=f"no_{module[:6]}", notes=[(kind, detail)])

    def link(target: str, module: str = M33):
        def make(folder: Path) -> str:
            (folder / f"{module}.py").symlink_to(target)
            return f"{module}.py"
        return make

    # links into the kit (through the grader's own working directory), to a classmate, to host files
    refused("link_kit_cwd", M36, "submission.file-link", link(f"/proc/self/cwd/solutions/{M36}.py", M36))
    refused("link_kit_abs", M35, "submission.file-link", link(str(ROOT / "solutions" / f"{M35}.py"), M35))
    refused("link_classmate", M35, "submission.file-link", link(f"../honest/{M35}.py", M35))
    refused("link_shadow", M33, "submission.file-link", link("/etc/shadow"))
    refused("link_environ", M33, "submission.file-link", link("/proc/self/environ"))
    refused("link_mem", M33, "submission.file-link", link("/proc/self/mem"))

    def fifo(folder: Path) -> str:
        os.mkfifo(folder / f"{M33}.py")
        return f"{M33}.py"
    refused("fifo", M33, "submission.file-special", fifo)

    def device(folder: Path) -> str:
        try:
            os.mknod(folder / f"{M33}.py", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero
        except PermissionError:
            os.mkfifo(folder / f"{M33}.py")  # not root: a FIFO is refused the same way
        return f"{M33}.py"
    refused("device", M33, "submission.file-special", device)

    kit_copy = base / "kit-copy"  # the kit's solutions on the same file system, outside the class
    kit_copy.mkdir()
    (kit_copy / f"{M33}.py").write_text(solution(M33))

    def hardlink(folder: Path) -> str:
        os.link(kit_copy / f"{M33}.py", folder / f"{M33}.py")
        return f"{M33}.py"
    refused("hardlink", M33, "submission.file-hardlink", hardlink)

    def folder_module(folder: Path) -> str:
        (folder / f"{M33}.py").mkdir()
        (folder / f"{M33}.py" / "__init__.py").write_text(solution(M33))
        return f"{M33}.py"
    refused("dir_module", M33, "submission.file-folder", folder_module)

    def sparse_module(folder: Path) -> str:
        with open(folder / f"{M33}.py", "wb") as handle:
            handle.truncate(2 * 1024**3)
        return f"{M33}.py"
    refused("sparse_module", M33, "submission.file-too-large", sparse_module)

    def sparse_notebook(folder: Path) -> str:
        with open(folder / f"{M34}.ipynb", "wb") as handle:
            handle.truncate(1024**3)
        return f"{M34}.ipynb"
    refused("sparse_notebook", M34, "submission.notebook-too-large", sparse_notebook)

    def json_bomb(folder: Path) -> str:
        (folder / f"{M34}.ipynb").write_text("[" * 200_000)
        return f"{M34}.ipynb"
    refused("json_bomb", M34, "submission.notebook-too-complex", json_bomb)

    def container_bomb(folder: Path) -> str:
        (folder / f"{M34}.ipynb").write_text('{"cells": [' + "{}," * 1_500_000 + "{}]}")  # 4.5 MB, 1.5M dicts
        return f"{M34}.ipynb"
    refused("container_bomb", M34, "submission.notebook-too-complex", container_bomb)

    def worksheets(folder: Path) -> str:
        (folder / f"{M34}.ipynb").write_text(json.dumps({"worksheets": 5, "nbformat": 3}))
        return f"{M34}.ipynb"
    refused("worksheets_not_a_list", M34, "submission.notebook-no-cells", worksheets)

    # wrong types that still leave a readable notebook: graded like the .py file
    folder = student(klass, "wrong_types", without=(M34,))
    (folder / f"{M34}.ipynb").write_text(notebook([
        code(solution(M34), tags="kit:skip"),  # tags as a string: not a tag list, the cell counts
        code(42, tags={"module:x": 1}, nbgrader="yes"), "junk", 7, {"cell_type": {"odd": 1}}]))
    expect["wrong_types"] = Expect(same_as="honest")

    # a parser bomb in an unmarked cell of a chapter notebook, and a huge one: cost nothing
    folder = student(klass, "ast_bomb", without=(M33,))
    (folder / "chapter.ipynb").write_text(notebook([
        code("1" + "+1" * 15_000), code("x = [" + "1," * 300_000 + "]"), code("-" * 100_000 + "1"),
        code(f"# module: {M33}\n{solution(M33)}")]))
    expect["ast_bomb"] = Expect(same_as="honest")

    # a helper defined in its own (later, unmarked) cell, as it runs in the student's kernel
    folder = student(klass, "helpers", without=(M33,))
    (folder / "chapter.ipynb").write_text(notebook([
        code("import torch"),
        code(f"# module: {M33}\n{solution(M33)}\n\ndef softmax_naive(x):\n    return helper_softmax(x)\n"),
        code("def helper_softmax(x):\n    return torch.exp(x) / torch.exp(x).sum(dim=-1, keepdim=True)\n\n"
             "demo = helper_softmax(torch.zeros(3))  # scratch work is not run")]))
    expect["helpers"] = Expect(same_as="honest")

    # an error in a notebook cell: feedback names the cell as Jupyter users count them (the second
    # code cell: the markdown cells are not counted) and the line in it
    folder = student(klass, "notebook_error", without=(M33,))
    cell = f"# module: {M33}\n{solution(M33)}\n\ndef softmax_naive(x):\n    raise ValueError('boom in a cell')\n"
    title = {"cell_type": "markdown", "metadata": {}, "source": "# Chapter 3"}
    (folder / "chapter.ipynb").write_text(notebook([title, code("import torch"), dict(title), code(cell)]))
    line = cell.split("\n").index("    raise ValueError('boom in a cell')") + 1
    expect["notebook_error"] = Expect(extra={"cell": 2, "line": line})

    # a syntax error in a notebook cell: the cell and its line, in the message Python wrote too
    folder = student(klass, "notebook_syntax", without=(M33,))
    cell = f"# module: {M33}\nimport torch\n\ndef softmax_naive(x:\n    return x\n"
    (folder / "chapter.ipynb").write_text(notebook([code("x = 1"), code("y = 2"), code(cell)]))
    expect["notebook_syntax"] = Expect(extra={"cell": 3, "line": 4})

    # text a notebook's JSON can hold but no file can (a lone surrogate, "\\ud800"): graded like the
    # .py file, not a dead worker for the whole submission
    folder = student(klass, "surrogate_notebook", without=(M33,))
    (folder / f"{M33}.ipynb").write_text(notebook([code(solution(M33) + "\nNOTE = 'SURROGATE'\n")])
                                         .replace("SURROGATE", "\\ud800"))
    expect["surrogate_notebook"] = Expect(same_as="honest")

    # a module saved in GBK with its coding declaration (PEP 263), as Python itself reads it
    folder = student(klass, "gbk_declared", without=(M33,))
    (folder / f"{M33}.py").write_bytes(f"# -*- coding: gbk -*-\n# 注意力机制：{M33}\n{solution(M33)}\n"
                                       f"TITLE = '第三章 注意力机制'\n".encode("gbk"))
    expect["gbk_declared"] = Expect(same_as="honest")

    # names: not UTF-8, a class output's name, spreadsheet formulas
    student(klass, GBK_NAME)
    expect[GBK_NAME] = Expect(same_as="honest", extra={"folder": "_xd5_xc5_xc8_xfd~c2bd2092"})
    for name in ("gradebook.csv", "summary.html", "canvas-grades.csv", *FORMULA_NAMES):
        student(klass, name)
        expect[name] = Expect(same_as="honest")

    # text that tries to break out of the report, or to speak as the grader
    folder = student(klass, "injection")
    source = solution(M33) + (
        f"\n\nclass _Injected(Exception):\n    pass\n\n_Injected.__name__ = {INJECTION_TYPE!r}\n\n"
        f"def softmax_naive(x):\n    raise _Injected({INJECTION_TEXT!r})\n")
    (folder / f"{M33}.py").write_text(source)
    expect["injection"] = Expect()

    # results the report must draw whatever they hold: NaN and infinite attention weights
    folder = student(klass, "nan_weights")
    (folder / f"{M33}.py").write_text(solution(M33) + (
        "\n\ndef attention_weights(inputs):\n"
        "    w = torch.full((inputs.shape[0], inputs.shape[0]), float('nan'))\n"
        "    w[0, 0] = float('inf')\n    return w\n"))
    expect["nan_weights"] = Expect()

    # a student folder that is itself a link (to a classmate): refused as a whole
    (klass / "link_folder").symlink_to(klass / "honest")
    expect["link_folder"] = Expect(notes=[("submission.folder-link", "link_folder")], all_fail=True)
    return klass, expect
