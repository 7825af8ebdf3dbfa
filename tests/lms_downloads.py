"""Bulk downloads as Canvas and Moodle make them, built from a class folder (one folder per student).

Canvas (lib/content_zipper.rb of instructure/canvas-lms): one flat zip; each uploaded file named
``<sortable name, lower case, letters/digits/_ only>[_LATE]_<user id>_<file id>_<file name>``; a
file uploaded again under a taken name is ``<stem>-1<ext>``, ``-2``... (a higher file id).
Moodle (mod/assign/classes/downloader.php of moodle/moodle): a zip of folders
``<Full Name>_<participant id>_assignsubmission_file`` (``..._file_`` before Moodle 4.1) holding the
files under their own names (or, without "download in folders", flat
``<Full Name>_<participant id>_assignsubmission_file_<file name>``), and ``..._onlinetext_`` folders.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Hand:
    """How one student handed in: their files (name -> bytes), as the LMS lists them."""

    files: dict[str, bytes]
    late: bool = False
    # uploaded again later, round by round (Canvas numbers them -1, -2...): name -> newer bytes
    again: list[dict[str, bytes]] = field(default_factory=list)
    as_zip: bool = False  # the student uploaded one zip of their files
    late_marker: str = "LATE"  # current Canvas; older Canvas wrote "late"


def student_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix in (".py", ".ipynb")}


def zipped(files: dict[str, bytes], folder: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(f"{folder}{name}", data)
    return buffer.getvalue()


CANVAS_USERS = {"alice": ("smithalice", 1001), "bob": ("jonesbob", 1002), "carol": ("leecarol", 1003)}


def canvas_name(login: str, user: int, file_id: int, original: str, late: str = "") -> str:
    return f"{login}{'_' + late if late else ''}_{user}_{file_id}_{original}"


def canvas_download(hands: dict[str, Hand], users: dict[str, tuple[str, int]]) -> dict[str, bytes]:
    """member name -> bytes of a Canvas "Download Submissions" zip."""
    members: dict[str, bytes] = {}
    file_id = 5000
    for student, hand in hands.items():
        login, user = users[student]
        uploads = {f"{student}_ch3.zip": zipped(hand.files, "ch3/")} if hand.as_zip else dict(hand.files)
        late = hand.late_marker if hand.late else ""
        for original, data in uploads.items():
            file_id += 1
            members[canvas_name(login, user, file_id, original, late)] = data
        for number, uploaded in enumerate(hand.again, start=1):
            for original, data in uploaded.items():
                file_id += 10
                stem, _, suffix = original.rpartition(".")
                members[canvas_name(login, user, file_id, f"{stem}-{number}.{suffix}", late)] = data
    return members


def moodle_download(
    hands: dict[str, Hand], people: dict[str, tuple[str, int]], folders: bool = True
) -> dict[str, bytes]:
    """member name -> bytes of a Moodle "Download all submissions" zip (`folders`: in folders)."""
    members: dict[str, bytes] = {}
    for student, hand in hands.items():
        full_name, participant = people[student]
        prefix = f"{full_name}_{participant}_assignsubmission_"
        latest = dict(hand.files)
        for uploaded in hand.again:
            latest |= uploaded  # Moodle keeps only a file's latest upload
        uploads = {"ch3.zip": zipped(latest, "ch3/")} if hand.as_zip else latest
        for original, data in uploads.items():
            members[f"{prefix}file/{original}" if folders else f"{prefix}file_{original}"] = data
        members[f"{prefix}onlinetext_/onlinetext.html" if folders else f"{prefix}onlinetext_onlinetext.html"] = (
            b"<p>see my files</p>"
        )
    return members


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    path.write_bytes(zipped(members))
    return path


def unzip_to(folder: Path, members: dict[str, bytes]) -> Path:
    for name, data in members.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return folder
