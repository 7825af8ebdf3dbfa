"""What the student's traces say about one failing test: named causes, checkpoint and line.

Traces are parsed (validated) and analysed once per probe, lazily, and once per distinct trace in a
run (`Findings`). A trace that does not parse, or that the recogniser cannot read, is simply no evidence.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grader.diagnosis.blame import BUILDERS
from grader.diagnosis.source.attribute_names import class_at, constructor_key
from grader.diagnosis.source.quotes import frame
from grader.diagnosis.trace.documents import Received, Site, TraceError, fingerprint, parse_trace
from grader.diagnosis.walk import recognise
from grader.diagnosis.walk.checkpoints import reference
from grader.records import StudentFrame, TestOutcome

log = logging.getLogger(__name__)
CONSTRUCTION = {"bias": "qkv-bias-ignored", "order": "wrong-init", "kind": "wrong-init"}
BUILT = {"wrong-config", "heads-not-registered"}  # decided where the module is built


@dataclass
class Found:
    """The trace evidence for one test."""

    by_id: dict[str, tuple[str, StudentFrame | None]] = field(default_factory=dict)  # id -> (checkpoint, line)
    checkpoint: str | None = None  # where it departs when no cause is named
    location: StudentFrame | None = None
    kind: str = ""  # "trace" or "construction"
    built_at: StudentFrame | None = None  # the test's module's line that built the module under test
    constructed_at: StudentFrame | None = None  # a line of the constructor that made its first tensor

    @property
    def misconceptions(self) -> list[str]:
        return list(self.by_id)

    def location_of(self, misconception: str) -> StudentFrame | None:
        if misconception in self.by_id:
            return self.by_id[misconception][1]
        if misconception in BUILT:
            return self.built_at  # given where the module is built
        return self.location

    def checkpoint_of(self, misconception: str) -> str | None:
        return self.by_id[misconception][0] if misconception in self.by_id else self.checkpoint

    def name(self, misconception: str, checkpoint: str, location: StudentFrame | None, kind: str) -> None:
        if misconception not in self.by_id:
            self.by_id[misconception] = (checkpoint, location)
            self.kind = self.kind or kind


class Findings:
    """Recogniser findings by (probe, trace fingerprint or payload digest), shared by the submissions of a run: a
    finding depends only on the reference and the trace (sites are the trace's own file:line; the
    code shown at a line is read from each submission's sources later), so identical traces (the
    same wrong code in several submissions) are analysed once. At most `size` are kept."""

    def __init__(self, size: int = 1024):
        self.size = size
        self._known: OrderedDict[tuple[str, str, bytes], recognise.Finding | None] = OrderedDict()

    def get(self, probe: str, document: Any) -> recognise.Finding | None:
        """The finding on one probe's trace document (or `Received` one: known by its payload's
        digest, not even parsed again); None when it is no readable trace."""
        key: tuple | None = None
        if type(document) is Received:
            key = (probe, "payload", document.digest)
            if key in self._known:
                self._known.move_to_end(key)
                return self._known[key]
            document = document.document
        try:
            trace = parse_trace(document)  # validated first: only a trace's own structure is fingerprinted
            key = key or (probe, "content", fingerprint(document))
        except (TraceError, TypeError, ValueError, RuntimeError):
            return None
        if key in self._known:
            self._known.move_to_end(key)
            return self._known[key]
        try:
            result = recognise.analyse(reference(probe), trace)
        except TraceError:
            result = None
        except Exception:
            log.exception("the recogniser failed on %s", probe)
            result = None
        self._known[key] = result
        if len(self._known) > self.size:
            self._known.popitem(last=False)
        return result


class Evidence:
    def __init__(
        self,
        documents: Mapping[str, Any],
        sources: Mapping[str, str],
        healthy: Callable[[TestOutcome], bool] = lambda outcome: True,
        findings: Findings | None = None,
        shared: Mapping[str, str] | None = None,
        bias_mishandled: Callable[[str], bool] = lambda module: False,
    ):
        """`shared`: probe -> the probe whose trace stands for it (`Diagnoser.trace_plan`)."""
        self.documents = documents
        self.stand_ins = dict(shared or {})
        self.sources = sources
        self.healthy = healthy  # whether the modules a test also relies on pass their own tests
        self.bias_mishandled = bias_mishandled  # whether the class an exercise configures ignores qkv_bias
        self.shared = findings if findings is not None else Findings()  # findings are read, never changed
        self._findings: dict[str, recognise.Finding | None] = {}

    def finding(self, probe: str) -> recognise.Finding | None:
        probe = self.stand_ins.get(probe, probe) if probe not in self.documents else probe
        if probe not in self._findings:
            document = self.documents.get(probe)
            self._findings[probe] = None if document is None else self.shared.get(probe, document)
        return self._findings[probe]

    def frame(self, site: Site | None) -> StudentFrame | None:
        if site is None:
            return None
        return frame(site.file, site.line, site.function, self.sources)

    def seeded_only(self, module: str, outcomes: list[TestOutcome], constructor: Site | None = None) -> bool:
        """Every failing test of `module` looks at parameters as the constructor made them (the book's
        seeded runs): what differs is how they were made, not how they are used. A test blocked by
        another broken module says nothing of this one's parameters (and is not traced). With
        `constructor` (a line of one): the failing tests whose probes build with that constructor."""
        failing = [o for o in outcomes if o.module == module and o.status != "passed" and not o.blocked_by]
        if constructor is not None:
            key = constructor_key(constructor.file, constructor.line, self.sources)
            failing = [o for o in failing if key is None or key in self._constructors(o)]
        return bool(failing) and all(
            any((f := self.finding(p)) is not None and f.seeded for p in o.probes) for o in failing
        )

    def _constructors(self, outcome: TestOutcome) -> set[tuple[str, int] | None]:
        """The constructors the test's traced probes built with (a constructor of the student's)."""
        sites = [f.constructed_at for p in outcome.probes if (f := self.finding(p)) is not None and f.constructed_at]
        return {constructor_key(site.file, site.line, self.sources) for site in sites}

    def for_outcome(self, outcome: TestOutcome, outcomes: list[TestOutcome]) -> Found:
        """The test's causes and line. An error's own exception names its cause: its trace only
        says where a module was built (an exercise's wrong configuration)."""
        found = Found()
        for probe in outcome.probes:
            finding = self.finding(probe)
            if finding is None:
                continue
            if (
                finding.built_at is not None
                and found.built_at is None
                and finding.built_at.file.removesuffix(".py") == outcome.module
            ):
                found.built_at = self.frame(finding.built_at)
            if found.constructed_at is None and finding.constructed_at is not None:
                found.constructed_at = self.frame(finding.constructed_at)
            if outcome.error is not None:
                if finding.failure is not None and finding.failure.misconception:
                    found.name(
                        finding.failure.misconception, finding.failure.stage, self.frame(finding.failure.site), "trace"
                    )
                if outcome.module in BUILDERS and self.healthy(outcome):
                    self._construction(finding, outcome, outcomes, found)
                continue
            for mistake in finding.mistakes:
                if mistake.misconception:
                    found.name(mistake.misconception, mistake.stage, self.frame(mistake.site), "trace")
            self._construction(finding, outcome, outcomes, found)
            first = finding.mistakes[0] if finding.mistakes else None
            if (
                found.checkpoint is None
                and first is None
                and finding.departure is None
                and finding.construction is not None
            ):
                found.checkpoint, found.location = "parameters", self.frame(finding.construction.site)
                found.kind = found.kind or "construction"
            departure = finding.departure
            if found.checkpoint is None and first is not None:
                found.checkpoint, found.location = first.stage, self.frame(first.site)
                found.kind = found.kind or "trace"
            elif found.checkpoint is None and departure is not None:
                site = departure.site
                if departure.forward is not None and "wrong-init" not in found.by_id:
                    site = departure.forward  # the forward, not the constructor, differs
                found.checkpoint, found.location = departure.stage, self.frame(site)
                found.kind = found.kind or "trace"
        return found

    def _construction(
        self, finding: recognise.Finding, outcome: TestOutcome, outcomes: list[TestOutcome], found: Found
    ) -> None:
        """Causes that lie in how modules were constructed rather than in what they compute."""
        owner = finding.parameters.file.removesuffix(".py") if finding.parameters else outcome.module
        made = finding.parameters
        made_by = class_at(made.file, made.line, self.sources) if made is not None else None
        if made_by is not None and self.unrunnable(made_by, outcomes):
            return  # no run with given weights shows what it computes: its parameters are not the question
        difference = finding.construction
        departs_at_parameters = finding.departure is not None and finding.departure.stage == "parameters"
        unexplained = finding.departure is not None or any(m.misconception is None for m in finding.mistakes)
        if difference is not None:
            if outcome.module in BUILDERS:  # it writes no parameters: only its arguments can differ
                if not self.healthy(outcome) or difference.kind not in ("sizes", "bias", "extra"):
                    return  # the modules it configures are broken themselves; no argument sets an order
                if difference.kind == "bias" and self.bias_mishandled(outcome.module):
                    return  # the class it configures makes biases whatever it is given
                outer = (
                    difference.outer if difference.outer.file.removesuffix(".py") == outcome.module else difference.site
                )
                found.name("wrong-config", "parameters", self.frame(outer), "construction")
                return
            if difference.kind in ("sizes", "extra"):
                return  # other sizes than asked, or a layer of its own: not how the parameters were made
            if difference.kind == "bias":  # a bias more or fewer shifts every later draw: no init mistake besides
                found.name("qkv-bias-ignored", "parameters", self.frame(difference.site), "construction")
                return
            if difference.kind in ("order", "kind") and finding.seeded and unexplained:
                found.name("wrong-init", "parameters", self.frame(difference.site), "construction")
        # the module computes right with given weights (only the book's seeded runs fail): what is
        # left is how it made its own parameters
        if outcome.module in BUILDERS and owner != outcome.module and self.healthy(outcome):
            return  # a working module it built: its parameters differ only by the arguments given
        if (
            finding.seeded
            and (departs_at_parameters or unexplained)
            and (
                not found.by_id
                and self.seeded_only(owner, outcomes, finding.constructed_at)
                or self._only_when_seeded(finding, owner, outcomes)
            )
        ):
            found.name("wrong-init", "parameters", self.frame(finding.parameters), "construction")

    @staticmethod
    def unrunnable(cls: str, outcomes: list[TestOutcome]) -> bool:
        """A check stopped because an object of class `cls` lacks what the exercise asks for (an
        attribute such as `W_query`): nothing shows that it computes the right thing with given
        weights."""
        return any(
            o.error is not None and o.error.kind == "contract" and cls in ((o.error.params or {}).get("name"),)
            for o in outcomes
        )

    def computes_otherwise(self, module: str, outcomes: list[TestOutcome]) -> bool:
        """A check of `module` that builds it with given weights (not the book's seeded run) fails
        with a trace: what the module computes differs, not only how it made its parameters."""
        return any(
            o.module == module
            and o.status == "failed"
            and not o.blocked_by
            and o.probes
            and all((f := self.finding(p)) is not None and not f.seeded for p in o.probes)
            for o in outcomes
        )

    def _only_when_seeded(self, finding: recognise.Finding, module: str, outcomes: list[TestOutcome]) -> bool:
        """What the seeded run shows unexplained (a mistake with no name, a departure) shows in no
        run of `module` with given weights, though some such run fails (and was traced): another
        mistake fails those; this one is how the parameters were made."""
        unexplained = {(m.stage, m.key) for m in finding.mistakes if m.misconception is None}
        if finding.departure is not None:
            unexplained.add(("departure", finding.departure.stage))
        given = [
            f
            for o in outcomes
            if o.module == module and o.status == "failed" and not o.blocked_by
            for p in o.probes
            if (f := self.finding(p)) is not None and not f.seeded
        ]
        seen = {(m.stage, m.key) for f in given for m in f.mistakes if m.misconception is None}
        seen |= {("departure", f.departure.stage) for f in given if f.departure is not None}
        return bool(unexplained) and bool(given) and not unexplained & seen
