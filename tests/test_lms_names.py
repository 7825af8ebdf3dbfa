"""Who a file of an LMS download belongs to comes from the part of its name the LMS writes, never
from the part the student chose (issue 36, point 3): a student who names a file
``x_17_assignsubmission_file_ch3.ipynb`` or ``smith_17_9999_ch3.ipynb`` stays themselves, zipped
or unzipped, and `grade export` never writes two rows for one LMS id.

The names are generated as the LMSs write them: Moodle's folders and flat files (the full name with
its underscores made spaces, mod/assign/classes/downloader.php; digits and any script allowed),
Canvas's ``<login>[_LATE]_<user id>_<file id>_<file name>`` (the login is the sortable name in
lower case with only word characters kept, and ``_<digits>_`` inside it made ``<digits>``,
lib/content_zipper.rb `sanitize_user_name`, "because we use /_\\d+_/ to infer the user/attachment
ids"). The student's file names embed whatever looks like an LMS's prefix.
"""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from grader.classroom.lms_export import export
from grader.i18n import Catalog
from grader.intake.discovery import discover, read_candidate
from grader.intake.files import Entry
from grader.intake.lms import bulk_download
from tests.lms_downloads import unzip_to, write_zip

EN, ZH = Catalog("en"), Catalog("zh")
IDS = st.integers(1, 10**7)
WORDS = st.text(st.sampled_from("abcxyz0123456789_"), min_size=1, max_size=8)
NAME_CHARACTERS = st.sampled_from("AbcXyz 0123456789_-'.张伟é")


@st.composite
def lms_looking(draw, ids=IDS) -> str:
    """A file name a student might choose: plain, or embedding a Moodle or Canvas prefix."""
    ending = draw(st.sampled_from(["ch3.ipynb", "sec3_5_causal_attention.py", "hw_3_1.ipynb", "a.zip"]))
    shapes = [
        lambda: ending,
        lambda: f"{draw(WORDS)}_{draw(ids)}_assignsubmission_file_{ending}",
        lambda: f"{draw(WORDS)}_{draw(ids)}_assignsubmission_onlinetext_{ending}",
        lambda: f"{draw(WORDS)}_{draw(ids)}_{draw(ids)}_{ending}",
        lambda: f"{draw(WORDS)}_LATE_{draw(ids)}_{draw(ids)}_{ending}",
        lambda: f"anon_{draw(WORDS)}_{draw(ids)}_{ending}",
        lambda: f"{draw(ids)}_{draw(ids)}_{ending}",
        lambda: f"{draw(ids)}_assignsubmission_file_{ending}",
    ]
    return draw(st.sampled_from(shapes))()


@st.composite
def moodle_name(draw) -> str:
    name = draw(st.text(NAME_CHARACTERS, min_size=1, max_size=12)).replace("_", " ")  # as Moodle writes it
    assume(name.strip() and not name.startswith("."))
    return name


@st.composite
def canvas_login(draw) -> str:
    """A sortable name as Canvas's zipper writes it (never one that ends in `_<digits>`: Canvas's own
    re-import of graded files reads those as ids too, see grader.intake.lms)."""
    login = re.sub(r"[^\w]", "", draw(st.text(NAME_CHARACTERS, max_size=12)))
    login = re.sub(r"_(\d+)_", r"\1", login).lower()
    assume(not re.search(r"_\d+$", login) and not login.startswith("anon_"))
    return login


@st.composite
def moodle_class(draw):
    """{participant id: (full name, [student's file names])} with distinct ids."""
    ids = draw(st.lists(IDS, min_size=1, max_size=4, unique=True))
    return {i: (draw(moodle_name()), draw(st.lists(lms_looking(), min_size=1, max_size=3, unique=True))) for i in ids}


@st.composite
def canvas_class(draw):
    """{user id: (login, late, [student's file names])}."""
    ids = draw(st.lists(IDS, min_size=1, max_size=4, unique=True))
    return {
        i: (
            draw(canvas_login()),
            draw(st.booleans()),
            draw(st.lists(lms_looking(), min_size=1, max_size=3, unique=True)),
        )
        for i in ids
    }


def moodle_flat(people) -> dict[str, str]:
    """download name -> (participant id, the student's file name)."""
    return {f"{name}_{i}_assignsubmission_file_{f}": (str(i), f) for i, (name, files) in people.items() for f in files}


def canvas_flat(people) -> dict[str, tuple[str, str]]:
    out, file_id = {}, 7000
    for user, (login, late, files) in people.items():
        for f in files:
            file_id += 1
            prefix = "_".join([login, *(["LATE"] if late else []), str(user)])  # (an empty login too)
            out[f"{prefix}_{file_id}_{f}"] = (str(user), f)
    return out


def owners(students) -> dict[str, tuple[str, str]]:
    """download name -> (the LMS id it was given to, under which file name)."""
    return {entry: (s.identity.user_id, own) for s in students for own, entry in s.files}


@settings(max_examples=300, deadline=None)
@given(moodle_class())
def test_a_moodle_file_belongs_to_the_participant_whose_prefix_it_carries(people):
    names = moodle_flat(people)
    students = bulk_download([Entry(n, "file") for n in names])
    assert students is not None and {s.identity.lms for s in students} == {"moodle"}
    assert owners(students) == names
    assert {s.identity.user_id: s.identity.name for s in students} == {str(i): n for i, (n, _) in people.items()}


@settings(max_examples=300, deadline=None)
@given(canvas_class())
def test_a_canvas_file_belongs_to_the_user_whose_prefix_it_carries(people):
    names = canvas_flat(people)
    assume(len({f for _, f in names.values()}) == len(names))  # (no re-upload numbering to undo here)
    assume(not any(re.search(r"-[1-9]\d*\.", f) for _, f in names.values()))
    students = bulk_download([Entry(n, "file") for n in names])
    assert students is not None and {s.identity.lms for s in students} == {"canvas"}
    assert owners(students) == names
    assert {s.identity.user_id: (s.identity.name, s.identity.late) for s in students} == {
        str(i): (login or str(i), late) for i, (login, late, _) in people.items()
    }


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moodle_class(), st.booleans())
def test_zipped_or_unzipped_each_submission_keeps_its_own_participant_id(people, zipped):
    names = moodle_flat(people)
    with tempfile.TemporaryDirectory() as base:
        members = {name: b"{}" if name.endswith(".ipynb") else b"x = 1\n" for name in names}
        path = write_zip(Path(base) / "download.zip", members) if zipped else unzip_to(Path(base) / "d", members)
        found = discover(path)
        identities = {read_candidate(c).intake.identity for c in found.candidates}
    assert found.is_class
    assert {(who.user_id, who.name) for who in identities} == {(str(i), n) for i, (n, _) in people.items()}


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


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["canvas", "moodle"]),
    st.lists(st.tuples(st.sampled_from(["17", "23", "99"]), st.integers(0, 63)), min_size=1, max_size=6),
)
def test_the_export_writes_one_row_per_lms_id_and_none_for_an_id_two_submissions_carry(lms, submissions):
    with tempfile.TemporaryDirectory() as base:
        out = Path(base) / "reports"
        for n, (user_id, score) in enumerate(submissions):
            name = f"student{n}_{user_id}"
            (out / name).mkdir(parents=True)
            (out / name / "results.json").write_text(results(name, float(score), lms, user_id, f"student{n}"))
        done = export(out, lms=lms, assignment="Chapter 3", catalog=EN, to=Path(base) / "grades.csv")
        rows = list(csv.reader(io.StringIO((Path(base) / "grades.csv").read_text(encoding="utf-8"))))
    ids = [row[1] if lms == "canvas" else row[0].removeprefix("Participant ") for row in rows[1 + (lms == "canvas") :]]
    carried = [user_id for user_id, _ in submissions]
    assert sorted(ids) == sorted(i for i in set(carried) if carried.count(i) == 1)
    shared = sorted(i for i in set(carried) if carried.count(i) > 1)
    assert [entry.split(":")[0] for entry in done.same_lms_id] == shared
    for entry in done.same_lms_id:  # every submission that carries the id is named
        user_id = entry.split(":")[0]
        assert entry.count(f"_{user_id}") == carried.count(user_id)


def test_a_file_named_like_another_participant_gives_them_nothing(tmp_path):
    """The issue's case: x_17_assignsubmission_file_ch3.ipynb, from participant 23, in a download
    where 17 handed in and 99 did not."""
    for hostile in ("x_17_assignsubmission_file_ch3.ipynb", "x_99_assignsubmission_file_ch3.ipynb"):
        members = {
            "Wei Zhang_17_assignsubmission_file_ch3.ipynb": b"{}",
            f"Mallory Evil_23_assignsubmission_file_{hostile}": b"{}",
        }
        for path in (write_zip(tmp_path / "d.zip", members), unzip_to(tmp_path / hostile, members)):
            found = discover(path)
            assert sorted(read_candidate(c).intake.identity.user_id for c in found.candidates) == ["17", "23"]


def test_the_note_on_a_shared_id_is_said_in_both_languages():
    for catalog in (EN, ZH):
        text = catalog.t("deploy.cli.export-same-lms-id", names="17: a_17 / b_17")
        assert "a_17 / b_17" in text and "{" not in text
