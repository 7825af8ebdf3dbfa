"""Blackboard Learn's and Brightspace's bulk downloads and grade imports (issue 39, point 3), with the
guarantees Canvas and Moodle have (issue 36, point 3): the id comes from the part of a name the
LMS writes, read from the left, never from the student's file name; one row per id; a later
attempt is graded and the report says which were not.

Names are generated as each LMS writes them (grader/lms/blackboard.py and brightspace.py cite the
shapes followed): Blackboard's ``<assignment>_<username>_attempt_<date>_<file name>`` with the
attempt's ``.txt`` ("Name: <Full Name> (<username>)"), Brightspace's ``<submission id>-<user id> -
<Full Name> - <date>`` folders (and older flat files) beside ``index.html``; titles, usernames and
full names hold underscores, digits and spaces; students' file names embed what looks like a prefix.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.classroom.lms_export import ExportError, export
from grader.i18n import Catalog
from grader.intake.discovery import discover, read_candidate
from grader.intake.files import Entry
from grader.intake.lms import bulk_download
from tests.lms_downloads import unzip_to, write_zip

EN, ZH = Catalog("en"), Catalog("zh")
WORD = st.text(st.sampled_from("abcxyz019_."), min_size=1, max_size=8).filter(lambda w: w.strip("_") == w)
DATES = st.builds(
    lambda y, m, d, h, i, s: f"{y}-{m:02d}-{d:02d}-{h:02d}-{i:02d}-{s:02d}",
    st.integers(2020, 2030),
    st.integers(1, 12),
    st.integers(1, 28),
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 59),
)
ENDINGS = st.sampled_from(["ch3.ipynb", "sec3_5_causal_attention.py", "a.zip"])


@st.composite
def own_file(draw) -> str:
    """A file name a student might choose, embedding prefixes of Blackboard, Brightspace, Canvas, Moodle."""
    ending = draw(ENDINGS)
    return draw(
        st.sampled_from(
            [
                ending,
                f"{draw(WORD)}_{draw(WORD)}_attempt_{draw(DATES)}_{ending}",
                f"x_attempt_{draw(DATES)}.txt.{ending}",
                f"{draw(st.integers(1, 999))}-{draw(st.integers(1, 999))} - Eve - Oct 1, 2024 1011 PM - {ending}",
                f"{draw(WORD)}_17_assignsubmission_file_{ending}",
                f"{draw(WORD)}_17_9999_{ending}",
            ]
        )
    )


@st.composite
def blackboard_class(draw):
    """(assignment title, {username: (full name, {date: [the student's file names]})})."""
    title = draw(st.text(st.sampled_from("HW 3_a1"), min_size=1, max_size=10).filter(lambda t: t.strip() == t))
    usernames = draw(st.lists(WORD, min_size=1, max_size=4, unique=True))
    people = {}
    for username in usernames:
        dates = draw(st.lists(DATES, min_size=1, max_size=2, unique=True))
        people[username] = (
            draw(st.sampled_from(["Wei Zhang", "Ann Lee", "O'Brien 2"])),
            {date: draw(st.lists(own_file(), min_size=1, max_size=2, unique=True)) for date in dates},
        )
    return title, people


def blackboard_names(title: str, people) -> dict[str, bytes]:
    members = {}
    for username, (full, attempts) in people.items():
        for date, files in attempts.items():
            head = f"{title}_{username}_attempt_{date}"
            members[f"{head}.txt"] = f"Name: {full} ({username})\nAssignment: {title}\n".encode()
            members |= {f"{head}_{f}": b"x = 1\n" for f in files}
    return members


def peek_into(members: dict[str, bytes]):
    return lambda name: members.get(name)


@settings(max_examples=300, deadline=None)
@given(blackboard_class())
def test_a_blackboard_file_belongs_to_the_username_its_attempt_names(download):
    title, people = download
    members = blackboard_names(title, people)
    students = bulk_download([Entry(n, "file") for n in members], peek_into(members))
    assert students is not None and {s.identity.lms for s in students} == {"blackboard"}
    got = {s.identity.user_id: (s.identity.name, dict(s.files), [n.kind for n in s.again]) for s in students}
    expected = {}
    for username, (full, attempts) in people.items():
        latest = max(attempts)
        files = {f: f"{title}_{username}_attempt_{latest}_{f}" for f in attempts[latest]}
        expected[username] = (full, files, ["attempts"] if len(attempts) > 1 else [])
    assert got == expected


@st.composite
def brightspace_class(draw):
    """{user id: (full name, {submission id: (date, [the student's file names])})}, flat or folders."""
    users = draw(st.lists(st.integers(1, 10**6), min_size=1, max_size=4, unique=True))
    submission_ids = iter(draw(st.lists(st.integers(1, 10**6), min_size=8, max_size=8, unique=True)))
    people = {}
    for user in users:
        full = draw(st.sampled_from(["Wei Zhang", "Ann Lee-Smith", "Jean - Paul 2", "x_17_9999"]))
        count = draw(st.integers(1, 2))
        people[user] = (
            full,
            {
                next(submission_ids): (
                    f"Oct {draw(st.integers(1, 28))}, 2024 1011 PM",
                    draw(st.lists(own_file(), min_size=1, max_size=2, unique=True)),
                )
                for _ in range(count)
            },
        )
    return people


def brightspace_names(people, folders: bool) -> dict[str, bytes]:
    members = {"index.html": b"<table></table>"}
    for user, (full, submissions) in people.items():
        for submission, (date, files) in submissions.items():
            for f in files:
                name = (
                    f"{submission}-{user} - {full} - {date}/{f}"
                    if folders
                    else f"{submission}-{user} - {full}- {date} - {f}"
                )
                members[name] = b"x = 1\n"
    return members


@settings(max_examples=300, deadline=None)
@given(brightspace_class(), st.booleans())
def test_a_brightspace_submission_belongs_to_the_user_id_it_starts_with(people, folders):
    members = brightspace_names(people, folders)
    top = sorted({name.split("/")[0] for name in members})
    entries = [Entry(n, "folder" if folders and n != "index.html" else "file") for n in top]
    students = bulk_download(entries)
    assert students is not None and {s.identity.lms for s in students} == {"brightspace"}
    for student in students:
        full, submissions = people[int(student.identity.user_id)]
        latest = max(submissions)
        date, files = submissions[latest]
        assert student.identity.name == full
        if folders:
            assert student.folders == (f"{latest}-{student.identity.user_id} - {full} - {date}",)
        else:
            assert sorted(dict(student.files)) == sorted(files)
        assert [n.kind for n in student.again] == (["attempts"] if len(submissions) > 1 else [])
    assert sorted(int(s.identity.user_id) for s in students) == sorted(people)


@pytest.mark.parametrize("zipped", [False, True])
def test_a_blackboard_download_is_graded_by_username_zipped_or_not(tmp_path, zipped):
    people = {
        "j_smith": ("Jane Smith", {"2024-10-15-22-11-03": ["ch3.ipynb"]}),
        "mallory": ("Mallory Evil", {"2024-10-15-22-11-04": ["HW_3_j_smith_attempt_2024-10-16-00-00-00_ch3.ipynb"]}),
    }
    members = {n: (b"{}" if n.endswith(".ipynb") else d) for n, d in blackboard_names("HW_3", people).items()}
    path = write_zip(tmp_path / "gradebook.zip", members) if zipped else unzip_to(tmp_path / "gradebook", members)
    found = discover(path)
    identities = sorted((read_candidate(c).intake.identity.user_id, c.name) for c in found.candidates)
    assert identities == [("j_smith", "j_smith"), ("mallory", "mallory")]


# -- the grade imports ------------------------------------------------------------------------------


def results(name: str, score: float, lms: str, user_id: str, who: str) -> str:
    return json.dumps(
        {
            "submission": name,
            "score": score,
            "max_score": 63.0,
            "tests": [],
            "integrity": [],
            "sections": [{"id": "3.5", "title": "3.5", "score": score, "max_score": 63.0}],
            "lms": {"lms": lms, "user_id": user_id, "name": who, "late": False},
        }
    )


def graded(base: Path, students: list[tuple[str, float, str, str, str]]) -> Path:
    out = base / "reports"
    for name, score, lms, user_id, who in students:
        (out / name).mkdir(parents=True)
        (out / name / "results.json").write_text(results(name, score, lms, user_id, who))
    return out


def rows_of(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_the_blackboard_export_writes_one_row_per_username(tmp_path):
    out = graded(
        tmp_path,
        [
            ("jsmith", 63.0, "blackboard", "jsmith", "Jane"),
            ("bob", 9.0, "blackboard", "bob", "Bob"),
            ("bob2", 5.0, "blackboard", "bob", "Bob"),
        ],
    )
    done = export(out, lms="blackboard", assignment="Chapter 3", catalog=EN, to=tmp_path / "bb.csv")
    assert rows_of(tmp_path / "bb.csv") == [["Username", "Chapter 3"], ["jsmith", "63"]]
    assert done.same_lms_id == ["bob: bob / bob2"] and done.identity_column == "Username"


def test_a_blackboard_roster_gives_the_existing_column_its_id(tmp_path):
    out = graded(tmp_path, [("jsmith", 63.0, "blackboard", "jsmith", "Jane")])
    roster = tmp_path / "gc.csv"
    roster.write_text(
        '"Last Name","First Name","Username","Student ID","Chapter 3 [Total Pts: 63 Score] |12345"\n'
        '"Smith","Jane","jsmith","007",""\n'
    )
    export(out, lms="blackboard", assignment="Chapter 3", catalog=EN, roster=roster, to=tmp_path / "bb.csv")
    assert rows_of(tmp_path / "bb.csv") == [
        ["Last Name", "First Name", "Username", "Student ID", "Chapter 3 [Total Pts: 63 Score] |12345"],
        ["Smith", "Jane", "jsmith", "007", "63"],
    ]


def test_brightspace_needs_its_roster_and_matches_by_the_name_the_download_writes(tmp_path):
    out = graded(
        tmp_path,
        [
            ("Wei Zhang_11", 63.0, "brightspace", "11", "Wei Zhang"),
            ("Ann Lee_12", 30.0, "brightspace", "12", "Ann Lee"),
            ("Bo Li_13", 20.0, "brightspace", "13", "Bo Li"),
        ],
    )
    with pytest.raises(ExportError) as error:
        export(out, lms="brightspace", assignment="Chapter 3", catalog=EN)
    assert error.value.key == "needs-roster"
    roster = tmp_path / "grades.csv"
    roster.write_text(
        "OrgDefinedId,Username,Last Name,First Name,Email,End-of-Line Indicator\n"
        "#1001,#wzhang,Zhang,Wei,w@x,#\n#1002,#alee,Lee,Ann,a@x,#\n#1003,#alee2,Lee,Ann,a2@x,#\n"
    )
    done = export(out, lms="brightspace", assignment="Chapter 3", catalog=EN, roster=roster, to=tmp_path / "d2l.csv")
    assert rows_of(tmp_path / "d2l.csv") == [
        ["OrgDefinedId", "Username", "Chapter 3 Points Grade <Numeric MaxPoints:63>", "End-of-Line Indicator"],
        ["#1001", "#wzhang", "63", "#"],
    ]
    assert done.ambiguous_rows == ["Ann Lee_12"] and done.unmatched == ["Bo Li_13"]


def test_the_new_messages_are_said_in_both_languages():
    for catalog in (EN, ZH):
        for key, params in (
            ("deploy.cli.export-blackboard-next", {}),
            ("deploy.cli.export-brightspace-next", {}),
            ("export.error.needs-roster", {"lms": "Brightspace"}),
            ("found.identity-blackboard", {"name": "N", "user_id": "u"}),
            ("found.identity-brightspace", {"name": "N", "user_id": "u"}),
            ("found.remark.attempts", {"detail": "d"}),
        ):
            assert "{" not in catalog.t(key, **params)


def test_a_blackboard_download_with_numeric_usernames_is_not_taken_for_canvas():
    """``Lab_1_20231234_attempt_...`` reads as Canvas too (login lab, user 1, file 20231234): but
    Canvas never gives two files one id, and the attempt's .txt is Blackboard's."""
    people = {str(n): ("A B", {"2024-10-15-22-11-03": ["ch3.ipynb"]}) for n in (20231234, 20231235)}
    members = blackboard_names("Lab_1", people)
    students = bulk_download([Entry(n, "file") for n in members], peek_into(members))
    assert students is not None and sorted(s.identity.user_id for s in students) == ["20231234", "20231235"]
    assert {s.identity.lms for s in students} == {"blackboard"}


@pytest.mark.parametrize("lms", ["blackboard", "brightspace"])
def test_odd_folder_names_stay_inert_cells(tmp_path, lms):
    """Without a download's ids, students are their folder names: each cell stays inert text."""
    odd = ['=HYPERLINK("http://evil.example","x")', "+1 555", "@SUM(A1:A9)", "two\nlines", "李雷"]
    out = tmp_path / "reports"
    for i, name in enumerate(odd):
        (out / f"s{i}").mkdir(parents=True)
        (out / f"s{i}" / "results.json").write_text(
            json.dumps(
                {"submission": name, "score": 1.0, "max_score": 63.0, "tests": [], "integrity": [], "sections": []}
            )
        )
    done = export(out, lms=lms, assignment="=cmd|' /C calc'!A0", catalog=EN, to=tmp_path / "out.csv")
    rows = rows_of(tmp_path / "out.csv")
    assert done.rows == len(odd) and len(rows) == len(odd) + 1
    assert all(not cell.startswith(("=", "+", "-", "@")) and "\n" not in cell for row in rows for cell in row)
