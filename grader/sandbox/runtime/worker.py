"""The worker: the only process that runs a submission's code.

Started as `python -I worker.py REPLY_FD LIMITS_JSON SUBMISSION_FILE IDS_JSON MODULE` inside the
submission's private folder (or forked from grader/sandbox/template.py into it), with requests arriving as frames on stdin and replies
leaving as frames on REPLY_FD (stdout and stderr are the student's, captured by the
trusted side). Before it imports torch it gives up every privilege (privileges.py: the same
drop a forked worker makes, checked by reading /proc/self/status back; IDS_JSON names the
uid and gid it must run as); before it reads a line of the submission it lowers its own
resource limits (soft and hard, so the submission cannot raise them again) and says it is
ready. The submission is imported as MODULE (the assignment's module name, so a later
assignment's file can `import` it and the earlier assignments' files beside it by theirs);
a worker given a name that is not a plain module name, or one already taken, refuses to start.

Requests:  {"op": "load", "names": [...]}        import the submission
           {"op": "probe", "probe": {...}}        run one probe (see probes.py); a probe
                                                  that names `answered` may ask the
                                                  trusted side before its reply (answers.py)
           {"op": "probes", "probes": [...],      run each in turn: one reply per probe; what
            "hold": [i, ...], "hold_bytes": n}     the probes listed in `hold` print is held
                                                  back and sent with their replies ("held":
                                                  [out, bytes printed, err, bytes printed],
                                                  the first n bytes of each), for the trusted
                                                  side to count only once a test asks them
           {"op": "bye"}                          exit
Every reply is {"ok": bool, ...}. The worker holds neither the reference solution nor the
hidden tests; whatever it replies is only the submission's claim, compared by the trusted side.
"""
import json
import importlib.util
import keyword
import os
import resource
import sys
import time

RLIMITS = {"cpu_seconds": resource.RLIMIT_CPU, "address_space_bytes": resource.RLIMIT_AS,
           "file_size_bytes": resource.RLIMIT_FSIZE, "processes": resource.RLIMIT_NPROC,
           "open_files": resource.RLIMIT_NOFILE}


def apply_limits(limits):
    for name, value in limits.items():
        if value is None or name not in RLIMITS:
            continue
        kind = RLIMITS[name]
        _, hard = resource.getrlimit(kind)
        value = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
        resource.setrlimit(kind, (value, value))


NOT_DROPPED = 72  # the exit status of a worker that could not give up its privileges
BAD_MODULE = 73   # the exit status of a worker given a module name it may not register
MAX_MODULE_NAME = 64


def module_name(name):
    """`name` if the submission may be registered under it (grader/sandbox/stage.py checks
    the same on the trusted side): a Python name of at most MAX_MODULE_NAME characters, not
    a keyword, a module of the standard library, one already imported or one installed (the
    submission's folder comes last on sys.path: an installed module of that name would be
    imported in its place); else ValueError."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) \
            or len(name) > MAX_MODULE_NAME:
        raise ValueError(f"{str(name)[:80]!r} is not a module name")
    # the submission's folder is not on sys.path yet: find_spec finds only what is installed
    if name in sys.stdlib_module_names or name in sys.modules or importlib.util.find_spec(name):
        raise ValueError(f"the module name {name!r} is taken")
    return name


def main():
    runtime_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, runtime_parent)
    from runtime import privileges  # only once runtime's parent is on sys.path
    ids = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    try:  # the uid and gid were changed before exec (setpriv): they are checked here
        privileges.drop()
        privileges.check(ids.get("uid"), ids.get("gid"))
    except (OSError, privileges.NotDropped) as exc:
        print(f"the worker refused to start: {exc}", file=sys.stderr)
        return NOT_DROPPED
    import torch  # noqa: F401 - only after every privilege is dropped
    from runtime import answers, guards, probes, protocol  # noqa: F401 (answers: for probes)
    sys.path.remove(runtime_parent)
    module = sys.argv[5] if len(sys.argv) > 5 else None
    return run(int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], guards, probes, protocol,
               module)


def run(reply_fd, limits, submission, guards, probes, protocol, module=None):
    """Serve requests for `submission` (a path inside the sandbox), imported as `module`,
    replying on reply_fd, after lowering `limits`: the same for a fresh worker (main) and a
    forked one (grader/sandbox/template.py), whose Python has imported torch and the runtime."""
    import torch  # not at the top: main imports it after dropping privileges
    try:
        module = module_name(module)
    except ValueError as exc:
        print(f"the worker refused to start: {exc}", file=sys.stderr)
        return BAD_MODULE
    # Before any submission code: torch's switches for modes are wrapped (see guards.py), and
    # the runtime's modules leave sys.modules, so a submission does not find them by name.
    guards.install_tripwires()
    for name in [n for n in sys.modules if n == "runtime" or n.startswith("runtime.")]:
        del sys.modules[name]
    torch.set_num_threads(1)

    # The request channel moves off fd 0 so that input() in student code reads nothing.
    request_fd = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    cuda = torch.cuda.is_available()  # before the address-space limit, which CUDA cannot live under
    apply_limits(limits)
    protocol.write_frame(reply_fd, {
        "ok": True, "ready": True, "pid": os.getpid(), "uid": os.getuid(),
        "torch": str(torch.__version__), "cuda": cuda})

    submission = os.path.abspath(submission)
    sys.dont_write_bytecode = True  # the private folder holds the submission and nothing else
    # The submission's own folder comes last, so it cannot shadow torch or the standard library.
    sys.path.append(os.path.dirname(submission))
    namespace = None
    me = os.getpid()
    channel = probes.answers.Channel(request_fd, reply_fd, protocol)

    while True:
        try:
            request = protocol.read_frame(request_fd)
        except protocol.ProtocolError:
            return 0
        op = request.get("op")
        if op == "bye":
            return 0
        if op == "probes":  # several probes in one request: one reply each, in order (none
            # of them is answered: an ask would meet a reply the trusted side does not expect)
            held = set(request.get("hold", []))
            limit = int(request.get("hold_bytes", 0))
            for index, probe in enumerate(request.get("probes", [])):
                _answer(reply_fd, me, lambda: _probe(namespace, dict(probe, answered=None),
                                                     probes, None, module), probes, protocol,
                        hold=limit if index in held else None)
            continue
        if op == "load":
            def work():
                nonlocal namespace
                namespace, reply = _load(submission, module, request.get("names", []), probes)
                return reply
        elif op == "probe":
            def work():
                return _probe(namespace, request["probe"], probes, channel, module)
        else:
            def work():
                return {"ok": False, "error": {"type": "BadRequest", "message": str(op)}}
        _answer(reply_fd, me, work, probes, protocol)


def _probe(namespace, probe, probes, channel, module):
    """Run one probe; the names it lists as `answered` are the trusted side's answers while
    it runs (answers.py), in the submission's module or an earlier module it imported."""
    if namespace is None:
        return {"ok": False, "error": {"type": "NotLoaded", "message": "no module"}}
    answered = probe.get("answered") if channel is not None else None
    if not answered:
        return {"ok": True, "result": probes.run_probe(namespace, probe)}
    spaces = {module: namespace}
    for entry in answered:
        name = entry[0] if isinstance(entry, (list, tuple)) and entry else None
        if isinstance(name, str) and name != module and isinstance(sys.modules.get(name),
                                                                    type(sys)):
            spaces[name] = sys.modules[name]
    with probes.answers.installed(spaces, answered, channel):
        return {"ok": True, "result": probes.run_probe(namespace, probe)}


def _answer(reply_fd, me, work, probes, protocol, hold=None):
    """Run `work` and send its reply (what the submission raised, if anything). `hold`: what
    it prints goes to files of its own meanwhile, and the reply carries the first `hold`
    bytes of each stream and how many were printed ("held")."""
    files = _hold() if hold is not None else None
    try:
        reply = work()
    except BaseException as exc:  # sys.exit() or KeyboardInterrupt raised by student code
        reply = {"ok": False, "error": probes.describe_exception(exc)}
    if os.getpid() != me:
        os._exit(0)  # a child the submission forked came back here: it must not answer
    _flush()
    if files is not None:
        reply["held"] = _release(files, hold)
    protocol.write_frame(reply_fd, reply)


def _hold():
    """Point fds 1 and 2 at in-memory files of their own: [(saved fd, file fd)] for each."""
    _flush()
    kept = []
    for target in (1, 2):
        file = os.memfd_create("held", os.MFD_CLOEXEC)
        kept.append((os.dup(target), file))
        os.dup2(file, target)
    return kept


def _release(files, limit):
    """Fds 1 and 2 back where they were; [out, bytes printed, err, bytes printed]."""
    held = []
    for target, (saved, file) in zip((1, 2), files):
        os.dup2(saved, target)
        os.close(saved)
        size = os.fstat(file).st_size
        held += [os.pread(file, min(size, limit), 0) if size and limit else b"", size]
        os.close(file)
    return held


def _load(path, name, names, probes):
    started = time.perf_counter()
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        return None, {"ok": False, "error": probes.describe_exception(exc),
                      "seconds": time.perf_counter() - started}
    cell_errors = getattr(module, "__attnkit_cell_errors__", [])  # notebooks: see intake/notebook.py
    return module, {"ok": True, "api": probes.describe_api(module, names),
                    "cell_errors": [[int(n), str(t), str(m)] for n, t, m in cell_errors][:50],
                    "seconds": time.perf_counter() - started}


def _flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


if __name__ == "__main__":
    sys.exit(main())
