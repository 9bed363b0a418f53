"""The same SFT run on 2 CPU processes (gloo, DDP) under `accelerate launch` matches 1 process.

The batch-level token normaliser is summed over processes and DDP's gradient average is
scaled back, so the loss curve must not depend on the number of processes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from test_sft import make_traj

from agent.models import tiny_model
from agent.trajectory import write_trajectories


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _losses(run_dir: Path) -> list[float]:
    return [json.loads(line)["loss"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.timeout(300)
def test_two_processes_give_the_one_process_loss_curve(tmp_path):
    tok, _ = tiny_model(0)
    words = ["Paris", "Algeria", "Andorra", "Alabama", "Aristotle", "Achilles", "Autism", "Albedo"]
    data = tmp_path / "sft.jsonl"
    write_trajectories(data, [make_traj(tok, f"x{i}", w) for i, w in enumerate(words)])
    settings = ["--trajectories", str(data), "--epochs", "2", "--batch-size", "4", "--micro-batch-size", "1",
                "--lr", "3e-3", "--cpu", "--seed", "3"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    one = tmp_path / "one"
    subprocess.run([sys.executable, "-m", "wikisim.cli", "train", "sft", "--output-dir", str(one), *settings],
                   check=True, env=env, capture_output=True, timeout=240)
    two = tmp_path / "two"
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
                "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
                "--main_process_port", str(_free_port())]
    proc = subprocess.run([*launcher, "-m", "wikisim.cli", "train", "sft", "--output-dir", str(two), *settings],
                          env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = _losses(one), _losses(two)
    assert len(a) == len(b) == 4
    assert b == pytest.approx(a, rel=1e-4)
    assert (two / "final" / "config.json").is_file()
