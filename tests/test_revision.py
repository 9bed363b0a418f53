"""wikisim.revision names the commit a result was made at, and what differed from it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from wikisim import __version__
from wikisim.revision import code_revision


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _commit(repo: Path, *args: str) -> None:
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", *args)


def test_a_checkout_gives_its_commit_and_the_tracked_files_changed_since(tmp_path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.py").write_text("x = 1\n")
    (repo / "b.py").write_text("y = 2\n")
    _git(repo, "add", "a.py", "b.py")
    _commit(repo, "-m", "first")
    clean = code_revision(repo)
    assert clean == {
        "version": __version__,
        "commit": _git(repo, "rev-parse", "HEAD"),
        "changed": [],
    }
    (repo / "b.py").write_text("y = 3\n")
    (repo / "untracked.py").write_text("")  # not the code a result ran: not listed
    assert code_revision(repo)["changed"] == ["b.py"]


def test_outside_a_checkout_or_inside_another_one_there_is_no_commit(tmp_path) -> None:
    assert code_revision(tmp_path)["commit"] is None
    repo = tmp_path / "repo"
    (repo / "site-packages").mkdir(parents=True)
    _git(repo, "init", "-q")
    _commit(repo, "--allow-empty", "-m", "x")
    # a package installed into a virtual env that sits in some checkout is not that checkout's code
    assert code_revision(repo / "site-packages") == {
        "version": __version__,
        "commit": None,
        "changed": [],
    }
