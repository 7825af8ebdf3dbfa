"""timestamp.txt of a submission, read by the kit's rules for nbgrader.

nbgrader reads a submission's ``timestamp.txt`` with a plain ``open`` (a link to the terminal or a
named pipe: autograde and collect wait for ever) and hands its time zone to dateutil, which opens a
file of that name (``2024-01-01 00:00:00 /dev/stdin``); an unreadable one stops the command for the
class. Here timestamp.txt is read only as a regular file of at most MAX_TIMESTAMP_BYTES (no link),
and its time zone only when it is an offset, a plain abbreviation or a name of the time zone
database; anything else counts as no timestamp (nbgrader's own answer to a missing one), with a
warning. The course's config installs `read_timestamp` (see grader.classroom.nbgrader_files).
"""

from __future__ import annotations

import os
import re
import zoneinfo
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from grader.intake.files import Refused, read_file

MAX_TIMESTAMP_BYTES = 256
_ZONE_ABBREVIATION = re.compile(r"[A-Za-z]{1,10}")
_OFFSET = re.compile(r"[+-]?\d{1,4}")


@cache
def _zone_names() -> frozenset[str]:
    try:
        return frozenset(zoneinfo.available_timezones())
    except Exception:  # noqa: BLE001 - no time zone database: abbreviations and offsets only
        return frozenset()


def safe_zone(zone: str) -> bool:
    """Whether a time zone of a timestamp can be looked up without opening a file it names: an
    offset, a plain abbreviation (UTC, CET) or a name of the time zone database (Asia/Shanghai)."""
    return bool(_OFFSET.fullmatch(zone) or _ZONE_ABBREVIATION.fullmatch(zone) or zone in _zone_names())


def parse_timestamp(text: str) -> datetime | None:
    """A timestamp as nbgrader parses it (nbgrader.utils.parse_utc), or None when it cannot be read
    safely (a time zone that names a file, such as /dev/stdin) or at all."""
    from nbgrader.utils import parse_utc

    parts = text.split(" ")
    if len(parts) == 3 and not safe_zone(parts[2]):  # parse_utc would hand it to dateutil's gettz
        return None
    try:
        return parse_utc(text)
    except (ValueError, OverflowError, TypeError, LookupError):
        return None


def read_timestamp(folder: str, log: Any) -> datetime | None:
    """The time in FOLDER/timestamp.txt (see the module); None when there is none or it cannot be
    read safely, with a warning."""
    path = Path(folder) / "timestamp.txt"
    try:
        raw = read_file(path, MAX_TIMESTAMP_BYTES)
    except Refused as exc:
        if exc.reason != "gone":
            log.warning(
                "attention-kit: %s is not read (%s): the submission counts as having no timestamp", path, exc.reason
            )
        return None
    text = raw.decode("utf-8", "replace").strip()
    if not text:
        log.warning("Empty timestamp file: %s", path)
        return None
    parsed = parse_timestamp(text)
    if parsed is None:
        log.warning("attention-kit: %s holds no time it can read: the submission counts as having no timestamp", path)
    return parsed


_UNREADABLE = datetime.min  # sorts last: a readable entry of the same student is collected first


def inbound_record(self: Any, path: str) -> dict:
    """ExchangeCollect._path_to_record, the kit's way: an entry of the exchange's inbound/ whose name
    holds no timestamp nbgrader can read (a folder a student made by hand) stopped `nbgrader collect`
    for the class; here it is marked unreadable (see `readable_records`), read by `parse_timestamp`."""
    filename = os.path.split(path)[1]
    parts = filename.rsplit("+", 3)
    timestamp = parse_timestamp(parts[2]) if len(parts) >= 3 else None
    record = {"username": parts[0], "filename": filename, "timestamp": timestamp or _UNREADABLE}
    return record | ({"unreadable": True} if timestamp is None else {})


def readable_records(records: list[dict], log: Any) -> list[dict]:
    """The records collect chose (each student's newest), without unreadable ones: a student with
    only unreadable entries is not collected, with a warning, and the rest of the class is."""
    for record in records:
        if record.get("unreadable"):
            log.warning("attention-kit did not collect %s: its name holds no timestamp", record["filename"])
    return [record for record in records if not record.get("unreadable")]
