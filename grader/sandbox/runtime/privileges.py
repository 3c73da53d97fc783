"""What a worker gives up before it reads a line of the submission: one function for both
ways a worker starts (a fresh Python, or a fork of the template), so the two are equal.

    drop(uid, gid)       new session; no capability (effective, permitted, inheritable,
                         ambient, bounding set); no_new_privs; the throwaway uid and gid
    check(uid, gid)      read /proc/self/status back; raises NotDropped if anything is left

Standard library only (ctypes): the template imports it before torch, the fresh worker
runs it before importing torch.
"""
import ctypes
import os

PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
EINVAL = 22
NO_CAPABILITIES = "0000000000000000"
_LIBC = []


class NotDropped(Exception):
    """The worker still holds something it must not: it refuses to run the submission."""


def _libc():
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _prctl(option, value, arg3=0):
    return _libc().prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(arg3), ctypes.c_ulong(0),
                         ctypes.c_ulong(0))


def drop(uid=None, gid=None):
    """Give up everything the grader's process had: the same on every path and level.
    uid/gid: the throwaway ids to take (None: keep the current ones)."""
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader: a session of its own
    for cap in range(64):
        if _prctl(PR_CAPBSET_DROP, cap) != 0 and ctypes.get_errno() == EINVAL:  # past the last
            break
    if gid is not None or uid is not None:
        os.setgroups([])
    if gid is not None:
        os.setresgid(gid, gid, gid)
    if uid is not None:
        os.setresuid(uid, uid, uid)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    if _libc().capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()) != 0:
        raise NotDropped(f"capset: {os.strerror(ctypes.get_errno())}")
    if _prctl(PR_SET_NO_NEW_PRIVS, 1) != 0:
        raise NotDropped(f"no_new_privs: {os.strerror(ctypes.get_errno())}")
    _prctl(PR_SET_DUMPABLE, 1)  # as after an exec: the worker's own children may inspect it


def status():
    """The fields of /proc/self/status that say what this process holds."""
    wanted = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Uid", "Gid",
              "Groups")
    found = {}
    with open("/proc/self/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in wanted:
                found[key] = " ".join(value.split())
    return found


def check(uid=None, gid=None):
    """Raise NotDropped unless no capability is held, no_new_privs is set, the process leads
    its own session and (when given) runs as uid/gid with no supplementary group."""
    held = status()
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        if held.get(key, NO_CAPABILITIES) != NO_CAPABILITIES:
            raise NotDropped(f"{key} is {held.get(key)}")
    if held.get("NoNewPrivs") != "1":
        raise NotDropped("no_new_privs is not set")
    if os.getsid(0) != os.getpid():
        raise NotDropped("not in a session of its own")
    if uid is not None and set(os.getresuid()) != {uid}:
        raise NotDropped(f"runs as uid {os.getresuid()}, not {uid}")
    if gid is not None and (set(os.getresgid()) != {gid} or os.getgroups()):
        raise NotDropped(f"runs as gid {os.getresgid()} {os.getgroups()}, not {gid}")
