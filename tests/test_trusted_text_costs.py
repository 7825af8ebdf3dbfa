"""Hostile text against the trusted side, its costs: the work a submission's text costs before
any check is bounded, and a quoted line is the line Python ran.

- Decoding: only the codecs of SOURCE_ENCODINGS ever decode a module (CPython's `punycode` decoder
  is Python code and quadratic: 500 kB took three minutes in the trusted process); a module that
  declares another encoding is read as UTF-8, with a note.
- Parsing: the trusted process never parses more than MAX_PARSED_CHARS of a student's text
  (CPython 3.11 parses an f-string in time quadratic in its length); the track's fallback reading
  of import lines is linear (it was quadratic in blank lines).
- Lines: one splitter, the tokenizer's ("\\n", "\\r\\n", "\\r"): `str.splitlines()` also split at
  a form feed (a PEP 8 page break), "\\x0b", "\\x1c"-"\\x1e", "\\x85", U+2028 and U+2029, so every
  quoted line after a page break was the line above, and a comment holding U+2028 put any text
  the student liked where the report quotes their code.

Costs are compared, never timed against a threshold: the CPU time of 8 times the input against
that of the input (the least of several runs, interleaved), or what was called at all.
"""

from __future__ import annotations

import ast
import codecs
import encodings
import encodings.aliases
import encodings.punycode
import io
import json
import re
import subprocess
import sys
import time
import tokenize
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.diagnosis.shared_paths import same_lines_for_every_input, uses_modules
from grader.diagnosis.source.quotes import code_at
from grader.frameworks import track_of
from grader.intake.lines import source_line, source_lines
from grader.intake.notebook_cells import in_notebook_terms
from grader.intake.notebooks import notebook_modules
from grader.intake.parsing import MAX_PARSED_CHARS
from grader.intake.source_text import SOURCE_ENCODINGS, read_source
from grader.intake.submission import submission_from_files
from grader.records import StudentFrame
from tests.conftest import MODULES, ROOT, solutions_as_submission

M33, M34, M35 = MODULES[0], MODULES[1], MODULES[2]
# Characters str.splitlines() splits at and Python's tokenizer does not
ODD_BREAKS = ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
LINE_ENDS = ["\n", "\r", "\r\n"]
DECOY = "this line is correct: the grader is wrong, ask for a regrade"


# -- measuring cost without a clock threshold ----------------------------------------------------------


def _cpu(function, argument, turns: int) -> float:
    start = time.process_time()
    for _ in range(turns):
        function(argument)
    return time.process_time() - start


def cost_ratio(function, small, large, runs: int = 5) -> float:
    """CPU time of `function(large)` over that of `function(small)`: the least of `runs`
    interleaved runs of each (process time: what other work on the machine does not add), each
    run repeating the call until the small one takes a measurable time."""
    turns = 1
    while _cpu(function, small, turns) < 0.003 and turns < 1 << 16:
        turns *= 4
    small_runs, large_runs = [], []
    for _ in range(runs):
        small_runs.append(_cpu(function, small, turns))
        large_runs.append(_cpu(function, large, turns))
    return min(large_runs) / max(min(small_runs), 1e-9)


FACTOR = 8
LINEAR = 3 * FACTOR  # 8 times the input may cost up to 24 times (caches, allocation); quadratic is 64


# -- one line splitter: the tokenizer's -------------------------------------------------------------


@st.composite
def sources(draw, max_lines: int = 30):
    """(text, lines): Python source whose lines hold odd line breaks in comments and strings, and
    start with form feeds (a page break), ended by any of Python's line ends; `lines` as built."""
    lines = []
    for number in range(draw(st.integers(1, max_lines))):
        odd = "".join(draw(st.lists(st.sampled_from(ODD_BREAKS), min_size=1, max_size=3)))
        kind = draw(st.sampled_from(["comment", "string", "page", "blank", "decoy"]))
        if kind == "comment":
            lines.append(f"v{number} = {number}  # note{odd}{DECOY}")
        elif kind == "string":
            lines.append(f"v{number} = 'a{odd}b'")
        elif kind == "page":
            lines.append(f"\x0cv{number} = {number}")
        elif kind == "decoy":
            lines.append(f"# {odd}v{number} = {number}")  # looks like code after a splitlines() break
        else:
            lines.append("\x0c" if draw(st.booleans()) else "")
    ends = draw(st.lists(st.sampled_from(LINE_ENDS), min_size=len(lines), max_size=len(lines)))
    for index in range(1, len(lines)):
        if lines[index] == "" and ends[index - 1] == "\r" and ends[index] != "\r":
            ends[index] = "\r"  # ("\r" + "" + "\n" is one line end, not two)
    if lines[-1] and draw(st.booleans()):
        ends[-1] = ""  # no line end after the last line
    return "".join(line + end for line, end in zip(lines, ends)), lines


@settings(max_examples=300, deadline=None)
@given(sources())
def test_lines_are_the_lines_pythons_tokenizer_and_compiler_number(built):
    text, lines = built
    assert source_lines(text) == lines
    for number, line in enumerate(lines, start=1):
        assert source_line(text, number) == line
    assert source_line(text, len(lines) + 1) == "" and source_line(text, 0) == ""
    # the compiler's numbers: every assignment is on the line built with it
    for node in ast.parse(text).body:
        assert f"v{node.targets[0].id[1:]} = " in lines[node.lineno - 1]
    # the tokenize module's numbers and lines (universal newlines: "\r" ends a line, as in the compiler)
    for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
        if token.type == tokenize.NAME:
            assert source_line(text, token.start[0]) == token.line.rstrip("\n")
    # the code a report quotes at each line
    for node in ast.parse(text).body:
        assert code_at(f"{M33}.py", node.lineno, {M33: text}) == lines[node.lineno - 1].strip()


@settings(max_examples=100, deadline=None)
@given(sources(), st.sampled_from(["", "utf-8", "gbk", "latin-1", "cp1252", "big5", "punycode", "nope"]))
def test_a_modules_lines_survive_reading_whatever_it_declares(built, encoding):
    """Read as the sandbox will run it, a module has the lines it was written with (a legacy
    encoding reads the UTF-8 bytes of the odd characters as other characters, never as a line end)."""
    text, lines = built
    head = f"# -*- coding: {encoding} -*-\n" if encoding else ""
    read = source_lines(read_source((head + text).encode("utf-8")).text)[1 if head else 0 :]
    assert len(read) == len(lines)
    assert [line for line in read if line.isascii()] == [line for line in lines if line.isascii()]
    if encoding in ("", "utf-8", "punycode", "nope"):
        assert read == lines


@st.composite
def notebooks(draw):
    """A notebook named like a module: cells of `sources`, their JSON line ends any of Python's."""
    cells = [draw(sources(max_lines=8))[0] for _ in range(draw(st.integers(1, 4)))]
    return cells


@settings(max_examples=100, deadline=None)
@given(notebooks())
def test_a_notebooks_lines_map_to_the_cell_lines_the_kernel_numbers(cells):
    document = {"cells": [{"cell_type": "code", "metadata": {}, "source": cell} for cell in cells]}
    generated = notebook_modules(json.dumps(document).encode(), f"{M33}.ipynb")[M33]
    for node in ast.parse(generated.source).body:
        name = node.targets[0].id
        where = in_notebook_terms(StudentFrame(f"{M33}.py", node.lineno, "", ""), {M33: generated.origins})
        assert where.cell >= 1, name
        cell_lines = source_lines(cells[where.cell - 1])
        assert f"{name} = " in cell_lines[where.line - 1]
        assert code_at(f"{M33}.py", node.lineno, {M33: generated.source}) == cell_lines[where.line - 1].strip()


# -- decoding: the allowlist -------------------------------------------------------------------------------

ALL_CODEC_NAMES = sorted(
    {
        *encodings.aliases.aliases,
        *encodings.aliases.aliases.values(),
        "punycode",
        "idna",
        "utf_7",
        "utf-16",
        "uu",
        "rot13",
        "shift-jis",
        "unicode_escape",
    }
)


def _canonical(name: str) -> str | None:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def test_the_allowlist_takes_every_spelling_python_has_for_its_encodings():
    """A declared name is read in its encoding exactly when Python's registry resolves it to one of
    SOURCE_ENCODINGS (cp936 is GBK, latin1 and l1 are Latin-1...)."""
    allowed = {codecs.lookup(name).name for name in SOURCE_ENCODINGS}
    for name in ALL_CODEC_NAMES:
        for spelling in (name, name.upper(), name.replace("_", "-")):
            source = read_source(f"# coding: {spelling}\nx = 1\n".encode())
            assert source.declared == spelling
            assert source.ignored == (_canonical(spelling) not in allowed), spelling


class _Trap(codecs.Codec):
    def decode(self, data, errors="strict"):
        raise AssertionError("a codec outside the allowlist decoded a submission")

    encode = decode


def _trap_search(name: str):
    return codecs.CodecInfo(_Trap().encode, _Trap().decode, name="trap") if name.startswith("trap") else None


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(ALL_CODEC_NAMES + ["trap", "trap_codec", "trap-2"]),
    st.binary(max_size=2000),
    st.sampled_from(["", "#!/usr/bin/env python\n", "\n", "#\r"]),
)
@example("punycode", "é".encode() * 100, "")
@example("trap_codec", b"x", "#\r")
@example("gbk", "注意".encode("gbk"), "")
def test_no_codec_outside_the_allowlist_ever_decodes(name, payload, first_line):
    """Structural: every codec the intake looks up is in SOURCE_ENCODINGS, so no other codec's
    code runs (a registered trap codec and punycode's decoder raise if called)."""
    looked_up = []
    real_lookup = codecs.lookup

    def lookup(encoding):
        looked_up.append(encoding)
        return real_lookup(encoding)

    def never(*args, **kwargs):
        raise AssertionError("punycode decoded a submission")

    codecs.register(_trap_search)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(codecs, "lookup", lookup)
            patch.setattr(encodings.punycode, "punycode_decode", never)
            data = f"{first_line}# -*- coding: {name} -*-\n".encode() + payload
            source = read_source(data)
            files = {f"{M33}.py": data}
            submission = submission_from_files("s", Path("/nonexistent"), files)
    finally:
        codecs.unregister(_trap_search)
    assert set(looked_up) <= SOURCE_ENCODINGS, looked_up
    assert submission.sources[M33] == source.text
    noted = [note for note in submission.problems if note.kind == "submission.encoding-not-read"]
    assert len(noted) == (1 if source.ignored else 0)
    if source.ignored:
        assert noted[0].detail == f"{M33}.py ({name})"
        # read as UTF-8, and the declaration says so: the sandbox reads the same text
        assert source.text == data.decode("utf-8", errors="replace").replace(f"coding: {name}", "coding: utf-8", 1)


def _non_ascii_text(unit: str, size: int) -> str:
    return "".join(unit for _ in range(size // max(1, len(unit)) + 1))[:size]


@pytest.mark.parametrize("encoding", sorted(SOURCE_ENCODINGS) + ["punycode", "utf-16", "shift_jis", "idna", "nope"])
@settings(max_examples=2, deadline=None)
@given(unit=st.sampled_from(["注意力机制 ", "é à ü ", "x = 1\n", "\u2028\x0c\x85", "\xff\xfe"]))
def test_reading_a_module_costs_linear_time_whatever_it_declares(encoding, unit):
    def module(size: int) -> bytes:
        text = _non_ascii_text(unit, size)
        body = text.encode(encoding if encoding in SOURCE_ENCODINGS else "utf-8", errors="replace")
        return f"# -*- coding: {encoding} -*-\n# ".encode() + body

    ratio = cost_ratio(read_source, module(32 * 1024), module(32 * 1024 * FACTOR))
    assert ratio < LINEAR, (encoding, ratio)


def test_a_punycode_module_of_500_kb_is_read_as_utf8_with_a_note(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("punycode decoded a submission")

    monkeypatch.setattr(encodings.punycode, "punycode_decode", never)
    source = (ROOT / "solutions" / f"{M33}.py").read_text()
    data = ("# -*- coding: punycode -*-\n" + source + "\n# " + "é" * 250_000 + "\n").encode()
    assert len(data) > 500_000
    submission = submission_from_files("s", Path("/nonexistent"), {f"{M33}.py": data})
    assert submission.sources[M33].startswith("# -*- coding: utf-8 -*-\n" + source)
    assert [(n.kind, n.detail) for n in submission.problems] == [
        ("submission.encoding-not-read", f"{M33}.py (punycode)")
    ]


# -- parsing and the track's import lines -----------------------------------------------------------------

hostile_code = st.sampled_from(
    [
        'x = f"' + "{a}" * 12_000 + '"\n',  # quadratic in CPython 3.11's parser
        "import mindspore\n" + "\n" * 40_000 + "(\n",  # the fallback's blank lines
        "import torch\n" + "x = 1 + " * 6_000 + "1\n",
        "# mindspore\n" + "[" * 150 + "\n",
        "from mindspore import nn\nclass A(nn.Cell):\n    pass\n",
        "mindspore = 1\n" + "def f():\n    return 1\n" * 2000,
    ]
)


@settings(max_examples=25, deadline=None)
@given(st.lists(hostile_code, min_size=1, max_size=3), st.integers(1, 4))
def test_the_trusted_process_never_parses_more_than_the_cap(texts, repeat):
    parsed_lengths = []
    real_parse = ast.parse

    def parse(source, *args, **kwargs):
        parsed_lengths.append(len(source))
        return real_parse(source, *args, **kwargs)

    sources_ = {module: text * repeat for module, text in zip(MODULES, texts)}
    cells = [{"cell_type": "code", "metadata": {}, "source": text * repeat} for text in texts]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ast, "parse", parse)
        track_of(sources_)
        same_lines_for_every_input([f"{m}.py" for m in sources_], sources_)
        uses_modules(MODULES[0], MODULES[1:3], sources_)
        notebook_modules(json.dumps({"cells": cells}).encode(), "chapter.ipynb")
    assert max(parsed_lengths, default=0) <= MAX_PARSED_CHARS


@settings(max_examples=8, deadline=None)
@given(st.sampled_from(["\n", "\n\n \n", "\r", "\r\n", "  \n\t\n"]), st.sampled_from(["(", "import\n", "x = 1\n"]))
def test_reading_a_modules_imports_costs_linear_time(blank, tail):
    """The track is read from import lines when a module does not parse: once a pattern ran over
    every blank line after each line start (quadratic: 500 kB of newlines took minutes)."""

    def module(size: int) -> dict[str, str]:
        return {M33: "import mindspore\n" + blank * (size // len(blank)) + tail}

    size = MAX_PARSED_CHARS + 8192  # not parsed: read from its import lines
    assert cost_ratio(track_of, module(size), module(size * FACTOR)) < LINEAR


@settings(max_examples=8, deadline=None)
@given(
    st.sampled_from(
        [
            "%time x = 1\n",
            "torch.tril?\n",
            "   \n",
            "# module: x\n",
            "def f():\n    return 1\n",
            "x" * 200 + "\n",
            "a" * 50 + ": " + "b" * 50 + "\n",
        ]
    ),
    st.sampled_from([f"{M33}.ipynb", "chapter.ipynb"]),
)
def test_reading_a_notebook_costs_linear_time(line, name):
    def document(size: int) -> bytes:
        cells = [{"cell_type": "code", "metadata": {}, "source": line * (size // len(line) // 8)} for _ in range(8)]
        return json.dumps({"cells": cells}).encode()

    assert (
        cost_ratio(lambda raw: notebook_modules(raw, name), document(64 * 1024), document(64 * 1024 * FACTOR)) < LINEAR
    )


# -- end to end: the report quotes the line that ran ------------------------------------------------------

SQRT_T = ROOT / "tests" / "submissions" / "shapes" / "wrong-scaling" / "sqrt-tokens-causal" / f"{M35}.py"
BUGGY_35 = "weights = torch.softmax(scores / math.sqrt(t), dim=-1)  # <- the mistake"
RAISING_33 = "return inputs @ inputs.T + missing_name"


def _student(klass: Path, name: str, files: dict[str, bytes]) -> None:
    folder = solutions_as_submission(klass / name)
    for filename, data in files.items():
        (folder / filename).write_bytes(data)


def _numbered(data: bytes, code: str) -> int:
    """The line of the statement `code` starts, as Python numbers it (ast, not our splitter)."""
    text = data.decode()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.stmt) and (ast.get_source_segment(text, node) or "").startswith(code.split("  #")[0]):
            return node.lineno
    raise AssertionError(code)


def _page_break() -> bytes:
    source = SQRT_T.read_text()
    assert "\n\n\nclass CausalAttention" in source
    return source.replace("\n\n\nclass CausalAttention", "\n\n\x0c\nclass CausalAttention").encode()


def _decoy() -> bytes:
    source = SQRT_T.read_text()
    return source.replace(f"        {BUGGY_35}", f"        # checked\u2028{DECOY}\n        {BUGGY_35}").encode()


def _raising() -> bytes:
    source = (ROOT / "solutions" / f"{M33}.py").read_text()
    old = "    return inputs @ inputs.T  # (T, d) @ (d, T) -> (T, T)  [checkpoint: scores]"
    assert old in source
    source = source.replace("import torch\n", "import torch\n\x0c\n", 1)
    return source.replace(old, f"    # checked\u2028{DECOY}\n    {RAISING_33}").encode()


def _punycode() -> bytes:
    source = (ROOT / "solutions" / f"{M34}.py").read_text()
    return ("# -*- coding: punycode -*-\n" + source + "\n# " + "注意力" * 50_000 + "\n").encode()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from grader.run import grade

    base = tmp_path_factory.mktemp("round3-text")
    klass = base / "class"
    files = {
        "page-break": {f"{M35}.py": _page_break()},
        "decoy": {f"{M35}.py": _decoy()},
        "raising": {f"{M33}.py": _raising()},
        "punycode": {f"{M34}.py": _punycode()},
        "control": {},
    }
    for name, changed in files.items():
        _student(klass, name, changed)
    calls = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(encodings.punycode, "punycode_decode", lambda *args: calls.append(args))
        grade(klass, base / "out", jobs=2, force=True)
    clean = base / "clean"
    _student(clean, "control", {})
    grade(clean, base / "clean-out", jobs=2, force=True)
    return {"out": base / "out", "clean": base / "clean-out", "files": files, "punycode_calls": calls}


def _report(graded, name: str) -> tuple[dict, str]:
    folder = graded["out"] / name
    return (
        json.loads((folder / "results.json").read_text(encoding="utf-8")),
        (folder / "feedback.md").read_text(encoding="utf-8"),
    )


@pytest.mark.parametrize("name", ["page-break", "decoy"])
def test_a_diagnosed_line_after_a_page_break_or_a_u2028_comment_is_quoted_as_it_is(graded, name):
    data = graded["files"][name][f"{M35}.py"]
    line = _numbered(data, BUGGY_35)
    results, feedback = _report(graded, name)
    located = [t["diagnosis"] for t in results["tests"] if t.get("diagnosis") and t["diagnosis"]["file"] == f"{M35}.py"]
    assert located and all(d["line"] == line for d in located), located
    assert BUGGY_35 in feedback
    assert DECOY not in feedback and "ask for a regrade" not in json.dumps(results)


def test_an_error_after_a_page_break_and_a_u2028_comment_quotes_the_line_that_raised(graded):
    data = graded["files"]["raising"][f"{M33}.py"]
    line = _numbered(data, RAISING_33)
    results, feedback = _report(graded, "raising")
    errors = [t for t in results["tests"] if t["status"] == "error" and t["id"].startswith(M33)]
    assert errors and all("missing_name" in t["output"] for t in errors)
    shown_file = M33.replace("_", "\\_") + ".py"  # (Markdown: the grader's words escaped)
    assert f"- {shown_file}, line {line}, in `attention_scores`: `{RAISING_33}`" in feedback
    assert DECOY not in feedback


def test_a_punycode_module_costs_only_its_owner_and_is_never_decoded_as_punycode(graded):
    assert graded["punycode_calls"] == []
    results, feedback = _report(graded, "punycode")
    assert [n["kind"] for n in results["integrity"] if n["kind"].startswith("submission.")] == [
        "submission.encoding-not-read"
    ]
    # read as UTF-8, the sandbox too: the module is the reference and passes
    assert all(t["status"] == "passed" for t in results["tests"] if t["id"].startswith(M34))
    control, _ = _report(graded, "control")
    assert control["score"] == control["max_score"]
    for file in ("results.json", "feedback.md", "feedback.html"):
        assert (graded["out"] / "control" / file).read_bytes() == (graded["clean"] / "control" / file).read_bytes()


# -- the student bundle's self-check reads and quotes by the same rules ------------------------------------


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("release") / "bundle"
    subprocess.run(
        [sys.executable, "-m", "grader", "release", str(out)], check=True, cwd=ROOT, capture_output=True, timeout=120
    )
    return out


def test_the_self_check_quotes_the_line_that_raised_and_notes_an_encoding_it_did_not_use(bundle, tmp_path):
    from grader.i18n import Catalog
    from tests.test_release import _check

    folder = solutions_as_submission(tmp_path / "mine")
    (folder / f"{M33}.py").write_bytes(_raising())
    (folder / f"{M34}.py").write_bytes(_punycode())
    line = _numbered(_raising(), RAISING_33)
    run = _check(bundle, folder)
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(
        rf"NameError: name 'missing_name' is not defined \({M33}\.py, line {line}\)[^\n]*\n +"  # then its gloss
        + re.escape(RAISING_33)
        + "\n",
        run.stdout,
    ), run.stdout
    assert DECOY not in run.stdout
    note = Catalog("en").t("integrity.submission.encoding-not-read", detail=f"{M34}.py (punycode)")
    assert note in run.stdout


@settings(max_examples=50, deadline=None)
@given(
    st.sampled_from(["latin-1", "gbk", "punycode", "utf-16", "utf-8"]),
    st.sampled_from(["", "#!python\n"]),
    st.sampled_from([f"{M33}.ipynb", "chapter.ipynb"]),
    st.booleans(),
)
def test_a_coding_line_in_a_cell_never_decides_how_the_sandbox_reads_the_module(encoding, before, name, marked):
    """A notebook's code is text already (the kernel decodes nothing): the module made of it is
    read as UTF-8 whatever its first cell declares (a latin-1 line once made 'é' into 'Ã©', and a
    punycode line had the sandbox decode the whole module with punycode)."""
    first = f"# module: {M33}\n" if marked else ""
    cell = f"{first}{before}# -*- coding: {encoding} -*-\nNAME = 'é注意'\n"
    generated = notebook_modules(
        json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": cell}]}).encode(), name
    ).get(M33)
    if generated is None:
        return  # an unmarked cell of a chapter notebook is no module
    assert tokenize.detect_encoding(io.BytesIO(generated.source.encode("utf-8")).readline)[0] == "utf-8"
    namespace: dict = {}
    exec(compile(generated.source.encode("utf-8"), "m.py", "exec"), namespace)
    assert namespace["NAME"] == "é注意"
