"""The limits a submission runs under; every one can be changed on the command line."""
import dataclasses


@dataclasses.dataclass(frozen=True)
class Limits:
    call_seconds: float = 10.0        # wall clock for one call into the submission
    import_seconds: float = 20.0      # wall clock for running the file's top level
    startup_seconds: float = 60.0     # wall clock for starting Python and importing torch
    submission_seconds: float = 300.0  # wall clock for all of one submission's tests
    cpu_seconds: int = 120            # CPU time of the worker process (RLIMIT_CPU)
    memory_mb: int = 3072             # memory of the worker: its cgroup's limit (shared memory and
                                      # tmpfs included), or the watchdog's on summed PSS
    file_size_mb: int = 16            # largest file the worker may write (RLIMIT_FSIZE)
    disk_mb: int = 64                 # size of its private /submission and /tmp (namespaces only)
    processes: int = 32               # processes and threads (RLIMIT_NPROC, with a throwaway uid)
    open_files: int = 256             # RLIMIT_NOFILE
    output_kb: int = 64               # stdout and stderr kept for the report, per stream

    def rlimits(self, gpu=False, processes_base=0):
        """What the worker applies to itself before it reads the submission."""
        return {
            "cpu_seconds": self.cpu_seconds,
            # virtual memory: torch maps about 0.7 GB of libraries; CUDA reserves terabytes of
            # address space, so on a GPU only the resident-memory watchdog applies
            "address_space_bytes": None if gpu else (self.memory_mb + 2048) * 2**20,
            "file_size_bytes": self.file_size_mb * 2**20,
            "processes": processes_base + self.processes,
            "open_files": self.open_files,
        }

    def cgroup_pids(self):
        """pids.max of the worker's cgroup: its processes and threads, plus the few the
        sandbox itself runs there (the joining shell, bwrap or unshare and their init)."""
        return self.processes + 8

    def describe(self):
        return dataclasses.asdict(self)
