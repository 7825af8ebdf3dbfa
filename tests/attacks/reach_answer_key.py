"""Appended to a correct module: attention_scores tries to reach what student code must never
see, with or without bubblewrap: the kit's checkout (the solutions, the hidden suites, its git
folder, the kit's cache of the reference's outputs), the class (a classmate's files), the reports (the reference's cached outputs) and the
grading process's command line (a process of the host: /proc shows a child its own only). It
raises with what it reached; nothing reached, the correct scores."""
import os as _os

_REACH = ["{REPO}/solutions/sec3_3_simple_attention.py", "{REPO}/grader/suites/hidden",
          "{REPO}/.git", "{GIT}", "{REPO}", "{REPO}/grader/.cache",
          "{CLASS}", "{CLASS}/classmate/sec3_3_simple_attention.py",
          "{OUT}", "{OUT}/.grader-cache", "{OUT}/.grader-cache/answer-key-test.bin",
          "/proc/{GRADER}/cmdline"]


def _reached() -> list:
    reached = []
    for path in _REACH:
        try:
            if _os.path.isdir(path):
                _os.listdir(path)
            else:
                with open(path, "rb") as handle:
                    handle.read(1)
            reached.append(path)
        except OSError:
            pass
    try:
        import solutions  # noqa: F401
        reached.append("import solutions")
    except (ImportError, OSError):  # not found, or found where it cannot be read
        pass
    return reached


_plain_attention_scores = attention_scores


def attention_scores(inputs):
    reached = _reached()
    if reached:
        raise RuntimeError(f"reached={reached}")
    return _plain_attention_scores(inputs)
