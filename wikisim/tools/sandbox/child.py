"""The first code of every sandboxed process: lock the process down, then run the user's code.

Not imported by the host: its source is passed to `python -S -s -P -c` so that it runs before
any site-packages code. Standard library only. It runs as root when the host is root and, in
this order: joins the cgroups the host made, enters new network and mount namespaces (private
/tmp and /run; the interpreter re-exposed if its prefix is not world-readable), sets rlimits,
drops to a private uid, applies Landlock, reports on the report fd (one JSON line) what it
really applied, reads the code from stdin and runs it in a fresh `__main__`. The outcome goes
there as a second JSON line.
"""

import ctypes
import json
import os
import resource
import stat
import struct
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
SYS_LANDLOCK_CREATE, SYS_LANDLOCK_ADD, SYS_LANDLOCK_RESTRICT = 444, 445, 446
PR_SET_NO_NEW_PRIVS = 38
LL_EXECUTE, LL_WRITE, LL_READ_FILE, LL_READ_DIR = 1, 2, 4, 8
LL_TRUNCATE, LL_IOCTL_DEV = 1 << 14, 1 << 15
LL_FILE_RIGHTS = LL_EXECUTE | LL_WRITE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV
NS_WORKDIR = "/tmp/work"


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _err(what):
    return OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def _expose(libc, fd, path):
    """Bind what `fd` (an O_PATH handle taken before a cover was mounted) names back at `path`."""
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()
    if libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None) != 0:
        raise _err(f"exposing {path}")
    os.close(fd)


def _namespaces(libc, cfg, layers):
    """New netns (only a down loopback: no network) and mount ns (private /tmp and /run); not
    root, they come with a user ns that maps only our own ids."""
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNET | CLONE_NEWNS | (0 if cfg["drop_uid"] else CLONE_NEWUSER)
    if libc.unshare(flags) != 0:
        return False, False
    if flags & CLONE_NEWUSER:
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
        layers.append("userns")
    layers += ["netns", "mountns"]
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise _err("making / private")
    for cover, keeps in cfg["covers"]:
        fds = [os.open(k, os.O_PATH | os.O_CLOEXEC) for k in keeps]
        opts = b"mode=0755,size=64k"
        if libc.mount(b"tmpfs", cover.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts) != 0:
            raise _err(f"covering {cover}")
        for keep, fd in zip(keeps, fds, strict=True):
            _expose(libc, fd, keep)
    # A private /tmp: hides the host's, caps disk use, vanishes with the namespace, and gives
    # every call the same working directory path (same code -> same observation). What the
    # child must read from under the host's /tmp (a venv in a checkout there) stays visible.
    under_tmp = [
        (p, os.open(p, os.O_PATH | os.O_CLOEXEC))
        for p in cfg["read_paths"]
        if p.startswith("/tmp/")
    ]
    size = f"mode=0755,size={cfg['max_file_mb']}m".encode()
    if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, size) != 0:
        raise _err("mounting a private /tmp")
    for path, fd in under_tmp:
        _expose(libc, fd, path)
    os.mkdir(NS_WORKDIR, 0o700)
    # Landlock (ABI < 9) does not govern connect() to a named unix socket: hide the usual place.
    if (
        os.path.isdir("/run")
        and libc.mount(b"tmpfs", b"/run", b"tmpfs", MS_NOSUID | MS_NODEV, b"size=64k") != 0
    ):
        raise _err("mounting a private /run")
    return True, True


def _rlimits(cfg):
    mb = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_seconds"], cfg["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (cfg["memory_mb"] * mb, cfg["memory_mb"] * mb))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["max_file_mb"] * mb, cfg["max_file_mb"] * mb))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _drop_uid(cfg, workdir, layers):
    uid = cfg["uid_base"] + os.getpid()
    os.chown(workdir, uid, uid)
    # Counted per uid: exact only because the uid is private to this call (and root is exempt).
    resource.setrlimit(resource.RLIMIT_NPROC, (cfg["max_processes"], cfg["max_processes"]))
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    layers.append("uid")


def _landlock(libc, cfg, workdir, layers):
    """Allow reading the interpreter and libraries, writing only the working directory."""
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(SYS_LANDLOCK_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return False
    handled = (1 << 13) - 1 | (1 << 13 if abi >= 2 else 0) | (LL_TRUNCATE if abi >= 3 else 0)
    handled |= LL_IOCTL_DEV if abi >= 5 else 0
    attr = struct.pack("=QQQ", handled, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)
    attr = attr[: 8 if abi < 4 else 16 if abi < 6 else 24]
    abuf = ctypes.create_string_buffer(attr, len(attr))
    rfd = libc.syscall(SYS_LANDLOCK_CREATE, abuf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if rfd < 0:
        raise _err("landlock_create_ruleset")
    read = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR
    rules = [(p, read) for p in cfg["read_paths"]] + [(p, handled) for p in cfg["write_paths"]]
    rules.append((workdir, handled))
    for path, access in rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        rule = struct.pack("=Qi", access & handled & (-1 if is_dir else LL_FILE_RIGHTS), fd)
        rbuf = ctypes.create_string_buffer(rule, len(rule))
        if libc.syscall(SYS_LANDLOCK_ADD, rfd, 1, rbuf, ctypes.c_uint32(0)) != 0:
            raise _err(f"landlock_add_rule {path}")
        os.close(fd)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _err("PR_SET_NO_NEW_PRIVS")
    if libc.syscall(SYS_LANDLOCK_RESTRICT, rfd, ctypes.c_uint32(0)) != 0:
        raise _err("landlock_restrict_self")
    os.close(rfd)
    layers.append(f"landlock-abi{abi}")
    return True


def _block_sockets():
    """The fallback when no netns: every socket constructor and resolver raises."""
    import _socket
    import socket

    def denied(*args, **kwargs):
        raise PermissionError(13, "network access is disabled in this sandbox")

    names = (
        "socket",
        "socketpair",
        "fromfd",
        "create_connection",
        "create_server",
        "getaddrinfo",
        "gethostbyname",
        "gethostbyname_ex",
        "gethostbyaddr",
    )
    for module in (socket, _socket):
        for name in names:
            if hasattr(module, name):
                setattr(module, name, denied)


def _format_error(exc):
    try:
        import traceback

        tb = exc.__traceback__.tb_next if exc.__traceback__ else None  # drop this file's frame
        text = "".join(traceback.format_exception(type(exc), exc, tb))
    except BaseException:  # formatting itself can fail under the memory cap
        text = f"{type(exc).__name__}: {exc}\n"
    if isinstance(exc, MemoryError):
        text += "note: the sandbox caps memory; allocate less.\n"
    return text


def _run_user_code(code, report):
    import linecache
    import types

    main_pid = os.getpid()
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = module
    sys.argv = [""]
    linecache.cache["<code>"] = (len(code), None, code.splitlines(True), "<code>")
    status, error = 0, None
    try:
        compiled = compile(code, "<code>", "exec")
    except BaseException as exc:  # SyntaxError and kin: shown as Python shows them, no frames
        import traceback

        report({"status": 1, "error": "".join(traceback.format_exception_only(type(exc), exc))})
        os._exit(1)
    try:
        exec(compiled, module.__dict__)
    except SystemExit as exc:
        code_ = exc.code
        status = code_ if isinstance(code_, int) else (0 if code_ is None else 1)
        if code_ is not None and not isinstance(code_, int):
            sys.stderr.write(f"{code_}\n")
        if status != 0:
            error = f"SystemExit: exit status {status}\n"
    except BaseException as exc:
        status, error = 1, _format_error(exc)
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 (contextlib would cost startup time in every call)
            stream.flush()
        except BaseException:
            pass
    if os.getpid() != main_pid:  # a forked child of the user's code: behave like plain Python
        if error:
            os.write(2, error.encode("utf-8", "replace"))
        os._exit(status & 0xFF)
    report({"status": status, "error": error})
    os._exit(status & 0xFF)


def main():
    cfg = json.loads(sys.argv[1])
    out = cfg["report_fd"]
    layers = []
    libc = _libc()
    netns = mountns = False
    try:
        for path, kind in cfg["cgroups"]:  # made by the host; joined while still root
            try:
                with open(os.path.join(path, "cgroup.procs"), "w") as fh:
                    fh.write(str(os.getpid()))
            except OSError:  # e.g. a v2 parent that holds processes itself: go on without
                continue
            layers.append(f"cgroup-{kind}")
        if cfg["try_netns"]:
            netns, mountns = _namespaces(libc, cfg, layers)
        workdir = NS_WORKDIR if mountns else cfg["workdir"]
        _rlimits(cfg)
        if cfg["drop_uid"] and (mountns or not cfg["covers"]):
            _drop_uid(cfg, workdir, layers)
        os.chdir(workdir)
        os.environ.update(HOME=workdir, TMPDIR=workdir, PWD=workdir)
        fs = (
            "landlock"
            if _landlock(libc, cfg, workdir, layers)
            else ("uid" if "uid" in layers else "none")
        )
        if not netns:
            _block_sockets()
            layers.append("socket-patch")
    except BaseException as exc:
        os.write(out, (json.dumps({"setup_error": f"{type(exc).__name__}: {exc}"}) + "\n").encode())
        os._exit(70)
    setup = {
        "net": "netns" if netns else "interpreter",
        "fs": fs,
        "layers": layers,
        "memory": "cgroup" if "cgroup-memory" in layers else "rlimit_as",
        "nproc": "cgroup_pids"
        if "cgroup-pids" in layers
        else "rlimit_nproc_private_uid"
        if "uid" in layers
        else "process_group",
    }
    os.write(out, (json.dumps(setup) + "\n").encode())
    os.set_inheritable(out, False)  # programs the code execs do not get the report pipe
    code = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.path[:0] = [""]
    sys.path.extend(cfg["site_paths"])

    def report(outcome):
        os.write(out, (json.dumps(outcome) + "\n").encode())

    _run_user_code(code, report)


main()
