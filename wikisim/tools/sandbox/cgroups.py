"""Per-call cgroups (v1 memory and pids controllers, or v2), where the host may create them.

RLIMIT_AS caps one process and RLIMIT_NPROC needs a private uid; a cgroup caps the whole tree
of a call (memory, including its tmpfs, and process count), lists every process in it for the
sweep, and counts OOM kills. Created under the host's own cgroup before the spawn; the child
joins them while still root; the host kills their members and removes them afterwards.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

_counter = itertools.count()


@dataclass(frozen=True)
class CallCgroup:
    """One controller's directory for one call, with the files that set and report its limits."""

    path: str
    limit_file: str  # memory.limit_in_bytes / memory.max / pids.max
    events_file: str | None  # where "oom_kill N" is counted (memory only)
    kind: str  # "memory" or "pids"


@functools.cache
def _parents() -> tuple[tuple[str, str, str, str | None], ...]:
    """(kind, parent dir, limit file, events file) for each controller this host lets us use."""
    found: list[tuple[str, str, str, str | None]] = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return ()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # cgroup v2: one hierarchy, controllers listed in the directory
            for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                parent = Path(root + path)
                try:
                    enabled = (parent / "cgroup.subtree_control").read_text().split()
                except OSError:
                    continue
                if "memory" in enabled:
                    found.append(("memory", str(parent), "memory.max", "memory.events"))
                if "pids" in enabled:
                    found.append(("pids", str(parent), "pids.max", None))
                break
            continue
        for kind in ("memory", "pids"):
            if kind in controllers.split(","):
                parent = Path(f"/sys/fs/cgroup/{controllers}{path}")
                limit = "memory.limit_in_bytes" if kind == "memory" else "pids.max"
                events = "memory.oom_control" if kind == "memory" else None
                if (parent / limit).exists() or (parent / "cgroup.procs").exists():
                    found.append((kind, str(parent), limit, events))
    return tuple(item for item in found if os.access(item[1], os.W_OK))


def create(memory_bytes: int, max_processes: int) -> list[CallCgroup]:
    """Create this call's cgroups with their limits; an empty list where none can be made."""
    name = f"wikisim-py-{os.getpid()}-{next(_counter)}"
    made = []
    for kind, parent, limit_file, events_file in _parents():
        group = CallCgroup(os.path.join(parent, name), limit_file, events_file, kind)
        try:
            os.mkdir(group.path)
        except OSError:
            continue
        try:
            value = memory_bytes if kind == "memory" else max_processes
            Path(group.path, limit_file).write_text(str(value))
        except OSError:
            remove(group)
            continue
        made.append(group)
    return made


def members(group: CallCgroup) -> list[int]:
    try:
        return [int(pid) for pid in Path(group.path, "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def kill_members(groups: list[CallCgroup]) -> None:
    """SIGKILL every process in the groups until they are empty (a fork bomb cannot outrun it:
    its process count is capped and killed processes do not fork)."""
    for _ in range(1000):
        pids = {pid for group in groups for pid in members(group)}
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        os.sched_yield()


def oom_kills(groups: list[CallCgroup]) -> int:
    """How many processes the kernel killed for exceeding the call's memory cgroup."""
    total = 0
    for group in groups:
        if group.events_file is None:
            continue
        with contextlib.suppress(OSError, ValueError):
            for line in Path(group.path, group.events_file).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    total += int(value)
    return total


def remove(group: CallCgroup) -> None:
    """rmdir the group; it may take a moment for killed members to leave it."""
    for _ in range(500):
        try:
            os.rmdir(group.path)
            return
        except FileNotFoundError:
            return
        except OSError:
            kill_members([group])
            time.sleep(0.002)
