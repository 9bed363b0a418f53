"""The host side: spawn one fresh child per call, enforce wall clock and output caps, sweep its tree.

The child (child.py) applies the in-process limits itself and reports which layers it applied;
this side owns what a child cannot be trusted with: the deadline, the output budget, killing every
process the call left behind, and removing the working directory.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wikisim.errors import BackendError
from wikisim.tools.sandbox import cgroups
from wikisim.tools.sandbox.config import KilledReason, SandboxConfig, SandboxResult

CHILD_SOURCE = Path(__file__).with_name("child.py").read_text(encoding="utf-8")
UID_BASE = 1_000_000_000  # + the child's pid: a uid no other process (nor other call) has
SYSTEM_READ_PATHS = (
    "/usr",
    "/lib",
    "/lib64",
    "/bin",
    "/etc",
    "/proc",
    "/sys/devices/system/cpu",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
)
SYSTEM_WRITE_PATHS = ("/dev/null",)
CHILD_ENV_BASE = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",  # same code -> same set/dict iteration order -> same observation
    "PYTHONIOENCODING": "utf-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "OPENBLAS_NUM_THREADS": "1",  # threads count against the process cap
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
_READ_CHUNK = 65536
_namespaces_failed: list[str] = []  # why namespaces could not be set up in this process, if so


@functools.cache
def _plan() -> dict:
    """What every call shares: paths the child may read, and ancestors to cover (computed once)."""
    site_paths = [
        p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)
    ]
    read_paths = [
        sys.base_prefix,
        *site_paths,
        os.path.join(sys.prefix, "pyvenv.cfg"),
        *SYSTEM_READ_PATHS,
    ]
    read_paths = [p for p in dict.fromkeys(read_paths) if os.path.exists(p)]
    drop_uid = os.geteuid() == 0
    covers: dict[str, list[str]] = {}
    if drop_uid:  # an unprivileged uid must traverse every ancestor of what it reads
        for path in read_paths:
            parts = Path(path).parts
            for i in range(2, len(parts)):
                ancestor = str(Path(*parts[:i]))
                if not os.stat(ancestor).st_mode & stat.S_IXOTH:
                    covers.setdefault(ancestor, []).append(path)
                    break
    return {
        "read_paths": read_paths,
        "write_paths": list(SYSTEM_WRITE_PATHS),
        "site_paths": site_paths,
        "covers": sorted(covers.items()),
        "drop_uid": drop_uid,
        "try_netns": True,
        "uid_base": UID_BASE,
    }


def _traversable(path: str) -> bool:
    """Whether a process of another uid can reach `path` (every ancestor has o+x)."""
    parts = Path(path).parts
    return all(os.stat(Path(*parts[:i])).st_mode & stat.S_IXOTH for i in range(1, len(parts) + 1))


def _make_workdir(drop_uid: bool) -> str:
    """A fresh host-side working directory, named after this process (tests look for leftovers).

    Used where the child gets no private /tmp. Under a private uid it must be reachable by that
    uid, so a private TMPDIR (e.g. pytest's) gives way to /tmp.
    """
    base = tempfile.gettempdir()
    if drop_uid and not _traversable(base):
        base = "/tmp"
    return tempfile.mkdtemp(prefix=f"wikisim-py-{os.getpid()}-", dir=base)


def _pids_of_uid(uid: int) -> list[int]:
    """Live (non-zombie) processes owned by `uid`: the whole tree of one call, however it forked."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            pids.append(int(entry))
    return pids


def _sweep(pgid: int, uid: int | None) -> None:
    """Kill the process group and every process of the call's private uid until none is left."""
    for _ in range(1000):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        victims = _pids_of_uid(uid) if uid is not None else []
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if not victims:
            return
        time.sleep(0.001)


class _Stream:
    """Keeps the first `keep` bytes of a pipe and counts the rest."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    def text(self, chars: int, label: str) -> tuple[str, bool]:
        text = self.data.decode("utf-8", "replace")
        if len(text) <= chars and self.total <= self.keep:
            return text, False
        return text[
            :chars
        ] + f"\n[... {label} truncated: showing the first {chars} characters ...]", True


def _supervise(
    proc: subprocess.Popen,
    code: bytes,
    report_fd: int,
    config: SandboxConfig,
    groups: list[cgroups.CallCgroup],
) -> tuple[dict[str, _Stream], str | None]:
    """Feed the code, collect output until exit, deadline or flood, kill the tree; (streams, killed)."""
    keep = 4 * config.output_chars
    streams = {"stdout": _Stream(keep), "stderr": _Stream(keep), "report": _Stream(1 << 20)}
    sel = selectors.DefaultSelector()
    pidfd = os.pidfd_open(proc.pid)
    assert proc.stdin and proc.stdout and proc.stderr
    fds = {proc.stdout.fileno(): "stdout", proc.stderr.fileno(): "stderr", report_fd: "report"}
    for fd, name in fds.items():
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, name)
    sel.register(pidfd, selectors.EVENT_READ, "exit")
    stdin_fd = proc.stdin.fileno()
    os.set_blocking(stdin_fd, False)
    sel.register(stdin_fd, selectors.EVENT_WRITE, "stdin")
    pending = memoryview(code)
    deadline = time.monotonic() + config.wall_seconds
    killed: str | None = None
    exited = False
    while not exited and killed is None:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            killed = "wall_clock_limit"
            break
        for key, _ in sel.select(timeout):
            if key.data == "exit":
                exited = True
            elif key.data == "stdin":
                try:
                    pending = pending[os.write(stdin_fd, pending[:_READ_CHUNK]) :]
                except BlockingIOError:
                    continue
                except BrokenPipeError:  # the child died before reading its code
                    pending = pending[:0]
                if not pending:
                    sel.unregister(stdin_fd)
                    proc.stdin.close()
            else:
                chunk = os.read(key.fd, _READ_CHUNK)
                if chunk:
                    streams[key.data].add(chunk)
                else:
                    sel.unregister(key.fd)
        if streams["stdout"].total + streams["stderr"].total > config.drain_bytes:
            killed = "output_limit"
    plan = _plan()
    uid = plan["uid_base"] + proc.pid if plan["drop_uid"] else None
    cgroups.kill_members(groups)
    _sweep(proc.pid, uid)
    _drain(sel, streams, fds)
    sel.close()
    os.close(pidfd)
    if not proc.stdin.closed:
        proc.stdin.close()
    proc.wait()
    return streams, killed


def _drain(sel: selectors.BaseSelector, streams: dict[str, _Stream], fds: dict[int, str]) -> None:
    """Read what the (now dead) tree left in the pipes; bounded in case a writer escaped the sweep."""
    deadline = time.monotonic() + 1.0
    open_fds = set(fds) & {key.fd for key in sel.get_map().values()}
    while open_fds and time.monotonic() < deadline:
        for key, _ in sel.select(deadline - time.monotonic()):
            if key.fd not in open_fds:
                continue
            chunk = os.read(key.fd, _READ_CHUNK)
            if chunk:
                streams[key.data].add(chunk)
            else:
                sel.unregister(key.fd)
                open_fds.discard(key.fd)


def _parse_report(data: bytes) -> tuple[dict | None, dict | None]:
    """(setup, outcome) from the report pipe. The code can write to that pipe too, so lines that
    are not well-formed are skipped and the last well-formed outcome wins (the real one is
    written last, after the code has run)."""
    setup = outcome = None
    for i, line in enumerate(data.decode("utf-8", "replace").splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if i == 0:
            setup = record
        elif isinstance(record.get("status"), int) and isinstance(record.get("error"), str | None):
            outcome = record
    return setup, outcome


def _stop_reason(
    killed: str | None, outcome: dict | None, returncode: int, config: SandboxConfig, oom_kills: int
) -> tuple[KilledReason | None, str | None]:
    """(killed_reason, error text) for how the run ended."""
    if killed == "wall_clock_limit":
        return (
            "wall_clock_limit",
            f"TimeoutError: the code ran past the wall-clock limit of {config.wall_seconds:g} s and was stopped.",
        )
    if killed == "output_limit":
        return (
            "output_limit",
            f"OutputLimitError: the code wrote more than {config.drain_bytes} bytes of output and was stopped.",
        )
    if outcome is not None:
        error = outcome.get("error")
        return None, None if error is None else error.encode("utf-8", "replace").decode("utf-8")
    if returncode < 0:
        sig = -returncode
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        if oom_kills and sig == signal.SIGKILL:
            return "memory_limit", (
                f"MemoryError: the code used more than the memory cap of {config.memory_mb} MB "
                "and the kernel stopped it."
            )
        if sig == signal.SIGXCPU:
            return (
                "cpu_limit",
                f"CPULimitError: the code used more than the CPU limit of {config.cpu_seconds} s and was stopped.",
            )
        return "signal", f"Killed: the process was killed by signal {name}."
    return None, None


def run_sandboxed(code: str, config: SandboxConfig, *, namespaces: bool = True) -> SandboxResult:
    """Run `code` in a fresh sandboxed process and wait for it; raises BackendError if the
    sandbox itself could not be set up (never for anything the code does).

    `namespaces=False` skips unshare, as on hosts that refuse it: the network is then blocked
    inside the interpreter and the result says so.
    """
    if namespaces and _namespaces_failed:
        namespaces = False
    plan = _plan()
    workdir = _make_workdir(plan["drop_uid"])
    report_r, report_w = os.pipe()
    groups = cgroups.create(config.memory_mb * 1024 * 1024, config.max_processes)
    cfg = dict(
        plan,
        try_netns=namespaces,
        workdir=workdir,
        report_fd=report_w,
        cgroups=[[g.path, g.kind] for g in groups],
        cpu_seconds=config.cpu_seconds,
        memory_mb=config.memory_mb,
        max_processes=config.max_processes,
        max_file_mb=config.max_file_mb,
    )
    env = dict(CHILD_ENV_BASE)  # the child adds HOME, TMPDIR and PWD once it knows its workdir
    try:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-S", "-s", "-P", "-c", CHILD_SOURCE, json.dumps(cfg)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(report_w,),
                env=env,
                cwd=workdir,
                start_new_session=True,
            )
        finally:
            os.close(report_w)
        with proc:
            streams, killed = _supervise(
                proc, code.encode("utf-8", "surrogatepass"), report_r, config, groups
            )
        oom_kills = cgroups.oom_kills(groups)
    finally:
        os.close(report_r)
        for group in groups:
            cgroups.remove(group)
        shutil.rmtree(workdir, ignore_errors=True)
    setup, outcome = _parse_report(bytes(streams["report"].data))
    if setup is not None and "setup_error" in setup and namespaces:
        # unshare worked but this host cannot finish the setup inside the namespaces (e.g. a
        # user ns without access to the interpreter): run without them from now on, and say so.
        _namespaces_failed.append(setup["setup_error"])
        return run_sandboxed(code, config, namespaces=False)
    if setup is None or "setup_error" in setup:
        why = (
            setup["setup_error"]
            if setup
            else streams["stderr"].data.decode("utf-8", "replace")[-2000:]
        )
        raise BackendError(
            f"python sandbox could not start (exit {proc.returncode}): {why}; "
            "check that the interpreter runs and Landlock/namespaces are not blocked by seccomp"
        )
    killed_reason, error = _stop_reason(killed, outcome, proc.returncode, config, oom_kills)
    stdout, out_cut = streams["stdout"].text(config.output_chars, "stdout")
    stderr, err_cut = streams["stderr"].text(config.output_chars, "stderr")
    return SandboxResult(
        stdout=stdout,
        stderr=stderr,
        error=error,
        exit_status=proc.returncode,
        timed_out=killed_reason == "wall_clock_limit",
        killed_reason=killed_reason,
        stdout_truncated=out_cut,
        stderr_truncated=err_cut,
        network_isolation=setup["net"],
        fs_isolation=setup["fs"],
        process_cap=setup["nproc"],
        memory_cap=setup["memory"],
        layers=tuple(setup["layers"]),
    )
