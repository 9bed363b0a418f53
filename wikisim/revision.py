"""Which code made a result: the package version, the checkout's commit and the tracked files
that differed from it. Results that outlive their session (bench JSONs, a run reused by a later
one) carry it, so a figure can be traced to the code that gave it, not to a session's notes."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TypedDict

from wikisim import __version__
from wikisim.paths import REPO_ROOT


class Revision(TypedDict):
    version: str
    commit: str | None  # None outside a git checkout (an installed wheel)
    changed: list[str]  # tracked paths whose working copy differs from the commit


def code_revision(root: Path = REPO_ROOT) -> Revision:
    """The revision of the checkout at `root` (the package's own by default)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")  # root itself, not a checkout it happens to sit in
    inside = top is not None and Path(top.strip()).resolve() == root.resolve()
    commit = git("rev-parse", "--verify", "HEAD") if inside else None
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    changed = sorted(line[3:] for line in (status or "").splitlines() if line.strip())
    return {
        "version": __version__,
        "commit": commit.strip() if commit else None,
        "changed": changed,
    }
