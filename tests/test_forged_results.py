"""A child that forges its probe results (tests/attacks/flood_results.py, cheat_forged_record.py)
controls what reaches the hidden suites. Whatever form those results take, the student is told
they are not what the grader's probe builds; the grader never claims the fault is its own."""

import copy
import random

import torch

from grader.answer_key import reference_results
from grader.probe_outputs import ProbeOutputs
from grader.suites.hidden_suites import collect

FORGERIES = 40


def _paths(value, path=()):
    """Every key/index path inside a probe's outputs (the first few items of each list)."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, path + (key,))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(list(value)[:3]):
            yield from _paths(item, path + (index,))


def _forge(outputs: dict, rng: random.Random) -> dict:
    forged = copy.deepcopy(outputs)
    paths = [p for p in _paths(forged) if p]
    if not paths:
        return {"x": torch.zeros(1)}
    path = rng.choice(paths)
    parent = forged
    for step in path[:-1]:
        parent = parent[step]
    if isinstance(parent, tuple):
        return {"x": torch.zeros(1)}
    if isinstance(parent, dict) and rng.random() < 0.4:
        del parent[path[-1]]
    else:
        parent[path[-1]] = rng.choice(["text", None, 3, [], {"y": 1}, torch.zeros(2), True])
    return forged


def test_forged_results_are_the_students_never_the_graders():
    reference = ProbeOutputs(reference_results())
    suites = collect()
    rng = random.Random(20261123)
    outcomes = []
    for _ in range(FORGERIES):
        forged = {probe: _forge(outputs, rng) for probe, outputs in reference.results.items()}
        outcomes.extend(suites.run(ProbeOutputs(forged), reference))
    assert len(outcomes) == FORGERIES * len(suites.infos)
    blamed_on_grader = [o.id for o in outcomes if o.error is not None and o.error.kind == "internal"]
    assert not blamed_on_grader, sorted(
        {(o.id, str(o.error.params)[:150]) for o in outcomes if o.error is not None and o.error.kind == "internal"}
    )
    assert any(o.error is not None and o.error.key == "integrity.forged-result" for o in outcomes)
