"""README is executable truth: every command block of README.md works pasted into a clean shell on
a fresh clone.

The committed HEAD is cloned into a temporary folder, and README's `bash` blocks run there in
order, each in a new clean shell as a new user's would be: `env -i` with the system's PATH, an
empty HOME, from the clone's top folder (README says "from this folder"), stopping at the first
command that fails (`bash -e -o pipefail`). Later blocks see what earlier ones made, as they do
for a reader going down the page.

Cost. The clone's `.venv` is the one `make test` has just built for this checkout (a link to it; its
install stamp counts as newer than the clone's pyproject.toml when the two pyproject.toml are the
same), so `make demo`'s setup finds it done and the blocks use it as README tells the reader to; its
`grade` runs this checkout's code, which the clone is a copy of. Setup itself, from nothing, is
tested where CI runs `make test` on a fresh checkout with a fresh HOME (.ci/run). Two more things
are narrowed.
README's `make test` runs with `PYTEST_ARGS=--collect-only` (the setup, the test extra and the
import of every test module, not the run), since the whole suite is what CI runs, in the same
clean way, and this test is part of it. And its type check starts from a copy of this checkout's
mypy cache where `make test` left one (MYPY_CACHE_DIR): mypy still checks every file of the
clone, reusing what it found for files whose content is unchanged (10 s of CPU less).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.readme
CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
SHELL = {"bash", "sh", "shell", "console"}
MAKE_TEST = re.compile(r"^make test(?=\s|$)", re.M)
MAKE_CHECK = re.compile(r"^make check(?=\s|$)", re.M)


def documented_pages(top: Path) -> list[Path]:
    """README first, then CONTRIBUTING and every page of docs/ in name order: the order a reader
    follows the links."""
    return [top / "README.md", top / "CONTRIBUTING.md", *sorted((top / "docs").glob("*.md"))]


def readme_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block of a Markdown text, in order."""
    return [(match.group(1).strip(), match.group(2)) for match in FENCE.finditer(text)]


def command_blocks(text: str) -> list[str]:
    return [code for language, code in readme_blocks(text) if language in SHELL]


@pytest.mark.parametrize("page", [page.relative_to(ROOT).as_posix() for page in documented_pages(ROOT)])
def test_every_block_says_whether_it_is_a_command(page):
    """An unlabelled block would escape the test below: commands are `bash`, the rest `text`."""
    blocks = readme_blocks((ROOT / page).read_text(encoding="utf-8"))
    assert all(language for language, _ in blocks), [code[:60] for language, code in blocks if not language]


def test_readme_runs_both_commands_of_a_newcomer():
    commands = "\n".join(command_blocks((ROOT / "README.md").read_text(encoding="utf-8")))
    assert "make demo" in commands and len(MAKE_TEST.findall(commands)) == 1


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize(
    "page", [page.relative_to(ROOT).as_posix() for page in [*documented_pages(ROOT), ROOT / "CONTRIBUTING.md"]]
)
def test_every_link_between_pages_leads_to_a_file(page):
    """README is a front door: every page it or a doc links to exists (web addresses aside)."""
    source = ROOT / page
    targets = [target for target in LINK.findall(source.read_text(encoding="utf-8")) if "://" not in target]
    missing = [target for target in targets if not (source.parent / target).exists()]
    assert not missing, missing


def test_the_block_reader_sees_what_a_reader_sees():
    text = "intro\n```bash\nmake demo\n```\n\n```text\ngrade PATH [--out DIR]\n```\n```\nuntagged\n```\n"
    assert readme_blocks(text) == [("bash", "make demo\n"), ("text", "grade PATH [--out DIR]\n"), ("", "untagged\n")]
    assert command_blocks(text) == ["make demo\n"]


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory):
    if shutil.which("git") is None:
        pytest.fail("git is needed to clone HEAD (README's Quick start assumes it)")
    base = tmp_path_factory.mktemp("readme")
    subprocess.run(
        ["git", "clone", "--quiet", str(ROOT), str(base / "project")], check=True, timeout=300, capture_output=True
    )
    reuse_the_checkouts_venv(base / "project")
    (base / "home").mkdir()
    keep_pip_configuration(base / "home")
    if (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", base / "home" / ".mypy_cache")
    yield base / "project", base / "home"
    shutil.rmtree(base, ignore_errors=True)  # the link to .venv goes, not what it leads to


def reuse_the_checkouts_venv(clone: Path) -> None:
    """The clone's .venv is this checkout's, already set up by `make test` (its stamps made after this
    checkout's pyproject.toml): make's setup then has nothing to do in the clone either."""
    venv, stamp = ROOT / ".venv", ROOT / ".venv" / ".installed"
    same = (clone / "pyproject.toml").read_bytes() == (ROOT / "pyproject.toml").read_bytes()
    if not (stamp.is_file() and same):
        return  # a checkout without a set-up .venv, or with a changed pyproject.toml: the clone builds its own
    (clone / ".venv").symlink_to(venv)
    older = stamp.stat().st_mtime - 1
    os.utime(clone / "pyproject.toml", (older, older))


def keep_pip_configuration(home: Path) -> None:
    """The machine's own pip configuration (its package index mirrors, its folders of wheels), as a
    new user of this machine has it: nothing else of this shell or HOME."""
    for name in (".config/pip/pip.conf", ".pip/pip.conf"):
        found = Path.home() / name
        if found.is_file():
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(found, home / name)


def run_block(code: str, clone: Path, home: Path) -> subprocess.CompletedProcess:
    env = {
        "PATH": CLEAN_PATH,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        **{key: value for key, value in os.environ.items() if key.startswith("PIP_")},
    }
    if (home / ".mypy_cache").is_dir():
        env["MYPY_CACHE_DIR"] = str(home / ".mypy_cache")
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", code], cwd=clone, env=env, capture_output=True, text=True, timeout=3600
    )


def test_readme_blocks_run_in_a_clean_shell_on_a_fresh_clone(fresh_clone):
    clone, home = fresh_clone
    blocks = [
        (page, code) for page in documented_pages(clone) for code in command_blocks(page.read_text(encoding="utf-8"))
    ]
    assert blocks
    outputs = []
    for number, (page, code) in enumerate(blocks, start=1):
        runnable = MAKE_TEST.sub("make test PYTEST_ARGS=--collect-only", code)
        runnable = MAKE_CHECK.sub("make check PYTEST_ARGS=--collect-only", runnable)
        result = run_block(runnable, clone, home)
        output = result.stdout + result.stderr
        where = f"{page.relative_to(clone)} block {number}"
        assert result.returncode == 0, f"{where} failed:\n{code}\n--- output (end) ---\n{output[-4000:]}"
        assert "Traceback (most recent call last)" not in output, f"{where}:\n{code}\n{output[-4000:]}"
        outputs.append(output)
    quick_start = outputs[0]
    assert "Report: reports/example-class/summary.html" in quick_start
    assert (clone / "reports" / "example-class" / "summary.html").is_file()
    collected = re.search(r"^(\d+) tests collected", quick_start, re.M)  # make test: the whole suite imports
    assert collected and int(collected.group(1)) > 200, quick_start[-2000:]
    # What the classroom blocks promise, beyond their exit status.
    everything = "\n".join(outputs)
    assert "44 of 44 checks pass" in everything  # the bundle's check.py on alice
    assert "VALIDATION FAILED ON 7 CELL(S)" in everything  # nbgrader validate on the blank notebook
    for made in (
        "bundle/check.py",
        "course/feedback/blank-student/ch3/ch3_attention.html",
        "course/grades.csv",
        "autograder.zip",
    ):
        assert (clone / made).is_file(), made


def test_the_contract_lists_every_misconception_the_catalogue_names():
    """docs/exercise-api.md is the contract: a misconception id added to the catalogue is added there."""
    from grader.diagnosis.catalogue.misconceptions import CATALOGUE

    contract = (ROOT / "docs" / "exercise-api.md").read_text(encoding="utf-8")
    assert not [mid for mid in CATALOGUE if f"| `{mid}` |" not in contract]


def test_the_grading_policy_lists_every_check_as_the_suites_declare_it():
    """docs/grading-policy.md's table of checks is made from the hidden suites: it is never stale."""
    from tools.grading_policy_table import PAGE, current_table, page_with

    page = PAGE.read_text(encoding="utf-8")
    assert page == page_with(page, current_table()), "run tools/grading_policy_table.py --write"
