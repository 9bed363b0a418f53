"""`wikisim serve` / `wikisim mcp` as subprocesses on 127.0.0.1, waited for by their "listening on" line."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading

from wikisim.paths import REPO_ROOT


def start(command: str, index, *extra: str, timeout_s: float = 120) -> tuple[subprocess.Popen, str]:
    """`wikisim COMMAND --index INDEX --port 0 EXTRA...`, and the URL it prints once ready."""
    proc, line = started(command, index, *extra, timeout_s=timeout_s)
    return proc, line.split("listening on ")[1].split()[0]


def started(
    command: str, index, *extra: str, timeout_s: float = 120
) -> tuple[subprocess.Popen, str]:
    """`wikisim COMMAND --index INDEX --port 0 EXTRA...`, and its "listening on" line."""
    args = [sys.executable, "-m", "wikisim", command, "--index", str(index), "--port", "0", *extra]
    proc = subprocess.Popen(
        args, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=timeout_s)
    except queue.Empty:
        proc.kill()
        raise AssertionError(f"wikisim {command} did not start within {timeout_s} s") from None
    if "listening on" not in line:
        proc.kill()
        raise AssertionError(f"wikisim {command} failed: {line!r} {proc.stderr.read()}")
    return proc, line


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
