"""The real-model loop on CPU with tiny budgets: grounded SFT data, a GRPO step on SmolLM2, reloads.

SmolLM2-135M-Instruct (the bundled model) in the real env over the bundled sample index, with
the compact context a small model needs; one SFT step makes the checkpoint the other tests use.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from agent.eval.harness import EvalConfig, evaluate
from agent.rollout.models import is_adapter, load_smollm2
from agent.rollout.react import ChatFormat, Generation
from agent.rollout.trajectory import Trajectory, Turn, read_trajectories, write_trajectories
from agent.train.config import GRPOConfig, SFTConfig
from agent.train.episodes import EnvRunner
from agent.train.grpo import train_grpo
from agent.train.sft import answer_observed, gold_retrieved, rejection_sample, train_sft
from agent.train.starts import OWN_EPISODES, teacher_starts
from agent.train.teachers import ResearchTeacher
from wikisim.env.config import EnvConfig
from wikisim.env.tasks import Task, TaskSet, load_tasks
from wikisim.errors import ConfigError
from wikisim.flags import build_config
from wikisim.tools.protocol import format_answer

pytestmark = pytest.mark.slow
CONTEXT = {
    "search_k": 2,
    "visit_tokens": 60,
    "prompt": "compact",
    "retriever": "bm25s",
    "python": False,
}


def runner_for(tasks: TaskSet, *, max_turns: int, max_new_tokens: int, slots: int) -> EnvRunner:
    env = EnvConfig(max_turns=max_turns, **CONTEXT)
    return EnvRunner(
        tasks, env, max_new_tokens=max_new_tokens, max_context_tokens=4096, slots=slots
    )


@pytest.fixture(scope="module")
def smol():
    return load_smollm2()


@pytest.fixture(scope="module")
def tasks() -> TaskSet:
    return TaskSet(list(load_tasks(None))[:8], "sample-8")


@pytest.fixture(scope="module")
def teacher_data(smol, tasks):
    chat = ChatFormat(smol[0])
    runner = runner_for(tasks, max_turns=4, max_new_tokens=96, slots=8)
    return rejection_sample(
        runner.teacher(ResearchTeacher(tasks, chat), chat, seed=0), tasks.ids(), 3
    )


@pytest.fixture(scope="module")
def sft_run(teacher_data, tmp_path_factory):
    kept, _ = teacher_data
    out = tmp_path_factory.mktemp("sft")
    cfg = SFTConfig(
        output_dir=str(out),
        model="smollm2",
        lora_rank=4,
        lora_alpha=8,
        lr=1e-3,
        epochs=1,
        batch_size=2,
        micro_batch_size=2,
        max_steps=1,
        cpu=True,
    )
    return out, train_sft(cfg, kept[:2])


def test_recovering_episodes_learn_only_the_search_after_the_error(teacher_data, tasks, smol):
    """A share of the teacher's episodes opens with a broken call (forced: loss 0), gets the env's
    error and searches well; the others are the episodes `recover_share=0` plays."""
    chat = ChatFormat(smol[0])
    runner = runner_for(tasks, max_turns=4, max_new_tokens=96, slots=8)
    teacher = ResearchTeacher(tasks, chat, recover_share=0.5)
    kept, _ = rejection_sample(runner.teacher(teacher, chat, seed=0), tasks.ids(), 3)
    recovered = [t for t in kept if t.turns[0].forced_at]
    assert recovered and len(recovered) < len(kept)
    tok = smol[0]
    for t in recovered:
        first, second = t.turns[0], t.turns[1]
        assert first.tool_calls == ("?",) and "Error:" in first.observation
        assert second.tool_calls == ("search",) and not second.forced and not second.forced_at
        start = len(t.prompt_ids)
        mask = t.loss_mask()[start : start + len(first.ids)]
        learned = [i for i, m in zip(first.ids, mask, strict=True) if m]
        # learned: the well-formed start of the call; given: the fault and all after it
        assert mask == sorted(mask, reverse=True) and 0 < len(learned) < len(mask)
        start_text = tok.decode(learned)
        assert first.text.startswith(start_text)
        assert '<tool_call>\n{"name": "search", "arguments": {"query":' in start_text
        # the query as far as it was typed right is learned (none of it where the fault is its
        # first character: a token holds both quotes); the search after the error is it
        typed = start_text.split('"query":', 1)[1].removeprefix(' "')
        assert f'"query": "{typed}' in second.text
        assert answer_observed(t) and t.reward == 1.0
    plain = {tuple(t.token_ids()) for t in teacher_data[0]}
    assert all(tuple(t.token_ids()) in plain for t in kept if not t.turns[0].forced_at)


def test_a_teacher_of_two_searches_types_each_another_way_before_answering(tasks, smol):
    """`min_searches=2`: every kept episode ran two searches of distinct queries before its
    answer, even where the first already showed a gold answer; still only answers read."""
    chat = ChatFormat(smol[0])
    runner = runner_for(tasks, max_turns=4, max_new_tokens=96, slots=8)
    teacher = ResearchTeacher(tasks, chat, known_only=True, min_searches=2)
    kept, _ = rejection_sample(runner.teacher(teacher, chat, seed=0), tasks.ids(), 3)
    assert kept and all(answer_observed(t) and t.reward == 1.0 for t in kept)
    early = 0
    for t in kept:
        searches = [turn for turn in t.turns if turn.tool_calls == ("search",)]
        queries = [
            json.loads(s.text.split("<tool_call>")[1].split("</tool_call>")[0]) for s in searches
        ]
        assert len(searches) >= 2 and t.turns[-1].tool_calls == ()
        assert len({q["arguments"]["query"] for q in queries}) == len(queries)
        gold = [a.lower() for a in tasks.get(t.task_id).answers]
        early += any(a in searches[0].observation.lower() for a in gold)
    assert early  # a first search that showed the answer is still followed by a second
    with pytest.raises(ConfigError, match="min_searches=4"):
        ResearchTeacher(tasks, chat, max_turns=4, min_searches=4)


def test_sft_data_holds_only_answers_read_in_an_observation(teacher_data, tasks, smol):
    kept, report = teacher_data
    assert kept and all(answer_observed(t) and t.reward == 1.0 for t in kept)
    assert len({tuple(t.token_ids()) for t in kept}) == len(kept)
    assert any(v > 1 for v in report.kept.values())  # K attempts differ (phrasings, visits)
    assert any(t.called("visit") for t in kept)

    class Recaller:  # right answers without reading anything: all rejected
        name, chat = "recaller", ChatFormat(smol[0])

        def act(self, requests):
            return [
                Generation(text=format_answer(tasks.by_question(r.question).answers[0]))
                for r in requests
            ]

    runner = runner_for(tasks, max_turns=2, max_new_tokens=32, slots=8)
    recalled, report = rejection_sample(runner.teacher(Recaller(), Recaller.chat), tasks.ids(), 1)
    assert recalled == [] and report.tried_total == len(tasks)
    kept_anyway, _ = rejection_sample(
        runner.teacher(Recaller(), Recaller.chat), tasks.ids(), 1, grounded=False
    )
    assert len(kept_anyway) == len(tasks)


def test_grpo_step_on_smollm2_in_the_env_changes_the_weights(sft_run, smol, tmp_path):
    sft_dir, _ = sft_run
    adapter = sft_dir / "adapter"
    assert is_adapter(adapter) and (adapter / "adapter_model.safetensors").stat().st_size < 8 << 20
    task = Task("say-yes", "Reply with exactly <answer>yes</answer> and nothing else.", ("yes",))
    runner = runner_for(TaskSet([task]), max_turns=1, max_new_tokens=12, slots=2)
    # the entropy bonus gives the step a gradient even when the group's rewards tie (then the
    # advantages are all zero), so that one step of a barely trained model always moves
    cfg = GRPOConfig(
        output_dir=str(tmp_path),
        model="smollm2",
        init_checkpoint=str(adapter),
        lora_rank=4,
        lora_alpha=8,
        lr=1e-3,
        steps=1,
        questions_per_step=1,
        group_size=2,
        micro_batch_size=2,
        env=EnvConfig(max_turns=1, **CONTEXT),
        max_new_tokens=12,
        cpu=True,
        dev_every=0,
        entropy_coef=0.01,
        exclude_truncated=False,
    )
    res = train_grpo(cfg, [task.id], runner.sampler(smol[0]))
    assert res.history[0]["policy_tokens"] > 0 and res.history[0]["grad_norm"] > 0
    from safetensors.torch import load_file

    before, after = (
        load_file(adapter / "adapter_model.safetensors"),
        load_file(tmp_path / "adapter" / "adapter_model.safetensors"),
    )
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[k], after[k]) for k in before)


def started_config(tmp_path: Path, sft_run, **starts) -> GRPOConfig:
    """One step of one group of 2 from the SFT adapter, its groups started as `starts` say; the
    entropy bonus gives it a gradient even when the group's rewards tie."""
    return GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        model="smollm2",
        init_checkpoint=str(sft_run[0] / "adapter"),
        lora_rank=4,
        lora_alpha=8,
        steps=1,
        questions_per_step=1,
        group_size=2,
        micro_batch_size=2,
        env=EnvConfig(max_turns=4, **CONTEXT),
        max_new_tokens=24,
        cpu=True,
        dev_every=0,
        entropy_coef=0.01,
        exclude_truncated=False,
        **starts,
    )


def test_grpo_started_from_a_teacher_trains_only_the_policys_own_turns(
    teacher_data, sft_run, smol, tasks, tmp_path
):
    kept, _ = teacher_data
    data = tmp_path / "teacher.jsonl"
    write_trajectories(data, kept)
    starts = teacher_starts(kept)
    task_id = sorted(starts)[0]
    teacher = next(t for t in kept if t.task_id == task_id)
    runner = runner_for(tasks, max_turns=4, max_new_tokens=24, slots=2)
    sample = runner.sampler(smol[0])
    batches = []

    def recording(*args):
        batches.append(sample(*args))
        return batches[-1]

    cfg = started_config(tmp_path, sft_run, teacher_starts=1.0, teacher_data=str(data))
    res = train_grpo(cfg, [task_id], recording)
    assert res.history[0]["started_share"] == 1.0
    n = len(starts[task_id])
    for t in batches[0]:
        # the teacher's turns, replayed through the env to the same observations, then the policy's
        assert [u.text for u in t.turns[:n]] == list(starts[task_id])
        assert [u.observation for u in t.turns[:n]] == [u.observation for u in teacher.turns[:n]]
        assert [u.forced for u in t.turns] == [True] * n + [False] * (len(t.turns) - n)
        mask, at = t.loss_mask(), len(t.prompt_ids)
        for u in t.turns:
            assert set(mask[at : at + len(u.ids)]) <= {int(not u.forced)}
            at += len(u.ids) + len(u.observation_ids)
        assert sum(mask) == sum(len(u.ids) for u in t.turns[n:]) > 0
        # the teacher's observations hold the answer (its data is grounded), but what the policy
        # retrieved is what its own calls brought back
        if not any(u.observation for u in t.turns[n:]):
            assert t.metrics["retrieved"] == 0.0
        assert t.metrics["retrieved"] == float(gold_retrieved(t, tasks.get(task_id).answers))
    assert answer_observed(teacher)
    assert res.history[0]["policy_tokens"] == sum(sum(t.loss_mask()) for t in batches[0])
    saved = read_trajectories(tmp_path / "grpo" / "rollouts" / "step-00001.rank0.jsonl")
    assert [t.canonical() for t in saved] == [t.canonical() for t in batches[0]]


def test_grpo_from_its_own_episodes_trains_where_its_searches_showed_the_answer(
    teacher_data, sft_run, smol, tasks, tmp_path
):
    kept, _ = teacher_data
    runner = runner_for(tasks, max_turns=4, max_new_tokens=24, slots=2)
    sample = runner.sampler(smol[0])
    # the starting weights' own episodes: the grounded ones of the teacher's data stand in for
    # them (a one-step SFT model rarely answers), the first question played marked as never retrieved
    first = {t.task_id: t for t in reversed(runner.annotate(kept))}
    ids = sorted(first)[:3]
    calls = []

    def recording(model, task_ids, n, seed, temperature, starts=None):
        calls.append((list(task_ids), n, dict(starts or {})))
        if n == 1 and not starts:  # the own-start episodes
            played = [first[t] for t in task_ids]
            return [dataclasses.replace(played[0], metrics={"retrieved": 0.0}), *played[1:]]
        return sample(model, task_ids, n, seed, temperature, starts)

    cfg = started_config(tmp_path, sft_run, own_starts=2)
    res = train_grpo(cfg, ids, recording)
    # two of the three questions were played, drawn by the seed; only the one whose search
    # showed the answer trains
    drawn = calls[0][0]
    assert calls[0][1] == 1 and len(drawn) == 2 and set(drawn) < set(ids)
    assert calls[1][0] == [drawn[1]] and calls[1][2] == {
        drawn[1]: teacher_starts([first[drawn[1]]])[drawn[1]]
    }
    assert res.history[0]["started_share"] == 1.0
    played = list(read_trajectories(tmp_path / "grpo" / OWN_EPISODES))
    assert [t.task_id for t in played] == drawn
    # resumed, the run reads its starts back instead of playing them again; at own_share 0 the
    # same question's group plays from scratch
    calls.clear()
    train_grpo(dataclasses.replace(cfg, steps=2, resume=True, own_share=0.0), ids, recording)
    assert [c[1] for c in calls] == [2] and calls[0][0] == [drawn[1]] and calls[0][2] == {}
    # the same draw whatever the questions' order; none of them retrieved: a clear error, before
    # any step
    calls.clear()
    with pytest.raises(ConfigError, match="own_starts=1: no episode"):
        train_grpo(
            dataclasses.replace(cfg, output_dir=str(tmp_path / "none"), own_starts=1),
            ids[::-1],
            recording,
        )
    assert [c[0] for c in calls] == [drawn[:1]]


def test_evaluated_checkpoint_reloads_to_the_same_greedy_trajectories(sft_run, tasks, tmp_path):
    _, res = sft_run
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(
        "".join(json.dumps(t.to_dict()) + "\n" for t in list(tasks)[:2]), encoding="utf-8"
    )
    cfg = build_config(
        EvalConfig,
        {
            "policy": res.final_dir,
            "tasks": str(tasks_file),
            "max_turns": 2,
            "max_new_tokens": 24,
            "envs": 2,
            "batch_size": 2,
            **CONTEXT,
        },
    )
    evaluate(cfg, tmp_path / "a", progress=False)
    evaluate(cfg, tmp_path / "b", progress=False)  # a fresh load of the saved folder
    first, second = (list(read_trajectories(tmp_path / d / "trajectories.jsonl")) for d in "ab")
    assert [t.canonical() for t in first] == [t.canonical() for t in second]
    assert Path(res.final_dir, "config.json").is_file()


def test_the_runner_marks_what_searching_found_and_an_answer_that_echoes_the_question(tasks):
    runner = runner_for(tasks, max_turns=2, max_new_tokens=8, slots=1)

    def played(answer: str, seen: str) -> Trajectory:
        turns = (
            Turn(text="<tool_call>search</tool_call>", ids=(1,), logprobs=(0.0,), observation=seen),
            Turn(text=f"<answer>{answer}</answer>", ids=(2,), logprobs=(0.0,)),
        )
        return Trajectory("angola-capital", 0, "p", (9,), turns, answer, 0.0, True, False, "h", "v")

    # "What is the capital city of Angola?": gold Luanda
    echo, read = runner.annotate(
        [played("Angola", "Angola is a country."), played("Luanda", "Its capital is Luanda.")]
    )
    assert echo.metrics == {"retrieved": 0.0, "echo": 1.0}
    assert read.metrics == {"retrieved": 1.0, "echo": 0.0}


def test_one_teacher_bank_gives_every_seed_the_same_sft_data(smol, tasks, tmp_path, monkeypatch):
    """`--teacher-seed N` (bench/learn_agent.py): every seed's SFT learns from the episodes the
    teacher drew under seed N, one SFT dataset, while SFT keeps its own seed; without it each
    seed draws its own episodes."""
    import runpy
    from types import SimpleNamespace

    from wikisim.paths import REPO_ROOT

    bench = runpy.run_path(str(REPO_ROOT / "bench" / "learn_agent.py"), run_name="check")
    trained: list[int] = []

    def fake_sft(cfg: SFTConfig, kept: list[Trajectory]) -> SimpleNamespace:
        trained.append(cfg.seed)
        return SimpleNamespace(losses=[], final_dir=cfg.output_dir)

    monkeypatch.setitem(bench["Bench"].sft.__globals__, "train_sft", fake_sft)
    flags = "--sft-questions 0 --samples-per-question 1 --sft-steps 1 --sft-batch 2 --micro-batch 2"

    def sft_data(seed: int, bank: list[str]) -> list[tuple[str, list[str]]]:
        b = object.__new__(bench["Bench"])
        b.args = bench["arguments"]().parse_args([*flags.split(), *bank, "--max-turns", "4"])
        b.data = bench["Data"](tasks, tasks.ids(), {}, {})
        b.runner = runner_for(tasks, max_turns=4, max_new_tokens=96, slots=8)
        b.env, b.device = EnvConfig(max_turns=4, **CONTEXT), "cpu"
        b.evaluate = lambda *args, **kwargs: {}
        out = tmp_path / f"seed{seed}{'-'.join(bank)}"
        res: dict = {"time_s": {}}
        b.sft(seed, smol[0], out, res)
        assert res["rejection"]["teacher_seed"] == (int(bank[-1]) if bank else seed)
        return [
            (t.task_id, [u.text for u in t.turns])
            for t in read_trajectories(out / "sft_data.jsonl")
        ]

    own = [sft_data(s, []) for s in (0, 1)]
    banked = [sft_data(s, ["--teacher-seed", "0"]) for s in (1, 2)]
    assert own[0] != own[1]  # each seed's teacher phrases its queries its own way
    assert banked == [own[0], own[0]]
    assert trained == [0, 1, 1, 2]  # SFT's own draws stay the seed's
