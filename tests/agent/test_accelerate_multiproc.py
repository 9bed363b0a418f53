"""The same SFT and GRPO runs on 2 CPU processes (gloo, DDP) under `accelerate launch` match 1 process.

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

import numpy as np
import pytest
from test_sft import make_traj

from agent.rollout.models import tiny_model
from agent.rollout.trajectory import write_trajectories
from agent.train.loop import read_metrics


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launcher() -> list[str]:
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(_free_port()),
    ]


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }


def _losses(run_dir: Path) -> list[float]:
    return [
        json.loads(line)["loss"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()
    ]


@pytest.mark.timeout(300)
def test_two_processes_give_the_one_process_loss_curve(tmp_path):
    tok, _ = tiny_model(0)
    words = ["Paris", "Algeria", "Andorra", "Alabama", "Aristotle", "Achilles", "Autism", "Albedo"]
    data = tmp_path / "sft.jsonl"
    write_trajectories(data, [make_traj(tok, f"x{i}", w) for i, w in enumerate(words)])
    settings = [
        "--trajectories",
        str(data),
        "--epochs",
        "2",
        "--batch-size",
        "4",
        "--micro-batch-size",
        "1",
        "--lr",
        "3e-3",
        "--cpu",
        "--seed",
        "3",
    ]
    env = _env()
    one = tmp_path / "one"
    subprocess.run(
        [sys.executable, "-m", "wikisim.cli", "train", "sft", "--output-dir", str(one), *settings],
        check=True,
        env=env,
        capture_output=True,
        timeout=240,
    )
    two = tmp_path / "two"
    proc = subprocess.run(
        [*_launcher(), "-m", "wikisim.cli", "train", "sft", "--output-dir", str(two), *settings],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = _losses(one), _losses(two)
    assert len(a) == len(b) == 4
    assert b == pytest.approx(a, rel=1e-4)
    assert (two / "final" / "config.json").is_file()


def _ranks(run_dir: Path, rank: int) -> list[dict]:
    return [json.loads(line) for line in (run_dir / f"rank-{rank}.jsonl").read_text().splitlines()]


@pytest.mark.timeout(180)
def test_grpo_ranks_hold_the_same_weights_and_give_the_one_process_curve(tmp_path):
    worker = str(Path(__file__).with_name("grpo_worker.py"))
    one, two = tmp_path / "one", tmp_path / "two"
    subprocess.run(
        [sys.executable, worker, str(one), "3"],
        check=True,
        env=_env(),
        capture_output=True,
        timeout=120,
    )
    proc = subprocess.run(
        [*_launcher(), worker, str(two), "3"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    r0, r1 = _ranks(two, 0), _ranks(two, 1)
    assert len(r0) == len(r1) == 3  # one sampling call per step on each rank
    assert [r["weights"] for r in r0] == [
        r["weights"] for r in r1
    ]  # in sync before the first and after each update
    assert len({r["weights"] for r in r0}) == 3  # and the updates moved them
    for a, b, whole in zip(r0, r1, _ranks(one, 0), strict=True):
        assert (
            not set(a["questions"]) & set(b["questions"])
            and a["questions"] + b["questions"] == whole["questions"]
        )
    assert (
        len((two / "metrics.jsonl").read_text().splitlines()) == 3
    )  # one log line per step, from rank 0
    # the pre-clip gradient norm checks DDP's averaging against the global token normaliser
    curves = [
        [(r["grad_norm"], r["entropy"], r["reward"]) for r in read_metrics(d / "metrics.jsonl")]
        for d in (one, two)
    ]
    assert curves[0][0][0] > 0
    assert np.array(curves[1]) == pytest.approx(np.array(curves[0]), rel=1e-4)
    assert (two / "final" / "config.json").is_file()
