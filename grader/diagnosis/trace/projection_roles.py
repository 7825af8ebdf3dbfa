"""Which projection a student's projection op stands for, read off how its result is used: the
scores multiply the queries by the keys (the queries on the left), the context multiplies the
weights by the values. Two projections that compute the same tensor (keys computed with `W_query`)
are told apart this way: the one used as the keys is where the student's values first depart.
"""

from __future__ import annotations

from grader.diagnosis.trace.documents import LAYOUT_OPS, Op, Ref, Trace

PRODUCTS = frozenset({"matmul", "bmm", "mm"})
MAX_STEPS = 64


def first_product(trace: Trace, op: Op) -> tuple[Op, int] | None:
    """The first matrix product `op`'s result reaches through rearrangements only, and the
    operand (0 or 1) it is there."""
    todo, seen = list(op.outputs), set[int]()
    while todo and len(seen) < MAX_STEPS:
        node = todo.pop(0)
        if node in seen:
            continue
        seen.add(node)
        for consumer in trace.consumers(node):
            if consumer.name in LAYOUT_OPS:
                todo += list(consumer.outputs)
            elif consumer.name in PRODUCTS:
                operands = [i for i, arg in enumerate(consumer.args[:2]) if isinstance(arg, Ref) and arg.node in seen]
                if len(operands) == 1:
                    return consumer, operands[0]
    return None


def roles(trace: Trace, ops: list[Op]) -> dict[int, str]:
    """op index -> "queries", "keys" or "values" for the ops whose use says which (see the module's
    docstring); nothing for an op whose use is not such a product."""
    reached = {op.index: first_product(trace, op) for op in ops}
    by_product: dict[int, list[int]] = {}
    for index, found in reached.items():
        if found is not None:
            by_product.setdefault(found[0].index, []).append(index)
    found_roles = {}
    for index, found in reached.items():
        if found is None:
            continue
        product, operand = found
        if len(by_product[product.index]) >= 2:  # the scores: two projections meet
            found_roles[index] = "queries" if operand == 0 else "keys"
        elif operand == 1:  # the context: the weights times the values
            found_roles[index] = "values"
    return found_roles
