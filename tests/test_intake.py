"""Intake reads submissions by one set of rules: only regular files directly in the student's folder,
never through a link, never a hard link, FIFO, device or folder posing as a module, never more than
the size cap; names of any encoding; notebooks parsed defensively. Every refusal is a note naming
the file, and costs only that file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.intake.discovery import (
    MAX_SOURCE_BYTES,
    discover,
    find_submissions,
    find_upload,
    holds_submission,
    notebook_submission,
    read_submission,
)
from grader.intake.files import Folder, Refused, read_beneath
from grader.intake.names import display_names, folder_names, raw_name, safe_component
from grader.intake.notebook_cells import origin_at
from grader.intake.notebooks import MAX_NOTEBOOK_BYTES, NotebookError, notebook_modules
from grader.intake.printable import printable
from grader.run import CLASS_OUTPUTS
from tests.conftest import ROOT

M33, M35, M36 = "sec3_3_simple_attention", "sec3_5_causal_attention", "sec3_6_multi_head_attention"
GBK_NAME = os.fsdecode("张三".encode("gbk"))  # a folder name that is not UTF-8, as Chinese Windows zips make


def notes(submission) -> dict[str, str]:
    return {note.detail: note.kind for note in submission.problems}


# -- one file at a time ------------------------------------------------------------------------------


def test_a_regular_file_is_read_and_everything_else_is_refused_by_name(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("SECRET = 1\n")
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / f"{M33}.py").write_text("X = 1\n")
    (folder / f"{M35}.py").symlink_to(outside)
    (folder / f"{M36}.py").symlink_to("/proc/self/mem")
    os.link(outside, folder / "exercise3_1_weight_transfer.py")
    os.mkfifo(folder / "exercise3_2_two_dim_output.py")
    (folder / "exercise3_3_gpt2_attention.py").mkdir()
    (folder / "sec3_4_self_attention.py").symlink_to("/etc/shadow")
    submission = read_submission(folder)
    assert submission.sources == {M33: "X = 1\n"}
    assert notes(submission) == {
        f"{M35}.py": "submission.file-link",
        f"{M36}.py": "submission.file-link",
        "sec3_4_self_attention.py": "submission.file-link",
        "exercise3_1_weight_transfer.py": "submission.file-hardlink",
        "exercise3_2_two_dim_output.py": "submission.file-special",
        "exercise3_3_gpt2_attention.py": "submission.file-folder",
    }


def test_a_device_node_posing_as_a_module_is_never_opened(tmp_path):
    try:
        os.mknod(tmp_path / f"{M33}.py", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # /dev/zero
    except PermissionError:
        pytest.skip("creating a device node needs root")
    assert notes(read_submission(tmp_path)) == {f"{M33}.py": "submission.file-special"}


def test_sizes_are_capped_before_reading(tmp_path):
    with open(tmp_path / f"{M33}.py", "wb") as handle:
        handle.truncate(2 * 1024**3)  # 2 GiB, sparse: never read
    with open(tmp_path / f"{M35}.py", "wb") as handle:
        handle.write(b"#" * (MAX_SOURCE_BYTES + 1))
    (tmp_path / f"{M36}.py").write_bytes(b"#" * MAX_SOURCE_BYTES)
    with open(tmp_path / "sec3_4_self_attention.ipynb", "wb") as handle:
        handle.truncate(1024**3)
    submission = read_submission(tmp_path)
    assert set(submission.sources) == {M36}
    assert notes(submission) == {
        f"{M33}.py": "submission.file-too-large",
        f"{M35}.py": "submission.file-too-large",
        "sec3_4_self_attention.ipynb": "submission.notebook-too-large",
    }


def test_at_most_cap_plus_one_bytes_are_ever_read(tmp_path):
    """Even when fstat said the file was small enough (it grew since), reading stops at cap + 1."""
    from grader.intake.files import _read_at_most

    path = tmp_path / "x.py"
    path.write_bytes(b"a" * 100)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(Refused) as refused:
            _read_at_most(fd, 50, "x.py")
        assert refused.value.reason == "too-large"
        assert os.lseek(fd, 0, os.SEEK_CUR) == 51
    finally:
        os.close(fd)


def test_read_beneath_follows_no_link_below_the_root(tmp_path):
    (tmp_path / "real" / "ch3").mkdir(parents=True)
    (tmp_path / "real" / "ch3" / "nb.ipynb").write_text("{}")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    assert read_beneath(tmp_path, ("real", "ch3", "nb.ipynb"), 100) == b"{}"
    with pytest.raises(Refused) as refused:
        read_beneath(tmp_path, ("alias", "ch3", "nb.ipynb"), 100)
    assert refused.value.reason == "link"


@pytest.mark.parametrize("name", ["../../outside.py", "/etc/hostname", "..", ".", "", "a\x00b", "ch3/x.py"])
def test_a_folder_reads_and_opens_single_names_only(tmp_path, name):
    """No path, however it is written, reaches beyond the folder: neither as the file read nor as a
    folder on the way (an open folder resolves "../x" from itself, O_NOFOLLOW or not)."""
    (tmp_path / "outside.py").write_text("secret")
    (tmp_path / "root" / "ch3").mkdir(parents=True)
    (tmp_path / "root" / "ch3" / "x.py").write_text("X = 1\n")
    with pytest.raises(Refused) as refused:
        read_beneath(tmp_path / "root", ("ch3", name), 100)
    assert refused.value.reason in ("unreadable", "folder")
    with pytest.raises(Refused):
        read_beneath(tmp_path / "root", (name, "x.py"), 100)


def test_a_student_folder_that_is_a_link_is_refused_as_a_whole(tmp_path):
    klass = tmp_path / "class"
    (klass / "alice").mkdir(parents=True)
    (klass / "alice" / f"{M33}.py").write_text("X = 1\n")
    (klass / "mallory").symlink_to(klass / "alice")
    (klass / "kit").symlink_to(ROOT / "solutions")
    (klass / "notes.txt").symlink_to("/etc/passwd")  # a link to a file is no student at all
    found = discover(klass)
    assert found.is_class
    assert [(c.name, c.refused) for c in found.candidates] == [("alice", ""), ("kit", "link"), ("mallory", "link")]
    from grader.intake.discovery import read_candidate

    mallory = read_candidate(found.candidates[2])
    assert mallory.sources == {} and notes(mallory) == {"mallory": "submission.folder-link"}
    assert read_submission(klass / "mallory").sources == {}  # by path too: the link is not followed
    assert read_submission(klass / "mallory", follow=True).sources == {M33: "X = 1\n"}  # unless asked


def test_a_students_modules_in_a_folder_of_their_folder_are_graded_but_never_through_a_link(tmp_path):
    """An unzipped hand-in often is alice/ch3/*.py: the class reads the first folder in the student's
    folder that holds the modules, as the grading platforms read an upload; never through a link."""
    from grader.intake.discovery import read_candidate

    klass = tmp_path / "class"
    (klass / "alice" / "ch3").mkdir(parents=True)
    (klass / "alice" / "ch3" / f"{M33}.py").write_text("X = 1\n")
    (klass / "bob").mkdir()
    (klass / "bob" / "ch3").symlink_to(ROOT / "solutions")
    (klass / "carol" / "zip" / "ch3").mkdir(parents=True)
    (klass / "carol" / f"{M33}.py").write_text("Y = 2\n")  # her own file at the top wins
    (klass / "carol" / "zip" / "ch3" / f"{M33}.py").write_text("X = 1\n")
    found = {c.name: read_candidate(c) for c in discover(klass).candidates}
    assert found["alice"].sources == {M33: "X = 1\n"} and found["alice"].name == "alice"
    assert found["bob"].sources == {}
    assert found["carol"].sources == {M33: "Y = 2\n"}


def test_discovery_lists_without_following_links(tmp_path):
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / f"{M33}.py").symlink_to("/etc/shadow")
    assert find_submissions(tmp_path) == ([tmp_path / "ann"], True)
    assert holds_submission(tmp_path / "ann")  # a module name is there (and will be refused, with a note)
    upload = tmp_path / "upload"
    (upload / "zip" / "inner").mkdir(parents=True)
    (upload / "zip" / "inner" / f"{M33}.py").write_text("X = 1\n")
    (upload / "a-link").symlink_to(tmp_path / "ann")
    assert find_upload(upload) == upload / "zip" / "inner"
    (upload / "zip" / "inner" / f"{M33}.py").unlink()
    assert find_upload(upload) is None  # never through a-link


def test_nbgrader_copies_are_read_by_the_same_rules(tmp_path):
    (tmp_path / "nb.ipynb").symlink_to("/etc/shadow")
    submission = notebook_submission("alice", tmp_path / "nb.ipynb")
    assert submission.sources == {} and notes(submission) == {"nb.ipynb": "submission.file-link"}


# -- names ------------------------------------------------------------------------------------------


def test_undecodable_and_odd_names_are_shown_escaped_and_stay_unique(tmp_path):
    names = display_names([GBK_NAME, "\\xd5\\xc5\\xc8\\xfd", "a\nb", "\u202eevil", "plain"])
    assert display_names([GBK_NAME]) == {GBK_NAME: "\\xd5\\xc5\\xc8\\xfd"}
    # a byte is \xd5, a backslash typed in the name shows doubled: the two never look alike
    assert names[GBK_NAME] == "\\xd5\\xc5\\xc8\\xfd" and names["\\xd5\\xc5\\xc8\\xfd"] == "\\\\xd5\\\\xc5\\\\xc8\\\\xfd"
    assert names["a\nb"] == "a\\nb" and names["\u202eevil"] == "\\u202eevil" and names["plain"] == "plain"
    for raw, name in names.items():
        name.encode("utf-8")
        assert raw_name(name) == raw


@given(
    st.lists(
        st.text(min_size=1, max_size=40) | st.binary(min_size=1, max_size=40).map(os.fsdecode),
        min_size=1,
        max_size=12,
        unique=True,
    )
)
def test_output_folders_are_safe_unique_and_never_a_class_output(raw):
    raw = [r for r in raw if "/" not in r and "\0" not in r and r not in (".", "..")]
    shown_names = display_names(raw)
    assert len(set(shown_names.values())) == len(raw)
    folders = folder_names(raw + ["gradebook.csv", "Summary.HTML"], CLASS_OUTPUTS)
    assert len(set(folders.values())) == len(folders)
    kept = [f for r, f in folders.items() if f == r]
    altered = [f.casefold() for r, f in folders.items() if f != r]
    # a changed name never meets another folder, even on a case-insensitive file system (names kept
    # as they are differ as their folders in the class did)
    assert len(set(altered)) == len(altered) and not set(altered) & {k.casefold() for k in kept}
    assert not {f.casefold() for f in folders.values()} & {o.casefold() for o in CLASS_OUTPUTS}
    for folder in folders.values():
        assert folder and "/" not in folder and "\\" not in folder and not folder.startswith((".", "-"))
        assert folder not in (".", "..") and len(folder.encode("utf-8")) <= 200
        folder.encode("utf-8")


def test_safe_component_examples():
    assert safe_component("gradebook.csv") == "gradebook.csv"  # not reserved on its own...
    assert folder_names(["gradebook.csv"], CLASS_OUTPUTS) == {"gradebook.csv": "gradebook.csv~db3707d1"}  # ...but taken
    assert safe_component("../../etc") == "_.._etc"
    assert safe_component("CON") == "student_CON"
    assert safe_component("=HYPERLINK()") == "_=HYPERLINK()"  # a folder the gradebook can name as it is
    assert printable("ok\udcff\x1b[31m") == "ok\\xff\\x1b[31m"


# -- notebooks: any bytes, any JSON -------------------------------------------------------------------


def _reason(raw: bytes, name: str = "chapter.ipynb") -> str | None:
    try:
        notebook_modules(raw, name)
    except NotebookError as exc:
        return exc.reason
    return None


@pytest.mark.parametrize(
    "document, reason",
    [
        ({"cells": {"not": "a list"}}, "no-cells"),
        ({"worksheets": 3}, "no-cells"),
        ({"worksheets": [{"cells": "abc"}, 7, {"cells": [{"cell_type": "code", "input": 5}]}]}, None),
        (
            {"cells": [{"cell_type": "code", "source": 12, "metadata": {"tags": "module:sec3_3_simple_attention"}}]},
            None,
        ),
        ({"cells": [{"cell_type": "code", "source": ["x = 1", 3, None], "metadata": {"tags": {"a": 1}}}]}, None),
        (
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "source": "x",
                        "metadata": {"tags": 5, "attention_kit": [1], "nbgrader": "yes"},
                    }
                ]
            },
            None,
        ),
        ({"cells": [7, None, "s", {"cell_type": {"x": 1}}]}, None),
    ],
)
def test_wrong_types_anywhere_are_read_leniently(document, reason):
    assert _reason(json.dumps(document).encode()) == reason


def test_nesting_and_size_bombs_are_catalogued_reasons():
    assert _reason(b"[" * 100_000) == "too-complex"
    assert _reason(b'{"a":' * 50_000 + b"1" + b"}" * 50_000) == "too-complex"
    assert _reason(b"[" + b"{}," * 300_000 + b"{}]") == "too-complex"  # ~900 KB that would build 300,000 dicts
    assert _reason(b" " * (MAX_NOTEBOOK_BYTES + 1)) == "too-large"
    strings = json.dumps({"cells": [], "x": ["[[[{{{" * 1000] * 100}).encode()  # brackets inside strings
    assert _reason(strings) is None


@pytest.mark.parametrize("recursion_limit", [None, 6000])  # a library may have raised it: more then parses
def test_a_parser_bomb_in_an_unmarked_cell_costs_nothing(recursion_limit):
    if recursion_limit:
        before = sys.getrecursionlimit()
        sys.setrecursionlimit(recursion_limit)
    cells = [
        {"cell_type": "code", "metadata": {}, "source": "1" + "+1" * 15_000},  # scanned: RecursionError
        {"cell_type": "code", "metadata": {}, "source": "x = [" + "1," * 200_000 + "]"},  # too long to scan
        {"cell_type": "code", "metadata": {}, "source": "-" * 100_000 + "1"},
        {"cell_type": "code", "metadata": {}, "source": f"# module: {M33}\nX = 1"},
    ]
    try:
        modules = notebook_modules(json.dumps({"cells": cells}).encode(), "chapter.ipynb")
    finally:
        if recursion_limit:
            sys.setrecursionlimit(before)
    assert "X = 1" in modules[M33].source and "+1+1" not in modules[M33].source


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=40,
)
cell_like = st.fixed_dictionaries(
    {},
    optional={
        "cell_type": st.sampled_from(["code", "markdown", "raw"]) | json_values,
        "source": st.text() | st.lists(st.text() | json_values, max_size=4) | json_values,
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "tags": json_values
                | st.lists(st.sampled_from([f"module:{M33}", f"module:{M35}", "kit:skip"]) | json_values),
                "attention_kit": json_values,
                "nbgrader": json_values,
            },
        )
        | json_values,
        "input": json_values,
    },
)
notebook_like = (
    st.fixed_dictionaries(
        {},
        optional={
            "cells": st.lists(cell_like, max_size=6) | json_values,
            "worksheets": st.lists(
                st.fixed_dictionaries({}, optional={"cells": st.lists(cell_like, max_size=4) | json_values}), max_size=3
            )
            | json_values,
            "metadata": json_values,
        },
    )
    | json_values
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(notebook_like, st.sampled_from(["chapter.ipynb", f"{M33}.ipynb"]))
def test_any_json_is_a_notebook_or_a_catalogued_reason(document, name):
    raw = json.dumps(document).encode()
    try:
        modules = notebook_modules(raw, name)
    except NotebookError as exc:
        assert exc.reason in {"no-cells", "not-json", "too-complex", "too-large", "malformed"}
        return
    for module in modules.values():
        lines = module.source.split("\n")
        starts = [start for start, _ in module.origins]
        assert starts == sorted(set(starts)) and all(1 <= s <= len(lines) for s in starts)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096), st.sampled_from(["chapter.ipynb", f"{M33}.ipynb"]))
def test_any_bytes_are_a_notebook_or_a_catalogued_reason(raw, name):
    try:
        notebook_modules(raw, name)
    except NotebookError as exc:
        assert exc.reason in {"no-cells", "not-json", "too-complex", "too-large", "malformed"}


# -- chapter notebooks: helpers anywhere, feedback in cells ----------------------------------------------


def _nb(*cells: tuple[str, dict]) -> bytes:
    return json.dumps(
        {"cells": [{"cell_type": "code", "metadata": meta, "source": src, "outputs": []} for src, meta in cells]}
    ).encode()


def test_helpers_defined_in_unmarked_cells_are_graded_like_the_kernel_has_them():
    raw = _nb(
        ("import math\n\ndef helper(x):\n    '''doc\nstring'''\n    return x * 2\n\ndemo = 1 / 0", {}),
        (f"# module: {M33}\ndef f(x):\n    return helper(x) + later(x)", {}),
        ("class Sub(MissingBase):\n    pass\n\n@decorate_missing\ndef g():\n    pass", {}),
        ("def later(x):\n    return 1\n\ndef f(x):\n    return 'a draft left in a scratch cell'", {}),
    )
    source = notebook_modules(raw, "chapter.ipynb")[M33].source
    namespace: dict = {}
    exec(compile(source, "m", "exec"), namespace)  # the unusable definitions cost nothing
    assert namespace["f"](3) == 7  # helper from before, `later` from after; the scratch draft of f is left out
    assert namespace["helper"].__doc__ == "doc\nstring"  # a multi-line string keeps its lines
    assert "demo" not in namespace and "Sub" not in namespace


def test_every_generated_line_knows_its_cell_and_line():
    raw = _nb(
        ("import math", {}),
        ("", {}),
        (f"# module: {M33}\nA = 1\nB = math.pi\n%time A", {}),
        ("x = 1\nraise ValueError('here')", {"tags": [f"module:{M35}"]}),
    )
    modules = notebook_modules(raw, "chapter.ipynb", "chapter.ipynb")
    m35 = modules[M35]
    line = m35.source.split("\n").index("raise ValueError('here')") + 1
    origin = origin_at(m35.origins, line)
    assert (origin.notebook, origin.cell, origin.line) == ("chapter.ipynb", 4, 2)
    m33 = modules[M33]
    line = m33.source.split("\n").index("B = math.pi") + 1
    assert (origin_at(m33.origins, line).cell, origin_at(m33.origins, line).line) == (3, 3)
    assert origin_at(m33.origins, 1).cell == 1  # the imported preamble points at its cell too
    generated = m33.source.split("\n").index("# --- code cell 3 ---") + 1
    assert origin_at(m33.origins, generated) is None  # a line the grader added


def test_origins_take_memory_per_cell_not_per_line():
    raw = _nb((f"# module: {M33}\n" + "x = 1\n" * 100_000, {}))
    module = notebook_modules(raw, "chapter.ipynb")[M33]
    assert len(module.origins) <= 3
    last = module.source.split("\n").index("x = 1") + 100_000  # the cell's last "x = 1" (its line 100,001)
    assert origin_at(module.origins, last).line == 100_001


# -- the bundle ships intake: it must need nothing but the standard library -----------------------------


def test_intake_imports_only_the_standard_library_records_and_the_lms_formats():
    code = (
        "import sys; import grader.intake.discovery, grader.intake.notebooks, grader.intake.files, "
        "grader.intake.printable, grader.intake.source_text, grader.intake.names, grader.intake.notebook_cells; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'jinja2', 'numpy', 'markupsafe', "
        "'rich', 'pytest') or (m.startswith('grader.') "
        "and not m.startswith(('grader.intake', 'grader.records', 'grader.sections', 'grader.lms')))); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


def test_folder_reads_entries_with_their_kinds(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "l").symlink_to("f")
    os.mkfifo(tmp_path / "p")
    with Folder.open(tmp_path) as folder:
        assert [(e.name, e.kind) for e in folder.entries()] == [
            ("d", "folder"),
            ("f", "file"),
            ("l", "link"),
            ("p", "special"),
        ]


# -- budgets: what one submission can cost the trusted process -------------------------------------------


def test_one_submission_is_read_within_its_budgets(tmp_path):
    from grader.intake.submission import MAX_NOTEBOOKS, MAX_SUBMISSION_BYTES

    padding = "a" * (7 * 1024**2)  # saved outputs: 7 MB each, under the 8 MB cap
    for index in range(4):
        (tmp_path / f"big{index}.ipynb").write_text(json.dumps({"cells": [], "outputs": padding}))
    assert 3 * 7 * 1024**2 < MAX_SUBMISSION_BYTES < 4 * 7 * 1024**2
    for index in range(MAX_NOTEBOOKS):
        (tmp_path / f"small{index:02d}.ipynb").write_text(json.dumps({"cells": []}))
    big_cell = f"# module: {M33}\n" + "x = 1\n" * 100_000  # 600 KB of code for one module
    (tmp_path / "chapter.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": big_cell}]}))
    submission = read_submission(tmp_path)
    assert submission.sources == {}
    assert notes(submission)[f"{M33} (chapter.ipynb)"] == "submission.notebook-code-too-large"
    assert notes(submission)["big3.ipynb"] == "submission.file-over-budget"
    # read in name order: big0-2 (21 MB), big3 over the budget, chapter, small00-small11: 16 read
    assert [n.detail for n in submission.problems if n.kind == "submission.notebook-skipped"] == [
        f"small{index}.ipynb" for index in range(12, 16)
    ]


def test_a_crowded_folder_still_yields_its_modules(tmp_path):
    for index in range(6000):
        (tmp_path / f"junk{index}.txt").touch()
    (tmp_path / f"{M35}.py").write_text("X = 1\n")
    assert read_submission(tmp_path).sources == {M35: "X = 1\n"}


def test_many_small_values_are_too_complex_too():
    assert _reason(b'{"cells": [], "x": [' + b'"ab",' * 400_000 + b'""]}') == "too-complex"  # 2 MB, 400,000 strings
    assert _reason(b'{"cells": [], "x": [' + b"1.5," * 400_000 + b"1]}") == "too-complex"
    assert _reason(json.dumps({"cells": [], "x": ["a,b,c[{" * 100_000]}).encode()) is None  # inside a string


# -- text that travels on: always UTF-8, read as Python reads it --------------------------------------


def _sources_travel(submission) -> None:
    """What the sandbox is sent: every source as UTF-8 (a source that cannot be encoded was a dead
    worker and a zero for the whole submission, not only for that file)."""
    from grader.sandbox.connection import job_record

    for source in submission.sources.values():
        source.encode("utf-8")
    job_record(1, submission, [], "grade", {})


def test_a_lone_surrogate_in_a_notebook_is_graded_as_the_kernel_would_see_it(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    source = "def f(x):\n    return x  # PLACE\n"
    (folder / f"{M33}.ipynb").write_text(
        json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "source": source}]}).replace("PLACE", "\\ud800")
    )
    submission = read_submission(folder)
    assert not submission.problems
    assert "return x  # \ufffd" in submission.sources[M33]
    _sources_travel(submission)


def test_a_declared_encoding_is_read_as_python_reads_it(tmp_path):
    from grader.intake.source_text import decode_source

    gbk = "# -*- coding: gbk -*-\n# 注意力\nTITLE = '第三章'\n"
    assert decode_source(gbk.encode("gbk")) == gbk.replace("gbk", "utf-8")
    latin = "#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\nNAME = 'é'\n"
    assert decode_source(latin.encode("latin-1")) == latin.replace("latin-1", "utf-8")
    # only line 1 or 2 declares, line 2 only after a comment or a blank line; a BOM means UTF-8
    # (undecodable bytes replaced, as before)
    for raw in (
        b"x = 1\n# coding: gbk\n\xd6\xd0\n",
        b"\xef\xbb\xbf# coding: gbk\nx = 1\n",
        b"\n\n# coding: gbk\n\xd6\xd0\n",
        b"# coding: utf-8-unix\n\xd6\xd0\n",
    ):
        assert decode_source(raw) == raw.decode("utf-8", errors="replace")
    # an encoding outside SOURCE_ENCODINGS (unknown, not text, or slow) is not used: UTF-8, and the
    # declaration says so, for the sandbox to read the same text
    for raw in (b"# coding: nope\n\xd6\xd0\n", b"# coding: hex\nx = 1\n", b"# coding: punycode\nx = 1\n"):
        assert decode_source(raw) == raw.decode("utf-8", errors="replace").replace(
            raw[10 : raw.index(b"\n")].decode(), "utf-8", 1
        )
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / f"{M33}.py").write_bytes(gbk.encode("gbk"))
    submission = read_submission(folder)
    assert submission.sources[M33] == gbk.replace("gbk", "utf-8")
    _sources_travel(submission)


# (st.text never draws a lone surrogate, so the text is built from characters)
ANY_CHARACTER = st.characters(exclude_categories=()) | st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=300),
    st.lists(st.lists(ANY_CHARACTER, max_size=30).map("".join), max_size=4),
    st.sampled_from(["gbk", "latin-1", "utf-8", "cp1252", "shift_jis", "utf-16", "nope"]),
)
def test_any_module_bytes_and_any_notebook_text_travel_as_utf8(raw, texts, encoding):
    cells = [{"cell_type": "code", "metadata": {}, "source": f"# module: {M35}\n{text}"} for text in texts]
    files = {
        f"{M33}.py": f"# coding: {encoding}\n".encode() + raw,
        f"{M36}.py": raw,
        "chapter.ipynb": json.dumps({"cells": cells}).encode(),
    }  # (ensure_ascii: lone surrogates escaped)
    from grader.intake.submission import submission_from_files

    _sources_travel(submission_from_files("s", tmp_path_of_nothing(), files))


def tmp_path_of_nothing():
    from pathlib import Path

    return Path("/nonexistent-submission")
