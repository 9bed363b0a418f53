"""The `python` tool: run the agent's code in a fresh locked-down process, return what it printed.

    tool = PythonTool(wall_seconds=5)
    tool(code="print(1 + 1)")        # -> "[stdout]\\n2"
    tool.run("print(1 + 1)").layers  # on a root Linux host:
    # ("cgroup-pids", "cgroup-memory", "netns", "mountns", "uid", "landlock-abi7")

Each call is a new process (no state carries over between calls). Where the host allows, in
order: per-call memory and pids cgroups (caps on the whole process tree), a network namespace
with only a down loopback (else sockets are disabled inside the interpreter), a mount namespace
with a private /tmp as working directory, a private uid (RLIMIT_NPROC counts only this call;
the host's processes cannot be signalled), Landlock (read the interpreter and libraries, write
only the working directory; no TCP; no signals out), plus RLIMIT_CPU/AS/FSIZE. Every process the
call started is killed before the call returns. `SandboxResult` says which layers were applied.
"""

from __future__ import annotations

from typing import Any

from wikisim.errors import BackendError, ConfigError
from wikisim.tools.base import ToolOutput
from wikisim.tools.sandbox.config import SandboxConfig, SandboxResult
from wikisim.tools.sandbox.host import run_sandboxed

__all__ = ["PythonTool", "SandboxConfig", "SandboxResult", "run_python"]

DESCRIPTION = (
    "Run Python 3 code in a fresh sandbox and return its stdout, stderr and error. Each call starts "
    "from scratch (no variables or files carry over); use print() to see values. numpy is available; "
    "there is no network and only the current directory is writable. Limits: {wall:g} s wall clock, "
    "{cpu} s CPU, {mem} MB memory, {chars} characters of output per stream."
)


def run_python(code: str, limits: SandboxConfig | None = None) -> SandboxResult:
    """Run `code` once under `limits` (defaults: SandboxConfig()); see `SandboxResult`."""
    return run_sandboxed(code, limits or SandboxConfig())


class PythonTool:
    """The `python` tool of the env: `{"code": str}` -> observation text; never raises on bad calls.

    A bad call (or a host where no sandbox starts) gives text starting with "Error:", as the other
    tools do; code that runs and fails gives its traceback under "[error]".
    """

    name = "python"

    def __init__(self, config: SandboxConfig | None = None, **limits: Any) -> None:
        """Either a `SandboxConfig` or its fields as keywords: `PythonTool(wall_seconds=5)`."""
        if config is not None and limits:
            raise ConfigError(
                f"PythonTool got both config= and limits {sorted(limits)}; pass one of them"
            )
        try:
            self.config = config or SandboxConfig(**limits)
        except TypeError as exc:
            raise ConfigError(
                f"PythonTool: {exc}; the limits are the fields of SandboxConfig"
            ) from exc
        self.last_result: SandboxResult | None = None  # of the last call that ran: for `info`
        description = DESCRIPTION.format(
            wall=self.config.wall_seconds,
            cpu=self.config.cpu_seconds,
            mem=self.config.memory_mb,
            chars=self.config.output_chars,
        )
        self.schema: dict[str, Any] = {
            "type": "function",
            "function": {
                "name": self.name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "string", "description": "Python 3 source to run."}
                    },
                    "required": ["code"],
                },
            },
        }

    def run(self, code: str) -> SandboxResult:
        """The structured result (with isolation metadata); raises BackendError if no sandbox starts
        (and OSError if the host cannot spawn a process at all)."""
        return run_sandboxed(code, self.config)

    def __call__(self, **arguments: Any) -> ToolOutput:
        code = arguments["code"]
        if len(code) > self.config.max_code_chars:
            return ToolOutput(
                f"Error: argument 'code' has {len(code)} characters, over the limit of "
                f"{self.config.max_code_chars}; send a shorter program",
                ok=False,
            )
        try:
            self.last_result = self.run(code)
        except (
            BackendError,
            OSError,
        ) as exc:  # no sandbox here, or the host is out of processes/fds
            return ToolOutput(
                f"Error: the python sandbox is unavailable on this host: {exc}", ok=False
            )
        return ToolOutput(
            self.last_result.observation
        )  # the program ran; its own failure is in the text
