"""The Slurm recipe (deploy/slurm/) on a real one-node cluster: munged, slurmctld and slurmd
started in a temporary folder (own socket, ports, state; stopped by the pids they wrote),
deploy/slurm/submit.sh submits the CPU shards as an array (--array=1-3), the GPU part as a
job asking --gres=gpu:1 (the node declares one GPU without a device, so the job runs here
and grades the GPU part with the CPU-only device check, as a GPU node without CUDA would),
and the merge as a job depending on both (afterok). The merged grades.csv must equal one
`grader grade` of the same class, byte for byte.

Needs Debian's slurm-wlm and munge (`apt-get install -y slurm-wlm munge`) and root;
skipped with that reason otherwise."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import KIT, copy_kit
from grading import run_grader

NEEDED = ("sbatch", "squeue", "scontrol", "sinfo", "slurmctld", "slurmd", "munged")
missing = [tool for tool in NEEDED if shutil.which(tool) is None
           and not os.path.exists(f"/usr/sbin/{tool}")]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(missing), reason=f"Slurm is not installed ({', '.join(missing)} "
                       "missing): apt-get install -y slurm-wlm munge"),
    pytest.mark.skipif(os.geteuid() != 0, reason="a one-node Slurm cluster needs root here"),
    pytest.mark.skipif(not os.path.exists("/etc/munge/munge.key"),
                       reason="munge has no key (/etc/munge/munge.key)"),
]

CLASS = ["alice.py", "bob.ipynb", "dana.zip", "erik"]
DEPLOY = os.path.join(KIT, "deploy", "slurm")


def _tool(name):
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


CONF = """ClusterName=attnkit
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
AuthInfo=socket={dir}/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SlurmdSpoolDir={dir}/spool
StateSaveLocation={dir}/state
SlurmctldLogFile={dir}/log/ctld.log
SlurmdLogFile={dir}/log/d.log
SlurmctldPidFile={dir}/ctld.pid
SlurmdPidFile={dir}/d.pid
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
ReturnToService=2
SlurmUser=root
GresTypes=gpu
NodeName={host} CPUs=8 RealMemory=20000 Gres=gpu:1 State=UNKNOWN
PartitionName=main Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _pid(path):
    try:
        with open(path, encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def _stop(pid_files):
    for path in pid_files:
        pid = _pid(path)
        if pid:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
    # a short grace, then SIGKILL: the cluster's state is thrown away with its folder, and
    # slurmctld, past "Saving all slurm state", took the whole 20 s it was once given in each
    # full run of the suite (1.2 s when this file runs alone), its worker idle meanwhile
    deadline = time.monotonic() + 3
    for path in pid_files:
        pid = _pid(path)
        while pid and time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("slurm"))
    for sub in ("spool", "state", "log"):
        os.makedirs(os.path.join(folder, sub))
    host = socket.gethostname()
    conf = os.path.join(folder, "slurm.conf")
    with open(conf, "w", encoding="utf-8") as handle:
        handle.write(CONF.format(host=host, dir=folder, ctld_port=_free_port(),
                                 d_port=_free_port()))
    with open(os.path.join(folder, "gres.conf"), "w", encoding="utf-8") as handle:
        handle.write(f"AutoDetect=off\nNodeName={host} Name=gpu File=/dev/null\n")
    env = dict(os.environ, SLURM_CONF=conf)
    pid_files = [os.path.join(folder, name) for name in ("d.pid", "ctld.pid", "munged.pid")]
    try:
        subprocess.run([_tool("munged"), "--force", f"--socket={folder}/munge.sock",
                        f"--pid-file={folder}/munged.pid", f"--log-file={folder}/log/munged.log",
                        f"--seed-file={folder}/munged.seed", "--key-file=/etc/munge/munge.key"],
                       check=True, timeout=30)
        subprocess.run([_tool("slurmctld"), "-f", conf], env=env, check=True, timeout=30)
        subprocess.run([_tool("slurmd"), "-f", conf], env=env, check=True, timeout=30)
        deadline = time.monotonic() + 90
        while True:
            state = subprocess.run([_tool("sinfo"), "-h", "-o", "%t"], env=env,
                                   capture_output=True, text=True).stdout.strip()
            if state == "idle":
                break
            if time.monotonic() > deadline:
                logs = "".join(open(os.path.join(folder, "log", n), errors="replace").read()[-2000:]
                               for n in ("ctld.log", "d.log")
                               if os.path.exists(os.path.join(folder, "log", n)))
                pytest.fail(f"the one-node cluster did not come up (sinfo: {state!r}):\n{logs}")
            time.sleep(0.5)
        yield {"dir": folder, "env": env}
    finally:
        subprocess.run([_tool("scancel"), "--user=root"], env=env, timeout=30,
                       capture_output=True)
        _stop(pid_files)


def _snapshot(root):
    """The kit as it is now: the suite fingerprint hashes the grader's code, which other
    work in this checkout may change while the jobs run."""
    kit = os.path.join(root, "kit")
    return copy_kit(kit, ("grader", "tests_hidden", "solutions", "examples", "deploy"))


def _job_state(env, job):
    shown = subprocess.run([_tool("scontrol"), "-o", "show", "job", job], env=env,
                           capture_output=True, text=True).stdout
    for field in shown.split():
        if field.startswith("JobState="):
            return field.split("=", 1)[1]
    return "GONE"


def test_gres_line_is_accepted(cluster):
    done = subprocess.run([_tool("sbatch"), "--test-only", os.path.join(DEPLOY, "grade-gpu.sbatch")],
                          env=dict(cluster["env"], CLASS="/nonexistent", OUT="/nonexistent"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "to start at" in done.stderr


def test_array_gpu_job_and_merge_equal_one_run(cluster, tmp_path):
    root = str(tmp_path)
    kit = _snapshot(root)
    subs = os.path.join(root, "class")
    os.makedirs(subs)
    for name in CLASS:
        source = os.path.join(kit, "examples", name)
        (shutil.copytree if os.path.isdir(source) else shutil.copyfile)(
            source, os.path.join(subs, name))
    out = os.path.join(root, "grading")
    venv_bin = os.path.dirname(sys.executable)
    env = dict(cluster["env"], PYTHONPATH=kit,
               PATH=venv_bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
               SBATCH_MEM_PER_NODE="2G")
    submitted = subprocess.run([os.path.join(kit, "deploy", "slurm", "submit.sh"), subs, out, "3"],
                               env=env, capture_output=True, text=True, timeout=120)
    assert submitted.returncode == 0, submitted.stderr
    merge_job = submitted.stdout.strip().splitlines()[-1]
    # the same class graded by one run, meanwhile
    one = os.path.join(root, "one")
    single = run_grader("grade", *[os.path.join(subs, n) for n in CLASS], "--out", one, cwd=kit,
                        env=env, timeout=900)
    assert single.returncode == 0, single.stderr[-3000:]
    deadline = time.monotonic() + 900
    while _job_state(cluster["env"], merge_job) in ("PENDING", "RUNNING", "CONFIGURING"):
        assert time.monotonic() < deadline, "the merge job did not finish in 15 minutes"
        time.sleep(2)
    logs = "".join(open(os.path.join(out, n), errors="replace").read()[-3000:]
                   for n in sorted(os.listdir(out)) if n.endswith(".out"))
    assert _job_state(cluster["env"], merge_job) == "COMPLETED", logs
    assert sorted(n for n in os.listdir(out) if n.startswith(("cpu-", "gpu-"))) == \
        ["cpu-1", "cpu-2", "cpu-3", "gpu-1"]
    with open(os.path.join(one, "grades.csv"), "rb") as a, \
            open(os.path.join(out, "grades", "grades.csv"), "rb") as b:
        assert a.read() == b.read()
    with open(os.path.join(out, "grades", "merge.json"), encoding="utf-8") as handle:
        merged = json.load(handle)
    jobs = {(s["parts"] == ["GPU"], s["shard"], s["of"]) for s in merged["shards"]}
    assert jobs == {(False, 1, 3), (False, 2, 3), (False, 3, 3), (True, 1, 1)}
    assert all(s["machine"].get("SLURM_JOB_ID") for s in merged["shards"])
