"""`grade PATH` takes what the LMS gives (issue 24, point 2): a Canvas or Moodle bulk download, as
a zip or unzipped, is graded in one command, one submission per student (the latest re-upload
wins, and the report says so), each named by the LMS's identity, which gradebook.csv keeps and
`grade export` writes into the LMS's id columns. Zips are read by the intake's rules: a hostile
member costs only its owner."""

from __future__ import annotations

import csv
import io
import json
import stat
import zipfile
from pathlib import Path

import pytest

from grader.classroom.lms_export import export
from grader.i18n import LANGUAGES, Catalog
from grader.intake.archives import MAX_RATIO, RATIO_FROM, Zip
from grader.intake.discovery import DiscoveryError, discover, read_candidate
from grader.intake.files import Entry
from grader.intake.lms import bulk_download
from grader.run import grade
from tests.conftest import ROOT
from tests.lms_downloads import Hand, canvas_download, moodle_download, student_files, unzip_to, write_zip, zipped
from tests.student_notebooks import chapter_notebook, module_sources

EXAMPLES = ROOT / "examples" / "class"
STUDENTS = ["alice", "bob", "carol", "dave", "erin", "frank"]
USERS = {s: (f"{s}smith", 2001 + i) for i, s in enumerate(STUDENTS)}
PEOPLE = {s: (f"{s.title()} Smith", 801 + i) for i, s in enumerate(STUDENTS)}
CATALOG = Catalog("en")


def files(*names: str) -> list[Entry]:
    return [Entry(n, "file") for n in names]


# -- the names LMSs write -------------------------------------------------------------------------------


def test_canvas_file_names_are_read_as_canvas_writes_them():
    students = bulk_download(
        files(
            "smithjohn_1001_9001_sec3_5_causal_attention.py",
            "smithjohn_1001_9005_sec3_5_causal_attention-1.py",  # uploaded again: the later file
            "van_der_berg_LATE_1002_9002_ch3.ipynb",  # an underscore in the name; late
            "leeann_late_1003_9003_my_notebook_v2.ipynb",  # older Canvas: lower-case late
            "LATE_anon_x1Y2z_9004_sec3_3_simple_attention.py",  # an anonymous student
            "smithjohn_1001_text.html",  # a text entry: no file of code
        )
    )
    by_name = {s.name: s for s in students}
    assert set(by_name) == {"smithjohn_1001", "van_der_berg_1002", "leeann_1003", "anon_x1Y2z"}
    john = by_name["smithjohn_1001"]
    assert john.files == (("sec3_5_causal_attention.py", "smithjohn_1001_9005_sec3_5_causal_attention-1.py"),)
    assert [n.kind for n in john.again] == ["reuploaded"] and "sec3_5_causal_attention-1.py" in john.again[0].detail
    assert (john.identity.lms, john.identity.user_id, john.identity.name, john.identity.late) == (
        "canvas",
        "1001",
        "smithjohn",
        False,
    )
    assert by_name["van_der_berg_1002"].identity.late and by_name["leeann_1003"].identity.late
    assert by_name["van_der_berg_1002"].files == (("ch3.ipynb", "van_der_berg_LATE_1002_9002_ch3.ipynb"),)
    assert by_name["anon_x1Y2z"].identity.user_id == "anon_x1Y2z" and by_name["anon_x1Y2z"].identity.late


def test_the_latest_upload_wins_whatever_the_numbers_say():
    [student] = bulk_download(
        files("a_1_300_ch3-2.ipynb", "a_1_100_ch3.ipynb", "a_1_200_ch3-1.ipynb", "a_1_150_model-v2.py")
    )
    assert dict(student.files) == {"ch3.ipynb": "a_1_300_ch3-2.ipynb", "model-v2.py": "a_1_150_model-v2.py"}


def test_moodle_folders_and_flat_files_are_read_as_moodle_writes_them():
    folders = [
        Entry("Wei Zhang_17_assignsubmission_file", "folder"),  # Moodle 4.1 and later
        Entry("Wei Zhang_17_assignsubmission_onlinetext", "folder"),
        Entry("Wei Zhang_23_assignsubmission_file_", "folder"),  # before 4.1; a namesake, another id
        Entry("张伟_31_assignsubmission_onlinetext_", "folder"),  # only an online text
    ]
    students = {s.name: s for s in bulk_download(folders)}
    assert set(students) == {"Wei Zhang_17", "Wei Zhang_23", "张伟_31"}
    assert students["Wei Zhang_17"].folders == ("Wei Zhang_17_assignsubmission_file",)
    assert students["张伟_31"].folders == ()
    assert (students["Wei Zhang_23"].identity.lms, students["Wei Zhang_23"].identity.user_id) == ("moodle", "23")
    flat = bulk_download(files("Ann Lee_5_assignsubmission_file_ch3.ipynb", "Ann Lee_5_assignsubmission_file_x.py"))
    assert [(s.name, dict(s.files)) for s in flat] == [
        (
            "Ann Lee_5",
            {"ch3.ipynb": "Ann Lee_5_assignsubmission_file_ch3.ipynb", "x.py": "Ann Lee_5_assignsubmission_file_x.py"},
        )
    ]


def test_anything_else_is_no_bulk_download():
    assert bulk_download(files("sec3_3_simple_attention.py", "smithjohn_1001_9001_x.py")) is None
    assert bulk_download([Entry("alice", "folder"), Entry("bob", "folder")]) is None
    assert bulk_download(files("notes.txt")) is None


# -- grading a class from its downloads -------------------------------------------------------------------


def hands() -> dict[str, Hand]:
    """The example class as it hands in on an LMS: bob late (Canvas's LATE), frank late (older
    Canvas's late), carol uploads 3.5 three times (the untouched stub, the stub with a note, then
    her answer: -1 and -2 on Canvas), dave hands in a notebook of his own, erin a zip, the others
    their files."""
    out = {s: Hand(student_files(EXAMPLES / s)) for s in STUDENTS}
    out["bob"].late = True
    out["frank"].late, out["frank"].late_marker = True, "late"
    carol = out["carol"]
    final = carol.files["sec3_5_causal_attention.py"]
    stub = (ROOT / "grader" / "exercises" / "sec3_5_causal_attention.py").read_bytes()
    carol.files["sec3_5_causal_attention.py"] = stub
    carol.again = [
        {"sec3_5_causal_attention.py": stub + b"# still working on it\n"},
        {"sec3_5_causal_attention.py": final},
    ]
    out["dave"] = Hand({"ch3.ipynb": json.dumps(chapter_notebook(module_sources(EXAMPLES / "dave"), "demos")).encode()})
    out["erin"].as_zip = True
    return out


@pytest.fixture(scope="module")
def downloads(tmp_path_factory):
    base = tmp_path_factory.mktemp("lms")
    canvas, moodle = canvas_download(hands(), USERS), moodle_download(hands(), PEOPLE)
    paths = {
        "canvas.zip": write_zip(base / "canvas.zip", canvas),
        "moodle.zip": write_zip(base / "moodle.zip", moodle),
        "canvas-folder": unzip_to(base / "canvas-folder", canvas),
        "moodle-folder": unzip_to(base / "moodle-folder", moodle),
        "moodle-flat.zip": write_zip(base / "moodle-flat.zip", moodle_download(hands(), PEOPLE, folders=False)),
    }
    out = {"folder": grade(EXAMPLES, base / "out" / "folder", jobs=2, force=True)}
    for name, path in paths.items():
        out[name] = grade(path, base / "out" / name, jobs=2, force=True)
    return out


def gradebook(summary) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((summary.out_dir / "gradebook.csv").read_text(encoding="utf-8"))))


@pytest.mark.parametrize("download", ["canvas.zip", "canvas-folder", "moodle.zip", "moodle-folder", "moodle-flat.zip"])
def test_a_download_grades_every_student_once_as_the_class_folder_does(downloads, download):
    summary = downloads[download]
    folder_scores = {r.submission: r.score for r in downloads["folder"].results}
    people = USERS if download.startswith("canvas") else PEOPLE
    expected = {
        (f"{login}_{number}" if download.startswith("canvas") else f"{login}_{number}"): folder_scores[s]
        for s, (login, number) in people.items()
    }
    assert summary.is_class and len(summary.results) == len(STUDENTS)
    assert {r.submission: r.score for r in summary.results} == expected
    rows = {row["student"]: row for row in gradebook(summary)}
    assert set(rows) == set(expected)
    lms = "canvas" if download.startswith("canvas") else "moodle"
    for student, (login, number) in people.items():
        row = rows[f"{login}_{number}"]
        assert (row["lms"], row["lms_id"], row["lms_name"]) == (lms, str(number), login)
        assert row["late"] == ("late" if student in ("bob", "frank") and lms == "canvas" else "")


def test_a_re_upload_is_graded_at_its_latest_and_the_report_says_so(downloads):
    summary = downloads["canvas.zip"]
    login, number = USERS["carol"]
    carol = next(r for r in summary.results if r.submission == f"{login}_{number}")
    [remark] = carol.intake.remarks
    uploads = "sec3_5_causal_attention.py, sec3_5_causal_attention-1.py, sec3_5_causal_attention-2.py"
    assert (remark.kind, remark.detail) == ("reuploaded", f"sec3_5_causal_attention-2.py ({uploads})")
    feedback = (summary.out_of[carol.submission] / "feedback.md").read_text(encoding="utf-8")
    assert "only the latest upload, the first name, was graded" in feedback and uploads in feedback
    assert "Canvas user id `2003`" in feedback
    for late in ("bobsmith", "franksmith"):
        student = next(r for r in summary.results if r.submission.startswith(late))
        assert "Canvas marked this submission late." in (summary.out_of[student.submission] / "feedback.md").read_text()


def test_a_notebook_and_a_zip_handed_in_are_found(downloads):
    for result in downloads["moodle.zip"].results:
        found = {f.module: f for f in result.intake.modules}
        if result.submission.startswith("Dave"):
            assert {f.how for f in found.values()} == {"recognised"}
        elif result.submission.startswith("Erin"):
            assert found["sec3_3_simple_attention"].file == "sec3_3_simple_attention.py"


@pytest.mark.parametrize("download, lms", [("canvas.zip", "canvas"), ("moodle.zip", "moodle")])
def test_the_export_fills_the_lms_id_columns_without_a_roster(downloads, download, lms, tmp_path):
    summary = downloads[download]
    done = export(summary.out_dir, lms=lms, assignment="Chapter 3", catalog=CATALOG, to=tmp_path / "grades.csv")
    rows = list(csv.reader(io.StringIO((tmp_path / "grades.csv").read_text(encoding="utf-8"))))
    scores = {r.intake.identity.user_id: r.score for r in summary.results}
    assert done.rows == len(STUDENTS) and done.no_lms_id == []
    if lms == "canvas":
        assert (
            rows[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
            and rows[1][0] == "Points Possible"
        )
        assert {row[1]: float(row[5]) for row in rows[2:]} == scores
        assert {row[0] for row in rows[2:]} == {login for login, _ in USERS.values()}
    else:  # the assignment's grading worksheet: its importer reads Identifier, Grade, Last modified (grade)
        assert rows[0] == ["Identifier", "Full name", "Grade", "Last modified (grade)"]
        assert {row[0].removeprefix("Participant "): float(row[2]) for row in rows[1:]} == scores
        assert all(row[0].startswith("Participant ") and row[3] for row in rows[1:])


# -- hostile zips cost only their owner ------------------------------------------------------------------


def member(name: str, data: bytes, mode: int | None = None) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    if mode is not None:
        info.create_system = 3
        info.external_attr = mode << 16
    return info, data


def hostile_zip(path: Path, honest: dict[str, bytes]) -> Path:
    """A Moodle download: honest students, and mallory, whose every hostile member names a module."""
    own = "Mallory Evil_99_assignsubmission_file/"
    modules = student_files(EXAMPLES / "alice")
    members = [member(name, data) for name, data in honest.items()] + [
        member(own + "sec3_3_simple_attention.py", b"/etc/passwd", stat.S_IFLNK | 0o777),  # a link
        member(own + "../../sec3_4_self_attention.py", modules["sec3_4_self_attention.py"]),  # ../
        member("/" + own + "sec3_5_causal_attention.py", modules["sec3_5_causal_attention.py"]),  # absolute
        member(own + "sec3_6_multi_head_attention.py", b"#" * (MAX_RATIO * RATIO_FROM // 100)),  # a bomb
        member(own + "exercise3_1_weight_transfer.py", modules["exercise3_1_weight_transfer.py"]),
        member(own + "EXERCISE3_1_weight_transfer.py", b"raise SystemExit"),  # the same name, other case
        member(own + "exercise3_2_two_dim_output.py", modules["exercise3_2_two_dim_output.py"]),
        member(own + "exercise3_2_two_dim\u200b_output.py", b"raise SystemExit"),  # an invisible character
        member(own + "exercise3_3_gpt2_attention.py", modules["exercise3_3_gpt2_attention.py"]),
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for info, data in members:
            archive.writestr(info, data)
    path.write_bytes(encrypted(buffer.getvalue(), (own + "exercise3_3_gpt2_attention.py").encode()))
    return path


def encrypted(data: bytes, name: bytes) -> bytes:
    """The zip with member NAME marked encrypted (bit 0 of its flags, in its local and central
    headers), as a zip with a password has it."""
    out = bytearray(data)
    for signature, flags_at, name_at in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        start = 0
        while (start := out.find(signature, start)) >= 0:
            length = (
                int.from_bytes(out[start + name_at - 4 : start + name_at - 2], "little")
                if signature == b"PK\x03\x04"
                else int.from_bytes(out[start + 28 : start + 30], "little")
            )
            if bytes(out[start + name_at : start + name_at + length]) == name:
                out[start + flags_at] |= 0x1
            start += 4
    return bytes(out)


EXPECTED_REFUSALS = {
    "sec3_3_simple_attention.py": "submission.file-zip-link",
    "sec3_4_self_attention.py": "submission.file-zip-path",
    "sec3_5_causal_attention.py": "submission.file-zip-path",
    "sec3_6_multi_head_attention.py": "submission.file-zip-bomb",
    "exercise3_1_weight_transfer.py": "submission.file-zip-duplicate",
    "exercise3_2_two_dim_output.py": "submission.file-zip-duplicate",
    "exercise3_3_gpt2_attention.py": "submission.file-zip-encrypted",
}


def test_every_hostile_member_is_refused_and_costs_only_its_owner(tmp_path):
    honest = moodle_download({s: Hand(student_files(EXAMPLES / s)) for s in ("alice", "bob")}, PEOPLE)
    found = discover(hostile_zip(tmp_path / "download.zip", honest))
    submissions = {c.name: read_candidate(c) for c in found.candidates}
    assert set(submissions) == {"Alice Smith_801", "Bob Smith_802", "Mallory Evil_99"}
    mallory = submissions["Mallory Evil_99"]
    assert mallory.sources == {}
    refused = {note.detail: note.kind for note in mallory.problems}
    assert refused == EXPECTED_REFUSALS  # (the twins named unlike any module are never read)
    for lang in LANGUAGES:
        assert all(Catalog(lang).has(f"integrity.{kind}") for kind in refused.values())
    for name in ("Alice Smith_801", "Bob Smith_802"):
        assert len(submissions[name].sources) == 7 and submissions[name].problems == ()


def test_a_hostile_student_never_stops_the_class(tmp_path):
    honest = moodle_download({s: Hand(student_files(EXAMPLES / s)) for s in ("alice", "bob")}, PEOPLE)
    summary = grade(hostile_zip(tmp_path / "download.zip", honest), tmp_path / "out", jobs=2, force=True)
    scores = {r.submission: r.score for r in summary.results}
    assert scores["Alice Smith_801"] == 63 and scores["Bob Smith_802"] == 53 and scores["Mallory Evil_99"] == 0
    assert not list((tmp_path / "out").rglob("passwd")) and not (tmp_path / "sec3_4_self_attention.py").exists()


def test_a_student_zip_that_is_no_zip_is_only_their_note(tmp_path):
    members = canvas_download({"alice": Hand(student_files(EXAMPLES / "alice"))}, USERS)
    members["mallory_7_1_ch3.zip"] = b"PK\x03\x04 not really a zip"
    found = discover(write_zip(tmp_path / "canvas.zip", members))
    submissions = {c.name: read_candidate(c) for c in found.candidates}
    assert [(n.kind, n.detail) for n in submissions["mallory_7"].problems] == [("submission.file-not-a-zip", "ch3.zip")]
    assert len(submissions["alicesmith_2001"].sources) == 7


def test_a_zip_of_one_submission_or_of_a_class_folder(tmp_path):
    alice = student_files(EXAMPLES / "alice")
    single = discover(write_zip(tmp_path / "alice.zip", {f"ch3/{n}": d for n, d in alice.items()}))
    assert not single.is_class and [c.name for c in single.candidates] == ["alice"]
    assert len(read_candidate(single.candidates[0]).sources) == 7
    klass = {f"class/{s}/{n}": d for s in ("alice", "bob") for n, d in student_files(EXAMPLES / s).items()}
    found = discover(write_zip(tmp_path / "class.zip", klass))
    assert found.is_class and [c.name for c in found.candidates] == ["alice", "bob"]
    folder = tmp_path / "inbox"
    folder.mkdir()
    write_zip(folder / "download.zip", klass)
    assert [c.name for c in discover(folder).candidates] == ["alice", "bob"]  # the folder the zip was saved in
    (tmp_path / "broken.zip").write_bytes(b"not a zip")
    with pytest.raises(DiscoveryError) as caught:
        discover(tmp_path / "broken.zip")
    assert caught.value.key == "discovery.not-a-zip" and all(Catalog(lang).has(caught.value.key) for lang in LANGUAGES)


def test_a_member_that_holds_more_than_it_says_is_refused(tmp_path):
    data = zipped({"sec3_3_simple_attention.py": b"x = 1\n" * 100})
    archive = Zip(data)
    [entry] = archive.members
    entry.info.file_size = 10  # a central directory that lies
    with pytest.raises(Exception) as caught:
        archive.read(entry, 1024)
    assert getattr(caught.value, "reason", "") == "zip-damaged"


CANVAS_HOSTILE = {  # mallory's members in a Canvas download -> what mallory is told
    "dotdot": ([member("../../mallory_99_1_sec3_4_self_attention.py", b"x = 1")], ["submission.file-zip-path"]),
    "absolute": ([member("/mallory_99_2_sec3_5_causal_attention.py", b"x = 1")], ["submission.file-zip-path"]),
    "link": (
        [member("mallory_99_3_sec3_3_simple_attention.py", b"/etc/passwd", stat.S_IFLNK | 0o777)],
        ["submission.file-zip-link"],
    ),
    "case twins": (
        [
            member("mallory_99_4_sec3_3_simple_attention.py", b"x = 1"),
            member("mallory_99_4_SEC3_3_simple_attention.py", b""),
        ],
        ["submission.file-zip-duplicate"],
    ),
    "invisible twins": (
        [
            member("mallory_99_4_sec3_3_simple_attention.py", b"x = 1"),
            member("mallory_99_4_sec3_3_simple\u200b_attention.py", b""),
        ],
        ["submission.file-zip-duplicate"],
    ),
    "a bomb in the student's own zip": (
        [
            member(
                "mallory_99_8_ch3.zip", zipped({"sec3_3_simple_attention.py": b"#" * (MAX_RATIO * RATIO_FROM // 100)})
            )
        ],
        ["submission.file-zip-bomb"],
    ),
    "a folder named as a module": (
        [member("mallory_99_5_sec3_3_simple_attention.py/x.py", b"x = 1")],
        ["submission.file-folder"],
    ),
    "a folder escaping": ([member("mallory_99_6_a/../../sec3_3_simple_attention.py", b"x = 1")], []),
    "a bomb": (
        [member("mallory_99_7_sec3_3_simple_attention.py", b"#" * (MAX_RATIO * RATIO_FROM // 100))],
        ["submission.file-zip-bomb"],
    ),
}


@pytest.mark.parametrize("case", CANVAS_HOSTILE)
def test_a_hostile_member_of_a_canvas_download_costs_only_its_owner(tmp_path, case):
    """Canvas writes one flat folder of files: a member that escapes, links, hides in a folder (Canvas
    writes none), is a bomb or a case twin is refused for the student its name gives, and the
    download is still Canvas's, every other student read in full."""
    members, told = CANVAS_HOSTILE[case]
    honest = canvas_download({s: Hand(student_files(EXAMPLES / s)) for s in ("alice", "bob")}, USERS)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in honest.items():
            archive.writestr(name, data)
        for info, data in members:
            archive.writestr(info, data)
    (tmp_path / "canvas.zip").write_bytes(buffer.getvalue())
    found = discover(tmp_path / "canvas.zip")
    submissions = {c.name: read_candidate(c) for c in found.candidates}
    assert found.is_class and set(submissions) == {"alicesmith_2001", "bobsmith_2002", "mallory_99"}
    assert submissions["mallory_99"].sources == {}
    assert [note.kind for note in submissions["mallory_99"].problems] == told
    for name in ("alicesmith_2001", "bobsmith_2002"):
        assert len(submissions[name].sources) == 7 and submissions[name].problems == ()
