"""A class graded as shards on several machines and merged (grader/shards.py, grader/merge/):
three real shards of examples/ merged give the one run's grades.csv and report.html byte for
byte; the partition is the documented sha256 rule; every refusal names what is wrong; a
re-run shard replaces only its rows; the CPU parts and the GPU part graded apart and merged
give the one run's rows.

Every grading runs from a snapshot of the kit in a temporary folder: the suite fingerprint
hashes the grader's code, which other work in this checkout may change between two runs."""
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import KIT, copy_kit
from grading import run_grader

EXAMPLES = ["alice.py", "bob.ipynb", "chen.py", "dana.zip", "erik", "fatima.py"]
# sha256(name) mod 3 + 1, worked out by hand from hashlib (not from grader.shards)
SHARDS_OF_3 = {"chen": 1, "fatima": 1, "bob": 2, "dana": 2, "alice": 3, "erik": 3}


def _snapshot(root, name="kit"):
    kit = os.path.join(root, name)
    return copy_kit(kit, ("grader", "tests_hidden", "solutions", "examples"))


def _grader(kit, *args):
    return run_grader(*args, kit=kit)


def _grade(kit, out, *args, submissions=None):
    paths = [os.path.join(kit, "examples", s) for s in (submissions or EXAMPLES)]
    done = _grader(kit, "grade", *paths, "--out", out, "--jobs", "1", *args)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def _grade_at_once(*runs):
    """Several gradings at once (kit, out, args, submissions), as machines of a cluster do."""
    started = []
    for kit, out, args, submissions in runs:
        paths = [os.path.join(kit, "examples", s) for s in (submissions or EXAMPLES)]
        started.append(subprocess.Popen(
            [sys.executable, "-m", "grader", "grade", *paths, "--out", out, "--jobs", "1", *args],
            cwd=kit, env=dict(os.environ, PYTHONPATH=kit), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True))
    for proc in started:
        said, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, said[-3000:]


def _merge(kit, out, *dirs):
    return _grader(kit, "merge", *dirs, "--out", out)


def _csv(path):
    with open(path, encoding="utf-8-sig") as handle:
        return list(csv.reader(handle))


def _rows_by_name(path):
    rows = _csv(path)
    return {row[0]: row for row in rows[1:]}, rows[0]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("shards"))
    kit = _snapshot(root)
    out = {"root": root, "kit": kit, "one": os.path.join(root, "one")}
    for k in (1, 2, 3):
        out[k] = os.path.join(root, f"shard-{k}")
    _grade_at_once((kit, out["one"], [], None),
                   *[(kit, out[k], ["--shard", f"{k}/3"], None) for k in (1, 2, 3)])
    return out


def test_partition_is_sha256_of_the_key():
    for name, shard in SHARDS_OF_3.items():
        assert int(hashlib.sha256(name.encode()).hexdigest(), 16) % 3 + 1 == shard
    from grader import shards
    assert {n: shards.shard_of(shards.key("", n), 3) for n in SHARDS_OF_3} == SHARDS_OF_3
    # a student id, when the layout gives one, is the key, never the file's name
    assert shards.key("10000", "wangli_10000_90000_attention") == "10000"


@pytest.mark.slow
def test_shard_records_what_and_where(graded):
    for k in (1, 2, 3):
        with open(os.path.join(graded[k], "shard.json"), encoding="utf-8") as handle:
            record = json.load(handle)
        assert (record["shard"], record["of"]) == (k, 3)
        assert sorted(n for n, _folder, _digests in record["rows"]) == sorted(
            n for n, s in SHARDS_OF_3.items() if s == k)
        assert record["isolation"] in ("bwrap", "unshare", "none")
        assert record["machine"]["host"] and len(record["suite"]) == 64
        assert record["grader_version"] and record["settings"]["feedback"] == "full"
        # the shard's own gradebook holds its students only
        names, _ = _rows_by_name(os.path.join(graded[k], "grades.csv"))
        assert sorted(names) == sorted(n for n, s in SHARDS_OF_3.items() if s == k)


@pytest.mark.slow
def test_three_shards_merged_equal_one_run(graded):
    merged = os.path.join(graded["root"], "merged")
    done = _merge(graded["kit"], merged, graded[1], graded[2], graded[3])
    assert done.returncode == 0, done.stderr
    for name in ("grades.csv", "report.html"):
        with open(os.path.join(graded["one"], name), "rb") as a, \
                open(os.path.join(merged, name), "rb") as b:
            assert a.read() == b.read(), name
    for student in SHARDS_OF_3:  # each student's files, as the one run wrote them
        with open(os.path.join(graded["one"], student, "feedback.txt"), "rb") as a, \
                open(os.path.join(merged, student, "feedback.txt"), "rb") as b:
            assert a.read() == b.read(), student
        assert _results(graded["one"], student) == _results(merged, student)
        with open(os.path.join(merged, student, "gradebook-row.json"), encoding="utf-8") as handle:
            row = json.load(handle)
        assert {by["shard"] for by in row["graded_by"].values()} == {f"{SHARDS_OF_3[student]}/3"}
    exported = []
    for source in (graded["one"], merged):
        target = os.path.join(graded["root"], f"canvas-{len(exported)}.csv")
        done = _grader(graded["kit"], "export", "canvas", "--from", source, "--out", target,
                       "--assignment", "Attention (12345)")
        assert done.returncode == 0, done.stderr
        with open(target, "rb") as handle:
            exported.append(handle.read())
    assert exported[0] == exported[1]
    # grader similarity reads the merged folder as it reads one run's (on copies: the
    # command relinks report.html)
    tables = []
    for source in (graded["one"], merged):
        copy = os.path.join(graded["root"], f"similarity-{len(tables)}")
        shutil.copytree(source, copy, symlinks=True)
        done = _grader(graded["kit"], "similarity", "--from", copy)
        assert done.returncode == 0, done.stderr
        assert f"{len(SHARDS_OF_3)} submissions" in done.stdout and "0 skipped" in done.stdout
        with open(os.path.join(copy, "similarity.csv"), "rb") as handle:
            tables.append(handle.read())
    assert tables[0] == tables[1]


@pytest.mark.slow
def test_missing_shard_is_named(graded):
    done = _merge(graded["kit"], os.path.join(graded["root"], "m-missing"), graded[1], graded[3])
    assert done.returncode == 2
    assert "shard 2 of 3 (parts sequence_mask" in done.stderr and "is missing" in done.stderr
    assert not os.path.exists(os.path.join(graded["root"], "m-missing"))


@pytest.mark.slow
def test_the_first_or_the_last_shard_missing_is_named(graded):
    """Not only a shard in the middle: the first and the last of 1..N are found missing."""
    for given, missing in (((graded[1], graded[2]), 3), ((graded[2], graded[3]), 1)):
        out = os.path.join(graded["root"], f"m-missing-{missing}")
        done = _merge(graded["kit"], out, *given)
        assert done.returncode == 2
        assert f"nothing was merged: shard {missing} of 3 (parts sequence_mask" in done.stderr
        assert "is missing: every shard of the class must be merged" in done.stderr
        assert not os.path.exists(out)


@pytest.mark.slow
def test_shard_records_a_digest_of_every_file_it_wrote(graded):
    for k in (1, 2, 3):
        with open(os.path.join(graded[k], "shard.json"), encoding="utf-8") as handle:
            record = json.load(handle)
        assert record["format"] == 2
        for name, folder, digests in record["rows"]:
            assert digests == _digests(os.path.join(graded[k], folder))
            assert {"gradebook-row.json", "results.json", "feedback.txt",
                    "submitted-code.py", "submitted-code.json"} <= set(digests)


@pytest.mark.slow
@pytest.mark.parametrize("name, change", [
    ("gradebook-row.json", lambda row: row.update(total=100.0)),
    ("results.json", lambda results: results.update(score=100.0)),
    ("feedback.txt", lambda text: text + "\nYour instructor says: 100.\n"),
    ("submitted-code.py", lambda text: text + "\n# edited\n"),
])
def test_an_edited_file_of_a_shard_is_refused_naming_it(graded, name, change):
    """bob (shard 2, graded 83): his row edited to 100, or his results, feedback or kept
    code changed after the shard was graded: the merge names the file and writes nothing."""
    copy = _copy(graded[2], os.path.join(graded["root"], f"shard-2-edited-{name}"))
    _edit(copy, "bob", name, change)
    out = os.path.join(graded["root"], f"m-edited-{name}")
    done = _merge(graded["kit"], out, graded[1], copy, graded[3])
    assert done.returncode == 2
    assert (f"nothing was merged: {copy}/bob/{name} does not match the digest shard.json "
            "recorded for it: it was changed after the shard was graded") in done.stderr
    assert not os.path.exists(out)


@pytest.mark.slow
def test_a_row_that_disagrees_with_its_results_is_refused(graded):
    """The row edited and its digest recorded again (a hand-made shard.json): the row must
    still agree with the results.json graded with it, figure by figure."""
    with open(os.path.join(graded[2], "bob", "results.json"), encoding="utf-8") as handle:
        results = json.load(handle)
    assert results["score"] == 83
    first_part = next(iter(json.load(open(os.path.join(graded[2], "bob", "gradebook-row.json"),
                                          encoding="utf-8"))["parts"]))
    for label, change, says in (
            ("total", lambda row: row.update(total=100.0),
             "the total is 100 in the row, 83 in results.json"),
            ("status", lambda row: row.update(status="not gradable"),
             'the status is "not gradable" in the row, "graded" in results.json'),
            ("part", lambda row: row["parts"][first_part].__setitem__(
                0, row["parts"][first_part][0] + 5), f"part {first_part} is ")):
        copy = _copy(graded[2], os.path.join(graded["root"], f"shard-2-disagrees-{label}"))
        _edit(copy, "bob", "gradebook-row.json", change, record_it=True)
        out = os.path.join(graded["root"], f"m-disagrees-{label}")
        done = _merge(graded["kit"], out, graded[1], copy, graded[3])
        assert done.returncode == 2, label
        assert (f"nothing was merged: {copy}/bob/gradebook-row.json disagrees with results.json "
                f"beside it: {says}") in done.stderr, done.stderr
        assert not os.path.exists(out)


@pytest.mark.slow
def test_a_shard_without_digests_is_refused(graded):
    copy = _copy(graded[3], os.path.join(graded["root"], "shard-3-format-1"))
    with open(os.path.join(copy, "shard.json"), encoding="utf-8") as handle:
        record = json.load(handle)
    record["format"] = 1
    record["rows"] = [row[:2] for row in record["rows"]]
    with open(os.path.join(copy, "shard.json"), "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    done = _merge(graded["kit"], os.path.join(graded["root"], "m-format-1"),
                  graded[1], graded[2], copy)
    assert done.returncode == 2
    assert (f"{copy}/shard.json: written by an earlier grader (format 1, without the digests "
            "of its files): grade that shard again") in done.stderr


@pytest.mark.slow
def test_shard_given_twice_is_refused(graded):
    copy = os.path.join(graded["root"], "shard-2-copy")
    shutil.copytree(graded[2], copy)
    done = _merge(graded["kit"], os.path.join(graded["root"], "m-twice"),
                  graded[1], graded[2], graded[3], copy)
    assert done.returncode == 2
    assert "shard 2 of 3 (parts sequence_mask" in done.stderr
    assert f"is given twice: {graded[2]} and {copy}" in done.stderr
    done = _merge(graded["kit"], os.path.join(graded["root"], "m-twice"),
                  graded[1], graded[2], graded[3], graded[2])
    assert done.returncode == 2 and f"{graded[2]} is given twice" in done.stderr


def _results(out, student):
    """results.json without what depends on the run, not the work: its time, the uid its
    worker had, how many reference results it computed or reused from the batch."""
    with open(os.path.join(out, student, "results.json"), encoding="utf-8") as handle:
        data = json.load(handle)
    data.pop("execution_time")
    for field in ("isolation", "case_results"):
        data["extra_data"].pop(field)
    return data


def _with_student_from(graded, into, student, total=None):
    """A copy of shard `into` that also lists `student`'s row from its own shard (with its
    files' digests, as a shard that graded it would)."""
    copy = os.path.join(graded["root"], f"shard-{into}-with-{student}-{total}")
    shutil.copytree(graded[into], copy)
    shutil.copytree(os.path.join(graded[SHARDS_OF_3[student]], student),
                    os.path.join(copy, student))
    row_file = os.path.join(copy, student, "gradebook-row.json")
    with open(row_file, encoding="utf-8") as handle:
        row = json.load(handle)
    if total is not None:   # graded differently: its row and results.json agree on it
        row["total"] = total
        results_file = os.path.join(copy, student, "results.json")
        with open(results_file, encoding="utf-8") as handle:
            results = json.load(handle)
        results["score"] = total
        with open(results_file, "w", encoding="utf-8") as handle:
            json.dump(results, handle)
    with open(row_file, "w", encoding="utf-8") as handle:
        json.dump(row, handle)
    with open(os.path.join(copy, "shard.json"), encoding="utf-8") as handle:
        record = json.load(handle)
    record["rows"].append([student, student, _digests(os.path.join(copy, student))])
    with open(os.path.join(copy, "shard.json"), "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    return copy


def _digests(folder):
    """sha256 of each file of a student's folder, worked out here (not by grader.shards)."""
    found = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as handle:
            found[name] = hashlib.sha256(handle.read()).hexdigest()
    return found


def _copy(graded_dir, copy):
    shutil.copytree(graded_dir, copy)
    return copy


def _edit(shard_dir, student, name, change, record_it=False):
    """Change the file `name` of `student`'s folder in `shard_dir`; with record_it, write
    its new digest into shard.json too (as a shard graded that way would have)."""
    path = os.path.join(shard_dir, student, name)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if name.endswith(".json"):
        data = json.loads(text)
        change(data)
        text = json.dumps(data, ensure_ascii=False)
    else:
        text = change(text)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    if record_it:
        with open(os.path.join(shard_dir, "shard.json"), encoding="utf-8") as handle:
            record = json.load(handle)
        for row in record["rows"]:
            if row[0] == student:
                row[2] = _digests(os.path.join(shard_dir, student))
        with open(os.path.join(shard_dir, "shard.json"), "w", encoding="utf-8") as handle:
            json.dump(record, handle)


@pytest.mark.slow
def test_student_graded_twice_differently_is_refused(graded):
    bad = _with_student_from(graded, 1, "bob", total=99.0)
    done = _merge(graded["kit"], os.path.join(graded["root"], "m-conflict"),
                  bad, graded[2], graded[3])
    assert done.returncode == 2
    assert (f"bob is graded in shard 1 ({bad}) and shard 2 ({graded[2]}) with different "
            "results") in done.stderr
    # the same row, in a shard its key does not hash to
    same = _with_student_from(graded, 1, "bob")
    done = _merge(graded["kit"], os.path.join(graded["root"], "m-wrong"), same, graded[3], graded[2])
    assert done.returncode == 2
    assert f"{same} (shard 1 of 3) holds bob, whose key hashes to shard 2" in done.stderr


@pytest.mark.slow
def test_other_settings_are_refused(graded):
    copy = os.path.join(graded["root"], "shard-3-summary")
    shutil.copytree(graded[3], copy)
    path = os.path.join(copy, "shard.json")
    with open(path, encoding="utf-8") as handle:
        record = json.load(handle)
    record["settings"]["feedback"] = "summary"
    record["settings"]["a_later_setting"] = True  # a setting this merge has never heard of
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    done = _merge(graded["kit"], os.path.join(graded["root"], "m-settings"),
                  graded[1], graded[2], copy)
    assert done.returncode == 2
    assert (f'a_later_setting is null in {graded[1]} but true in {copy}') in done.stderr
    record["settings"].pop("a_later_setting")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    done = _merge(graded["kit"], os.path.join(graded["root"], "m-settings"),
                  graded[1], graded[2], copy)
    assert f'feedback is "full" in {graded[1]} but "summary" in {copy}' in done.stderr


def before_suite(graded):
    with open(os.path.join(graded[1], "shard.json"), encoding="utf-8") as handle:
        return json.load(handle)["suite"]


@pytest.mark.slow
def test_another_suite_is_refused_and_a_rerun_replaces_only_its_rows(graded):
    root, kit = graded["root"], graded["kit"]
    merged = os.path.join(root, "merged-rerun")
    assert _merge(kit, merged, graded[1], graded[2], graded[3]).returncode == 0
    before, header = _rows_by_name(os.path.join(merged, "grades.csv"))
    # shard 3's record says another suite (the hidden tests changed between the runs)
    changed = os.path.join(root, "shard-3-changed")
    shutil.copytree(graded[3], changed)
    with open(os.path.join(changed, "shard.json"), encoding="utf-8") as handle:
        record = json.load(handle)
    record["suite"] = hashlib.sha256(b"another suite").hexdigest()
    with open(os.path.join(changed, "shard.json"), "w", encoding="utf-8") as handle:
        json.dump(record, handle)
    done = _merge(kit, merged, graded[1], graded[2], changed)
    assert done.returncode == 2
    assert f'suite is "{before_suite(graded)}" in {graded[1]} but "{record["suite"]}" in ' \
        f"{changed}" in done.stderr
    # bob hands in a corrected file; shard 2 alone is graded again and merged again
    shutil.copyfile(os.path.join(kit, "examples", "alice.py"),
                    os.path.join(root, "bob.py"))
    rerun = _grader(kit, "grade", os.path.join(root, "bob.py"),
                    os.path.join(kit, "examples", "dana.zip"),
                    *[os.path.join(kit, "examples", s) for s in ("alice.py", "chen.py", "erik",
                                                                "fatima.py")],
                    "--out", graded[2], "--jobs", "1", "--shard", "2/3")
    assert rerun.returncode == 0, rerun.stderr
    assert _merge(kit, merged, graded[1], graded[2], graded[3]).returncode == 0
    after, _ = _rows_by_name(os.path.join(merged, "grades.csv"))
    assert sorted(after) == sorted(before)
    assert [n for n in before if before[n] != after[n]] == ["bob"]
    assert after["bob"][header.index("total")] == "100"
    assert before["bob"][header.index("total")] == "83"


@pytest.mark.slow
def test_cpu_parts_and_gpu_part_merged_equal_one_run(graded):
    root, kit = graded["root"], graded["kit"]
    few = ["bob.ipynb", "dana.zip", "erik"]  # GPU 10, 8 and 0 in the one run
    cpu, gpu = os.path.join(root, "cpu"), os.path.join(root, "gpu")
    _grade_at_once((kit, cpu, ["--parts", "cpu"], few), (kit, gpu, ["--parts", "gpu"], few))
    cpu_rows, cpu_header = _rows_by_name(os.path.join(cpu, "grades.csv"))
    assert not any(h.startswith("GPU") for h in cpu_header)
    alone = _merge(kit, os.path.join(root, "m-cpu-only"), cpu)
    assert alone.returncode == 2 and "no shard folder graded part GPU" in alone.stderr
    twice = _merge(kit, os.path.join(root, "m-gpu-twice"), gpu, graded[1], graded[2], graded[3])
    assert twice.returncode == 2 and "part GPU is graded twice" in twice.stderr
    # a set of parts that lacks a student, either set (the GPU node given another class)
    for lacking, other, says in ((gpu, cpu, "parts sequence_mask"), (cpu, gpu, "parts GPU")):
        copy = _copy(lacking, lacking + "-without-erik")
        with open(os.path.join(copy, "shard.json"), encoding="utf-8") as handle:
            record = json.load(handle)
        record["rows"] = [row for row in record["rows"] if row[0] != "erik"]
        with open(os.path.join(copy, "shard.json"), "w", encoding="utf-8") as handle:
            json.dump(record, handle)
        shutil.rmtree(os.path.join(copy, "erik"))
        done = _merge(kit, os.path.join(root, "m-lacking"), other, copy)
        assert done.returncode == 2
        assert f"nothing was merged: erik is graded for {says}" in done.stderr
        assert "only: every student needs every part" in done.stderr
    # one student's identity, name, time or flags differing between the sets of parts (the
    # GPU node given another download): each field named
    for field, value in (("student_id", "10099"), ("student_name", "Someone Else"),
                         ("submitted_at", "2030-01-01T00:00:00Z"), ("flags", ["late"])):
        copy = _copy(gpu, f"{gpu}-{field}")
        _edit(copy, "dana", "gradebook-row.json", lambda row: row.update({field: value}),
              record_it=True)
        done = _merge(kit, os.path.join(root, "m-identity"), cpu, copy)
        assert done.returncode == 2, field
        assert f"nothing was merged: dana's {field} differs between {cpu} and {copy}" in \
            done.stderr, done.stderr
    merged = os.path.join(root, "m-parts")
    done = _merge(kit, merged, cpu, gpu)
    assert done.returncode == 0, done.stderr
    one, header = _rows_by_name(os.path.join(graded["one"], "grades.csv"))
    rows, merged_header = _rows_by_name(os.path.join(merged, "grades.csv"))
    assert merged_header == header and sorted(rows) == ["bob", "dana", "erik"]
    for name in rows:
        assert rows[name] == one[name], name
    assert [rows[n][header.index("GPU (/10)")] for n in ("bob", "dana", "erik")] == ["10", "8", "0"]
    with open(os.path.join(merged, "dana", "gradebook-row.json"), encoding="utf-8") as handle:
        row = json.load(handle)
    with open(os.path.join(gpu, "shard.json"), encoding="utf-8") as handle:
        host = json.load(handle)["machine"]["host"]
    assert row["graded_by"]["GPU"]["host"] == host and set(row["graded_by"]) == set(row["parts"])
    with open(os.path.join(merged, "dana", "results.json"), encoding="utf-8") as handle:
        results = json.load(handle)
    with open(os.path.join(graded["one"], "dana", "results.json"), encoding="utf-8") as handle:
        whole = json.load(handle)
    assert results["score"] == whole["score"] == 69
    assert sorted(t["name"] for t in results["tests"]) == sorted(t["name"] for t in whole["tests"])


# -- the recipes that cannot run here: their structure ------------------------------------

DEPLOY = os.path.join(KIT, "deploy")


def _commands(container):
    return " ".join(container.get("command", []) + container.get("args", []))


def test_kubernetes_indexed_jobs_are_well_formed():
    """No cluster here: the manifests are checked as a Job of batch/v1 must be, and for
    the one thing the recipe relies on (index i grades shard i+1 of completions)."""
    yaml = pytest.importorskip("yaml")
    with open(os.path.join(DEPLOY, "kubernetes", "grade-jobs.yaml"), encoding="utf-8") as handle:
        jobs = {doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(handle)}
    with open(os.path.join(DEPLOY, "kubernetes", "merge-job.yaml"), encoding="utf-8") as handle:
        merge = yaml.safe_load(handle)
    assert sorted(jobs) == ["attention-grade-cpu", "attention-grade-gpu"]
    for name, job in jobs.items():
        assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
        spec = job["spec"]
        assert spec["completionMode"] == "Indexed"
        assert isinstance(spec["completions"], int) and 1 <= spec["parallelism"] <= spec["completions"]
        pod = spec["template"]["spec"]
        assert pod["restartPolicy"] in ("Never", "OnFailure")  # what a Job accepts
        (container,) = pod["containers"]
        assert container["name"] and container["image"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert int(env["SHARDS"]) == spec["completions"]
        command = _commands(container)
        assert "K=$((JOB_COMPLETION_INDEX + 1))" in command and '--shard "$K/$SHARDS"' in command
        mounts = {m["name"] for m in container["volumeMounts"]}
        assert mounts == {v["name"] for v in pod["volumes"]}
    assert "--parts cpu" in _commands(jobs["attention-grade-cpu"]["spec"]["template"]["spec"]["containers"][0])
    gpu = jobs["attention-grade-gpu"]["spec"]["template"]["spec"]["containers"][0]
    assert "--parts gpu" in _commands(gpu) and gpu["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert (merge["apiVersion"], merge["kind"]) == ("batch/v1", "Job")
    merged = _commands(merge["spec"]["template"]["spec"]["containers"][0])
    assert "grader merge /grading/cpu-* /grading/gpu-*" in merged


def test_actions_matrix_is_well_formed():
    yaml = pytest.importorskip("yaml")
    with open(os.path.join(DEPLOY, "github-actions", "grade-class.yml"), encoding="utf-8") as handle:
        flow = yaml.safe_load(handle)
    assert "workflow_dispatch" in flow.get("on", flow.get(True))  # YAML 1.1 reads `on` as True
    shards = int(flow["env"]["SHARDS"])
    grade = flow["jobs"]["grade"]
    assert grade["strategy"]["matrix"]["shard"] == list(range(1, shards + 1))
    runs = [step.get("run", "") for step in grade["steps"]]
    assert any("--shard ${{ matrix.shard }}/$SHARDS --parts cpu" in r for r in runs)
    assert any("--parts gpu" in step.get("run", "") for step in flow["jobs"]["gpu"]["steps"])
    assert "gpu" in flow["jobs"]["gpu"]["runs-on"]
    merge = flow["jobs"]["merge"]
    assert sorted(merge["needs"]) == ["gpu", "grade"]
    assert any("grader merge cpu-* gpu-*" in step.get("run", "") for step in merge["steps"])
    for job in flow["jobs"].values():  # one isolation level everywhere, or merge refuses
        graded = [s["run"] for s in job["steps"] if "grader grade" in s.get("run", "")]
        assert all("--isolation $ISOLATION" in r for r in graded)


@pytest.mark.slow
def test_a_student_with_two_files_lands_in_one_shard(tmp_path):
    """Canvas: wangli (user 10000) uploaded twice; the layout keeps the newer upload before
    the class is split, so one shard grades it (sha256('10000') mod 2 + 1 = 2) and the other
    never sees wangli; liuyang (10006) is shard 1's."""
    assert int(hashlib.sha256(b"10000").hexdigest(), 16) % 2 + 1 == 2
    assert int(hashlib.sha256(b"10006").hexdigest(), 16) % 2 + 1 == 1
    root = str(tmp_path)
    kit = _snapshot(root)
    download = os.path.join(root, "canvas")
    os.makedirs(download)
    skeleton = os.path.join(KIT, "assignments", "attention", "attention.py")
    solution = os.path.join(kit, "solutions", "attention.py")
    for name, source in (("wangli_10000_90000_attention.py", skeleton),      # first upload
                         ("wangli_10000_90001_attention.py", solution),      # the newer one
                         ("liuyang_10006_90002_attention.py", skeleton)):
        shutil.copyfile(source, os.path.join(download, name))
    files = sorted(os.path.join(download, n) for n in os.listdir(download))
    outs = [os.path.join(root, f"shard-{k}") for k in (1, 2)]
    started = [subprocess.Popen([sys.executable, "-m", "grader", "grade", *files, "--out", out,
                                 "--jobs", "1", "--shard", f"{k}/2"], cwd=kit,
                                env=dict(os.environ, PYTHONPATH=kit), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
               for k, out in zip((1, 2), outs)]
    for proc in started:
        said, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, said[-3000:]
    first, header = _rows_by_name(os.path.join(outs[0], "grades.csv"))
    second, _ = _rows_by_name(os.path.join(outs[1], "grades.csv"))
    assert sorted(first) == ["liuyang_10006"] and sorted(second) == ["wangli_10000"]
    assert second["wangli_10000"][header.index("total")] == "100"   # the newer upload
    assert first["liuyang_10006"][header.index("total")] == "0"
    merged = os.path.join(root, "merged")
    assert _merge(kit, merged, *outs).returncode == 0
    target = os.path.join(root, "canvas.csv")
    done = _grader(kit, "export", "canvas", "--from", merged, "--out", target,
                   "--assignment", "Attention")
    assert done.returncode == 0, done.stderr
    exported = {row["ID"]: row["Attention"] for row in csv.DictReader(
        io.StringIO(open(target, encoding="utf-8-sig").read()))
        if row["Student"] != "Points Possible"}
    assert exported == {"10000": "100", "10006": "0"}


@pytest.mark.parametrize("text, says", [
    ("0/3", "--shard 0/3: K must be from 1 to N (3)"),
    ("4/3", "--shard 4/3: K must be from 1 to N (3)"),
    ("1/0", "--shard 1/0: N must be from 1 to 10000"),
    ("1/10001", "--shard 1/10001: N must be from 1 to 10000"),
    ("2", "--shard 2: expected K/N, e.g. 2/8"),
    ("1/3/5", "--shard 1/3/5: expected K/N"),
    ("-1/3", "--shard -1/3: expected K/N"),
    ("１/3", "expected K/N"),                      # a full-width digit is no K
])
def test_a_shard_that_cannot_be_is_refused_by_name(text, says):
    from grader import shards
    with pytest.raises(shards.ShardError) as error:
        shards.parse_shard(text)
    assert says in str(error.value)


def test_parts_name_what_runs():
    """cpu and gpu follow the declaration's gpu parts, whatever they are called."""
    from grader import shards
    suite = ["sequence_mask", "masked_softmax", "transpose", "GPU"]
    gpu = ("GPU",)
    assert shards.select_parts(shards.parse_parts("cpu"), suite, gpu) == suite[:3]
    assert shards.select_parts(shards.parse_parts("gpu"), suite, gpu) == ["GPU"]
    assert shards.select_parts(shards.parse_parts("all"), suite, gpu) == suite
    assert shards.select_parts(shards.parse_parts("transpose,sequence_mask"), suite, gpu) == \
        ["sequence_mask", "transpose"]                  # in the suite's order
    other = ["encoder", "on CUDA", "with AMP"]
    assert shards.select_parts("gpu", other, ("on CUDA", "with AMP")) == ["on CUDA", "with AMP"]
    assert shards.select_parts("cpu", other, ("on CUDA", "with AMP")) == ["encoder"]
    with pytest.raises(shards.ShardError) as error:
        shards.select_parts("gpu", ["encoder"], ())
    assert "--parts gpu: the hidden suite has no such part (its parts: encoder)" in str(error.value)
    with pytest.raises(shards.ShardError) as error:
        shards.select_parts(shards.parse_parts("transpose,mask"), suite, gpu)
    assert "no part mask in the hidden suite (its parts: sequence_mask, masked_softmax" in str(error.value)


def test_command_line_refusals_grade_nothing(tmp_path):
    out = tmp_path / "out"
    for argv, says in (
            (["grade", os.path.join(KIT, "examples", "alice.py"), "--out", str(out),
              "--shard", "3/2"], "grader grade: --shard 3/2: K must be from 1 to N (2)"),
            (["grade", os.path.join(KIT, "examples", "alice.py"), "--out", str(out),
              "--shard", "1/2", "--results-json", str(tmp_path / "r.json")],
             "grader grade: --results-json is for one submission graded whole (Gradescope); "
             "--shard splits a class: use one or the other"),
            (["merge", str(tmp_path), "--out", str(out)],
             f"grader merge: nothing was merged: {tmp_path} has no shard.json")):
        done = run_grader(*argv, timeout=300)
        assert done.returncode == 2 and says in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()
    (tmp_path / "file").write_text("x")
    done = run_grader("merge", str(tmp_path), "--out", str(tmp_path / "file"), timeout=300)
    assert done.returncode == 2 and "exists and is not a folder" in done.stderr
