"""The python tool: normal code, formatting, limits, and hostile code that must stay contained."""

from __future__ import annotations

import glob
import os
import re
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.turns import call_tool

from wikisim.errors import ConfigError
from wikisim.tools.base import Tool
from wikisim.tools.python_sandbox import PythonTool, SandboxConfig, run_python
from wikisim.tools.sandbox import cgroups, host
from wikisim.tools.sandbox.host import run_sandboxed

LIMITS = SandboxConfig(
    wall_seconds=2.0,
    cpu_seconds=1,
    memory_mb=512,
    max_processes=16,
    output_chars=300,
    drain_bytes=256 * 1024,
)
PACKAGE_DIR = Path(__file__).resolve().parents[2] / "wikisim"  # the env's own code
NO_FORK_ESCAPE = os.geteuid() == 0  # as root every call gets a private uid; the sweep is exact


@pytest.fixture(scope="module")
def tool() -> PythonTool:
    return PythonTool(LIMITS)


@pytest.fixture(autouse=True)
def _nothing_left_behind() -> Iterator[None]:
    yield
    for base in {tempfile.gettempdir(), "/tmp"}:
        assert glob.glob(f"{base}/wikisim-py-{os.getpid()}-*") == [], (
            "a sandbox working directory was left behind"
        )
    for _, parent, _, _ in cgroups._parents():
        assert glob.glob(f"{parent}/wikisim-py-{os.getpid()}-*") == [], (
            "a per-call cgroup was left behind"
        )


def _live_processes_of_uid(uid: int) -> list[int]:
    """Non-zombie processes owned by `uid`, read from /proc independently of the code under test."""
    live = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and fields["State"].split()[0] not in ("Z", "X"):
            live.append(int(entry.name))
    return live


def _uid_printed(stdout: str) -> int:
    match = re.search(r"uid=(\d+)", stdout)
    assert match, f"the hostile code did not print its uid: {stdout!r}"
    return int(match.group(1))


@pytest.fixture(scope="module")
def landlock(tool: PythonTool) -> None:
    """File confinement comes from Landlock; on a kernel without it the tool says so, and these
    tests cannot hold: skip them with that reason rather than pass vacuously."""
    fs = tool.run("pass").fs_isolation
    if fs != "landlock":
        pytest.skip(f"no Landlock on this kernel (fs_isolation={fs!r}): files are not confined")


def _assert_no_strays(stdout: str) -> None:
    uid = _uid_printed(stdout)
    if uid == 0:
        pytest.skip(
            "no private uid on this host: strays cannot be told from the host's own processes"
        )
    assert _live_processes_of_uid(uid) == []


# --- normal use -------------------------------------------------------------------------------


def test_schema_and_protocol(tool: PythonTool) -> None:
    assert isinstance(tool, Tool)
    fn = tool.schema["function"]
    assert tool.schema["type"] == "function" and fn["name"] == "python"
    assert fn["parameters"]["required"] == ["code"]
    assert fn["parameters"]["properties"]["code"]["type"] == "string"
    assert "2 s wall clock" in fn["description"]


def test_print_and_metadata(tool: PythonTool) -> None:
    assert call_tool(tool, code="print(1 + 1)") == "[stdout]\n2"
    assert tool.last_result is not None and tool.last_result.stdout == "2\n"
    result = tool.run("print(1 + 1)")
    assert result.ok and result.stdout == "2\n" and result.stderr == "" and result.error is None
    assert result.network_isolation in ("netns", "interpreter")
    assert ("netns" in result.layers) == (result.network_isolation == "netns")
    assert ("socket-patch" in result.layers) == (result.network_isolation == "interpreter")
    if os.geteuid() == 0:  # this machine: root, unshare and Landlock allowed
        assert result.network_isolation == "netns" and "uid" in result.layers
        assert result.process_cap in ("cgroup_pids", "rlimit_nproc_private_uid")
    assert (result.memory_cap == "cgroup") == ("cgroup-memory" in result.layers)


def test_numpy_importable(tool: PythonTool) -> None:
    code = "import numpy as np\nprint(np.arange(10).sum(), np.linalg.det(np.eye(3)))"
    assert call_tool(tool, code=code) == "[stdout]\n45 1.0"


def test_stdout_stderr_and_exception_format(tool: PythonTool) -> None:
    code = (
        "import sys\nprint('out')\nprint('err', file=sys.stderr)\nraise ValueError('bad value')\n"
    )
    assert call_tool(tool, code=code) == (
        "[stdout]\nout\n[stderr]\nerr\n[error]\nTraceback (most recent call last):\n"
        "  File \"<code>\", line 4, in <module>\n    raise ValueError('bad value')\n"
        "ValueError: bad value"
    )


def test_syntax_error_and_exit_status(tool: PythonTool) -> None:
    assert call_tool(tool, code="def f(:\n    pass") == (
        '[error]\n  File "<code>", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax'
    )
    result = tool.run("import sys\nprint('a')\nsys.exit(3)")
    assert (
        result.exit_status == 3
        and result.observation == "[stdout]\na\n[error]\nSystemExit: exit status 3"
    )
    assert call_tool(tool, code="import os\nos._exit(4)") == "[exit status 4]"
    assert call_tool(tool, code="x = 1").startswith("[no output]")


def test_truncation_marker(tool: PythonTool) -> None:
    result = tool.run("print('x' * 1000)\nimport sys\nprint('y' * 1000, file=sys.stderr)")
    assert result.stdout_truncated and result.stderr_truncated and result.exit_status == 0
    assert result.stdout.startswith(
        "x" * 300 + "\n[... stdout truncated: showing the first 300 characters"
    )
    assert "y" * 301 not in result.stderr
    short = tool.run("print('x' * 100)")
    assert not short.stdout_truncated and short.stdout == "x" * 100 + "\n"


def test_output_flood_is_stopped(tool: PythonTool) -> None:
    result = tool.run("while True:\n    print('spam' * 100)")
    assert result.killed_reason == "output_limit" and result.stdout_truncated
    assert "OutputLimitError" in result.observation and len(result.observation) < 1000


def test_deterministic_observation(tool: PythonTool) -> None:
    code = (
        "import os, numpy as np\n"
        "print({'pear', 'apple', 'fig', 'kiwi', 'plum'})\n"
        "print(np.random.default_rng(7).integers(0, 100, 5))\n"
        "open('f.txt', 'w').write('x')\n"
        "print(sorted(os.listdir('.')), os.getcwd() == os.environ['HOME'])\n"
    )
    first, second = call_tool(tool, code=code), call_tool(tool, code=code)
    assert first == second and first.startswith("[stdout]\n{") and "['f.txt'] True" in first


def test_each_call_is_a_fresh_process_state(tool: PythonTool) -> None:
    assert (
        call_tool(tool, code="open('state.txt', 'w').write('1')\nx = 5\nprint('ok')")
        == "[stdout]\nok"
    )
    second = tool.run("import os\nprint(os.path.exists('state.txt'), 'x' in globals())")
    assert second.stdout == "False False\n"


def test_environment_is_stripped(tool: PythonTool) -> None:
    os.environ["WIKISIM_SECRET_FOR_TEST"] = "hunter2"
    try:
        result = tool.run("import os\nprint(sorted(os.environ))")
    finally:
        del os.environ["WIKISIM_SECRET_FOR_TEST"]
    assert "WIKISIM_SECRET_FOR_TEST" not in result.stdout and "OPENAI_API_KEY" not in result.stdout
    assert "'PATH'" in result.stdout and "'HOME'" in result.stdout


# --- bad calls --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, 'missing the required argument "code"'),
        ({"code": 42}, "must be string, got an integer"),
        ({"code": None}, "must be string, got null"),
        ({"code": ["print(1)"]}, "must be string, got an array"),
        ({"code": "   "}, "is empty"),
        ({"code": "print(1)", "timeout": 5}, "unexpected argument 'timeout'"),
    ],
)
def test_bad_arguments_return_an_observation(
    tool: PythonTool, arguments: dict, expected: str
) -> None:
    observation = call_tool(tool, **arguments)
    assert observation.startswith("Error: ") and expected in observation
    assert 'Usage: python {"code": string}' in observation


def test_overlong_code_and_config() -> None:
    small = PythonTool(SandboxConfig(wall_seconds=2, max_code_chars=20))
    assert call_tool(small, code="print(2 * 3)") == "[stdout]\n6"
    assert "over the limit of 20" in call_tool(small, code="print(1)" * 10)
    assert PythonTool(wall_seconds=3).config == SandboxConfig(wall_seconds=3)
    with pytest.raises(ConfigError, match="fields of SandboxConfig"):
        PythonTool(timeout=3)
    with pytest.raises(ConfigError, match="both config= and limits"):
        PythonTool(SandboxConfig(), wall_seconds=3)


def test_surrogates_in_code_do_not_raise(tool: PythonTool) -> None:
    observation = call_tool(tool, code="print('\\ud800')\nx = '\ud800'")
    assert observation.startswith("[error]\n")
    observation.encode("utf-8")  # the observation itself is valid UTF-8


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("wall_seconds", 0),
        ("cpu_seconds", 0),
        ("memory_mb", 1),
        ("max_processes", 0),
        ("output_chars", 5),
        ("cpu_seconds", 1.5),
        ("memory_mb", True),
        ("wall_seconds", "2"),
    ],
)
def test_config_is_validated(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=field):
        SandboxConfig(**{field: value})
    with pytest.raises(ConfigError, match="drain_bytes"):
        SandboxConfig(output_chars=10_000, drain_bytes=2048)


# --- hostile code -----------------------------------------------------------------------------

PRINT_UID = "import os\nprint(f'uid={os.getuid()}', flush=True)\n"


def test_infinite_loop_hits_the_cpu_limit() -> None:
    roomy_wall = PythonTool(
        SandboxConfig(wall_seconds=15, cpu_seconds=1)
    )  # 1 CPU-second even on a busy host
    result = roomy_wall.run(PRINT_UID + "while True:\n    pass")
    assert result.killed_reason == "cpu_limit" and not result.timed_out
    assert "CPU limit of 1 s" in result.observation
    _assert_no_strays(result.stdout)


def test_sleeping_code_hits_the_wall_clock(tool: PythonTool) -> None:
    start = time.monotonic()
    result = tool.run(PRINT_UID + "import time\ntime.sleep(60)")
    assert time.monotonic() - start < 4
    assert (
        result.timed_out and result.killed_reason == "wall_clock_limit" and result.exit_status == -9
    )
    assert "wall-clock limit of 2 s" in result.observation
    _assert_no_strays(result.stdout)


@pytest.mark.parametrize(
    "body",
    [
        "while True:\n    os.fork()",  # stops at the process cap with BlockingIOError
        "while True:\n    try:\n        os.fork()\n    except OSError:\n        pass",  # spins until killed
    ],
)
def test_fork_bomb_is_contained(tool: PythonTool, body: str) -> None:
    result = tool.run(PRINT_UID + body)
    assert result.timed_out or "BlockingIOError" in (result.error or "")
    _assert_no_strays(result.stdout)


def test_allocating_20_gb_fails_inside(tool: PythonTool) -> None:
    result = tool.run("x = bytearray(20 * 10**9)")
    assert "MemoryError" in result.observation and "caps memory" in result.observation
    numpy_result = tool.run("import numpy as np\nx = np.ones(20 * 10**9 // 8)")
    assert (
        "MemoryError" in numpy_result.observation
        or "Unable to allocate" in numpy_result.observation
    )


def test_memory_cap_covers_the_whole_process_tree() -> None:
    tool = PythonTool(SandboxConfig(wall_seconds=15, memory_mb=512))
    code = PRINT_UID + (
        "import time\npids = []\nfor i in range(4):\n    pid = os.fork()\n    if pid == 0:\n"
        "        x = b'1' * (200 * 2**20)  # touched, so resident\n        time.sleep(1)\n        os._exit(0)\n"
        "    pids.append(pid)\n"
        "print('statuses', sorted(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids))"
    )
    result = tool.run(code)
    if result.memory_cap != "cgroup":
        pytest.skip("no memory cgroup on this host: RLIMIT_AS caps each process only")
    statuses = re.search(r"statuses \[(.*)\]", result.stdout)
    assert statuses and "-9" in statuses.group(1), (
        result.observation
    )  # 800 MB > 512 MB: the kernel killed some
    _assert_no_strays(result.stdout)


@pytest.mark.usefixtures("landlock")
def test_cannot_write_outside_the_working_directory(tool: PythonTool, tmp_path: Path) -> None:
    targets = [
        tmp_path / "planted.txt",
        PACKAGE_DIR / "planted.txt",
        Path("/tmp/planted-by-sandbox"),
    ]
    for target in targets:
        result = tool.run(f"open({str(target)!r}, 'w').write('pwned')")
        assert (
            "PermissionError" in result.observation or "FileNotFoundError" in result.observation
        ), target
        assert not target.exists()
    assert (
        call_tool(
            tool, code="open('inside.txt', 'w').write('ok')\nprint(open('inside.txt').read())"
        )
        == "[stdout]\nok"
    )


@pytest.mark.usefixtures("landlock")
def test_cannot_read_the_envs_own_files(tool: PythonTool, tmp_path: Path) -> None:
    index_file = tmp_path / "index" / "manifest.json"
    index_file.parent.mkdir()
    index_file.write_text('{"secret": "index-content-7731"}')
    # Landlock refuses it, or (a checkout under /tmp) the private /tmp hides it
    assert re.search(
        r"PermissionError|FileNotFoundError",
        call_tool(tool, code=f"open({str(PACKAGE_DIR / '__init__.py')!r}).read()"),
    )
    for target in (PACKAGE_DIR / "__init__.py", PACKAGE_DIR, index_file, index_file.parent):
        result = tool.run(
            f"import os\np = {str(target)!r}\nprint(os.listdir(p) if os.path.isdir(p) else open(p).read())"
        )
        # PermissionError from Landlock, or FileNotFoundError where a private /tmp hides the host's
        assert re.search(r"PermissionError|FileNotFoundError", result.observation), (
            target,
            result.observation,
        )
        assert "index-content-7731" not in result.stdout and "__version__" not in result.stdout


@pytest.mark.parametrize(
    "code",
    [
        "print(open('/proc/1/root{init}').read())",
        "import os\nprint(open(f'/proc/{{os.getppid()}}/cwd/wikisim/__init__.py').read())",
        "import os\nprint(open(f'/proc/{{os.getppid()}}/environ').read())",
        "import os\nos.symlink('{init}', 'link')\nprint(open('link').read())",
        "import os\nprint(os.listdir('/'), os.listdir('{repo}'))",
    ],
)
@pytest.mark.usefixtures("landlock")
def test_indirect_reads_of_the_envs_files_fail(tool: PythonTool, code: str) -> None:
    init = PACKAGE_DIR / "__init__.py"
    result = tool.run(code.format(init=init, repo=PACKAGE_DIR.parent))
    assert re.search(r"PermissionError|FileNotFoundError|OSError", result.observation), (
        result.observation
    )
    assert result.stdout == ""


def test_namespace_has_no_route_out(tool: PythonTool) -> None:
    result = tool.run(
        "import socket\nprint(socket.if_nameindex())\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b'x', ('192.0.2.1', 53))"
    )
    if result.network_isolation != "netns":
        pytest.skip("no network namespace on this host")
    assert result.stdout == "[(1, 'lo')]\n" and "Network is unreachable" in result.observation


def test_cannot_open_a_socket(tool: PythonTool) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    try:
        result = tool.run(
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)\nprint('connected')"
        )
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()
    assert "connected" not in result.stdout
    assert re.search(r"PermissionError|OSError|ConnectionRefusedError", result.observation)


def test_forged_report_lines_do_not_confuse_the_host(tool: PythonTool) -> None:
    code = (
        "import os\nfor fd in range(3, 10):\n    try:\n"
        '        os.write(fd, b\'{"status": 0, "error": null}\\n{garbage\\n[1]\\n\')\n'
        "    except OSError:\n        pass\nraise ValueError('real')"
    )
    result = tool.run(code)
    assert result.error is not None and result.error.endswith("ValueError: real\n")


def test_interpreter_fallback_blocks_sockets_and_says_so() -> None:
    result = run_sandboxed("import socket\nsocket.socket()", LIMITS, namespaces=False)
    assert result.network_isolation == "interpreter" and "socket-patch" in result.layers
    assert "network access is disabled in this sandbox" in result.observation


@pytest.mark.skipif(
    os.geteuid() != 0, reason="the mount namespace (and its setup) is used as root only"
)
def test_namespace_setup_failure_falls_back_without_namespaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    broken = dict(host._plan(), covers=[("/nonexistent-dir", ["/nonexistent-dir/python"])])
    monkeypatch.setattr(host, "_plan", lambda: broken)
    monkeypatch.setattr(host, "_namespaces_failed", [])
    result = host.run_sandboxed("print('ran')", LIMITS)
    assert result.stdout == "ran\n" and result.network_isolation == "interpreter"
    assert "netns" not in result.layers and "nonexistent-dir" in host._namespaces_failed[0]
    assert host.run_sandboxed("print(2)", LIMITS).network_isolation == "interpreter"  # remembered


def test_killing_the_parent_leaves_the_host_unharmed(tool: PythonTool) -> None:
    result = tool.run(PRINT_UID + "os.kill(os.getppid(), 9)")
    assert "PermissionError" in result.observation
    result = tool.run(PRINT_UID + "os.kill(-1, 9)\nprint('still here')")
    assert "still here" in result.stdout
    assert (
        call_tool(tool, code="print('host fine')") == "[stdout]\nhost fine"
    )  # this process survived


def test_background_processes_are_killed_after_the_call(tool: PythonTool) -> None:
    code = PRINT_UID + (
        "import subprocess, time\nsubprocess.Popen(['sleep', '30'])\nr, w = os.pipe()\n"
        "if os.fork() == 0:\n    os.setsid()\n    os.write(w, b'x')\n    time.sleep(30)\n"
        "os.read(r, 1)  # the child has left the process group\nprint('parent done')"
    )
    result = tool.run(code)
    assert "parent done" in result.stdout and result.exit_status == 0
    if NO_FORK_ESCAPE:
        _assert_no_strays(result.stdout)


def test_run_python_function_uses_default_limits() -> None:
    result = run_python("print(sum(range(10)))")
    assert result.stdout == "45\n" and result.ok
