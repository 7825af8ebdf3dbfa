"""AST mutation operators on the reference solutions, for benchmarks/diagnosis.py.

Each mutant changes one place of one solution module and keeps every line where it was (a deleted
statement becomes `pass`, a replaced expression keeps its line), so that "the student's line" of a
mutant is known. Its label (a catalogue id, or None for a mistake the catalogue has no name for) is
derived from the operator and the place only, never from what the grader says:
- the place is the statement's checkpoint declaration in the solution ([checkpoint: ...]), its
  function and module, and the call the operator changes;
- a mutation that leaves a variable unbound (a deleted assignment that later code reads) breaks
  the code rather than making a misconception: no label.
"""

from __future__ import annotations

import ast

from mutation_expressions import (
    argument_swaps,
    attribute_swaps,
    constants,
    diagonals,
    dims,
    init_calls,
    scalings,
    slices,
    untransposes,
)
from mutation_operations import extra_layers, normalisation_sets, projection_reuse, score_operations, wrong_keywords
from mutation_source import MODULES, Mutant, Place, Source, solution_sources
from mutation_statements import discards, drops, reorders

__all__ = ["MODULES", "Mutant", "combine", "single_mutants", "solution_sources"]

OPERATORS = (
    dims,
    diagonals,
    scalings,
    drops,
    reorders,
    discards,
    argument_swaps,
    attribute_swaps,
    untransposes,
    init_calls,
    constants,
    slices,
    score_operations,
    normalisation_sets,
    projection_reuse,
    extra_layers,
    wrong_keywords,
)


def single_mutants() -> list[Mutant]:
    """Every single mutant of every solution module, deduplicated by resulting source."""
    mutants: list[Mutant] = []
    seen: set[tuple[str, str]] = set()
    for module, text in solution_sources().items():
        src = Source(module, text)
        for operator in OPERATORS:
            for item in operator(src):
                kind, detail, source, place, label = item[:5]
                if source is None or source == text or (module, source) in seen:
                    continue
                seen.add((module, source))
                statement = place.statement
                lines = item[5] if len(item) > 5 else frozenset(range(statement.lineno, statement.end_lineno + 1))
                if kind == "drop":  # the missing step belongs between its neighbours
                    lines = lines | _neighbours(place)
                if kind in ("untranspose", "discard") and _ends_in_layout(statement):  # its line's values stay
                    lines = lines | _next_line(place)  # right: the next use is the first op whose output departs
                mutants.append(
                    Mutant(
                        module,
                        kind,
                        f"{module}.py:{statement.lineno} {detail}",
                        source,
                        frozenset(lines),
                        label,
                        _span(text, source, lines),
                        f"{place.function.name}:{place.function.lineno}",
                    )
                )
    return mutants


def _span(original: str, mutated: str, lines: frozenset[int]) -> tuple[int, int]:
    """The first and last line the mutation touched (its mistake's lines, and any other line it edited)."""
    changed = {i for i, (a, b) in enumerate(zip(original.splitlines(), mutated.splitlines()), 1) if a != b}
    every = changed | set(lines)
    return min(every), max(every)


def _ends_in_layout(statement: ast.stmt) -> bool:
    """`x = <computation>.transpose(...)`: a statement whose last step only rearranges. Left out, the
    values its line computes stay right, and the statement that next uses them is where they first
    depart."""
    value = getattr(statement, "value", None)
    if isinstance(value, ast.Attribute):
        return value.attr in ("T", "mT")
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in ("transpose", "permute", "contiguous")
    )


def _next_line(place: Place) -> frozenset[int]:
    """The line of the next statement that reads what `place`'s statement assigns."""
    body, statement = place.body, place.statement
    targets = {t.id for t in getattr(statement, "targets", []) if isinstance(t, ast.Name)}
    for later in body[body.index(statement) + 1 :]:
        if any(isinstance(n, ast.Name) and n.id in targets and isinstance(n.ctx, ast.Load) for n in ast.walk(later)):
            return frozenset({later.lineno})
    return frozenset()


def _neighbours(place: Place) -> frozenset[int]:
    body = place.body
    index = body.index(place.statement)
    lines = set()
    if index > 0:
        lines.add(body[index - 1].end_lineno)
    if index + 1 < len(body):
        lines.add(body[index + 1].lineno)
    return frozenset(lines)


def combine(first: Mutant, second: Mutant, original: dict[str, str]) -> dict[str, str] | None:
    """Both mutations at once (their modules' sources), or None when they touch the same lines."""
    if first.module == second.module:
        if first.span[1] >= second.span[0] - 1 and second.span[1] >= first.span[0] - 1:
            return None
        a, b, base = (
            first.source.splitlines(True),
            second.source.splitlines(True),
            original[first.module].splitlines(True),
        )
        merged = [y if x == z else x for x, y, z in zip(a, b, base)]
        text = "".join(merged)
        try:
            ast.parse(text)
        except SyntaxError:
            return None
        return {first.module: text}
    return {first.module: first.source, second.module: second.source}
