"""Trajectory files: recorded episodes replay identically, and a changed step is reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikisim import __version__
from wikisim.cli import main
from wikisim.env.core import WikiSimEnv
from wikisim.env.replay import RecordEpisodes, read_records, replay
from wikisim.env.tasks import Task, TaskSet
from wikisim.errors import TaskError


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


@pytest.fixture(scope="module")
def recorded(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("traj") / "episodes.jsonl"
    env = RecordEpisodes(WikiSimEnv(index=sample_index, python=False, max_turns=4), path)
    env.reset(seed=5)
    for action in (
        call("search", query="Apollo 8"),
        "junk \ud800",
        b"\xff",
        {"name": "visit", "arguments": {"url": "Apollo 8", "goal": "crew"}},
    ):
        env.step(action)  # the 4th step is truncated by max_turns
    env.reset(options={"task_id": "aikido-founder"})
    env.step(call("visit", url="Aikido", goal="founder"))
    env.step("<answer>Morihei Ueshiba</answer>")
    env.close()
    return path


def test_records_hold_manifest_version_task_and_every_step(
    recorded: Path, sample_index: Path
) -> None:
    records = read_records(recorded)
    assert [len(r.steps) for r in records] == [4, 2]
    first, second = records
    assert first.seed == 5 and second.task_id == "aikido-founder" and first.version == __version__
    assert first.manifest_hash == WikiSimEnv(index=sample_index, python=False).manifest_hash
    assert (
        first.steps[-1].truncated and second.steps[-1].terminated and second.steps[-1].reward == 1.0
    )
    assert first.steps[1].action == {"text": "junk \ud800"} and "bytes_b64" in first.steps[2].action
    assert first.env["index"] == str(sample_index) and first.env["max_turns"] == 4


def test_replay_is_identical(recorded: Path) -> None:
    report = replay(recorded)
    assert report.identical and (report.episodes, report.steps) == (2, 6)


def test_a_changed_step_is_reported_with_nonzero_exit(
    recorded: Path, tmp_path: Path, capsys
) -> None:
    lines = recorded.read_text(encoding="utf-8").splitlines()
    episode = json.loads(lines[1])
    episode["steps"][0]["observation_sha256"] = "0" * 64
    episode["steps"][1]["reward"] = 0.0
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text(lines[0] + "\n" + json.dumps(episode) + "\n", encoding="utf-8")
    report = replay(tampered)
    assert [(d.episode, d.step, d.what) for d in report.differences] == [
        (1, 1, "observation"),
        (1, 2, "reward"),
    ]
    assert main(["replay", str(tampered)]) == 1
    out = capsys.readouterr().out
    assert "episode 1 step 1: observation differs" in out and "2 difference(s)" in out
    assert main(["replay", str(recorded)]) == 0
    assert "replayed 2 episode(s), 6 step(s): identical" in capsys.readouterr().out


def test_a_different_index_is_reported(recorded: Path, tmp_path: Path) -> None:
    lines = recorded.read_text(encoding="utf-8").splitlines()
    episode = json.loads(lines[0])
    episode["manifest_hash"] = "feedface"
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(episode) + "\n", encoding="utf-8")
    assert replay(other).differences[0].what == "manifest_hash"


def test_task_set_objects_need_their_file(sample_index: Path, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    env = RecordEpisodes(
        WikiSimEnv(
            index=sample_index, python=False, tasks=TaskSet([Task("x", "Q?", ("a",))], "mine")
        ),
        path,
    )
    env.reset(seed=0)
    env.close()
    with pytest.raises(TaskError, match="pass its file with --tasks"):
        replay(path)
