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
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = ["sec3_3_simple_attention", "sec3_4_self_attention", "sec3_5_causal_attention",
           "sec3_6_multi_head_attention", "exercise3_1_weight_transfer", "exercise3_2_two_dim_output",
           "exercise3_3_gpt2_attention"]
EXERCISE_BUILDERS = {"exercise3_2_two_dim_output", "exercise3_3_gpt2_attention"}
CHECKPOINT = re.compile(r"\[checkpoint: ([\w=, ]+)\]")
PROJECTION_ATTRIBUTES = ("W_query", "W_key", "W_value")


def solution_sources() -> dict[str, str]:
    """The reference solutions as a student hands them in (sibling imports)."""
    return {m: re.sub(r"^from \.(\w+) import", r"from \1 import", (ROOT / "solutions" / f"{m}.py").read_text(),
                      flags=re.M) for m in MODULES}


@dataclass(frozen=True)
class Mutant:
    module: str
    operator: str
    detail: str
    source: str  # the whole mutated module
    lines: frozenset[int]  # where the mistake is: what "located to the right line" means
    label: str | None
    span: tuple[int, int]  # first and last line touched (two mutants may combine if they do not overlap)


@dataclass
class Place:
    """What the labels may know about where a node is."""

    module: str
    function: ast.FunctionDef
    checkpoints: set[str]
    statement: ast.stmt
    body: list[ast.stmt]  # the statement list it belongs to


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _int(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    return None


class Source:
    """One module's text with its AST, and edits that keep every line in place."""

    def __init__(self, module: str, text: str):
        self.module = module
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self.tree = ast.parse(text)
        self.offsets = [0]
        for line in self.lines:
            self.offsets.append(self.offsets[-1] + len(line))

    def offset(self, line: int, column: int) -> int:
        return self.offsets[line - 1] + len(self.lines[line - 1].encode()[:column].decode(errors="ignore"))

    def replace(self, node: ast.AST, text: str) -> str | None:
        """The module with `node`'s text replaced (newlines added to keep the line count)."""
        start, end = self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)
        text += "\n" * (node.end_lineno - node.lineno)
        return self._valid(self.text[:start] + text + self.text[end:])

    def replace_lines(self, first: int, last: int, new: list[str]) -> str | None:
        lines = list(self.lines)
        lines[first - 1:last] = new
        return self._valid("".join(lines))

    def _valid(self, text: str) -> str | None:
        try:
            ast.parse(text)
        except SyntaxError:
            return None
        return text if text.count("\n") == self.text.count("\n") else None

    def checkpoints(self, statement: ast.stmt) -> set[str]:
        names: set[str] = set()
        for number in range(statement.lineno, statement.end_lineno + 1):
            match = CHECKPOINT.search(self.lines[number - 1])
            if match:
                names |= {part.strip().rpartition("=")[2] for part in match.group(1).split(",")}
        return names

    def statements(self):
        """Every simple statement inside a function (with blocks looked into), with its Place."""
        for function in ast.walk(self.tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            todo = [function.body]
            while todo:
                body = todo.pop(0)
                for statement in body:
                    if isinstance(statement, (ast.With, ast.For, ast.If)):
                        todo.append(statement.body)
                        continue
                    if isinstance(statement, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return)):
                        yield statement, Place(self.module, function, self.checkpoints(statement), statement, body)

    def places(self):
        """Every node of those statements, with its Place."""
        for statement, place in self.statements():
            for node in ast.walk(statement):
                yield node, place


def _unbinds(place: Place) -> bool:
    """Removing the statement leaves a name unbound that later statements read."""
    statement, function, body = place.statement, place.function, place.body
    targets = {t.id for t in getattr(statement, "targets", []) if isinstance(t, ast.Name)}
    if not targets:
        return False
    arguments = {a.arg for a in function.args.args + function.args.kwonlyargs}
    index = body.index(statement)
    earlier = {n.id for s in body[:index] for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    later = {n.id for s in body[index + 1:] for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return bool((targets & later) - earlier - arguments)


# -- the operators ---------------------------------------------------------------------------------------
def _dim_argument(call: ast.Call) -> ast.AST | None:
    name = _call_name(call)
    for keyword in call.keywords:
        if keyword.arg == "dim":
            return keyword.value
    on_module = isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
        and call.func.value.id in ("torch", "F", "nn")
    index = 1 if on_module or name == "cat" else 0
    return call.args[index] if len(call.args) > index else None


def dims(src: Source):
    """Change the dimension a softmax, sum or cat works along."""
    for node, place in src.places():
        name = _call_name(node)
        if not isinstance(node, ast.Call) or name not in ("softmax", "sum", "cat"):
            continue
        target = _dim_argument(node)
        value = _int(target)
        if value is None:
            continue
        if name == "softmax" or (name == "sum" and place.function.name == "softmax_naive"):
            label = "softmax-wrong-dim"
        elif name == "cat" and "concat" in place.checkpoints:
            label = "concat-wrong-dim"
        else:
            label = None
        for new in (-1, -2, 0, 1):
            if new != value:
                yield "dim", f"{name} dim={value} -> dim={new}", src.replace(target, repr(new)), place, label


def diagonals(src: Source):
    """Change the diagonal a triu or tril starts from (and triu <-> tril)."""
    for node, place in src.places():
        name = _call_name(node)
        if not isinstance(node, ast.Call) or name not in ("triu", "tril"):
            continue
        keyword = next((k for k in node.keywords if k.arg == "diagonal"), None)
        on_module = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
        positional = node.args[1] if on_module and len(node.args) > 1 else None
        target = keyword.value if keyword else positional
        value = _int(target) if target is not None else 0
        if value is None:
            continue
        hides_future = name == "triu"  # triu(..., 1) marks what is hidden, tril(...) what is kept
        for new in (value - 1, value + 1):
            if hides_future:
                label = "mask-includes-diagonal" if new <= 0 else None
            else:
                label = "mask-includes-diagonal" if new <= -1 else None
            if target is not None:
                text = src.replace(target, repr(new))
            else:
                changed = ast.Call(node.func, node.args, node.keywords + [ast.keyword("diagonal", ast.Constant(new))])
                text = src.replace(node, ast.unparse(changed))
            yield "diagonal", f"{name} diagonal={value} -> {new}", text, place, label
        other = "tril" if name == "triu" else "triu"
        if isinstance(node.func, ast.Attribute):
            func = ast.Attribute(node.func.value, other, ast.Load())
            yield "swap-call", f"{name} -> {other}", src.replace(node.func, ast.unparse(func)), place, "mask-inverted"


def _divisor_of(statement: ast.stmt):
    for node in ast.walk(statement):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            yield node


def scalings(src: Source):
    """Change a divisor or its exponent, or leave the division out."""
    for statement, place in src.statements():
        scaled = "scaled" in place.checkpoints
        for division in _divisor_of(statement):
            left = ast.unparse(division.left)
            left = f"({left})" if isinstance(division.left, ast.BinOp) else left
            dropped_label = "missing-scaling" if scaled else \
                "mask-after-softmax-unnormalized" if "renormalized" in place.checkpoints else None
            yield "drop-divisor", f"{ast.unparse(division)} -> {left}", src.replace(division, left), place, dropped_label
            times = ast.BinOp(division.left, ast.Mult(), division.right)
            yield "divisor", "/ -> *", src.replace(division, ast.unparse(times)), place, \
                "wrong-scaling" if scaled else None
            for node in ast.walk(division.right):
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant):
                    for new in (1, 0, -0.5):
                        label = ("missing-scaling" if new == 0 else "wrong-scaling") if scaled else None
                        yield "exponent", f"**{node.right.value} -> **{new}", src.replace(node.right, repr(new)), \
                            place, label
                if isinstance(node, ast.Subscript) and _int(node.slice) is not None:
                    for new in (0, 1, -2):
                        if new != _int(node.slice):
                            yield "divisor", f"[{_int(node.slice)}] -> [{new}]", src.replace(node.slice, repr(new)), \
                                place, "wrong-scaling" if scaled else None


def drops(src: Source):
    """Delete a statement."""
    for statement, place in src.statements():
        if isinstance(statement, ast.Return) or (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)):
            continue
        if _unbinds(place):
            label = None
        elif "masked" in place.checkpoints:
            label = "mask-not-applied"
        elif "output" in place.checkpoints:
            label = "out-proj-missing"
        else:
            label = None
        indent = " " * statement.col_offset
        new = [indent + "pass\n"] + ["\n"] * (statement.end_lineno - statement.lineno)
        yield "drop", f"delete line {statement.lineno}", src.replace_lines(statement.lineno, statement.end_lineno, new), \
            place, label


def _creates_parameter(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Attribute) \
        and any(_call_name(n) in ("Linear", "Parameter") for n in ast.walk(statement.value))


def reorders(src: Source):
    """Swap two neighbouring one-line statements."""
    for statement, place in src.statements():
        body = place.body
        index = body.index(statement)
        if index + 1 >= len(body):
            continue
        following = body[index + 1]
        if statement.lineno != statement.end_lineno or following.lineno != following.end_lineno \
                or not isinstance(following, (ast.Assign, ast.Expr)) or isinstance(statement, ast.Return):
            continue
        label = "wrong-init" if place.function.name == "__init__" and _creates_parameter(statement) \
            and _creates_parameter(following) else None
        first, second = src.lines[statement.lineno - 1], src.lines[following.lineno - 1]
        text = src.replace_lines(statement.lineno, following.lineno,
                                 [second] + src.lines[statement.lineno:following.lineno - 1] + [first])
        yield "reorder", f"swap lines {statement.lineno} and {following.lineno}", text, place, label, \
            frozenset({statement.lineno, following.lineno})


def _discard_label(place: Place) -> str | None:
    if "masked" in place.checkpoints:
        return "mask-not-applied"
    if "output" in place.checkpoints:
        return "out-proj-missing"
    if "weights" in place.checkpoints:
        return "uses-scores-not-weights"  # the weights stay the scores they were computed from
    return None


def discards(src: Source):
    """Throw a call's result away: `x = f(x, ...)` -> `f(x, ...)`, `y = f(x)` -> `f(x); y = x`,
    and an in-place `x.op_(...)` -> `x.op(...)`."""
    for statement, place in src.statements():
        if statement.lineno != statement.end_lineno:
            continue
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name) \
                and isinstance(statement.value, ast.Call):
            call = statement.value
            target = statement.targets[0].id
            receiver = call.func.value if isinstance(call.func, ast.Attribute) and not (
                isinstance(call.func.value, ast.Name) and call.func.value.id in ("torch", "F", "nn", "self")) else None
            source = receiver if receiver is not None else (call.args[0] if call.args else None)
            if source is None:
                continue
            kept = ast.unparse(source)
            text = ast.unparse(call) if kept == target else f"{ast.unparse(call)}; {target} = {kept}"
            yield "discard", f"result of line {statement.lineno} discarded", src.replace(statement, text), place, \
                _discard_label(place)
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
                and isinstance(statement.value.func, ast.Attribute):
            name = statement.value.func.attr
            if name.endswith("_") and not name.startswith("_") and name != "copy_":
                func = ast.Attribute(statement.value.func.value, name[:-1], ast.Load())
                yield "discard", f"{name} -> {name[:-1]} (result discarded)", src.replace(statement.value.func, ast.unparse(func)), \
                    place, _discard_label(place)


def argument_swaps(src: Source):
    """Swap two neighbouring positional arguments, or the operands of @."""
    for node, place in src.places():
        builder = src.module in EXERCISE_BUILDERS and _call_name(node) in ("MultiHeadAttention", "MultiHeadAttentionWrapper")
        if isinstance(node, ast.Call) and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args):
            for i in range(min(len(node.args) - 1, 3)):
                a, b = node.args[i], node.args[i + 1]
                if ast.unparse(a) == ast.unparse(b):
                    continue
                args = list(node.args)
                args[i], args[i + 1] = b, a
                yield "swap-args", f"{_call_name(node)} arguments {i} and {i + 1}", \
                    src.replace(node, ast.unparse(ast.Call(node.func, args, node.keywords))), place, \
                    "wrong-config" if builder else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            yield "swap-args", "operands of @", src.replace(node, ast.unparse(ast.BinOp(node.right, node.op, node.left))), \
                place, None


def attribute_swaps(src: Source):
    """Use W_key where W_query is used, and so on."""
    for node, place in src.places():
        if not isinstance(node, ast.Attribute) or node.attr not in PROJECTION_ATTRIBUTES:
            continue
        # in Exercise 3.1 a matrix copied to or from the wrong one; elsewhere (one attribute renamed)
        # a projection used twice or a parameter never created: no misconception of the catalogue
        label = "weights-swapped" if src.module == "exercise3_1_weight_transfer" else None
        for other in PROJECTION_ATTRIBUTES:
            if other != node.attr:
                changed = ast.Attribute(node.value, other, node.ctx)
                yield "swap-attrs", f"{node.attr} -> {other}", src.replace(node, ast.unparse(changed)), place, label


def untransposes(src: Source):
    """Leave a transpose out."""
    for node, place in src.places():
        if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
            receiver = node.value
        elif isinstance(node, ast.Call) and _call_name(node) in ("transpose", "permute") \
                and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
        else:
            continue
        if src.module == "exercise3_1_weight_transfer":
            label = "weights-not-transposed"
        elif "context" in place.checkpoints and src.module == "sec3_6_multi_head_attention":
            label = "heads-merged-wrong"  # the heads merged back without moving them next to head_dim
        else:
            label = None
        text = ast.unparse(receiver)
        text = f"({text})" if isinstance(receiver, ast.BinOp) else text
        yield "untranspose", f"{ast.unparse(node)} -> {text}", src.replace(node, text), place, label


def init_calls(src: Source):
    """Another initialisation: torch.rand -> torch.randn, bias=qkv_bias -> True/False, ModuleList -> list."""
    for node, place in src.places():
        if isinstance(node, ast.Attribute) and node.attr == "rand" and place.function.name == "__init__":
            for other in ("randn", "ones"):
                yield "init-call", f"torch.rand -> torch.{other}", \
                    src.replace(node, ast.unparse(ast.Attribute(node.value, other, ast.Load()))), place, "wrong-init"
        if isinstance(node, ast.keyword) and node.arg == "bias" and isinstance(node.value, ast.Name) \
                and node.value.id == "qkv_bias":
            for value in (False, True):
                yield "init-call", f"bias=qkv_bias -> bias={value}", src.replace(node.value, repr(value)), place, \
                    "qkv-bias-ignored"
        if isinstance(node, ast.Call) and _call_name(node) == "ModuleList":
            yield "init-call", "nn.ModuleList -> list", \
                src.replace(node.func, "list"), place, "heads-not-registered"


def constants(src: Source):
    """Another number where an exercise configures a module."""
    if src.module not in EXERCISE_BUILDERS:
        return
    for node, place in src.places():
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value > 0:
            for new in sorted({node.value * 2, max(node.value // 2, 1), node.value + 1} - {node.value}):
                yield "constant", f"{node.value} -> {new}", src.replace(node, repr(new)), place, "wrong-config"


def slices(src: Source):
    """The mask used whole, or cut to the book's six tokens."""
    for node, place in src.places():
        if not isinstance(node, ast.Subscript) or "mask" not in ast.unparse(node.value) \
                or not isinstance(node.slice, ast.Tuple) or not all(isinstance(e, ast.Slice) for e in node.slice.elts):
            continue
        yield "slice", "mask not cut", src.replace(node, ast.unparse(node.value)), place, "mask-not-sliced"
        six = ast.Tuple([ast.Slice(None, ast.Constant(6), None) for _ in node.slice.elts], ast.Load())
        yield "slice", "mask cut to 6 tokens", src.replace(node, ast.unparse(ast.Subscript(node.value, six, ast.Load()))), \
            place, "hardcoded-shape"


OPERATORS = (dims, diagonals, scalings, drops, reorders, discards, argument_swaps, attribute_swaps, untransposes,
             init_calls, constants, slices)


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
                mutants.append(Mutant(module, kind, f"{module}.py:{statement.lineno} {detail}", source, frozenset(lines),
                                      label, (min(lines), max(lines))))
    return mutants


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
        a, b, base = first.source.splitlines(True), second.source.splitlines(True), original[first.module].splitlines(True)
        merged = [y if x == z else x for x, y, z in zip(a, b, base)]
        text = "".join(merged)
        try:
            ast.parse(text)
        except SyntaxError:
            return None
        return {first.module: text}
    return {first.module: first.source, second.module: second.source}
