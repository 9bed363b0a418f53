"""bm25s is imported with JAX hidden: on a GPU machine JAX would take 75% of the GPU's memory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FAKE_JAX = """
import os
open(os.environ["JAX_MARKER"], "a").write("imported\\n")
"""

CHECK = """
import os, sys
import wikisim.index.snippets, wikisim.index.sparse_bm25s
import bm25s.selection
assert not bm25s.selection.JAX_IS_AVAILABLE, "bm25s saw JAX"
assert not os.path.exists(os.environ["JAX_MARKER"]), "bm25s imported JAX"
import jax  # still importable for the user's own code
assert os.path.exists(os.environ["JAX_MARKER"])
"""


def test_bm25s_never_imports_jax_and_jax_stays_importable(tmp_path: Path) -> None:
    fake = tmp_path / "site" / "jax"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(FAKE_JAX, encoding="utf-8")
    (fake / "lax.py").write_text("def top_k(x, k):\n    return x, x\n", encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), *sys.path]),
        "JAX_MARKER": str(tmp_path / "marker"),
    }
    run = subprocess.run(
        [sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
