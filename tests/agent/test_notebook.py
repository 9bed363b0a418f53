"""notebooks/quickstart.ipynb runs top to bottom in a fresh kernel."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from wikisim.paths import REPO_ROOT, cache_dir


def test_quickstart_notebook_executes(sample_index: Path, tmp_path: Path) -> None:
    # reuse the session's built sample (it has the dense index) instead of building it again
    reuse = cache_dir() / "indexes" / "enwiki-2014-sample-dense"
    if not reuse.exists():
        reuse.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(sample_index, reuse)
    nb = nbformat.read(REPO_ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert "What is the capital city of Angola?" in outputs and "1.0 True 1.0 1.0" in outputs
    assert (tmp_path / "runs" / "quickstart" / "summary.json").is_file()
    assert any("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", []))
