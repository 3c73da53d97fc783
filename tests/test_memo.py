"""Results that depend only on the case are computed once per batch (grader/harness/memo.py):
the fork server computes the reference's results before it forks any trusted process
(grader/suite/warm.py), the first submissions compute the catalog mistakes' they need, the
fork server keeps them, and every later trusted process of the batch starts with them; kept
results are read-only and read without a copy."""
import contextlib
import json
import os
import shutil
import sys

import pytest
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


def test_kept_results_are_read_only_not_copied_and_survive_the_trip():
    memo.clear()
    probe = {"target": "sequence_mask", "args": [torch.zeros(2)]}
    given = {"ok": True, "calls": [{"output": torch.ones(3)}]}
    kept = memo.put(("reference", "x"), probe, given)
    given["calls"][0]["output"].mul_(0)  # what was handed in is not what is kept
    first = memo.get(("reference", "x"), probe)
    assert first is kept and memo.get(("reference", "x"), probe) is kept  # no copy
    assert memo.intact() == []
    first["calls"].append("junk")  # a reader that writes into a container is caught
    assert memo.intact() == [(("reference", "x"), memo.digest(probe))]
    first["calls"].pop()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        first["calls"][0]["output"].add_(1)  # a write into a tensor raises, and is caught
    assert memo.intact() == [(("reference", "x"), memo.digest(probe))]
    first["calls"][0]["output"].data = torch.ones(3)
    data = memo.export()
    memo.clear()
    assert memo.get(("reference", "x"), probe) is None
    assert memo.absorb(data) == 1
    back = memo.get(("reference", "x"), probe)
    assert torch.equal(back["calls"][0]["output"], torch.ones(3))
    assert back["calls"][0]["output"].is_inference()
    assert memo.absorb(b"not a torch file") == 0  # ignored: the results are computed again
    memo.clear()


def test_a_tensor_is_hashed_once_until_it_changes():
    """The digest of a probe reads each tensor's bytes once per tensor object; a tensor
    changed in place is hashed again (its version moved), so the digest follows it."""
    inputs = torch.arange(6.0)
    probe = {"target": "sequence_mask", "args": [inputs]}
    first = memo.digest(probe)
    assert memo._TENSORS[id(inputs)][2]
    assert memo.digest({"args": [inputs], "target": "sequence_mask"}) == first
    assert memo.digest(probe) == first  # the same probe object: not walked again
    inputs.add_(1)  # (a probe is never changed once made; a tensor changed in place is
    again = {"target": "sequence_mask", "args": [inputs]}  # hashed again in a new one)
    assert memo.digest(again) != first
    assert memo.digest(again) == memo.digest({"target": "sequence_mask",
                                               "args": [torch.arange(6.0) + 1]})
    assert ("probe", first) in memo.intact()  # and the probe that changed is caught
    memo.clear()


def test_a_module_case_s_weights_are_built_once_and_shared_read_only():
    memo.clear()
    built = []

    def build():
        built.append(1)
        return {"w": torch.ones(2)}
    first, second = memo.state(("s", "M", (), 1), build), memo.state(("s", "M", (), 1), build)
    assert built == [1] and first is second and memo.intact() == []
    # a probe holding them is digested as one holding equal weights would be, in substance:
    # the same probe twice has one digest, another init another
    probe = {"target": "M", "state": first}
    assert memo.digest(probe) == memo.digest(dict(probe))
    assert memo.digest(probe) != memo.digest(dict(probe, state={"w": torch.zeros(2)}))
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        first["w"].add_(1)
    assert memo.intact() != []  # the write is caught
    memo.clear()


def test_a_whole_session_leaves_every_kept_result_as_it_was(tmp_path, monkeypatch):
    """The hidden suite run in this process on a submission with mistakes in several parts
    (diagnoses, carried errors, the device checks' reruns): every reference and mistake
    result it kept is, at the end, what it was when kept; nothing read it by writing."""
    import select
    import pytest as runner
    from grader.grade import SuiteOptions as Options
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # as trusted processes run it
    memo.clear()
    read, write = os.pipe()
    args = Options(no_gpu=True).pytest_args() + [
        "--submission", os.path.join(EXAMPLES, "chen.py"), "--stage-dir", str(tmp_path),
        "--attnkit-report-fd", str(write), "-p", "no:randomly"]
    modules, path = dict(sys.modules), list(sys.path)
    try:
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            code = runner.main(args)
    finally:  # the suite's own conftest and test module leave this process's imports
        for name in set(sys.modules) - set(modules):
            del sys.modules[name]
        sys.modules.update(modules)
        sys.path[:] = path
    assert select.select([read], [], [], 5)[0], f"no report (pytest exited {code})"
    report = json.loads(os.read(read, 1 << 24))
    os.close(read)
    assert report["case_results"]["reference"]["computed"] > 50
    assert report["case_results"]["mistake"]["computed"] > 0
    assert any(t["outcome"] == "failed" for t in report["tests"])
    assert memo.intact() == []
    memo.clear()


@pytest.mark.slow
def test_the_reference_and_the_catalog_run_once_per_batch(tmp_path):
    names = []
    for i, source in enumerate([SOLUTION, os.path.join(EXAMPLES, "chen.py")] * 2):
        target = tmp_path / f"s{i}-{os.path.basename(source)}"
        shutil.copy(source, target)
        names.append(str(target))
    with open(os.devnull, "w") as quiet:
        results = grade_batch(names, str(tmp_path / "out"), SuiteOptions(), jobs=1, stream=quiet)
    first_solution, first_chen, solution, chen = [r.case_results for r in results]
    # the fork server computed the reference's results before it forked any trusted process
    assert first_solution["reference"]["computed"] == 0
    assert first_solution["reference"]["reused"] > 100
    assert first_chen["mistake"]["computed"] > 0  # chen's mistakes are searched for
    # later trusted processes were forked with what the first ones computed
    assert solution["reference"] == first_solution["reference"]
    assert chen["reference"]["computed"] == 0 and chen["mistake"]["computed"] == 0
    assert chen["mistake"]["reused"] > 0
    assert results[1].score == results[3].score and results[0].score == results[0].max_score
