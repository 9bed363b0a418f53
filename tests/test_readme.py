"""The README's quickstart runs as written, in a fresh interpreter."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from wikisim.index import open_index
from wikisim.paths import REPO_ROOT


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


def test_readme_opens_with_the_two_commands() -> None:
    head = (REPO_ROOT / "README.md").read_text(encoding="utf-8").split("\n## ")[0]
    assert re.search(r"^make demo\b", head, re.M) and re.search(r"^make test\b", head, re.M)


def test_readme_quickstart_runs(sample_index: Path) -> None:
    [quickstart] = _python_blocks(REPO_ROOT / "README.md")
    code = quickstart + "\nprint(info['manifest_hash'], terminated, reward in (0.0, 1.0))\n"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO_ROOT,
        check=True,
    ).stdout.split()
    assert out == [open_index(sample_index).manifest_hash, "True", "True"]
