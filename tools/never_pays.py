"""Never pays, in full: every catalog mistake in a function others call, put into every
submission whose callees are right, never raises the total.

    python tools/never_pays.py [--assignment attention|transformer|all] [--carry-forward on|off]
                               [--jobs 2] [--out DIR] [--sample N]

The submissions and pairs are tests/test_follow_through.py's (`never_pays_pairs`): the
solution, the solution with one caller left unwritten, raising or wrong, and (attention)
the examples alice.py and chen.py; that test grades a seeded sample of the pairs (none of
the solution's, whose 100 cannot be raised), this grades them all. Prints, per assignment: how many submission x mistake pairs, how many
broke the property (with each), and the batch's wall time (graded at --jobs, so a run
with --carry-forward off beside one with on gives the rule's cost).
"""
import argparse
import importlib.util
import os
import sys
import tempfile
import time

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(KIT, "tests"))
sys.path.insert(0, KIT)


def _helpers():
    spec = importlib.util.spec_from_file_location(
        "attnkit_follow_through", os.path.join(KIT, "tests", "test_follow_through.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _children_cpu():
    """CPU seconds of every process this one waited for (the batch's, whatever the load)."""
    import resource
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run(name, setting, jobs, out, sample=None):
    from grader.catalog import Catalog
    from grader.grade import SuiteOptions, grade_batch
    helpers = _helpers()
    declared, source, callers = {
        "attention": (helpers.ATTENTION, helpers.SOLUTION, helpers.CALLERS),
        "transformer": (helpers.TRANSFORMER, helpers.T_SOLUTION, ("TransformerEncoderBlock",)),
    }[name]
    catalog = Catalog.of(declared)
    found, pairs = helpers.never_pays_pairs(source, catalog, declared, callers, sample)
    named = dict(found)
    for base, base_source, mistake_id in pairs:
        named[f"{base}+{mistake_id}"] = catalog.by_id(mistake_id).apply(base_source)
    folder = os.path.join(out, f"{name}-{setting}")
    os.makedirs(os.path.join(folder, "subs"), exist_ok=True)
    paths = []
    for key, text in named.items():
        path = os.path.join(folder, "subs", f"{key}.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        paths.append(path)
    started = time.monotonic()
    cpu, own = _children_cpu(), time.process_time()
    results = grade_batch(paths, os.path.join(folder, "out"),
                          SuiteOptions(assignment=declared, carry_forward=setting), jobs=jobs,
                          force=True, stream=open(os.devnull, "w"))
    seconds = time.monotonic() - started
    cpu = _children_cpu() - cpu + time.process_time() - own
    by_name = {r.name: r for r in results}
    broken = [(base, mistake_id, by_name[f"{base}+{mistake_id}"].score, by_name[base].score)
              for base, _s, mistake_id in pairs
              if by_name[f"{base}+{mistake_id}"].score > by_name[base].score]
    print(f"{name}, carry forward {setting}: {len(found)} submissions, {len(pairs)} "
          f"submission x mistake pairs, {len(broken)} raise the total; "
          f"{len(named)} graded in {seconds:.0f} s ({seconds / len(named):.2f} s each, "
          f"--jobs {jobs}; CPU {cpu / len(named):.2f} s each, load {os.getloadavg()[0]:.1f})")
    for base, mistake_id, with_it, without in broken:
        print(f"  {base} + {mistake_id}: {with_it:g} > {without:g}")
    return broken


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default="all",
                        choices=("attention", "transformer", "all"))
    parser.add_argument("--carry-forward", default="on", choices=("on", "off"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=None)
    parser.add_argument("--sample", type=int, default=None,
                        help="a seeded sample of N pairs whose base is not the solution (the test's)")
    args = parser.parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix="never-pays-")
    names = ("attention", "transformer") if args.assignment == "all" else (args.assignment,)
    broken = []
    for name in names:
        broken += run(name, args.carry_forward, args.jobs, out, args.sample)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
