"""What a report says about how the submission's code was found: each module's file or notebook
cells (`grader.records.Intake`), files handed in again, the student as the LMS knows them, and the
names that look misspelt (also appended to the checks they break: `near_miss_said`)."""

from __future__ import annotations

from dataclasses import dataclass

from grader.i18n import Catalog, section_key
from grader.lms import FORMATS
from grader.records import MODULE_SECTIONS, MODULES, GradeResult, ModuleFound, NearMiss
from grader.report.sentences import Said, say, student, trusted, words

HOWS = ("file", "notebook", "marked", "recognised")


@dataclass
class FoundView:
    modules: list[Said]
    remarks: list[Said]
    identity: Said | None
    near_misses: list[Said]


def where_said(file: str, line: int, cell: int, catalog: Catalog) -> Said:
    """A place in the student's code: a .py file's line, or a notebook's code cell and line."""
    if cell:
        return say(catalog, "found.where-cell", notebook=student(file), cell=cell, line=line)
    return say(catalog, "found.where-file", file=student(file), line=line)


def near_miss_said(miss: NearMiss, catalog: Catalog) -> Said:
    """The near miss as a sentence: both names and where the student's is."""
    kind = miss.kind if miss.kind in ("name", "method", "keyword") else "name"
    section = MODULE_SECTIONS.get(miss.module, "")
    return say(
        catalog,
        f"found.near-miss.{kind}",
        found=student(miss.found),
        wanted=trusted(miss.wanted),
        owner=trusted(miss.owner),
        where=where_said(miss.file, miss.line, miss.cell, catalog),
        section=words(catalog.t(section_key(section))) if section else student(miss.module),
    )


def _listed(items: list[Said], catalog: Catalog) -> Said:
    """Items as the language lists them ("1, 2, 4"; "1、2、4")."""
    listed = items[0] if items else Said([])
    for item in items[1:]:
        listed = say(catalog, "found.list", a=listed, b=item)
    return listed


def _numbers(numbers: tuple[int, ...], catalog: Catalog) -> Said:
    return _listed([trusted(str(n)) for n in numbers if isinstance(n, int)], catalog)


def _names(names: tuple[str, ...], catalog: Catalog) -> Said:
    return _listed([Said([("code", str(name))]) for name in names], catalog)


def _module_said(module: str, found: ModuleFound | None, catalog: Catalog) -> Said:
    section = words(catalog.t(section_key(MODULE_SECTIONS[module])))
    if found is None:
        return say(catalog, "found.missing", section=section, module=trusted(module))
    how = found.how if found.how in HOWS else "file"
    one = how in ("marked", "recognised") and len(found.cells) == 1 and catalog.has(f"found.{how}-one")
    return say(
        catalog,
        f"found.{how}-one" if one else f"found.{how}",
        section=section,
        file=student(found.file),
        module=trusted(module),
        cells=_numbers(found.cells, catalog),
        names=_names(found.names, catalog),
    )


def found_view(result: GradeResult, catalog: Catalog) -> FoundView:
    intake = result.intake
    by_module = {found.module: found for found in intake.modules if found.module in MODULES}
    identity = None
    if intake.identity is not None and intake.identity.lms in FORMATS:
        who = intake.identity
        identity = say(catalog, f"found.identity-{who.lms}", name=student(who.name), user_id=student(who.user_id))
        if who.late and catalog.has(f"found.late-{who.lms}"):
            identity = Said([*identity.parts, ("text", " "), *say(catalog, f"found.late-{who.lms}").parts])
    remarks = [
        say(catalog, f"found.remark.{note.kind}", detail=student(note.detail))
        if catalog.has(f"found.remark.{note.kind}")
        else say(catalog, "integrity.other", kind=student(note.kind))
        for note in intake.remarks
    ]
    recognised_in = dict.fromkeys(f.file for f in intake.modules if f.how == "recognised")
    remarks += [say(catalog, "found.not-run", file=student(file)) for file in recognised_in]  # once a notebook
    return FoundView(
        [_module_said(module, by_module.get(module), catalog) for module in MODULES],
        remarks,
        identity,
        [near_miss_said(miss, catalog) for miss in intake.near_misses],
    )
