"""The built wheel carries the bundled data: installed away from the checkout, `gym.make("WikiSim-v0")` works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wikisim.paths import REPO_ROOT, cache_dir

SCRIPT = """
import gymnasium as gym, wikisim
from wikisim.paths import DATA_DIR
assert wikisim.__file__.startswith({target!r}), wikisim.__file__
assert DATA_DIR.is_dir() and not DATA_DIR.is_symlink(), DATA_DIR
env = gym.make("WikiSim-v0", python=False)
question, info = env.reset(seed=0)
obs, *_ = env.step('<tool_call>{{"name": "search", "arguments": {{"query": "Anarchism"}}}}</tool_call>')
print(info["task_id"], "[Anarchism](https://en.wikipedia.org/wiki/Anarchism)" in obs)
"""


@pytest.mark.slow
def test_installed_wheel_gives_a_working_env(tmp_path: Path, sample_index: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO_ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = (tmp_path / "dist").glob("wikisim-*.whl")
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target), "WIKISIM_CACHE": str(cache_dir())}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(target=str(target))],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    task_id, found = out.stdout.split()[-2:]
    assert task_id and found == "True"
