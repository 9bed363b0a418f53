"""`wikisim compare` and `wikisim power` on run folders written the way `wikisim eval` writes them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from agent.eval.compare import compare_runs, load_run, load_runs, only_tasks, power_table
from agent.rollout.trajectory import Trajectory, Turn, write_trajectories
from wikisim.cli import main
from wikisim.errors import ConfigError


def _write_run(
    out: Path, em: dict[str, list[float]], *, manifest: str = "m1", retriever: str = "hybrid"
) -> Path:
    out.mkdir(parents=True)
    turn = Turn(text="<answer>x</answer>", ids=(1,), logprobs=(0.0,))
    trajs = [
        Trajectory(
            task_id=task,
            seed=seed,
            policy=out.name,
            prompt_ids=(0,),
            turns=(turn,),
            answer="x",
            reward=v,
            terminated=True,
            truncated=False,
            manifest_hash=manifest,
            version="0",
            metrics={"em": v, "f1": v},
        )
        for task, values in em.items()
        for seed, v in enumerate(values)
    ]
    write_trajectories(out / "trajectories.jsonl", trajs)
    summary = {
        "policy": out.name,
        "tasks_file": "tasks.jsonl",
        "manifest_hash": manifest,
        "config": {"policy": out.name, "env": {"tasks": "tasks.jsonl", "retriever": retriever}},
    }
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return out


def _planted(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """500 questions, one seed: B gains 45 questions and loses 20, five points net."""
    rng = np.random.default_rng(seed)
    a = (rng.random(500) < 0.4).astype(float)
    b = a.copy()
    b[rng.choice(np.flatnonzero(a == 0), 45, replace=False)] = 1.0
    b[rng.choice(np.flatnonzero(a == 1), 20, replace=False)] = 0.0
    return a, b


def _one_seed(values: np.ndarray) -> dict[str, list[float]]:
    return {f"q{i:03d}": [float(v)] for i, v in enumerate(values)}


def test_compare_finds_a_planted_five_point_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    a, b = _planted(11)
    run_a, run_b = (
        _write_run(tmp_path / "a", _one_seed(a)),
        _write_run(tmp_path / "b", _one_seed(b)),
    )
    assert main(["compare", str(run_a), str(run_b), "--out", str(tmp_path / "c.json")]) == 0
    text = capsys.readouterr().out
    c = json.loads((tmp_path / "c.json").read_text())["comparisons"][0]
    assert c["mean"] == pytest.approx(0.05) and c["low"] > 0
    assert c["test"] == "mcnemar-exact" and c["p_value"] == pytest.approx(
        2 * sps.binom.cdf(20, 65, 0.5)
    )
    assert (c["run_better"], c["baseline_better"], c["tasks"]) == (45, 20, 500)
    assert c["flags"] == []
    assert "| b - a | 500 | +0.050 [" in text and "warning" not in text


def test_identical_runs_show_no_difference(tmp_path: Path) -> None:
    a, _ = _planted(12)
    runs = [load_run(_write_run(tmp_path / name, _one_seed(a))) for name in ("a", "a2")]
    c = compare_runs(runs)["comparisons"][0]
    assert (c["mean"], c["low"], c["high"], c["p_value"]) == (0.0, 0.0, 0.0, 1.0)


def test_several_runs_are_holm_adjusted_and_mismatches_flagged(tmp_path: Path) -> None:
    a, b = _planted(13)
    base = _write_run(
        tmp_path / "base", {k: v * 2 for k, v in _one_seed(a).items()}
    )  # two seeds per task
    same = _write_run(tmp_path / "same", _one_seed(a), manifest="m2", retriever="bm25s")
    better = _write_run(tmp_path / "better", dict(list(_one_seed(b).items())[:400]))
    report = compare_runs([load_run(p) for p in (base, same, better)])
    first, second = report["comparisons"]
    smallest = min((first, second), key=lambda c: c["p_value"])
    assert smallest["p_holm"] == pytest.approx(
        min(1.0, 2 * smallest["p_value"])
    )  # Holm: m x the smallest
    assert all(c["p_holm"] >= c["p_value"] for c in (first, second))
    assert any("index manifests" in f for f in first["flags"])
    assert any("retriever='hybrid' vs 'bm25s'" in f for f in first["flags"])
    assert second["tasks"] == 400 and any("different task sets" in f for f in second["flags"])
    assert report["runs"][0]["episodes"] == 1000 and report["runs"][0]["tasks"] == 500
    with pytest.raises(ConfigError, match="at least two runs"):
        compare_runs([load_run(base)])


def test_runs_whose_folders_share_a_name_are_told_apart_by_their_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    a, b = _planted(15)
    plain = _write_run(tmp_path / "plain" / "seed1" / "eval" / "grpo", _one_seed(a))
    dynamic = _write_run(tmp_path / "dynamic" / "seed1" / "eval" / "grpo", _one_seed(b))
    assert main(["compare", str(plain), str(dynamic)]) == 0
    text = capsys.readouterr().out
    assert "| dynamic/seed1/eval/grpo - plain/seed1/eval/grpo | 500 |" in text
    other = _write_run(tmp_path / "sft", _one_seed(a))
    assert [r.name for r in load_runs([other, plain])] == ["sft", "grpo"]


def test_pooled_seeds_pair_each_task_over_all_of_them(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    a, b = _planted(16)
    ids = [f"sfq-{i:03d}" if i % 2 else f"hp-{i:03d}" for i in range(500)]
    folders = []
    for method, values in (("plain", a), ("dynamic", b)):
        for seed in range(3):  # the seeds disagree on one task each, as trained seeds do
            flipped = values.copy()
            flipped[seed] = 1.0 - flipped[seed]
            scores = {t: [float(v)] for t, v in zip(ids, flipped, strict=True)}
            folders.append(
                str(_write_run(tmp_path / method / f"seed{seed}" / "eval" / "grpo", scores))
            )
    out = tmp_path / "c.json"
    assert main(["compare", "--pool", "3", *folders, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| dynamic/seed{0,1,2}/eval/grpo - plain/seed{0,1,2}/eval/grpo | 500 | +0.050 [" in text
    report = json.loads(out.read_text())
    assert [r["episodes"] for r in report["runs"]] == [1500, 1500]
    assert report["comparisons"][0]["test"] == "permutation"  # a task's mean of 3 seeds is not 0/1
    assert (
        main(["compare", "--pool", "3", "--task-pattern", "^sfq-", *folders, "--out", str(out)])
        == 0
    )
    odd = [i for i in range(500) if i % 2]
    assert json.loads(out.read_text())["comparisons"][0]["mean"] == pytest.approx(
        float(np.mean(b[odd] - a[odd]))
    )
    with pytest.raises(ConfigError, match="multiple of 4"):
        load_runs(folders, pool=4)
    with pytest.raises(ConfigError, match="at least one folder"):
        load_runs(folders, pool=0)
    with pytest.raises(ConfigError, match="no task of .* matches 'x-'"):
        only_tasks(load_run(folders[0]), "x-")
    fewer = _write_run(tmp_path / "fewer", dict(list(_one_seed(a).items())[:400]))
    with pytest.raises(ConfigError, match="their tasks differ"):
        load_runs([folders[0], str(fewer)], pool=2)


def test_compare_refuses_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="summary.json and trajectories.jsonl"):
        load_run(tmp_path)
    assert main(["compare", str(tmp_path), str(tmp_path)]) == 2


def test_power_matches_the_closed_form(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rng = np.random.default_rng(14)
    scores = {f"q{i:03d}": [float(rng.random() < 0.3)] for i in range(400)}
    run = _write_run(tmp_path / "base", scores)
    values = np.array([v[0] for v in scores.values()])
    sd = math.sqrt(2 * np.var(values, ddof=1))  # one seed, uncorrelated policies
    expected = math.ceil(((1.959964 + 0.841621) * sd / 0.03) ** 2)
    report = power_table(load_run(run), 0.03)
    assert report["rows"][0]["tasks"] == pytest.approx(expected, abs=1)
    assert [r["tasks"] for r in report["rows"]] == [
        report["rows"][0]["tasks"]
    ] * 4  # one seed: no within part
    assert main(["power", "--baseline", str(run), "--delta", "0.03"]) == 0
    assert f"| 1 | {sd:.3f} | {report['rows'][0]['tasks']} |" in capsys.readouterr().out
