"""Hostile and unlucky names: no report folder taken, no invisible twin, no
formula in any CSV the kit writes.

One `grade` run over a small class: the victim `control_a` (the solutions without Exercise 3.3,
so that their report is recognisably theirs), a control `honest` (the solutions) and students
whose names normalise, fold or look like the victim's (copies of the solutions), plus names that
start a formula. It is compared with a clean run of the victim and the control alone. Then
property tests over any names: distinct folders that depend only on the name, each results.json
naming its owner, shown names that look different and read back, no CSV cell that starts a formula.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from grader.classroom.lms_export import export
from grader.i18n import Catalog
from grader.intake.names import digest, display_names, folder_names, raw_name
from grader.records import GradeResult, IntegrityNote, SectionScore
from grader.report.results_file import results_json
from grader.report.writers import gradebook_csv
from grader.run import CLASS_OUTPUTS
from tests.conftest import MODULES, ROOT, solutions_as_submission

EN = Catalog("en")
VICTIM = "control_a"
# name -> why it is here (each a copy of the solutions)
TWINS = {
    "-control_a": "sorted before the victim, normalised onto its name by the old folder rule",
    " control_a": "a leading space",
    "CONTROL_A": "the victim's name in capitals",
    "control\u200b_a": "a zero-width space",
    "control\u2060_a": "a word joiner",
    "con\u00adtrol_a": "a soft hyphen",
    "control_a\U000e0041": "a tag character",
    "control_a\ufe0f": "a variation selector",
    "control_\u0430": "a Cyrillic a",
    "control_a\u00a0": "a no-break space",
    ' =HYPERLINK("evil.example","x")': "a formula behind a space",
    "\uff1dSUM(1,1)": "a full-width equals sign",
    "Zo\u00eb": "NFC",
    "Zoe\u0308": "the same name in NFD",
    "张伟": "Chinese",
    "Jose\u0301": "an accented name in NFD, alone",
}
READABLE = {"张伟": "张伟", "Jose\u0301": "Jose\u0301", "Zo\u00eb": "Zo\u00eb", "CONTROL_A": "CONTROL_A"}
FORMULA_FIRST = "=+-@\uff1d\uff0b\uff0d\uff20"


def starts_formula(cell: str) -> bool:
    """The strict rule, as the issue states it: a cell must not start with = + - @ (or their
    full-width forms), with whitespace of any kind, a control or an invisible character."""
    return bool(cell) and (
        cell[0] in FORMULA_FIRST
        or cell[0].isspace()
        or unicodedata.category(cell[0]) in ("Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Me")
    )


def invisible(char: str) -> bool:
    return (
        unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
        or (unicodedata.category(char) == "Zs" and char != " ")
        or 0xFE00 <= ord(char) <= 0xFE0F
    )


def skeleton(text: str) -> str:
    """What a reader sees, roughly: compatibility forms folded, invisible characters dropped, the
    Cyrillic and Greek letters this file uses read as Latin ones."""
    text = unicodedata.normalize("NFKC", text)
    return "".join({"\u0430": "a", "\u043e": "o", "\u0441": "c"}.get(c, c) for c in text if not invisible(c))


def digest8(name: str) -> str:
    return hashlib.sha256(os.fsencode(name)).hexdigest()[:8]


# -- the class, graded twice ----------------------------------------------------------------------

GRADE = "import sys\nfrom grader.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", GRADE, *args], capture_output=True, text=True, cwd=ROOT, timeout=1500)


def victim(klass: Path) -> None:
    solutions_as_submission(klass / VICTIM)
    (klass / VICTIM / f"{MODULES[-1]}.py").unlink()  # a score of their own


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("round3-names")
    klass = base / "class"
    victim(klass)
    solutions_as_submission(klass / "honest")
    for name in TWINS:
        solutions_as_submission(klass / name)
    run = run_cli(str(klass), "--out", str(base / "out"), "--quiet", "--jobs", "2")
    clean = base / "clean"
    victim(clean)
    solutions_as_submission(clean / "honest")
    clean_run = run_cli(str(clean), "--out", str(base / "clean-out"), "--quiet", "--jobs", "2")
    return {
        "base": base,
        "klass": klass,
        "out": base / "out",
        "run": run,
        "clean_out": base / "clean-out",
        "clean_run": clean_run,
    }


def documents(out: Path) -> dict[str, dict]:
    """Folder -> its results.json."""
    return {p.parent.name: json.loads(p.read_text(encoding="utf-8")) for p in out.glob("*/results.json")}


def gradebook(out: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))


def test_the_run_ends_with_every_student_and_the_class_reports(graded):
    assert graded["run"].returncode == 0, graded["run"].stderr[-3000:]
    assert graded["clean_run"].returncode == 0, graded["clean_run"].stderr[-3000:]
    docs = documents(graded["out"])
    assert len(docs) == len(TWINS) + 2
    assert {raw_name(d["submission"]) for d in docs.values()} == {VICTIM, "honest", *TWINS}


def test_the_victim_keeps_their_folder_and_report_bit_for_bit(graded):
    out, clean = graded["out"], graded["clean_out"]
    document = json.loads((out / VICTIM / "results.json").read_text(encoding="utf-8"))
    assert document["submission"] == VICTIM and document["folder"] == VICTIM
    for student in (VICTIM, "honest"):
        for name in ("results.json", "feedback.md", "feedback.html"):
            assert (out / student / name).read_bytes() == (clean / student / name).read_bytes(), (student, name)
    honest = json.loads((out / "honest" / "results.json").read_text(encoding="utf-8"))
    assert document["score"] < honest["score"]  # (the victim's own report, not a copy of a twin's)


def test_every_twin_gets_a_folder_of_its_own_from_its_own_name(graded):
    docs = documents(graded["out"])
    by_owner = {raw_name(d["submission"]): (folder, d) for folder, d in docs.items()}
    honest = docs["honest"]
    for name in TWINS:
        folder, document = by_owner[name]
        assert document["folder"] == folder
        assert document["score"] == honest["score"] and document["tests"] == honest["tests"]
        if name == "CONTROL_A" or name in ("Zo\u00eb", "张伟"):
            assert folder == name  # nothing to change: kept exactly
        else:
            assert folder.endswith("~" + digest8(name)), (name, folder)  # printf '%s' NAME | sha256sum
    assert by_owner[' =HYPERLINK("evil.example","x")'][0].startswith("_=HYPERLINK")


def test_shown_names_make_every_invisible_or_confusable_character_visible(graded):
    shown = {raw_name(d["submission"]): d["submission"] for d in documents(graded["out"]).values()}
    for name, text in shown.items():
        assert not any(invisible(c) for c in text), (name, text)
        assert text == text.strip(" ")
    for name, expected in READABLE.items():
        assert shown[name] == expected  # Chinese, accented (NFC, or NFD with no twin) show as they are
    assert shown["control\u200b_a"] == "control\\u200b_a" and shown["control_\u0430"] == "control_\\u0430"
    assert shown["Zoe\u0308"] == "Zoe\\u0308"  # the NFD twin of Zoë is told apart
    assert len({skeleton(t) for t in shown.values()}) == len(shown)


def test_the_gradebook_maps_each_name_to_its_folder_and_tells_twins_apart(graded):
    out = graded["out"]
    rows = gradebook(out)
    assert len(rows) == len(TWINS) + 2
    assert len({skeleton(r["student"]) for r in rows}) == len(rows)
    for row in rows:
        folder = row["folder"]
        document = json.loads((out / folder / "results.json").read_text(encoding="utf-8"))
        # a formula-like name is neutralised in the student column; the folder column is exact
        assert row["student"] in (document["submission"], "'" + document["submission"])
        assert float(row["total"]) == document["score"]
    raw = list(csv.reader(io.StringIO((out / "gradebook.csv").read_text(encoding="utf-8"))))
    assert raw[0][-1] == "folder"
    assert not any(starts_formula(cell) for row in raw for cell in row)


class _Rows(HTMLParser):
    """The summary's student table: (the text of the name's link, its target) per row."""

    def __init__(self):
        super().__init__()
        self.rows: list[list] = []
        self.cells = 0
        self.link: list | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.cells = 0
        elif tag == "td":
            self.cells += 1
        elif tag == "a" and self.cells == 1:
            self.link = ["", dict(attrs).get("href")]
            self.rows.append(self.link)

    def handle_endtag(self, tag):
        if tag == "a":
            self.link = None

    def handle_data(self, data):
        if self.link is not None:
            self.link[0] += data


def test_the_summary_names_each_student_apart_and_links_their_own_report(graded):
    out = graded["out"]
    parser = _Rows()
    parser.feed((out / "summary.html").read_text(encoding="utf-8"))
    rows = [(text, href) for text, href in parser.rows if href]
    assert len(rows) == len(TWINS) + 2
    assert len({skeleton(text) for text, _ in rows}) == len(rows)
    from urllib.parse import unquote

    for text, href in rows:
        document = json.loads((out / unquote(href)).with_name("results.json").read_text(encoding="utf-8"))
        assert document["submission"] == text


def test_each_feedback_page_names_its_own_student(graded):
    out = graded["out"]
    for folder, document in documents(out).items():
        page = (out / folder / "feedback.md").read_text(encoding="utf-8").split("\n", 1)[0]
        assert page.startswith("# Feedback for `") and document["submission"] in page, page


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_the_lms_export_neutralises_every_cell_and_uses_the_mapping(graded, lms, tmp_path):
    out = graded["out"]
    done = export(out, lms=lms, assignment="Chapter 3", catalog=EN, to=tmp_path / "grades.csv")
    rows = list(csv.reader(io.StringIO((tmp_path / "grades.csv").read_text(encoding="utf-8"))))
    assert not any(starts_formula(cell) for row in rows for cell in row), rows
    names = {row[0]: row for row in rows[1:]}
    assert '\\u0020=HYPERLINK("evil.example","x")' in names  # shown with its space escaped
    assert "'\uff1dSUM(1,1)" in names
    honest = json.loads((out / "honest" / "results.json").read_text(encoding="utf-8"))
    assert float(names["honest"][-1]) == honest["score"]
    # an LMS takes case, outer spaces and Unicode forms for one student: such twins are left out and
    # listed apart, each with the folder of their reports where it is not their name
    assert {VICTIM, "CONTROL_A", "Zo\u00eb"} <= set(done.ambiguous) and not {VICTIM, "CONTROL_A"} & set(names)
    assert f"\\u0020control_a (control_a~{digest8(' control_a')})" in done.ambiguous
    assert f"Zoe\\u0308 (Zo\u00eb~{digest8('Zoe' + chr(0x308))})" in done.ambiguous
    assert len({skeleton(a) for a in done.ambiguous}) == len(done.ambiguous)


def test_the_lms_export_neutralises_a_formula_behind_a_space(tmp_path):
    """The issue's case: a results.json whose name is ` =HYPERLINK(...)` (as an older kit wrote it)."""
    out = tmp_path / "out"
    (out / "s").mkdir(parents=True)
    (out / "s" / "results.json").write_text(
        json.dumps(
            {
                "submission": ' =HYPERLINK("http://evil.example","x")',
                "score": 1.0,
                "max_score": 63.0,
                "sections": [],
                "tests": [],
                "integrity": [],
            }
        )
    )
    for lms in ("canvas", "moodle"):
        done = export(out, lms=lms, assignment="\u3000@title", catalog=EN, to=tmp_path / f"{lms}.csv")
        rows = list(csv.reader(io.StringIO(done.path.read_text(encoding="utf-8"))))
        assert not any(starts_formula(cell) for row in rows for cell in row), rows
        assert '\' =HYPERLINK("http://evil.example","x")' in rows[-1]


def test_the_export_leaves_out_a_report_moved_into_another_folder(graded, tmp_path):
    import shutil

    out = shutil.copytree(graded["out"], tmp_path / "out", symlinks=True)
    (out / "张伟" / "results.json").write_bytes((out / "honest" / "results.json").read_bytes())
    done = export(out, lms="moodle", assignment="Chapter 3", catalog=EN)
    assert done.unreadable == ["张伟"]
    rows = list(csv.reader(io.StringIO(done.path.read_text(encoding="utf-8"))))
    assert [row[0] for row in rows].count("honest") == 1


def test_the_cli_shows_a_twins_name_escaped(graded):
    single = graded["klass"] / "control\u200b_a"
    run = run_cli(str(single), "--out", str(graded["base"] / "single"), "--jobs", "2")
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("control\\u200b_a: "), run.stdout
    document = json.loads((graded["base"] / "single" / "results.json").read_text(encoding="utf-8"))
    assert document["folder"] is None and document["submission"] == "control\\u200b_a"
    export_run = run_cli("export", str(graded["out"]), "--lms", "moodle", "--to", str(graded["base"] / "m.csv"))
    assert export_run.returncode == 0, export_run.stderr
    ambiguous = [line for line in export_run.stdout.splitlines() if "Unicode form" in line]
    assert ambiguous and "Zoe\\u0308" in ambiguous[0] and "Zo\u00eb" in ambiguous[0]


# -- properties over any names --------------------------------------------------------------------

INVISIBLES = "\u200b\u200c\u200d\u2060\u00ad\ufeff\u180e\u034f\ufe0f\U000e0041\U000e0100\u115f\u3164"
SPACES = " \u00a0\u2002\u3000\u202f"
MARKS = "\u0301\u0308\u0323\u20dd"
LOOKALIKES = "\u0430\u0435\u043e\u0440\u0441\u0410\u03bf\u0391\uff41\ufb01"
name_chars = st.one_of(
    st.characters(codec="utf-8", exclude_characters="/\0"),
    st.sampled_from(INVISIBLES + SPACES + MARKS + LOOKALIKES + "aAeEoOcC_-.~=+@\\0123456789abcdef"),
    st.characters(categories=["Cf", "Mn", "Zs", "Lo"]),
)
names = st.text(name_chars, min_size=1, max_size=24).filter(lambda n: "/" not in n and n not in (".", ".."))


def twins(name: str) -> list[str]:
    return [
        name.swapcase(),
        unicodedata.normalize("NFD", name),
        unicodedata.normalize("NFC", name),
        name + "\u200b",
        "\u2060" + name,
        name.replace("a", "\u0430"),
        " " + name,
        "-" + name,
        name + "~",
    ]


@st.composite
def classes(draw) -> list[str]:
    base = draw(st.lists(names, min_size=1, max_size=6))
    chosen = list(base)
    for name in base:
        chosen += draw(st.lists(st.sampled_from(twins(name)), max_size=3))
    chosen += draw(st.lists(st.sampled_from(sorted(CLASS_OUTPUTS) + ["control_a", "CON", "x~deadbeef"]), max_size=2))
    return list(dict.fromkeys(n for n in chosen if n and "/" not in n and "\0" not in n and n not in (".", "..")))


@settings(max_examples=300, deadline=None)
@given(classes())
def test_any_class_gets_distinct_folders_that_depend_only_on_each_name(raw):
    folders = folder_names(raw, CLASS_OUTPUTS)
    assert len(set(folders.values())) == len(raw)
    kept = {name for name in raw if folders[name] == name}
    altered = {name: folders[name] for name in raw if name not in kept}
    for name, folder in altered.items():
        assert folder.endswith("~" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8])
        assert folder_names([name], CLASS_OUTPUTS)[name] == folder  # whoever else is in the class
    for name in kept:
        assert folder_names([name], CLASS_OUTPUTS)[name] == name
        assert not invisible(name[0]) and name == unicodedata.normalize("NFC", name)
    folded = [f.casefold() for f in altered.values()]
    assert len(set(folded)) == len(folded) and not set(folded) & {k.casefold() for k in kept}
    assert not {f.casefold() for f in folders.values()} & {o.casefold() for o in CLASS_OUTPUTS}
    assert len({skeleton(f) for f in folders.values()}) == len(raw)  # no two folders look alike
    for folder in folders.values():
        assert not starts_formula(folder) and folder[0] not in ".-" and folder[-1] not in ". "
        assert len(folder.encode("utf-8")) <= 200 and "\\" not in folder and not any(invisible(c) for c in folder)


@settings(max_examples=300, deadline=None)
@given(classes())
def test_any_class_is_shown_with_names_that_look_different_and_read_back(raw):
    shown = display_names(raw)
    assert len(set(shown.values())) == len(raw)
    assert len({skeleton(s) for s in shown.values()}) == len(raw)
    for name, text in shown.items():
        assert not any(invisible(c) for c in text) and text == text.strip(" ")
        text.encode("utf-8")
        if "…~" not in text:
            assert raw_name(text) == name


def _write_class(out: Path, raw: list[str]) -> dict[str, str]:
    """Each student's results.json as `grade` writes it (score: their index) into their folder."""
    shown, folders = display_names(raw), folder_names(raw, CLASS_OUTPUTS)
    for index, name in enumerate(raw):
        result = GradeResult(
            shown[name],
            "hash",
            float(index),
            63.0,
            [SectionScore("3.3", "3.3", float(index), 63.0)],
            [],
            [IntegrityNote("submission.file-link", name)],
            folder=folders[name],
        )
        (out / folders[name]).mkdir(parents=True)
        (out / folders[name] / "results.json").write_text(results_json(result, EN), encoding="utf-8")
    return folders


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(classes())
def test_each_folder_names_its_owner_and_no_csv_cell_starts_a_formula(raw):
    with tempfile.TemporaryDirectory() as base:
        out = Path(base) / "out"
        folders = _write_class(out, raw)
        results = []
        for name, folder in folders.items():
            document = json.loads((out / folder / "results.json").read_text(encoding="utf-8"))
            assert raw_name(document["submission"]) == name or "…~" in document["submission"]
            assert document["folder"] == folder
            results.append(
                GradeResult(
                    document["submission"],
                    "hash",
                    document["score"],
                    63.0,
                    [],
                    [],
                    [IntegrityNote("submission.file-link", name)],
                    folder=folder,
                )
            )
        rows = list(csv.reader(io.StringIO(gradebook_csv(results))))
        assert {row[-1] for row in rows[1:]} == set(folders.values())  # the mapping, exact
        cells = [cell for row in rows for cell in row]
        for lms in ("canvas", "moodle"):
            done = export(out, lms=lms, assignment="=cmd", catalog=EN, to=Path(base) / f"{lms}.csv")
            cells += [cell for row in csv.reader(io.StringIO(done.path.read_text(encoding="utf-8"))) for cell in row]
            assert not done.unreadable
        assert not [cell for cell in cells if starts_formula(cell)]


def test_every_csv_the_kit_writes_is_one_of_those_checked_above():
    """A new CSV writer must take spreadsheet_cell and join the property above."""
    writers = set()
    for path in (ROOT / "grader").rglob("*.py"):
        if re.search(r"csv\.(writer|DictWriter)\(", path.read_text(encoding="utf-8")):
            writers.add(path.relative_to(ROOT).as_posix())
    assert writers == {"grader/report/writers.py", "grader/classroom/lms_export.py"}


# -- names drawn like a classmate's with Unicode's look-alikes (confusables.txt) ------------------

from grader.intake.confusables import ASCII_PROTOTYPES, LOOKS_ASCII
from grader.intake.lookalikes import imitation, looks

# each ASCII letter -> the characters Unicode draws like it (as one character, after NFKC and NFD),
# of those this Python's Unicode database knows (any other is shown escaped as unassigned anyway)
DRAWN_LIKE = {
    letter: sorted(
        c
        for c, text in LOOKS_ASCII.items()
        if text == ASCII_PROTOTYPES.get(letter, letter) and unicodedata.category(c) != "Cn"
    )
    for letter in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
}
DRAWN_LIKE = {letter: chars for letter, chars in DRAWN_LIKE.items() if chars}
UNLISTED = "\u13c6\u0438\u03bb\u0576"  # Cherokee Ꮖ, Cyrillic и, Greek λ, Armenian ն: letters not in confusables.txt


@st.composite
def drawn_alike(draw) -> tuple[str, str, list[int]]:
    """(a name, a classmate's name drawn like it, where the look-alikes stand)."""
    name = draw(st.text(st.sampled_from(sorted(DRAWN_LIKE)), min_size=2, max_size=16))
    where = draw(st.lists(st.integers(0, len(name) - 1), min_size=1, max_size=len(name), unique=True))
    twin = list(name)
    for index in where:
        twin[index] = draw(st.sampled_from(DRAWN_LIKE[name[index]]))
    return name, "".join(twin), sorted(where)


@settings(max_examples=300, deadline=None)
@given(drawn_alike(), st.booleans())
@example(
    (
        "AAOCAAAAAACAAAA",
        "\u0391\u0391\U00010292\U000102a2\u0391\u0391" + "\U000102a0" * 4 + "\U000102a2\u0391\u0391\u0391\U000102a0",
        list(range(15)),
    ),
    False,
)
def test_a_name_drawn_like_a_classmates_is_shown_with_every_look_alike_escaped(case, imitated_first):
    """Property: whatever letters of confusables.txt a name borrows to pass for a classmate's, the
    two are shown differently and every borrowed character is shown escaped."""
    name, twin, where = case
    shown = display_names([name, twin] if imitated_first else [twin, name])
    assert shown[name] == name  # the classmate imitated keeps their name as it is
    assert looks(shown[twin]) != looks(shown[name]) and shown[twin] != shown[name]
    assert not [twin[i] for i in where if twin[i] in shown[twin]], shown[twin]
    if shown[twin].endswith("…~" + digest(twin)[:16]):  # escaped, too long to list whole: cut, marked
        assert len(shown[twin]) <= 120
    else:
        assert raw_name(shown[twin]) == twin


@settings(max_examples=200, deadline=None)
@given(drawn_alike(), st.sampled_from(UNLISTED), st.data())
def test_a_name_drawn_like_a_classmates_but_for_one_unlisted_letter_is_told_apart(case, unlisted, data):
    """Property: confusables.txt is not exhaustive (Cherokee Ꮖ passes for I in "ᎪᏞᏆᏟᎬ"): a name of
    look-alikes of another script with one letter Unicode does not list is still made visible."""
    name, twin, where = case
    assume(any(imitation(twin[i]) for i in where) and len(where) < len(name))
    spare = data.draw(st.sampled_from([i for i in range(len(name)) if i not in where]))
    twin = twin[:spare] + unlisted + twin[spare + 1 :]
    shown = display_names([name, twin])
    assert shown[name] == name
    assert [c for c in twin if not c.isascii() and c in shown[twin]] == [], shown[twin]


REAL_NAMES = ["张伟", "王伟", "José", "Zoë", "Иванов", "Сергей", "Άννα", "Søren", "Aydın", "O’Brien"]


@pytest.mark.parametrize(
    "real, classmate",
    [
        ("张伟", "Zhang Wei"),
        ("José", "Jose"),
        ("Zoë", "Zoe"),
        ("Иванов", "Ivanov"),
        ("Søren", "Soren"),
        ("Άννα", "Anna"),
    ],
)
def test_real_names_show_as_themselves_alone_and_beside_their_transliteration(real, classmate):
    assert display_names(REAL_NAMES) == {name: name for name in REAL_NAMES}
    assert display_names([real, classmate]) == {real: real, classmate: classmate}


def test_the_confusables_table_is_unicodes_characters_drawn_like_ascii():
    """grader/intake/confusables.py is generated (tools/make_confusables.py); what names rely on."""
    from grader.intake import confusables

    assert confusables.VERSION.count(".") == 2 and len(LOOKS_ASCII) > 600
    for char, text in LOOKS_ASCII.items():
        assert not char.isascii() and text.isascii() and text.isprintable() and text.strip()
        assert unicodedata.normalize("NFD", unicodedata.normalize("NFKC", char)) == char  # looked up after folding
    assert {c: LOOKS_ASCII[c] for c in "\u0585\u13aa\u0251\u0131\u0430\u03bf"} == dict(
        zip("\u0585\u13aa\u0251\u0131\u0430\u03bf", "oAaiao")
    )
    assert ASCII_PROTOTYPES["I"] == ASCII_PROTOTYPES["1"] == "l" and all(k.isascii() for k in ASCII_PROTOTYPES)
