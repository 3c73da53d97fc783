"""Results that depend only on the case are computed once per batch (grader/harness/memo.py):
the first submission computes the reference's and the catalog mistakes' results, the fork
server keeps them, and every later trusted process of the batch starts with them."""
import os
import shutil

import torch

from conftest import SOLUTION
from grader.grade import SuiteOptions, grade_batch
from grader.harness import memo

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def test_a_probe_digest_covers_every_input_and_nothing_else():
    probe = {"target": "masked_softmax", "seed": 3, "args": [torch.ones(2, 3), torch.tensor([1, 2])],
             "kwargs": {}, "device": "cpu"}
    same = {"device": "cpu", "kwargs": {}, "args": [torch.ones(2, 3), torch.tensor([1, 2])],
            "seed": 3, "target": "masked_softmax"}
    assert memo.digest(probe) == memo.digest(same)  # key order does not matter
    changed = dict(probe, args=[torch.ones(2, 3), torch.tensor([1, 3])])
    assert memo.digest(changed) != memo.digest(probe)  # one value of one input does
    retyped = dict(probe, args=[torch.ones(2, 3, dtype=torch.float64), torch.tensor([1, 2])])
    assert memo.digest(retyped) != memo.digest(probe)
    assert memo.digest(dict(probe, seed=4)) != memo.digest(probe)


def test_kept_results_cannot_be_changed_through_a_copy_and_survive_the_trip():
    memo.clear()
    probe = {"target": "sequence_mask", "args": [torch.zeros(2)]}
    memo.put(("reference", "x"), probe, {"ok": True, "calls": [{"output": torch.ones(3)}]})
    first = memo.get(("reference", "x"), probe)
    first["calls"][0]["output"].mul_(0)
    first["calls"].append("junk")
    again = memo.get(("reference", "x"), probe)
    assert torch.equal(again["calls"][0]["output"], torch.ones(3)) and len(again["calls"]) == 1
    data = memo.export()
    memo.clear()
    assert memo.get(("reference", "x"), probe) is None
    assert memo.absorb(data) == 1
    assert torch.equal(memo.get(("reference", "x"), probe)["calls"][0]["output"], torch.ones(3))
    assert memo.absorb(b"not a torch file") == 0  # ignored: the results are computed again
    memo.clear()


def test_the_reference_and_the_catalog_run_once_per_batch(tmp_path):
    names = []
    for i, source in enumerate([SOLUTION, os.path.join(EXAMPLES, "chen.py")] * 2):
        target = tmp_path / f"s{i}-{os.path.basename(source)}"
        shutil.copy(source, target)
        names.append(str(target))
    with open(os.devnull, "w") as quiet:
        results = grade_batch(names, str(tmp_path / "out"), SuiteOptions(), jobs=1, stream=quiet)
    first_solution, first_chen, solution, chen = [r.case_results for r in results]
    assert first_solution["reference"]["computed"] > 0
    assert first_chen["mistake"]["computed"] > 0  # chen's mistakes are searched for
    # later trusted processes were forked with what the first ones computed
    assert solution["reference"] == {"computed": 0, "reused": first_solution["reference"]["computed"]
                                     + first_solution["reference"]["reused"]}
    assert chen["reference"]["computed"] == 0 and chen["mistake"]["computed"] == 0
    assert chen["mistake"]["reused"] > 0
    assert results[1].score == results[3].score and results[0].score == results[0].max_score
