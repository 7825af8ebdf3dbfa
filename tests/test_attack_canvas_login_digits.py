"""Round-four attack on Canvas names (borderline: it needs a student who can edit their own sortable
name, which Canvas allows when the account lets users edit their names). Canvas's zipper keeps a
login that ends in ``_<digits>`` (it only joins ``_<digits>_`` inside it), so a student whose login
is ``mallory_99`` (user 23, file 9001) is downloaded as ``mallory_99_23_9001_ch3.ipynb``. The kit
reads it from the left as user 99, file 23: `grade export` then writes Mallory's grade on the row of
Canvas user 99, who handed in nothing, with no note; with ``mallory_17`` beside Alice (user 17),
Alice gets no grade (one id, two submissions). The name can be read two ways; the kit picks one in
silence."""

from __future__ import annotations

import pytest

from grader.intake.files import Entry
from grader.intake.lms import bulk_download


@pytest.mark.xfail(strict=True, reason="a login ending in _99 is read as Canvas user 99 (a grade for someone else)")
def test_a_login_that_ends_in_digits_is_not_read_as_another_users_id():
    names = ["alice_17_9000_ch3.ipynb", "mallory_99_23_9001_ch3.ipynb"]
    students = bulk_download([Entry(name, "file") for name in names]) or []
    assert "99" not in {student.identity.user_id for student in students}
