"""The sandbox's limits and its result record, and the one deterministic observation format."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from wikisim.errors import ConfigError

KilledReason = Literal["wall_clock_limit", "cpu_limit", "memory_limit", "output_limit", "signal"]
NetworkIsolation = Literal["netns", "interpreter"]
FsIsolation = Literal["landlock", "uid", "none"]
ProcessCap = Literal["cgroup_pids", "rlimit_nproc_private_uid", "process_group"]
MemoryCap = Literal["cgroup", "rlimit_as"]


@dataclass(frozen=True)
class SandboxConfig:
    """Limits for one sandboxed call; every call gets a fresh process under these limits.

    Attributes:
        wall_seconds: wall-clock limit from spawn to exit; the whole process tree is killed after.
        cpu_seconds: CPU-time limit (RLIMIT_CPU) of the sandboxed process.
        memory_mb: address-space cap (RLIMIT_AS) per process, and where a memory cgroup can be
            made, the cap on the whole call's resident memory (its tmpfs included).
        max_processes: process/thread cap (a pids cgroup, or RLIMIT_NPROC under a private uid).
        output_chars: characters kept of stdout and of stderr each; the rest is cut with a marker.
        max_file_mb: largest file the code may write in its working directory (RLIMIT_FSIZE).
        max_code_chars: longest program accepted.
        drain_bytes: bytes of output read (and dropped past `output_chars`) before the run is
            stopped for flooding its output.
    """

    wall_seconds: float = 10.0
    cpu_seconds: int = 10
    memory_mb: int = 1024
    max_processes: int = 32
    output_chars: int = 10_000
    max_file_mb: int = 64
    max_code_chars: int = 1_000_000
    drain_bytes: int = 8 * 1024 * 1024

    def __post_init__(self) -> None:
        checks = {
            "wall_seconds": (self.wall_seconds, 0.1, 3600),
            "cpu_seconds": (self.cpu_seconds, 1, 3600),
            "memory_mb": (self.memory_mb, 64, 1 << 20),
            "max_processes": (self.max_processes, 1, 4096),
            "output_chars": (self.output_chars, 100, 10_000_000),
            "max_file_mb": (self.max_file_mb, 1, 1 << 20),
            "max_code_chars": (self.max_code_chars, 1, 100_000_000),
            "drain_bytes": (self.drain_bytes, 1024, 1 << 34),
        }
        for name, (value, low, high) in checks.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(
                    f"SandboxConfig.{name}={value!r} is not a number; pass a number in [{low}, {high}]"
                )
            if not low <= value <= high:
                raise ConfigError(
                    f"SandboxConfig.{name}={value!r} is out of range; pass a value in [{low}, {high}]"
                )
        for name in (
            "cpu_seconds",
            "memory_mb",
            "max_processes",
            "output_chars",
            "max_file_mb",
            "max_code_chars",
            "drain_bytes",
        ):
            if not isinstance(getattr(self, name), int):
                raise ConfigError(f"SandboxConfig.{name}={getattr(self, name)!r} must be an int")
        if self.drain_bytes < 4 * self.output_chars:
            raise ConfigError(
                f"SandboxConfig.drain_bytes={self.drain_bytes} is below 4 * output_chars={4 * self.output_chars}; "
                "raise drain_bytes so that the kept characters can be read"
            )


@dataclass(frozen=True)
class SandboxResult:
    """What one call did, plus which isolation layers the child really applied (metadata).

    `exit_status` is the process return code (negative: killed by that signal). `error` is the
    traceback or the reason the run was stopped, None on success. The isolation fields are
    reported by the child itself after it set them up, so they say what was applied, not planned.
    """

    stdout: str
    stderr: str
    error: str | None
    exit_status: int
    timed_out: bool
    killed_reason: KilledReason | None
    stdout_truncated: bool
    stderr_truncated: bool
    network_isolation: NetworkIsolation
    fs_isolation: FsIsolation
    process_cap: ProcessCap
    memory_cap: MemoryCap  # "cgroup": the whole tree of the call; "rlimit_as": each process
    layers: tuple[
        str, ...
    ] = ()  # every layer applied, e.g. ("netns", "mountns", "uid", "landlock-abi7")

    @property
    def ok(self) -> bool:
        return self.error is None and self.exit_status == 0

    @property
    def observation(self) -> str:
        """The text the agent sees: the same for the same code on the same host (no timings, no
        per-call paths, no isolation metadata), except where a limit stopped the code mid-way."""
        parts = []
        if self.stdout:
            parts.append("[stdout]\n" + self.stdout.rstrip("\n"))
        if self.stderr:
            parts.append("[stderr]\n" + self.stderr.rstrip("\n"))
        if self.error is not None:
            parts.append("[error]\n" + self.error.rstrip("\n"))
        elif self.exit_status != 0:
            parts.append(f"[exit status {self.exit_status}]")
        if not parts:
            return "[no output] The code ran without printing anything; use print() to see values."
        return "\n".join(parts)
