"""`wikisim sweep`: grid x seeds in parallel processes, aggregated with intervals, resumable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from agent.commands.sweep import cells, load_sweep
from wikisim.cli import main
from wikisim.errors import ConfigError


def test_sweep_runs_aggregates_and_resumes(sample_index: Path, tmp_path: Path) -> None:
    spec = {
        "out": str(tmp_path / "sweep"),
        "workers": 2,
        "seeds": 2,
        "base": {"index": str(sample_index), "limit": 4, "envs": 4},
        "grid": {"policy": ["search-answer", "oracle"], "max_turns": [2, 4]},
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    assert main(["sweep", str(path)]) == 0
    rows = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert [(r["setting"]["policy"], r["setting"]["max_turns"]) for r in rows] == [
        ("search-answer", 2),
        ("search-answer", 4),
        ("oracle", 2),
        ("oracle", 4),
    ]
    by = {(r["setting"]["policy"], r["setting"]["max_turns"]): r for r in rows}
    assert by[("oracle", 4)]["em"] == 1.0 and (
        by[("oracle", 4)]["em_low"],
        by[("oracle", 4)]["em_high"],
    ) == (1.0, 1.0)
    assert all(
        r["tasks"] == 4 for r in rows
    )  # intervals over the 4 tasks, both seeds of a task together
    assert by[("oracle", 2)]["em"] == 0.0  # search + visit use both turns: no answer in time
    assert all(r["seeds"] == 2 for r in rows)
    assert (tmp_path / "sweep" / "sweep.png").stat().st_size > 0 and "oracle" in (
        tmp_path / "sweep" / "sweep.md"
    ).read_text()
    summaries = sorted((tmp_path / "sweep").glob("*/summary.json"))
    assert len(summaries) == 8
    stamps = [p.stat().st_mtime_ns for p in summaries]
    summaries[0].unlink()
    assert main(["sweep", str(path), "--workers", "1"]) == 0  # only the missing cell runs again
    assert [p.stat().st_mtime_ns for p in summaries[1:]] == stamps[1:] and summaries[0].is_file()


def test_sweep_file_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"grid": {"polcy": ["oracle"]}}))
    with pytest.raises(ConfigError, match="unknown setting 'polcy'"):
        load_sweep(path)
    assert len(cells({"seeds": [3, 5], "grid": {"policy": ["a", "b"]}})) == 4
