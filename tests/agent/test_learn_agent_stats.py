"""The learning bench (bench/learn_agent.py, learn_episodes.py, learn_report.py): its figures split
failures into search (the answer never on screen) and reading, and its reports merge runs."""

from __future__ import annotations

import dataclasses
import json
import os
import runpy
import statistics
from pathlib import Path

import pytest

from agent.rollout.trajectory import Trajectory, Turn, write_trajectories
from wikisim.env.tasks import Task, TaskSet
from wikisim.paths import REPO_ROOT


def _script(name: str) -> dict:
    """One of the learning bench's scripts under bench/, run as a module: its names."""
    return runpy.run_path(str(REPO_ROOT / "bench" / f"{name}.py"), run_name="check")


def _episode(task: str, observation: str, answer: str, em: float) -> Trajectory:
    turns = (
        Turn(
            text="search",
            ids=(1,),
            logprobs=(0.0,),
            observation=observation,
            tool_calls=("search",),
        ),
        Turn(text=f"<answer>{answer}</answer>", ids=(2,), logprobs=(0.0,)),
    )
    return Trajectory(
        task_id=task,
        seed=0,
        policy="p",
        prompt_ids=(0,),
        turns=turns,
        answer=answer,
        reward=em,
        terminated=True,
        truncated=False,
        manifest_hash="h",
        version="0",
        metrics={"em": em, "f1": em},
    )


def test_gold_seen_counts_evidence_not_the_echo_of_the_query() -> None:
    episodes = _script("learn_episodes")
    tasks = TaskSet(
        [
            Task("a", "Which band is from Copenhagen?", ("Mercyful Fate",)),
            Task("b", "Where was Locke born?", ("Wrington",)),
            Task("c", "Who wrote the Grand Model?", ("John Locke",)),
        ]
    )
    trajs = [
        # read the answer and gave it
        _episode(
            "a", "1. [Mercyful Fate](u) Mercyful Fate is a Danish band.", "Mercyful Fate", 1.0
        ),
        # the answer was on screen; answered with the question's words (a reading failure)
        _episode("b", "Locke was born in Wrington, Somerset.", "Locke", 0.0),
        # the answer only in the echo of its own query: never retrieved (a search failure)
        _episode("c", "A Google search for 'John Locke' found 0 results:", "Thomas Hobbes", 0.0),
    ]
    seen = [episodes["gold_seen"](t, tasks) for t in trajs]
    assert seen == [True, True, False]
    stats = episodes["episode_stats"](trajs, tasks)
    assert stats["gold_seen"] == pytest.approx(2 / 3)
    assert stats["em_when_seen"] == pytest.approx(1 / 2)


def test_wrong_answers_are_told_apart_by_what_they_repeat() -> None:
    episodes = _script("learn_episodes")
    tasks = TaskSet([Task("b", "Where was John Locke born?", ("Wrington",))])
    screen = "John Locke was born in Wrington and studied at Christ Church, Oxford."
    trajs = [
        _episode("b", screen, "Wrington", 1.0),  # right
        _episode("b", screen, "John Locke", 0.0),  # the question's words, though also on screen
        _episode("b", screen, "Christ Church", 0.0),  # another span it read
        _episode("b", screen, "Bristol", 0.0),  # neither
        _episode("b", screen, " ", 0.0),  # nothing
    ]
    kinds = [episodes["wrong_kind"](t, tasks) for t in trajs]
    assert kinds == [None, "echo", "misread", "unread", "no_answer"]
    stats = episodes["episode_stats"](trajs, tasks)
    assert [stats[f"wrong_{k}"] for k in episodes["WRONG"]] == [0.2, 0.2, 0.2, 0.2]


def test_query_stats_read_the_queries_through_the_env_parser() -> None:
    episodes = _script("learn_episodes")
    tasks = TaskSet([Task("b", "Where was John Locke born?", ("Wrington",))])

    def searched(*calls: str) -> Trajectory:
        turns = tuple(
            Turn(text=c, ids=(1,), logprobs=(0.0,), observation="x", tool_calls=("search",))
            for c in calls
        )
        return dataclasses.replace(_episode("b", "x", "Wrington", 1.0), turns=turns)

    call = '<tool_call>{{"name": "search", "arguments": {{"query": {}}}}}</tool_call>'
    trajs = [
        searched(call.format('"John Locke birthplace"')),  # 3 words, 2 the question's
        searched(call.format('["page", "Locke"]')),  # a call of two queries
        # no call, then a query that is not a string: an error, not a query
        searched("<think>no call</think>", call.format("7")),
    ]
    assert episodes["queries"](trajs[1]) == ["page", "Locke"]
    assert episodes["queries"](trajs[2]) == []
    stats = episodes["query_stats"](trajs, tasks)
    assert stats["query_words"] == pytest.approx(5 / 3)
    assert stats["one_word_queries"] == pytest.approx(2 / 3)
    assert stats["query_in_question"] == pytest.approx((2 / 3 + 0 + 1) / 3)


def test_an_episode_without_a_search_says_whether_it_tried_one() -> None:
    """The searching target counts calls: an episode whose only call the env refused (a quoted
    title left unescaped) is told apart from one that answered without a call."""
    episodes = _script("learn_episodes")
    tasks = TaskSet([Task("b", 'Who sang "Hey Jude"?', ("The Beatles",))])

    def played(*texts: str) -> Trajectory:
        turns = tuple(Turn(text=x, ids=(1,), logprobs=(0.0,), observation="x") for x in texts)
        return dataclasses.replace(_episode("b", "x", "Paul", 0.0), turns=turns)

    answer = "<answer>Paul</answer>"
    ran = '<tool_call>{"name": "search", "arguments": {"query": "Hey Jude"}}</tool_call>'
    unescaped = (
        '<tool_call>{"name": "search", "arguments": {"query": "sang "Hey Jude""}}</tool_call>'
    )
    trajs = [played(ran, answer), played(unescaped, answer), played(answer), played(answer)]
    assert [episodes["unsearched"](t) for t in trajs] == [None, "tried", "skipped", "skipped"]
    stats = episodes["episode_stats"](trajs, tasks)
    assert (stats["unsearched_tried"], stats["unsearched_skipped"]) == (0.25, 0.5)


def test_a_share_of_some_episodes_pools_over_those_episodes() -> None:
    """Grounded correct answers pool over correct answers: a set with none adds nothing, not 0."""
    report = _script("learn_report")
    per_set = {
        "a": {"episodes": 12, "em": 0.25, "grounded_share_of_correct": 1.0},  # 3 right, grounded
        "b": {"episodes": 12, "em": 0.0, "grounded_share_of_correct": 0.0},  # none right
        "c": {"episodes": 6, "em": 1 / 6, "grounded_share_of_correct": 0.0},  # 1 right, recalled
    }
    assert report["pooled"](per_set, "em") == pytest.approx(4 / 30)
    assert report["pooled"](per_set, "grounded_share_of_correct") == pytest.approx(3 / 4)
    none_right = {k: {**v, "em": 0.0} for k, v in per_set.items()}
    assert report["pooled"](none_right, "grounded_share_of_correct") == 0.0


def test_combined_wall_time_adds_runs_one_after_another_and_not_side_by_side() -> None:
    report = _script("learn_report")
    wall = report["combined_wall"]
    after = [{"wall_s": 10.0, "span": [0.0, 10.0]}, {"wall_s": 5.0, "span": [20.0, 25.0]}]
    beside = [{"wall_s": 10.0, "span": [0.0, 10.0]}, {"wall_s": 8.0, "span": [1.0, 9.0]}]
    overlap = [{"wall_s": 10.0, "span": [0.0, 10.0]}, {"wall_s": 10.0, "span": [5.0, 15.0]}]
    assert wall(after) == (15.0, [0.0, 25.0]) and wall(beside) == (10.0, [0.0, 10.0])
    assert wall(overlap) == (15.0, [0.0, 15.0])
    assert wall([{"wall_s": 10.0}, {"wall_s": 5.0, "span": [0.0, 5.0]}]) == (10.0, None)  # older


def test_combine_merges_each_seed_once_of_one_method_and_says_which_parts_and_seeds(
    tmp_path, monkeypatch
):
    bench = _script("learn_agent")
    monkeypatch.setitem(bench["combine"].__globals__, "RESULTS", tmp_path / "results")

    def evals(em: float) -> dict:
        return {
            s: {"episodes": 24, "em": em, "em_ci95": [0.0, 1.0], "f1": em}
            | {"search_calls": 1.0, "visit_calls": 0.0, "grounded_share_of_correct": 1.0}
            | {"tokens_per_episode": 50.0}
            for s in ("synth-test", "bundled")
        }

    def part(path: Path, seeds: list[int], untrained: bool, **flags) -> str:
        runs = [
            {"seed": s, "untrained": evals(0.0) if untrained else None}
            | {"sft": evals(0.1), "grpo": evals(0.1 + s / 10), "grpo_curve": []}
            | {"time_s": {"rejection": 1.0, "sft": 2.0, "grpo": 3.0}, "sft_losses": [1.0]}
            | {"rejection": {"kept": 1, "tried": 2, "questions_with_any": 1}}
            | {"grpo_steps_run": 2}
            for s in seeds
        ]
        times = {"search-answer": 1.0, "untrained": 2.0}
        path.write_text(
            json.dumps(
                {"args": {"device": "cpu", "seeds": seeds, "combine": None} | flags}
                | {"runs": runs}
                | {"baseline": evals(0.05), "stage_wall_s": times, "wall_s": 10.0, "span": None}
            )
        )
        return str(path)

    a, b = part(tmp_path / "a.json", [2, 0], True), part(tmp_path / "b.json", [1], False)
    bench["combine"]([a, b], "both")
    out = json.loads((tmp_path / "results" / "both.json").read_text())
    assert out["args"]["seeds"] == [2, 0, 1] and out["args"]["combine"] == [a, b]
    assert [r["untrained"] is not None for r in out["runs"]] == [True] * 3
    again = part(tmp_path / "c.json", [1, 2], False)
    with pytest.raises(SystemExit, match="seed 2 is in more than one part"):
        bench["combine"]([a, again], "twice")
    # one report is one method: parts may differ in where they came from, not in how they trained
    steps = part(tmp_path / "d.json", [1], False, grpo_steps=28, sft_from="x")
    other = part(tmp_path / "e.json", [0], False, grpo_steps=14, sft_from="y")
    with pytest.raises(SystemExit, match=r"differ in --grpo-steps: .*d.json: 28, .*e.json: 14"):
        bench["combine"]([steps, other], "mixed")
    # a flag a part did not record (added after it ran) reads as the default it ran with
    steps_only = part(tmp_path / "f.json", [2], False, grpo_steps=14)
    refused = part(tmp_path / "g.json", [0], False, grpo_steps=14, refused_negative=True)
    with pytest.raises(
        SystemExit, match=r"differ in --refused-negative: .*f.json: False, .*: True"
    ):
        bench["combine"]([steps_only, refused], "x")
    # ... or, where a later session changed its default, as the run was before the flag
    penalised = part(tmp_path / "h.json", [0], False, grpo_steps=14, unsearched_penalty=0.1)
    with pytest.raises(
        SystemExit, match=r"differ in --unsearched-penalty: .*f.json: 0.0, .*h.json: 0.1"
    ):
        bench["combine"]([steps_only, penalised], "y")
    assert bench["arguments"]().parse_args([]).unsearched_penalty == 0.1  # the method's now
    # one teacher bank for every seed: a part that ran only seed 0 on its own episodes drew
    # the very bank `--teacher-seed 0` gives the others; seed 3's own episodes are another bank
    banked = part(tmp_path / "t.json", [1, 2], True, teacher_seed=0)
    bench["combine"]([part(tmp_path / "t0.json", [0], False), banked], "bank")
    out = json.loads((tmp_path / "results" / "bank.json").read_text())
    assert out["args"]["teacher_seed"] == 0 and out["args"]["seeds"] == [0, 1, 2]
    with pytest.raises(SystemExit, match=r"differ in --teacher-seed: .*t3.json: None, .*: 0"):
        bench["combine"]([part(tmp_path / "t3.json", [3], False), banked], "banks")
    # no part evaluated the untrained model: a finished report with the same eval gives it
    with pytest.raises(SystemExit, match="--untrained-from"):
        bench["combine"]([steps_only, other], "none")
    plain = [part(tmp_path / f"p{s}.json", [s], False, eval_limit=24) for s in (0, 1)]
    ref = part(tmp_path / "ref.json", [5], True, eval_limit=24)
    done = json.loads(Path(ref).read_text())
    done["stage_wall_s"]["untrained"] = 7.0  # the time its untrained eval took there
    Path(ref).write_text(json.dumps(done))
    bench["combine"](plain, "reused", ref)
    out = json.loads((tmp_path / "results" / "reused.json").read_text())
    assert out["args"]["untrained_from"] == ref and out["args"]["seeds"] == [0, 1]
    assert [r["untrained"]["bundled"]["em"] for r in out["runs"]] == [0.0, 0.0]
    assert out["stage_wall_s"]["untrained"] == 7.0
    fewer = part(tmp_path / "ref12.json", [5], True, eval_limit=12)
    with pytest.raises(SystemExit, match=r"eval differs in --eval-limit: .*p0.json: 24"):
        bench["combine"](plain, "fewer", fewer)


def test_the_targets_are_judged_on_the_human_written_and_synthesized_groups() -> None:
    """Each group pools its sets by size; a gain no larger than its spread across seeds fails."""
    report = _script("learn_report")
    sizes = {
        "synth-test": 12,
        "synth-dev": 12,
        "bundled": 6,
        "hotpotqa-held": 12,
        "musique-held": 12,
    }

    def stage(em: dict[str, float]) -> dict:
        return {
            s: {"episodes": n, "em": em.get(s, 0.0), "em_ci95": [0.0, 1.0], "search_calls": 1.0}
            | {"grounded_share_of_correct": 1.0, "f1": em.get(s, 0.0), "visit_calls": 0.0}
            | {"tokens_per_episode": 100.0}
            for s, n in sizes.items()
        }

    runs = [
        {  # human-written: 0 -> 3/30 -> 6/30; synthesized: 0 -> 1/24 -> 1/24
            "untrained": stage({}),
            "sft": stage({"bundled": 1 / 6, "hotpotqa-held": 1 / 6, "synth-test": 1 / 12}),
            "grpo": stage({"bundled": 2 / 6, "hotpotqa-held": 1 / 3, "synth-dev": 1 / 12}),
        },
        {  # human-written: 0 -> 3/30 -> 4/30; synthesized: 0 -> 0 -> 2/24
            "untrained": stage({}),
            "sft": stage({"musique-held": 1 / 4}),
            "grpo": stage({"musique-held": 1 / 3, "synth-test": 1 / 6}),
        },
    ]
    baseline = {
        s: {"episodes": n, "em": 1 / 12 if s == "hotpotqa-held" else 0.0} for s, n in sizes.items()
    }
    summary = report["summarize"](runs, baseline)
    human = summary["per_set"]["human-written"]
    assert human["search-answer"]["em"] == pytest.approx(1 / 30)
    assert human["grpo"]["em_per_seed"] == pytest.approx([6 / 30, 4 / 30])
    assert human["gain sft->grpo"]["spread"] == pytest.approx(2 / 30)
    targets = summary["targets"]
    assert targets["human-written"] == {
        "grpo_beats_search_answer": True,
        "grpo_beats_sft": True,
        "sft_gain_exceeds_spread": None,  # two seeds: their spread is not judged
        "grpo_gain_exceeds_spread": None,
    }
    said = "grpo_gain_exceeds_spread not judged (2 seeds; a spread is judged across 3)"
    assert said in report["table"](summary)
    assert targets["synthesized"]["grpo_beats_sft"] is True
    third = report["summarize"]([*runs, runs[0]], baseline)["targets"]
    assert third["human-written"]["sft_gain_exceeds_spread"] is True  # +3/30 each: spread 0
    # +3/30, +1/30, +3/30: mean 7/90 above the spread 2/30
    assert third["human-written"]["grpo_gain_exceeds_spread"] is True
    assert third["synthesized"]["grpo_gain_exceeds_spread"] is False  # 0, +2/24, 0
    # +1, +2 and +3 questions of 30: mean and spread both 2/30, whose floats differ in the last bits
    tie = [
        {
            "untrained": stage({}),
            "sft": stage({"hotpotqa-held": a / 12}),
            "grpo": stage({"hotpotqa-held": b / 12}),
        }
        for a, b in ((2, 3), (4, 6), (3, 6))
    ]
    tied = report["summarize"](tie, baseline)
    gain = tied["per_set"]["human-written"]["gain sft->grpo"]
    assert gain["mean"] == pytest.approx(gain["spread"]) == pytest.approx(2 / 30)
    assert tied["targets"]["human-written"]["grpo_gain_exceeds_spread"] is False
    assert targets["grpo_searches_at_least_once_an_episode"] is True
    assert summary["per_set"]["pooled"]["grpo"]["em"] == pytest.approx(
        ((6 + 1) / 54 + (4 + 2) / 54) / 2
    )
    assert targets["grpo_correct_mostly_grounded"] is True
    # no correct GRPO answer: "most correct answers grounded" has nothing to judge
    unsolved = [{**r, "grpo": stage({})} for r in runs]
    assert (
        report["summarize"](unsolved, baseline)["targets"]["grpo_correct_mostly_grounded"] is None
    )


def test_the_gains_spread_is_set_beside_the_spread_the_questions_alone_would_give() -> None:
    """Seeds alike but for which questions they flip spread by ~1.69 paired standard errors (3
    seeds); the gain is also tested paired by question; a run whose stats predate the
    per-question results gets neither."""
    report = _script("learn_report")
    assert [round(report["expected_range"](k), 3) for k in (1, 2, 3)] == [0.0, 1.128, 1.693]

    def stage(em: list[float]) -> dict:
        by_task = {f"q{i}": v for i, v in enumerate(em)}
        return {
            "bundled": {"episodes": len(em), "em": sum(em) / len(em), "em_by_task": by_task}
            | {"em_ci95": [0.0, 1.0], "f1": 0.0, "search_calls": 1.0, "visit_calls": 0.0}
            | {"grounded_share_of_correct": 1.0, "tokens_per_episode": 9.0}
        }

    # seed 0 turns q0 and q1 right and q2 wrong; seed 1 turns q3 right: gains 1/8 and 1/8
    zero = [0.0] * 8
    runs = [
        {"untrained": stage(zero), "sft": stage([0, 0, 1, 0, 0, 0, 0, 0])}
        | {"grpo": stage([1, 1, 0, 0, 0, 0, 0, 0])},
        {"untrained": stage(zero), "sft": stage(zero), "grpo": stage([0, 0, 0, 1, 0, 0, 0, 0])},
    ]
    summary = report["summarize"](runs, {"bundled": {"episodes": 8, "em": 0.0}})
    gain = summary["per_set"]["bundled"]["gain sft->grpo"]
    assert gain["spread"] == 0.0
    # per seed: the variance of the differences over the questions, over their number
    d0, d1 = [1, 1, -1, 0, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0, 0, 0]
    errors = [statistics.variance(d) / 8 for d in (d0, d1)]
    assert gain["question_spread"] == pytest.approx(1.1284 * statistics.mean(errors) ** 0.5, 1e-3)
    assert "spread 0.000; the questions alone ~0.206)" in report["table"](summary)
    # paired by question, each question's EM the mean over the seeds: q0, q1, q3 up, q2 down
    pair = gain["paired"]
    assert pair["mean"] == pytest.approx(1 / 8) and (pair["better"], pair["worse"]) == (3, 1)
    assert pair["test"] == "permutation" and pair["ci95"][0] <= 1 / 8 <= pair["ci95"][1]
    one = report["summarize"](runs[:1], {"bundled": {"episodes": 8, "em": 0.0}})
    assert one["per_set"]["bundled"]["gain sft->grpo"]["paired"]["test"] == "mcnemar-exact"
    older = [{k: {"bundled": {**v["bundled"]}} for k, v in r.items()} for r in runs]
    del older[1]["grpo"]["bundled"]["em_by_task"]
    summary = report["summarize"](older, {"bundled": {"episodes": 8, "em": 0.0}})
    assert summary["per_set"]["bundled"]["gain sft->grpo"]["question_spread"] is None
    assert summary["per_set"]["bundled"]["gain sft->grpo"]["paired"] is None
    assert summary["per_set"]["bundled"]["gain untrained->sft"]["question_spread"] is not None
    assert "the questions alone" in report["table"](summary)  # the untrained -> SFT line only


def test_combine_reads_per_question_results_from_the_run_folders_of_older_runs(
    tmp_path, monkeypatch
) -> None:
    bench = _script("learn_agent")
    monkeypatch.setitem(bench["combine"].__globals__, "RESULTS", tmp_path / "results")
    held = {k: v.ids() for k, v in bench["load_data"](2).held.items()}

    def evals(em: float) -> dict:
        return {
            s: {"episodes": 2, "em": em, "em_ci95": [0.0, 1.0], "f1": em, "search_calls": 1.0}
            | {"visit_calls": 0.0, "grounded_share_of_correct": 1.0, "tokens_per_episode": 9.0}
            for s in held
        }

    def left(folder: Path, right: set[str]) -> None:
        folder.mkdir(parents=True)
        every = [t for ids in held.values() for t in ids]
        trajs = [_episode(t, "o", "a", float(t in right)) for t in every]
        write_trajectories(folder / "trajectories.jsonl", trajs)

    first = {ids[0] for ids in held.values()}
    run = {"seed": 0, "untrained": evals(0.0), "sft": evals(0.0), "grpo": evals(0.5)}
    run |= {"grpo_curve": [], "time_s": {"sft": 1.0}, "sft_losses": [1.0], "grpo_steps_run": 1}
    run |= {"rejection": {"kept": 1, "tried": 1, "questions_with_any": 1}}
    part = {"args": {"device": "cpu", "seeds": [0], "eval_limit": 2}, "runs": [run]}
    part |= {"baseline": evals(0.0), "stage_wall_s": {"search-answer": 1.0, "untrained": 1.0}}
    (tmp_path / "old.json").write_text(json.dumps(part | {"wall_s": 1.0, "span": None}))
    left(tmp_path / "old" / "eval" / "untrained", set())
    left(tmp_path / "old" / "seed0" / "eval" / "sft", set())
    left(tmp_path / "old" / "seed0" / "eval" / "grpo", first)
    bench["combine"]([str(tmp_path / "old.json")], "merged")
    out = json.loads((tmp_path / "results" / "merged.json").read_text())
    grpo = out["runs"][0]["grpo"]
    assert {s: v["em_by_task"] for s, v in grpo.items()} == {
        s: {t: float(t in first) for t in ids} for s, ids in held.items()
    }
    assert out["summary"]["per_set"]["pooled"]["gain sft->grpo"]["question_spread"] == 0.0


def test_a_finished_run_is_reevaluated_from_its_own_checkpoints_with_its_own_settings(
    tmp_path, monkeypatch
) -> None:
    """--reevaluate: each seed's SFT and GRPO eval comes from that seed's checkpoints (found under
    this checkout's results when the run was made elsewhere), the untrained model once, with the
    run's settings but the asked number of questions (and a presence penalty or a retriever,
    where one is asked); it never overwrites what it evaluates."""
    bench = _script("learn_agent")
    g = bench["reevaluate"].__globals__
    results = tmp_path / "results"
    calls: list[tuple[str, str | None, int | None]] = []
    limits: list[int] = []
    penalties: list[float] = []
    retrievers: list[str] = []

    class Bench:
        references = bench["Bench"].references  # the real one, over this fake evaluate

        def __init__(self, args, data, out) -> None:
            self.args = args
            penalties.append(args.presence_penalty)
            retrievers.append(args.retriever)

        def evaluate(self, name, policy_dir, seed=None) -> dict:
            calls.append((name, policy_dir, seed))
            assert self.args.max_turns == 3 and self.args.eval_limit == 24
            em = 0.5 if policy_dir and policy_dir.endswith("grpo/final") else 0.0
            return {
                s: {"episodes": 24, "em": em, "em_ci95": [0.0, 1.0], "f1": em}
                | {"search_calls": 1.0, "visit_calls": 0.0, "grounded_share_of_correct": 1.0}
                | {"tokens_per_episode": 50.0}
                for s in ("synth-test", "bundled")
            }

    monkeypatch.setitem(g, "Bench", Bench)
    monkeypatch.setitem(g, "load_data", limits.append)
    monkeypatch.setitem(g, "smollm2_dir", lambda: "UNTRAINED")
    monkeypatch.setitem(g, "RESULTS", results)
    runs = []
    for seed in (0, 1):
        for stage in ("sft", "grpo"):
            (results / "run" / f"seed{seed}" / stage / "final").mkdir(parents=True)
        elsewhere = f"/another/clone/bench/results/run/seed{seed}"
        runs.append(
            {"seed": seed, "checkpoints": {s: f"{elsewhere}/{s}/final" for s in ("sft", "grpo")}}
            | {"time_s": {"rejection": 1.0, "sft": 2.0, "grpo": 3.0}, "grpo_curve": []}
            | {"rejection": {"kept": 1, "tried": 2, "questions_with_any": 1}, "sft_losses": [1.0]}
            | {"grpo_steps_run": 2}
        )
    # the seeds ran in two parts (seed 1 in another session): one report, each seed once
    parts = [tmp_path / "run.json", tmp_path / "later.json"]
    for path, part in zip(parts, ([runs[0]], [runs[1]]), strict=True):
        settings = {"max_turns": 3, "eval_limit": 12, "seeds": [part[0]["seed"]]}
        path.write_text(json.dumps({"args": settings, "runs": part}))
    files = [str(p) for p in parts]
    args = bench["settings"](["--reevaluate", *files, "--eval-limit", "24"])
    bench["reevaluate"](args, "run_24")
    assert limits == [24]
    assert penalties == [0.0]  # the runs recorded none: they ran before the flag, without one
    assert [c[0] for c in calls] == ["search-answer", "untrained", "sft", "grpo", "sft", "grpo"]
    assert calls[1][1] == "UNTRAINED"
    assert calls[4] == ("sft", str(results / "run" / "seed1" / "sft" / "final"), 1)
    out = json.loads((results / "run_24.json").read_text())
    assert out["args"]["reevaluate"] == files and out["args"]["max_turns"] == 3
    assert out["args"]["seeds"] == [0, 1]
    assert set(out["code"]) == {"version", "commit", "changed"}  # the code that re-evaluated
    assert out["summary"]["per_set"]["pooled"]["gain sft->grpo"]["per_seed"] == [0.5, 0.5]
    timed = out["stage_wall_s"]  # the training's times kept, the evals' timed again
    assert timed["sft"] == 2.0 and {"eval sft", "eval grpo", "untrained"} <= set(timed)
    with pytest.raises(SystemExit, match="overwrite"):
        bench["reevaluate"](args, "run")
    # a presence penalty asked for: the same checkpoints decoded under it, and the report says so
    asked = ["--eval-limit", "24", "--presence-penalty", "1.1"]
    penalized = bench["settings"](["--reevaluate", *files, *asked])
    bench["reevaluate"](penalized, "run_pp")
    assert penalties[-1] == 1.1
    assert json.loads((results / "run_pp.json").read_text())["args"]["presence_penalty"] == 1.1
    assert bench["settings"]([]).presence_penalty == 0.0  # a training run's evals: none
    # a retriever asked for: the same policies over another search backend; unasked, the runs'
    assert retrievers[:2] == [bench["ENV"]["retriever"]] * 2  # recorded none: the one before
    swapped = bench["settings"](
        ["--reevaluate", *files, "--eval-limit", "24", "--retriever", "lucene"]
    )
    bench["reevaluate"](swapped, "run_lucene")
    assert retrievers[-1] == "lucene"
    assert json.loads((results / "run_lucene.json").read_text())["args"]["retriever"] == "lucene"
    assert bench["settings"]([]).retriever == bench["ENV"]["retriever"]
    calls.clear()
    twice = bench["arguments"]().parse_args(["--reevaluate", files[0], files[0]])
    with pytest.raises(SystemExit, match="seed 0 is in more than one part"):
        bench["reevaluate"](twice, "twice")
    parts[1].write_text(json.dumps({"args": {"max_turns": 4}, "runs": [runs[1]]}))
    with pytest.raises(SystemExit, match=r"differ in --max-turns: .*run.json: 3, .*later.json: 4"):
        bench["reevaluate"](args, "mixed")
    assert calls == []  # refused before any eval


def _earlier_run(root: Path, args: dict, seeds: tuple[int, ...], eval_trajs: list) -> None:
    """An earlier learn_agent run's folder as `--sft-from` reads it."""
    runs = []
    for seed in seeds:
        src = root / f"seed{seed}"
        for d in ("sft/final", "sft/adapter", "eval/sft"):
            (src / d).mkdir(parents=True)
        write_trajectories(src / "sft_data.jsonl", [_episode("q3", "x", "a", 1.0)] * 2)
        write_trajectories(src / "eval" / "sft" / "trajectories.jsonl", eval_trajs)
        runs.append(
            {"seed": seed, "rejection": {"kept": 2, "tried": 5}, "sft_losses": [0.5, 0.25]}
            | {"time_s": {"rejection": 1.0, "sft": 9.0, "eval sft": 7.0}}
            | {"code": {"version": "0", "commit": "abc", "changed": []}}
        )
    (root / "partial.json").write_text(json.dumps({"args": args, "runs": runs}))


def test_sft_from_reuses_an_earlier_seeds_sft_only_where_its_settings_were_this_runs(
    tmp_path, capsys
) -> None:
    """--sft-from: GRPO's candidates are the training questions, in their order, that the earlier
    teacher episodes answered; the SFT stats are recomputed from its saved eval, and the commit
    its SFT ran at is kept and said when it is not this run's; a run of other SFT or eval
    settings, a seed it did not finish, or a file it lacks is an error naming it."""
    bench = _script("learn_agent")
    args = bench["arguments"]().parse_args(["--sft-from", str(tmp_path / "run")])
    for k, v in {"eval_limit": 24, "sft_steps": 16, "micro_batch": 2, "eval_batch": 60}.items():
        setattr(args, k, v)
    flags = {k: getattr(args, k) for k in bench["SFT_FLAGS"]}
    tasks = TaskSet([Task(f"q{i}", f"Q{i}?", (f"a{i}",)) for i in range(5)], "t")
    held = [_episode("q0", "it is a0", "a0", 1.0), _episode("q1", "nothing", "b", 0.0)]
    _earlier_run(tmp_path / "run", flags, (0,), held)

    b = object.__new__(bench["Bench"])
    b.args = args
    b.data = bench["Data"](tasks, ["q4", "q3", "q2"], {}, {})
    b.held_ids = {"set": {"q0", "q1"}}
    res: dict = {"time_s": {}, "code": {"version": "0", "commit": "def", "changed": []}}
    stage = b.reused_sft(0, res)
    assert res["sft_code"]["commit"] == "abc"
    assert "seed 0's SFT ran at commit abc; this run is at def" in capsys.readouterr().out
    _earlier_run(tmp_path / "old", flags, (0,), held)  # from before results recorded their code
    partial = json.loads((tmp_path / "old" / "partial.json").read_text())
    del partial["runs"][0]["code"]
    (tmp_path / "old" / "partial.json").write_text(json.dumps(partial))
    b.args = bench["arguments"]().parse_args(["--sft-from", str(tmp_path / "old")])
    for k, v in flags.items():
        setattr(b.args, k, v)
    b.reused_sft(0, {"time_s": {}, "code": {"commit": "def"}})
    assert "ran at commit (not recorded); this run is at def" in capsys.readouterr().out
    assert stage.candidates == ["q3"]
    assert stage.final_dir == str(tmp_path / "run" / "seed0" / "sft" / "final")
    assert stage.eval_s == 7.0 and res["sft_losses"] == [0.5, 0.25]
    assert res["time_s"] == {}  # none of the earlier run's times is this run's
    assert res["sft"]["set"]["em"] == 0.5 and res["sft"]["set"]["gold_seen"] == 0.5
    assert res["sft_from"] == str(tmp_path / "run" / "seed0")

    reused_run = bench["reused_run"]
    with pytest.raises(SystemExit, match="seed 1 did not finish there"):
        reused_run(tmp_path / "run", flags, 1)
    with pytest.raises(SystemExit, match=r"--sft-steps: .*run: 16, this run: 48"):
        reused_run(tmp_path / "run", flags | {"sft_steps": 48}, 0)
    sampled = flags | {"pass_samples": 1}
    _earlier_run(tmp_path / "sampled", sampled, (0,), held)
    with pytest.raises(SystemExit, match="seed0/ lacks eval/sft-sampled/trajectories.jsonl"):
        reused_run(tmp_path / "sampled", sampled, 0)
    (tmp_path / "run" / "seed0" / "sft" / "adapter").rmdir()
    with pytest.raises(SystemExit, match="seed0/ lacks sft/adapter"):
        reused_run(tmp_path / "run", flags, 0)
    with pytest.raises(SystemExit, match="no readable partial.json"):
        reused_run(tmp_path / "elsewhere", flags, 0)


def test_sft_from_a_direct_share_run_reads_grpo_candidates_from_their_own_file(tmp_path) -> None:
    """`--direct-share` below 1 drops teacher episodes from sft_data.jsonl, so GRPO's candidates
    (every question the teacher answered) come from the seed's grpo_candidates.json; a folder
    from before that file is then an error naming it."""
    bench = _script("learn_agent")
    args = bench["arguments"]().parse_args(["--sft-from", str(tmp_path / "run")])
    for k, v in {"eval_limit": 24, "sft_steps": 16, "micro_batch": 2, "eval_batch": 60}.items():
        setattr(args, k, v)
    args.direct_share = 0.5
    flags = {k: getattr(args, k) for k in bench["SFT_FLAGS"]}
    _earlier_run(tmp_path / "run", flags, (0,), [_episode("q0", "it is a0", "a0", 1.0)])
    with pytest.raises(SystemExit, match=r"seed0/ predates grpo_candidates.json"):
        bench["reused_run"](tmp_path / "run", flags, 0)
    (tmp_path / "run" / "seed0" / "grpo_candidates.json").write_text('["q2", "q3"]')
    b = object.__new__(bench["Bench"])
    b.args = args
    b.data = bench["Data"](TaskSet([Task("q0", "Q0?", ("a0",))], "t"), ["q4", "q3", "q2"], {}, {})
    b.held_ids = {"set": {"q0"}}
    stage = b.reused_sft(0, {"time_s": {}, "code": {"commit": "abc"}})
    assert stage.candidates == ["q3", "q2"]  # the training questions' order


def test_each_seed_records_the_machine_its_weights_came_from() -> None:
    """Weights are the same to the byte on one kind of CPU, not across kinds: a run says which."""
    import torch

    bench = _script("learn_agent")
    seen = bench["machine"]("cpu")
    assert seen["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert seen["cpu_bf16"] == torch.ops.mkldnn._is_mkldnn_bf16_supported()
    assert seen["threads"] == torch.get_num_threads() and seen["torch"] == torch.__version__
    assert 1 <= seen["cores"] <= (os.cpu_count() or 1)
    assert isinstance(seen["device"], str) and seen["device"]


def test_the_2_hour_target_is_judged_only_on_a_whole_bench_on_2_cpu_cores() -> None:
    """A report says whether the bench ran within 2 hours only where every stage ran inside its
    wall time on 2 cores; seeds side by side count once, and a part that cannot say is not judged."""
    budget = _script("learn_report")["budget"]
    args = {"device": "cpu", "eval_limit": 0, "seeds": [0, 1, 2]}
    runs = [{"seed": s, "machine": {"cores": 2}} for s in range(3)]
    span = [0.0, 7000.0]
    assert budget(args, runs, 7000.0, span) == {"wall_s": 7000.0, "met": True, "why": ""}
    assert budget(args, runs, 7300.0, span)["met"] is False
    unjudged = {
        "ran on cuda": ({**args, "device": "cuda"}, runs, span),
        "not every held-out question": ({**args, "eval_limit": 24}, runs, span),
        "2 seeds": (args, runs[:2], span),
        "the untrained eval is another report's": (
            {**args, "untrained_from": "r.json"},
            runs,
            span,
        ),
        "SFT is an earlier run's": (args, [{**runs[0], "sft_from": "x"}, *runs[1:]], span),
        "resumed: its wall time is its last process's": (
            args,
            [*runs[:2], {**runs[2], "grpo_resumed": True}],
            span,
        ),
        "its parts did not record when they ran": (args, runs, None),
        "its seeds did not record their cores": (
            args,
            [{"seed": 0, "machine": {}}, *runs[1:]],
            span,
        ),
        "ran on 16 cores": (args, [*runs[:2], {"seed": 2, "machine": {"cores": 16}}], span),
    }
    for why, (a, r, s) in unjudged.items():
        assert budget(a, r, 100.0, s) == {"wall_s": 100.0, "met": None, "why": why}
    # a resumed run whose seeds all finished in its last process still timed only that process
    assert budget({**args, "resume": True}, runs, 100.0, span)["met"] is None


def test_a_seeds_rollbacks_are_read_off_its_grpo_curve() -> None:
    """A check that failed and went on is told from one that stopped GRPO, and both from a pass:
    the report says which steps a rollback undid."""
    bench, report = _script("learn_agent"), _script("learn_report")
    figures = {"health_unanswered": 0.1, "health_reward": 0.0}
    curve = [
        {"step": 4, "reward": 0.0, **figures, "health_rolled_back": 1.0, "health_kept_step": 0.0},
        {"step": 8, "reward": 0.1, **figures},
        {"step": 12, "reward": 0.2, **figures, "health_rolled_back": 2.0, "health_kept_step": 8.0},
        {"step": 16, "reward": 0.0, **figures, "health_kept_step": 8.0},  # the stop
    ]
    logged = [{**c, "kl": 0.01} for c in curve]
    kept = [{k: r[k] for k in bench["GRPO_CURVE"] if k in r} for r in logged]
    assert kept == curve  # the bench keeps what the guard logged
    assert report["rollbacks"]({"grpo_curve": kept}) == [(4, 0), (12, 8)]
    assert report["rollbacks"]({"grpo_curve": kept[1:2]}) == []


def test_a_grpo_the_guard_or_the_deadline_cut_short_says_so_in_the_report() -> None:
    """A run to a deadline may leave GRPO one step a seed (session 55): its row must not read
    as the method's 28 steps."""
    stopped_early = _script("learn_report")["stopped_early"]
    args = {"grpo_steps": 28, "deadline_s": 6900.0}
    assert stopped_early({"grpo_steps_run": 28, "grpo_kept_step": 28}, args) is None
    cut = stopped_early({"grpo_steps_run": 1, "grpo_kept_step": 1}, args)
    assert cut == "the deadline stopped GRPO after 1 of the 28 steps asked (--deadline-s 6900)"
    guard = stopped_early({"grpo_steps_run": 8, "grpo_kept_step": 4}, args)
    assert guard == "the collapse guard stopped GRPO after step 8 and kept step 4's weights"


def test_the_report_splits_grpos_time_into_steps_checks_and_the_rest() -> None:
    """Where GRPO's hour a seed goes (the 2-hour target): the steps' rollouts and updates, the
    guard's checks and held-out points summed off the curve, the rest its own episodes and
    loading; a part whose curve has no step timings (written before them) has no split."""
    rep = _script("learn_report")
    curve = [
        {"step": 1, "time_generate": 30.0, "time_train": 70.0, "time_dev_eval": 0.0},
        {"step": 2, "time_generate": 10.0, "time_train": 20.0, "time_health": 60.0},
    ]
    run = {"seed": 0, "grpo_curve": curve, "time_s": {"grpo": 500.0}}
    split = rep["grpo_time"](run)
    assert split == {"generate": 40.0, "train": 90.0, "guard": 60.0, "dev": 0.0, "rest": 310.0}
    assert rep["grpo_time"]({"grpo_curve": [{"step": 1, "reward": 0.0}]}) is None
    assert rep["grpo_time"]({**run, "grpo_resumed": True}) is None
    line = rep["grpo_time_line"]([run, {**run, "seed": 1, "time_s": {"grpo": 700.0}}])
    assert line == (
        "GRPO's time a seed (mean of 2): generate 40 s (7%), train 90 s (15%), "
        "guard 60 s (10%), dev 0 s (0%), rest 410 s (68%)"
    )


def test_the_cpu_profile_is_the_method_and_sizes_of_the_readmes_table() -> None:
    """`python bench/learn_agent.py` on a CPU runs what the README's table reports (its three
    parts, shipped), every held-out question and no deadline, not a budget that cuts GRPO."""
    bench = _script("learn_agent")
    args = vars(bench["settings"](["--device", "cpu"]))
    names = ["s66_json5_seed0", "s67_json5_seed1", "s67_json5_seed2"]
    files = [REPO_ROOT / "bench" / "results" / f"learn_agent_cpu_{n}.json" for n in names]
    for f in files:
        part = json.loads(f.read_text())
        assert bench["method_differs"]([str(f), "cpu"], [part, {"args": args}]) == ""
        assert all(args[k] == part["args"][k] for k in ("grpo_steps", "own_starts", "eval_limit"))
    assert args["deadline_s"] == 0 and args["seeds"] == [0, 1, 2] and args["save_every"] == 4


def test_teacher_seed_own_gives_each_seed_its_own_bank_under_a_profile_that_sets_one() -> None:
    """The CPU profile's `--teacher-seed` is 0; `--teacher-seed own` still asks for each seed's own
    teacher episodes (recorded as None, as runs before the profile's bank were), and a value
    that is neither a seed nor 'own' is an error naming it."""
    bench = _script("learn_agent")
    settings = bench["settings"]
    assert settings(["--device", "cpu"]).teacher_seed == 0
    assert settings(["--device", "cpu", "--teacher-seed", "own"]).teacher_seed is None
    assert settings(["--device", "cpu", "--teacher-seed", "3"]).teacher_seed == 3
    with pytest.raises(SystemExit):
        settings(["--device", "cpu", "--teacher-seed", "mine"])


def test_an_sft_only_run_leaves_the_folder_sft_from_reads_and_no_report(
    tmp_path, monkeypatch, capsys
) -> None:
    """--sft-only: each seed stops after its SFT and SFT eval, and the run writes the
    `partial.json` and seed folders that `--sft-from` accepts, without the untrained eval or a
    report; with `--sft-from` it is an error, since that run's SFT is there already, as it is with
    `--combine`, which reports finished runs."""
    import sys

    import torch

    bench = _script("learn_agent")
    g = bench["main"].__globals__
    results = tmp_path / "results"

    class Bench:
        seed = bench["Bench"].seed  # the real one, over this fake SFT

        def __init__(self, args, data, out) -> None:
            self.args, self.out, self.device = args, out, "cpu"
            self.started = 0.0
            out.mkdir(parents=True, exist_ok=True)

        def references(self, untrained: bool) -> tuple[dict, None, dict]:
            assert not untrained  # nothing would read it
            return {}, None, {}

        def sft(self, seed: int, tok, out: Path, res: dict):
            for d in ("sft/final", "sft/adapter", "eval/sft"):
                (out / d).mkdir(parents=True)
            write_trajectories(out / "sft_data.jsonl", [_episode("q3", "x", "a", 1.0)])
            write_trajectories(out / "eval" / "sft" / "trajectories.jsonl", [])
            res |= {"rejection": {"kept": 1}, "sft_losses": [0.5], "sft": {}}
            res["time_s"] |= {"sft": 1.0, "eval sft": 1.0}
            return bench["SFTStage"](
                ["q3"], str(out / "sft" / "final"), out / "sft_data.jsonl", 1.0
            )

    monkeypatch.setitem(g, "Bench", Bench)
    monkeypatch.setitem(g, "load_data", lambda limit: None)
    monkeypatch.setitem(g, "load_local", lambda path: (None, None))
    monkeypatch.setitem(g, "RESULTS", results)
    threads = ["--threads", str(torch.get_num_threads())]
    argv = ["learn_agent.py", "--sft-only", "--seeds", "0", "1", *threads]
    monkeypatch.setattr(sys, "argv", [*argv, "--name", "bank"])
    bench["main"]()
    assert f"for GRPO with --sft-from {results / 'bank'}" in capsys.readouterr().out
    assert not (results / "bank.json").exists()  # no report of a run without GRPO
    partial = json.loads((results / "bank" / "partial.json").read_text())
    assert [r["seed"] for r in partial["runs"]] == [0, 1]
    assert all("grpo" not in r and "grpo_curve" not in r for r in partial["runs"])
    later = partial["args"] | {"sft_only": False, "sft_from": str(results / "bank")}
    assert bench["reused_run"](results / "bank", later, 1)["sft_losses"] == [0.5]

    monkeypatch.setattr(sys, "argv", [*argv, "--sft-from", str(results / "bank")])
    with pytest.raises(SystemExit, match="has its SFT already"):
        bench["main"]()
    monkeypatch.setattr(sys, "argv", [*argv, "--combine", str(results / "bank.json")])
    with pytest.raises(SystemExit, match="--combine and --reevaluate report finished runs"):
        bench["main"]()


class _Cut(Exception):
    """A session's end, raised from a fake GRPO."""


def _cut_run(bench: dict, monkeypatch, results: Path, sft: dict, train_grpo) -> None:
    """learn_agent's `main` over a fake `Bench` whose `seed` and SFT resumption are the real
    ones, its SFT stage given by `sft` (methods by name) and its GRPO by `train_grpo`."""
    g = bench["main"].__globals__
    real = bench["Bench"]

    class Bench:
        seed = real.seed  # the real one, up to GRPO
        recorded_sft = real.recorded_sft
        kept_stage = real.kept_stage
        training_questions = real.training_questions

        def __init__(self, args, data, out) -> None:
            self.args, self.out, self.device = args, out, "cpu"
            self.started = 0.0
            self.env = g["build_config"](g["EnvConfig"], g["ENV"])
            self.data = bench["Data"](None, ["q3", "q4"], {}, {})
            self.runner = type("Runner", (), {"sampler": lambda self, tok: None})()
            out.mkdir(parents=True, exist_ok=True)

        def references(self, untrained: bool) -> tuple[dict, None, dict]:
            return {}, None, {}

    for name, method in sft.items():
        setattr(Bench, name, method)
    monkeypatch.setitem(g, "Bench", Bench)
    monkeypatch.setitem(g, "load_data", lambda limit: None)
    monkeypatch.setitem(g, "load_local", lambda path: (None, None))
    monkeypatch.setitem(g, "train_grpo", train_grpo)
    monkeypatch.setitem(g, "RESULTS", results)


def test_a_resumed_run_keeps_its_finished_seeds_and_goes_on_from_grpo_checkpoints(
    tmp_path, monkeypatch
) -> None:
    """--resume: a run cut in its second seed keeps the first seed's results, plays only the
    others, and their GRPO resumes from the checkpoints `--save-every` wrote, in the folder the
    cut run left; an error where the method's flags changed, or where there is no such run."""
    import sys

    import torch

    bench = _script("learn_agent")
    results = tmp_path / "results"
    played: list[int] = []
    configs: list = []

    def reused_sft(self, seed: int, res: dict):
        played.append(seed)
        res |= {"rejection": {"kept": 1}, "sft_losses": [0.5], "sft": {}}
        return bench["SFTStage"](["q3"], str(tmp_path / "bank" / "final"), tmp_path, 1.0)

    def train_grpo(cfg, *args, **kwargs):
        configs.append(cfg)
        Path(cfg.output_dir).mkdir(parents=True, exist_ok=True)
        (Path(cfg.output_dir) / "checkpoints.marker").write_text("kept")
        raise _Cut  # the session ends in this seed's GRPO

    _cut_run(bench, monkeypatch, results, {"reused_sft": reused_sft}, train_grpo)
    threads = ["--threads", str(torch.get_num_threads())]
    argv = ["learn_agent.py", "--seeds", "0", "1", "--no-untrained", "--deadline-s", "0"]
    argv += [*threads, "--sft-from", str(tmp_path / "bank"), "--name", "run", "--save-every", "4"]
    # seed 0 finished before the cut: its row is in partial.json
    (results / "run").mkdir(parents=True)
    row = {"seed": 0, "grpo_steps_run": 28}
    args = vars(bench["settings"](argv[1:]))
    (results / "run" / "partial.json").write_text(json.dumps({"args": args, "runs": [row]}))
    monkeypatch.setattr(sys, "argv", [*argv, "--resume"])
    with pytest.raises(_Cut):
        bench["main"]()
    assert played == [1]  # seed 0 kept, seed 1 played
    assert configs[-1].resume and configs[-1].save_every == 4
    with pytest.raises(_Cut):  # once more: seed 1's folder (its checkpoints) is left in place
        bench["main"]()
    assert (results / "run" / "seed1" / "grpo" / "checkpoints.marker").read_text() == "kept"
    monkeypatch.setattr(sys, "argv", [a for a in argv if a != "--resume"])
    with pytest.raises(_Cut):  # without --resume a run starts afresh, every seed played
        bench["main"]()
    assert played == [1, 1, 0] and not configs[-1].resume
    assert not (results / "run" / "seed1").exists()
    (results / "run" / "partial.json").write_text(json.dumps({"args": args, "runs": [row]}))
    monkeypatch.setattr(sys, "argv", [*argv, "--resume", "--grpo-steps", "14"])
    with pytest.raises(SystemExit, match=r"other settings: --grpo-steps"):
        bench["main"]()
    monkeypatch.setattr(sys, "argv", ["learn_agent.py", "--resume", "--name", "elsewhere"])
    with pytest.raises(SystemExit, match="there is no run"):
        bench["main"]()


def test_a_whole_run_cut_in_grpo_resumes_from_its_own_sft(tmp_path, monkeypatch) -> None:
    """--resume without --sft-from: a seed cut in GRPO keeps the SFT and SFT eval its run
    recorded (not trained again) and its GRPO goes on from its checkpoints; a seed cut before its
    SFT record trains SFT anew; an SFT recorded under other SFT flags is an error naming them."""
    import sys

    import torch

    bench = _script("learn_agent")
    results = tmp_path / "results"
    trained: list[int] = []
    configs: list = []

    def sft(self, seed: int, tok, out: Path, res: dict):
        trained.append(seed)
        for d in ("sft/final", "sft/adapter"):
            (out / d).mkdir(parents=True)
        write_trajectories(out / "sft_data.jsonl", [_episode("q3", "x", "a", 1.0)])
        (out / bench["CANDIDATES"]).write_text(json.dumps(["q3"]))
        res |= {"rejection": {"kept": 1}, "sft_losses": [0.5], "sft": {"pooled": {"em": 0.1}}}
        res["time_s"] |= {"rejection": 1.0, "sft": 2.0, "eval sft": 3.0}
        if seed == 0:  # seed 1 is cut in its SFT eval, before its record
            bench["record_sft"](out, res, vars(self.args))
        return bench["SFTStage"](["q3"], str(out / "sft" / "final"), out / "sft_data.jsonl", 3.0)

    def train_grpo(cfg, ids, *args, **kwargs):
        configs.append((cfg, list(ids)))
        step = Path(cfg.output_dir) / "checkpoints" / "step-4"
        step.mkdir(parents=True, exist_ok=True)
        (step / "trainer_state.json").write_text("{}")
        raise _Cut  # the session ends in this seed's GRPO

    _cut_run(bench, monkeypatch, results, {"sft": sft}, train_grpo)
    Bench = bench["main"].__globals__["Bench"]
    threads = ["--threads", str(torch.get_num_threads())]
    argv = ["learn_agent.py", "--seeds", "0", "--no-untrained", "--deadline-s", "0", *threads]
    argv += ["--name", "run", "--save-every", "4", "--own-starts", "8"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(_Cut):
        bench["main"]()
    assert trained == [0] and not configs[-1][0].resume
    partial = json.loads((results / "run" / "partial.json").read_text())
    assert partial["runs"] == [] and partial["args"]["seeds"] == [0]  # what --resume checks

    monkeypatch.setattr(sys, "argv", [*argv, "--resume"])
    with pytest.raises(_Cut):
        bench["main"]()
    assert trained == [0]  # its SFT was not trained again
    cfg, ids = configs[-1]
    assert cfg.resume and ids == ["q3"]
    assert cfg.init_checkpoint == str(results / "run" / "seed0" / "sft" / "adapter")
    assert (results / "run" / "seed0" / "grpo" / "checkpoints" / "step-4").is_dir()

    row: dict = {"time_s": {}}
    runner = object.__new__(Bench)
    runner.args = bench["settings"]([*argv[1:], "--resume"])
    runner.data = bench["Data"](None, ["q3", "q4"], {}, {})
    stage = runner.recorded_sft(0, results / "run" / "seed0", row)
    assert row["sft"] == {"pooled": {"em": 0.1}} and row["sft_losses"] == [0.5]
    assert row["time_s"] == {"rejection": 1.0, "sft": 2.0, "eval sft": 3.0}
    assert row["sft_resumed"] and stage.eval_s == 3.0
    runner.args = bench["settings"]([*argv[1:], "--resume", "--sft-steps", "8"])
    with pytest.raises(SystemExit, match=r"other settings: --sft-steps"):
        runner.recorded_sft(0, results / "run" / "seed0", {"time_s": {}})

    one = [*argv[:2], "1", *argv[3:]]  # seed 1: cut before its SFT record
    monkeypatch.setattr(sys, "argv", one)
    with pytest.raises(_Cut):
        bench["main"]()
    monkeypatch.setattr(sys, "argv", [*one, "--resume"])
    with pytest.raises(_Cut):
        bench["main"]()
    assert trained == [0, 1, 1]  # no record: its SFT ran again


def test_a_run_without_dev_checks_plots_its_stage_evals_as_the_held_out_curve(tmp_path) -> None:
    """--quick runs no dev check (its GRPO eval comes right after the last step): the held-out
    panel then holds, and its legend names, only the SFT -> GRPO EM line."""
    report = _script("learn_report")
    run = {
        "seed": 0,
        "sft": {"bundled": {"em": 0.5, "episodes": 2}},
        "grpo": {"bundled": {"em": 1.0, "episodes": 2}},
        "grpo_steps_run": 2,
        "grpo_kept_step": 2,
        "grpo_curve": [{"step": 1, "reward": 0.1}, {"step": 2, "reward": 0.3}],
    }
    held_out = report["figure"]([run]).axes[0]
    assert held_out.get_legend_handles_labels()[1] == ["seed 0: EM, SFT -> GRPO"]
    with_dev = {
        **run,
        "grpo_curve": [*run["grpo_curve"][:1], {"step": 2, "reward": 0.3, "dev_pass@1": 0.5}],
    }
    labels = report["figure"]([with_dev]).axes[0].get_legend_handles_labels()[1]
    assert labels == ["seed 0: dev pass@1, T=1", "seed 0: EM, SFT -> GRPO"]
    png = tmp_path / "quick.png"
    report["plot"]([run], png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_turn_after_an_error_is_counted_as_a_retry_only_when_a_tool_ran() -> None:
    """The recovery the teacher's broken-call episodes teach: after the env's error, search."""
    episodes = _script("learn_episodes")
    tasks = TaskSet([Task("b", "Where was John Locke born?", ("Wrington",))])
    error = "<tool_response>\nError: the tool call is not valid JSON (Extra data)."
    broken = Turn(text="x", ids=(1,), logprobs=(0.0,), observation=error, tool_calls=("search",))
    plain = _episode("b", "Locke was born in Wrington.", "Wrington", 1.0)
    retried = dataclasses.replace(plain, turns=(broken, *plain.turns))  # error, search, answer
    gave_up = dataclasses.replace(plain, turns=(broken, plain.turns[-1]))  # error, answer
    # the same broken call again: its name is recorded, but the env refused it too
    again = dataclasses.replace(plain, turns=(broken, broken, plain.turns[-1]))
    assert episodes["after_errors"](retried) == [True]
    assert episodes["after_errors"](gave_up) == [False]
    assert episodes["after_errors"](again) == [False, False]
    assert episodes["after_errors"](plain) == []
    stats = episodes["episode_stats"]([retried, gave_up, again, plain], tasks)
    assert stats["refused_turns"] == pytest.approx(4 / 4)
    assert stats["retries"] == pytest.approx(1 / 4)


def test_tool_patterns_tells_episodes_by_the_calls_they_made_and_what_each_earned(
    tmp_path, capsys
) -> None:
    """bench/tool_patterns.py: one letter a call in order (answer not counted), 'none' without
    a call, and per pattern its episodes, EM and the share whose own calls showed a gold answer."""
    bench = _script("tool_patterns")

    def played(calls: tuple[tuple[str, ...], ...], seen: str, answer: str, em: float) -> Trajectory:
        turns = tuple(
            Turn(text="t", ids=(1,), logprobs=(0.0,), observation=seen, tool_calls=c) for c in calls
        )
        return Trajectory(
            "angola-capital", 0, "p", (9,), turns, answer, em, True, False, "h", "v", {"em": em}
        )

    search, visit, answer = ("search",), ("visit",), ("answer",)
    episodes = [
        played((search, answer), "Its capital is Luanda.", "Luanda", 1.0),
        played((search, answer), "Angola is a country.", "Angola", 0.0),
        played((search, visit, answer), "Luanda is its capital.", "Benguela", 0.0),
        played((answer,), "", "Luanda", 1.0),
    ]
    assert bench["pattern"](["search", "visit", "answer"]) == "s-v"
    write_trajectories(tmp_path / "trajectories.jsonl", episodes)
    bench["from_files"]([str(tmp_path)])
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("4 episodes, searches 0.750 and visits 0.250 an episode")
    assert out[2].split() == ["s", "2", "0.500", "0.500"]
    assert [line.split() for line in out[3:5]] == [
        ["none", "1", "1.000", "0.000"],
        ["s-v", "1", "0.000", "1.000"],
    ]
    assert out[5].endswith(": what the first call showed")
    assert [line.rsplit(maxsplit=2) for line in out[7:]] == [
        ["  a gold answer", "2", "0.500"],
        ["  neither", "1", "0.000"],
        ["  no call that ran", "1", "1.000"],
    ]


def test_tool_patterns_tells_episodes_by_what_their_first_call_showed() -> None:
    """bench/tool_patterns.py: a first call that showed a gold answer, else a bridge (an evidence
    page the question does not name, its disambiguator dropped, not an answer), else neither; an
    answer first or a refused call ran none."""
    bench = _script("tool_patterns")
    task = Task(
        "pocahontas",
        "When did the state where Pocahontas Mounds is located become part of the United States?",
        ("1817",),
        (
            "https://en.wikipedia.org/wiki/Pocahontas_Mounds",
            "https://en.wikipedia.org/wiki/Mississippi_(state)",
        ),
    )
    assert bench["bridges"](task) == ["Mississippi"]

    def first(observation: str, calls: tuple[str, ...] = ("search",)) -> Trajectory:
        turn = Turn(text="t", ids=(1,), logprobs=(0.0,), observation=observation, tool_calls=calls)
        return Trajectory("pocahontas", 0, "p", (9,), (turn,), None, 0.0, True, False, "h", "v", {})

    showed = bench["first_showed"]
    mounds = "1. [Pocahontas Mounds](https://en.wikipedia.org/wiki/Pocahontas_Mounds) ... in"
    assert showed(first(f"{mounds} Hinds County, Mississippi."), task) == "a bridge, no gold answer"
    assert showed(first(f"{mounds} Mississippi, a state since 1817."), task) == "a gold answer"
    assert showed(first(f"{mounds} the Plaquemine culture."), task) == "neither"
    # the header that repeats the query is not evidence: a query naming the bridge shows nothing
    echo = "A Google search for 'Mississippi' found 1 results: 1. [Mounds] a site."
    assert showed(first(echo), task) == "neither"
    assert showed(first("Error: the tool call is not valid JSON: '{...'."), task) == (
        "no call that ran"
    )
    assert showed(first("", ("answer",)), task) == "no call that ran"


def test_tool_patterns_names_what_a_policy_did_after_a_refused_first_call() -> None:
    """bench/tool_patterns.py --after-errors: the turn after a refused first call ran a call, was
    refused again (word for word or not), answered, or never came (the turns ran out)."""
    bench = _script("tool_patterns")
    error = "Error: the tool call is not valid JSON (Expecting ',' delimiter): '{...'."
    broken = Turn(text="x", ids=(1,), logprobs=(0.0,), observation=error, tool_calls=("search",))
    other = dataclasses.replace(broken, text="y")
    ran = Turn(
        text="s", ids=(1,), logprobs=(0.0,), observation="1. [Luanda] ...", tool_calls=("search",)
    )
    answered = Turn(text="a", ids=(1,), logprobs=(0.0,), observation="", tool_calls=("answer",))

    def episode(*turns: Turn, answer: str | None = None) -> Trajectory:
        return Trajectory(
            "angola-capital", 0, "p", (9,), turns, answer, 0.0, True, False, "h", "v", {}
        )

    kind = bench["after_error"]
    assert kind(episode(broken, ran, answered, answer="Luanda")) == "called again, and it ran: s"
    assert kind(episode(broken, answered, answer="Angola")) == "answered"
    assert kind(episode(broken, broken)) == "refused again, word for word"
    assert kind(episode(broken, other)) == "refused again"
    assert kind(episode(broken)) == "nothing (turns ran out)"


def test_tool_patterns_names_what_a_policy_did_after_a_search_that_showed_no_gold_answer() -> None:
    """bench/tool_patterns.py --after-unseen: the states are first searches the env ran whose
    results held no gold answer (not a refused call, not one that showed it); what came next is an
    answer, or later calls that did or did not put a gold answer on screen themselves."""
    bench = _script("tool_patterns")
    golds = ("Luanda",)

    def turn(observation: str, calls: tuple[str, ...], forced: bool = False) -> Turn:
        return Turn(
            text="t",
            ids=(1,),
            logprobs=(0.0,),
            observation=observation,
            tool_calls=calls,
            forced=forced,
        )

    def episode(*turns: Turn, answer: str | None = None) -> Trajectory:
        return Trajectory(
            "angola-capital", 0, "p", (9,), turns, answer, 0.0, True, False, "h", "v", {}
        )

    unseen = turn("1. [Angola] Angola is a country in Africa.", ("search",))
    seen = turn("1. [Angola] Its capital is Luanda.", ("search",))
    refused = turn("Error: the tool call is not valid JSON (Extra data): '{...'.", ("search",))
    answer = turn("", ("answer",))
    first = bench["unseen_first"]
    assert first(episode(unseen, answer, answer="Benguela"), golds)
    assert not first(episode(seen, answer, answer="Luanda"), golds)
    assert not first(episode(refused, answer, answer="Angola"), golds)
    assert not first(episode(answer, answer="Luanda"), golds)
    kind = bench["after_unseen"]
    replayed = dataclasses.replace(unseen, forced=True)  # a started episode's first turn
    assert kind(episode(replayed, seen, answer, answer="Luanda"), golds) == (
        "called s: found a gold answer"
    )
    assert kind(episode(replayed, unseen, turn("", ("visit",)), answer), golds) == (
        "called s-v: no gold answer on screen"
    )
    assert kind(episode(replayed, answer, answer="Benguela"), golds) == "answered"
    assert kind(episode(replayed), golds) == "nothing (turns ran out)"
