"""`wikisim train sft|grpo` end to end in WikiSim-v0: configs, rejection sampling, logs, determinism, resume."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field, fields
from pathlib import Path

import pytest
import yaml

from agent.train.config import GRPOConfig, SFTConfig, recipe
from agent.train.loop import read_metrics
from wikisim.cli import main
from wikisim.env.config import EnvConfig
from wikisim.env.reward import normalize_answer
from wikisim.errors import ConfigError
from wikisim.flags import add_config_arguments, config_fields, load_config


def test_every_setting_is_a_flag_and_yaml_key(tmp_path):
    for cls in (SFTConfig, GRPOConfig):
        p = argparse.ArgumentParser()
        add_config_arguments(p, cls)
        dests = {a.dest for a in p._actions}
        assert set(config_fields(cls)) <= dests
        assert {f.name for f in fields(EnvConfig)} <= dests  # the env's settings, flattened
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"lr": 1, "group-size": 4, "aggregation": "sequence"}))
    cfg = load_config(GRPOConfig, path, {"group_size": 6, "steps": None})
    assert (cfg.lr, cfg.group_size, cfg.aggregation, cfg.steps) == (1.0, 6, "sequence", 50)
    assert cfg.env == EnvConfig()  # the env's defaults are the env's own


@pytest.mark.parametrize("stage", ["sft", "grpo"])
def test_the_recipes_never_train_on_a_held_out_answer(stage: str) -> None:
    """configs/learn/*.yaml and bench/learn_agent.py hold out answers, not only questions."""
    import runpy

    from agent.commands.train import _training_tasks
    from wikisim.env.tasks import task_sources
    from wikisim.paths import REPO_ROOT

    def answers(tasks) -> set[str]:
        return {normalize_answer(a) for t in tasks for a in t.answers} - {"yes", "no", ""}

    cls = SFTConfig if stage == "sft" else GRPOConfig
    cfg = recipe(cls)
    train, dev = _training_tasks(cfg)
    assert dev is not None and len(train) > 200
    assert not {a for a in answers(train) & answers(dev) if not a.isdigit()}
    bench = runpy.run_path(str(REPO_ROOT / "bench" / "learn_agent.py"), run_name="check")
    data = bench["load_data"](0)
    held = [t for v in data.held.values() for t in v]
    trained = [data.tasks.get(i) for i in data.train]
    assert len(trained) > 200
    assert not {a for a in answers(trained) & answers(held) if not a.isdigit()}

    # the bench's sources (GRPOConfig.even_sources) are the config's task files
    def parts(sources: dict[str, str]) -> set[frozenset[str]]:
        return {frozenset(i for i in data.train if sources[i] == v) for v in set(sources.values())}

    assert parts(data.sources) == parts(task_sources(cfg.env.tasks))


def test_the_learning_bench_runs_the_recipes_method() -> None:
    """bench/learn_agent.py with no flags trains as configs/learn/*.yaml do (sizes apart)."""
    import runpy

    from wikisim.paths import REPO_ROOT

    sft, grpo = recipe(SFTConfig), recipe(GRPOConfig)
    bench = runpy.run_path(str(REPO_ROOT / "bench" / "learn_agent.py"), run_name="check")
    a = bench["arguments"]().parse_args([])
    assert (a.teacher, a.sft_lr, a.lora_rank) == (sft.teacher, sft.lr, sft.lora_rank)
    assert a.teacher != "research"  # the research-known teacher, not the bench's old default
    shaping = (
        "format_penalty",
        "grounded_only",
        "kl_coef",
        "retrieval_bonus",
        "teacher_starts",
        "own_share",
        "unanswered_negative",
        "refused_negative",
        "echo_penalty",
        "even_sources",
        "decode_dtype",
        "mixed_precision",
    )
    assert {k: getattr(a, k) for k in shaping} == {k: getattr(grpo, k) for k in shaping}
    # dynamic sampling is the method's (the README's table); only --quick's budget leaves it out
    for device in ("cpu", "cuda"):
        assert bench["settings"](["--device", device]).dynamic_rounds == grpo.dynamic_rounds == 2
    assert grpo.own_starts and a.own_starts is None  # on: the profile sizes it (gpu: the config's)
    assert (a.grpo_temperature, a.max_new_tokens, a.think_budget, a.max_context) == (
        grpo.temperature,
        grpo.max_new_tokens,
        grpo.think_budget,
        grpo.max_context_tokens,
    )
    env = {**bench["ENV"], "max_turns": a.max_turns, "reward": a.grpo_reward}
    assert {k: getattr(grpo.env, k) for k in env} == env
    assert (sft.env.max_turns, sft.env.search_k) == (grpo.env.max_turns, grpo.env.search_k)
    assert bench["settings"]([]).retriever == grpo.env.retriever


def test_the_learning_bench_searches_with_the_retriever_asked(tmp_path) -> None:
    """--retriever reaches the env every stage plays in (teacher, evals, GRPO): the bench's one
    EnvConfig and every env of its runner's pool."""
    import runpy

    from wikisim.paths import REPO_ROOT

    bench = runpy.run_path(str(REPO_ROOT / "bench" / "learn_agent.py"), run_name="check")
    args = bench["settings"](["--quick", "--retriever", "lucene"])
    run = bench["Bench"](args, bench["load_data"](2), tmp_path)
    played = {e.unwrapped.config.retriever for e in run.runner.pool}
    assert run.env.retriever == "lucene" != bench["ENV"]["retriever"]
    assert played == {"lucene"}


def test_the_env_a_run_trains_in_is_one_env_config(tmp_path):
    flat, nested = tmp_path / "flat.yaml", tmp_path / "nested.yaml"
    flat.write_text(yaml.safe_dump({"max_turns": 4, "retriever": "bm25s", "lr": 0.5}))
    nested.write_text(yaml.safe_dump({"env": {"max_turns": 4, "retriever": "bm25s"}, "lr": 0.5}))
    a, b = (load_config(SFTConfig, f) for f in (flat, nested))
    assert a == b and a.env == EnvConfig(max_turns=4, retriever="bm25s")
    assert load_config(SFTConfig, flat, {"max_turns": 6}).env.max_turns == 6  # flags win
    with pytest.raises(ConfigError, match="max_turns=0"):
        load_config(SFTConfig, None, {"max_turns": 0})
    with pytest.raises(ConfigError, match="set curriculum=true"):
        load_config(GRPOConfig, None, {"probe_questions": 8})

    @dataclass(frozen=True)
    class Clash:
        max_turns: int = 1
        env: EnvConfig = field(default_factory=EnvConfig)

    with pytest.raises(ConfigError, match=r"\['max_turns'\] are named twice"):
        config_fields(Clash)


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"aggregaton": "token"}, "unknown setting"),
        ({"aggregation": "mean"}, "aggregation='mean': choose one of"),
        ({"group_size": 1}, "group_size=1"),
        ({"steps": "ten"}, "must be a int"),
        ({"band_low": 0.5, "band_high": 0.5}, "band_low"),
        ({"question_rollouts": -8}, "question_rollouts=-8"),
        ({"clip_eps": 0.2, "temperature": 0.7}, "tempered"),
    ],
)
def test_bad_settings_name_the_value(values, match):
    with pytest.raises(ConfigError, match=match):
        load_config(GRPOConfig, None, values)


def _tasks(path: Path, numbers: list[int]) -> Path:
    with path.open("w") as f:
        for n in numbers:
            f.write(
                json.dumps(
                    {
                        "id": f"n{n}",
                        "question": f"What is the last digit of {n}?",
                        "answer": str(n % 10),
                    }
                )
                + "\n"
            )
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory, sample_index):
    root = tmp_path_factory.mktemp("train")
    train = _tasks(root / "train.jsonl", [123, 4567, 890, 2024, 31, 77])
    dev = _tasks(root / "dev.jsonl", [5551, 642])
    common = [
        "--tasks",
        str(train),
        "--index",
        str(sample_index),
        "--system-prompt",
        "short",
        "--cpu",
        "--max-turns",
        "3",
        "--retriever",
        "bm25s",
        "--max-new-tokens",
        "96",  # the oracle's turns fit (a teacher turn over the budget is cut, as a model's is)
        "--seed",
        "5",
    ]
    (root / "sft.yaml").write_text(
        yaml.safe_dump({"epochs": 1, "batch_size": 4, "samples_per_question": 2, "lr": 0.5})
    )
    assert (
        main(
            [
                "train",
                "sft",
                "--config",
                str(root / "sft.yaml"),
                "--lr",
                "0.003",
                "--output-dir",
                str(root / "sft"),
                *common,
            ]
        )
        == 0
    )
    grpo = [
        *common,
        "--init-checkpoint",
        str(root / "sft" / "final"),
        "--dev-tasks",
        str(dev),
        "--questions-per-step",
        "2",
        "--group-size",
        "2",
        "--dev-every",
        "2",
        "--dev-k",
        "2",
        "--curriculum",
        "--probe-questions",
        "3",
        "--probe-samples",
        "2",
        "--pool-size",
        "3",
        "--retire-after",
        "2",
        "--question-rollouts",
        "2",
        "--micro-batch-size",
        "2",
    ]
    (root / "grpo_args.json").write_text(json.dumps(grpo))  # the runs' flags, for other runs
    for name, steps in (("a", 2), ("c", 3)):
        assert (
            main(["train", "grpo", "--output-dir", str(root / name), "--steps", str(steps), *grpo])
            == 0
        )
    assert (
        main(["train", "grpo", "--output-dir", str(root / "a"), "--steps", "3", *grpo]) == 0
    )  # resumes at 2
    return root


def test_sft_rejection_sampling_and_outputs(runs):
    report = json.loads((runs / "sft" / "rejection_report.json").read_text())
    # the oracle is deterministic: the second attempt duplicates the first and is dropped; an answer
    # no search result showed is not grounded, and is dropped too
    per_question = report["per_question"].values()
    assert report["tried"] == 12 and all(kept <= 1 and tried == 2 for kept, tried in per_question)
    assert report["kept"] == sum(kept for kept, _ in per_question) >= 4
    saved = yaml.safe_load((runs / "sft" / "config.yaml").read_text())
    assert saved["lr"] == 0.003 and saved["epochs"] == 1  # flag beats YAML, YAML beats default
    assert len(read_metrics(runs / "sft" / "metrics.jsonl")) == 2
    assert (runs / "sft" / "final" / "config.json").is_file()


def test_grpo_logs_every_step(runs):
    rows = read_metrics(runs / "c" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    for key in (
        "reward",
        "entropy",
        "response_tokens",
        "turns",
        "tool_calls",
        "truncated_share",
        "adv_mean",
        "adv_std",
        "grad_norm",
        "excluded_truncated",
        "pool",
        "time_generate",
    ):
        assert key in rows[0], key
    assert "dev_pass@1" in rows[1] and "dev_pass@k" in rows[1] and "dev_pass@1" not in rows[0]
    assert rows[0]["pool"]["pool"] == 3 and set(rows[0]["pool"]["by_structure"]) == {"?hop"}
    assert rows[0]["retired"] == 2  # one group each (--question-rollouts 2): settled or spent
    assert (runs / "c" / "curves.png").is_file()


def test_grpo_same_seed_same_curve_and_exact_resume(runs):
    def losses(name):
        return [(r["loss"], r["reward"]) for r in read_metrics(runs / name / "metrics.jsonl")]

    # "a" ran 2 steps, then was resumed to 3; "c" ran 3 steps straight with the same seed and config
    assert len(losses("a")) == 3 and losses("a") == losses("c")


def test_grpo_samples_from_bf16_weights_and_trains_its_own_in_fp32(runs):
    """`--decode-dtype bfloat16`: the rollouts come from a bf16 copy of the weights (their
    log-probs differ from fp32 sampling of the same weights and seeds), the trained weights stay
    fp32, and the same seed gives the same curve."""
    args = json.loads((runs / "grpo_args.json").read_text())
    for name in ("bf16", "bf16-again"):
        flags = ["--output-dir", str(runs / name), "--steps", "2", "--decode-dtype", "bfloat16"]
        assert main(["train", "grpo", *flags, *args]) == 0

    def first_rollouts(name: str) -> list[dict]:
        path = runs / name / "rollouts" / "step-00001.rank0.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        return [{k: v for k, v in row.items() if k != "timings"} for row in rows]

    def curve(name: str) -> list[tuple[float, float]]:
        return [(r["loss"], r["reward"]) for r in read_metrics(runs / name / "metrics.jsonl")]

    assert curve("bf16") == curve("bf16-again") and len(curve("bf16")) == 2
    assert first_rollouts("bf16") == first_rollouts("bf16-again")
    assert first_rollouts("bf16") != first_rollouts("c")  # "c": the same seed, sampled in fp32
    from safetensors.torch import load_file

    saved = load_file(runs / "bf16" / "final" / "model.safetensors")
    assert {str(v.dtype) for v in saved.values()} == {"torch.float32"}
