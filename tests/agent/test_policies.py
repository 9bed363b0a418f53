"""Local-model sampling (seeds, logprobs, stops, padding) and the scripted baselines' turns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest
import torch
from fakes.turns import extract_answer, tool_names

from agent.rollout.models import tiny_model
from agent.rollout.policies import make_policy
from agent.rollout.policies.fixed_decode import COLUMNS
from agent.rollout.policies.scripted import OraclePolicy, SearchAnswerPolicy, best_span
from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy
from agent.rollout.react import Budget, Episode, TurnRequest
from wikisim.env.tasks import Task, TaskSet
from wikisim.errors import ConfigError


@pytest.fixture(scope="module")
def tiny():
    return tiny_model(1)


LONG_SYSTEM = (
    "You are a deep research assistant. " * 8
)  # long enough for the shared-prefix KV cache


def _episodes(
    policy: TransformersPolicy, questions: list[str], max_new: int, system: str
) -> list[Episode]:
    return [
        Episode(
            task_id=str(i),
            question=q,
            system_prompt=system,
            seed=i,
            budget=Budget(max_new_tokens=max_new),
            chat=policy.chat,
        )
        for i, q in enumerate(questions)
    ]


def _requests(
    policy: TransformersPolicy, questions: list[str], max_new: int = 20, system: str = "sys"
) -> list[TurnRequest]:
    return [e.request() for e in _episodes(policy, questions, max_new, system)]


def test_sampling_is_seeded_per_row_and_reproducible(tiny) -> None:
    policy = TransformersPolicy(
        *tiny, sampling=SamplingConfig(temperature=1.0, top_p=0.9, batch_size=4)
    )
    reqs = _requests(policy, ["q one?", "a much longer question two?", "three?"])
    first, again = policy.act(reqs), policy.act(reqs)
    assert first == again
    assert len({g.ids for g in first}) == 3
    assert all(len(g.ids) <= 20 for g in first)


_SAMPLE_IN_A_FRESH_PROCESS = """
import json, sys
import torch
torch.set_num_threads(int(sys.argv[1]))  # the parent's: a thread count moves logprobs' last bits
from agent.rollout.models import tiny_model
from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy
from agent.rollout.react import Budget, Episode
policy = TransformersPolicy(*tiny_model(1), sampling=SamplingConfig(temperature=1.0, top_p=0.9))
reqs = [Episode(task_id=str(i), question=q, system_prompt="sys", seed=i,
                budget=Budget(max_new_tokens=20), chat=policy.chat).request()
        for i, q in enumerate(json.loads(input()))]
print(json.dumps([[g.ids, g.logprobs] for g in policy.act(reqs)]))
"""


def test_sampled_turns_are_the_same_in_a_fresh_process_and_in_any_batch(tiny) -> None:
    questions = ["q one?", "a much longer question two?", "three?"]
    policy = TransformersPolicy(*tiny, sampling=SamplingConfig(temperature=1.0, top_p=0.9))
    here = policy.act(_requests(policy, questions))
    alone = policy.act(_requests(policy, questions[:1]))
    # a row's ids depend on its seed, not on the rows beside it (padding moves logits by ~1e-6)
    assert alone[0].ids == here[0].ids
    assert alone[0].logprobs == pytest.approx(here[0].logprobs, abs=1e-4)
    proc = subprocess.run(
        [sys.executable, "-c", _SAMPLE_IN_A_FRESH_PROCESS, str(torch.get_num_threads())],
        input=json.dumps(questions),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "7"},
    )
    fresh = json.loads(proc.stdout.strip().splitlines()[-1])
    assert fresh == [[list(g.ids), list(g.logprobs)] for g in here]


def _assert_greedy_matches_full_forward(model, reqs: list[TurnRequest], gens) -> None:
    for req, gen in zip(reqs, gens, strict=True):
        seq = torch.tensor([list(req.ids) + list(gen.ids)])
        with torch.inference_mode():
            logp = torch.log_softmax(model(input_ids=seq).logits[0].float(), -1)
        n = len(req.ids)
        expect = [float(logp[n - 1 + j, tid]) for j, tid in enumerate(gen.ids)]
        assert gen.logprobs == pytest.approx(expect, abs=1e-4)
        assert [int(logp[n - 1 + j].argmax()) for j in range(len(gen.ids))] == list(gen.ids)


@pytest.mark.parametrize("fixed", [False, True])
@pytest.mark.parametrize("system", ["sys", LONG_SYSTEM])
def test_greedy_logprobs_match_a_full_forward_pass_under_padding(
    tiny, system: str, fixed: bool
) -> None:
    tok, model = tiny
    policy = TransformersPolicy(
        tok, model, sampling=SamplingConfig(batch_size=3, fixed_shapes=fixed)
    )
    reqs = _requests(
        policy,
        ["short?", "a considerably longer question than the others?", "mid question?"],
        system=system,
    )
    assert (policy._system_end(list(reqs[0].ids)) > 0) == (system == LONG_SYSTEM)
    _assert_greedy_matches_full_forward(model, reqs, policy.act(reqs))


@pytest.mark.parametrize("fixed", [False, True])
def test_a_presence_penalty_lowers_each_id_the_turn_has_generated_as_openai_defines_it(
    tiny, fixed: bool
) -> None:
    """Greedy under a presence penalty picks the argmax of the logits less the penalty at every
    id already generated in the turn, and reports the log-prob of those penalized logits."""
    tok, model = tiny
    penalty = 1.5
    plain = TransformersPolicy(tok, model, sampling=SamplingConfig(batch_size=3))
    policy = TransformersPolicy(
        tok,
        model,
        sampling=SamplingConfig(batch_size=3, fixed_shapes=fixed, presence_penalty=penalty),
    )
    reqs = _requests(policy, ["short?", "a considerably longer question?", "mid?"], max_new=24)
    gens, before = policy.act(reqs), plain.act(reqs)
    assert any(len(set(g.ids)) < len(g.ids) for g in before)  # the tiny model repeats itself
    assert [g.ids for g in gens] != [g.ids for g in before]
    for req, gen in zip(reqs, gens, strict=True):
        seq = torch.tensor([list(req.ids) + list(gen.ids)])
        with torch.inference_mode():
            logits = model(input_ids=seq).logits[0].float()
        n = len(req.ids)
        for j, tid in enumerate(gen.ids):
            scores = logits[n - 1 + j].clone()
            scores[sorted(set(gen.ids[:j]))] -= penalty
            assert int(scores.argmax()) == tid
            assert gen.logprobs[j] == pytest.approx(
                float(torch.log_softmax(scores, -1)[tid]), abs=1e-4
            )


@pytest.mark.parametrize("fixed", [False, True])
def test_next_turns_reuse_the_cache_of_the_turn_before_and_stay_exact(tiny, fixed: bool) -> None:
    tok, model = tiny
    policy = TransformersPolicy(
        tok, model, sampling=SamplingConfig(batch_size=2, fixed_shapes=fixed)
    )
    episodes = _episodes(policy, ["short?", "a longer question?", "mid?"], 12, LONG_SYSTEM)
    widths: list[int] = []
    hook = model.register_forward_pre_hook(
        lambda _, a, kw: widths.append(kw["input_ids"].shape[1]), with_kwargs=True
    )
    cached = [0] * len(episodes)  # context tokens whose keys and values the policy holds
    for turn in range(3):
        reqs = [e.request() for e in episodes]
        widths.clear()
        gens = policy.act(reqs)
        if turn:  # the first forward of a batch prefills only what is new since the last turn
            assert widths[0] == max(len(r.ids) - c for r, c in zip(reqs[:2], cached, strict=False))
        _assert_greedy_matches_full_forward(model, reqs, gens)
        assert len(policy._pasts) == len(episodes)  # one per live episode: the last turn's are gone
        cached = [len(r.ids) + len(g.ids) - 1 for r, g in zip(reqs, gens, strict=True)]
        for e, g in zip(episodes, gens, strict=True):
            e.add_generation(g)
            e.add_observation(f"<tool_response>\nresult {turn}\n</tool_response>")
    hook.remove()
    policy.act(_requests(policy, ["another episode?"]))
    assert len(policy._pasts) == 1  # finished episodes' caches are dropped


def test_fixed_shapes_take_bf16_steps_over_an_fp32_past_as_the_growing_cache_does() -> None:
    """GRPO's model on a GPU is prepared by Accelerate for bf16, so its forward runs under
    autocast: a decode step's keys are bf16 while the prefilled past is fp32. The fixed-shape
    buffers take them in their own dtype, as the growing cache does (an H200 run crashed here,
    `index_copy_` refusing the mix), and sample what it samples. The forward is wrapped as
    `Accelerator(mixed_precision="bf16").prepare` wraps it, without the process-wide state an
    Accelerator would leave behind for the other tests."""
    from accelerate.utils import convert_outputs_to_fp32

    tok, model = tiny_model(1)
    model.forward = convert_outputs_to_fp32(
        torch.autocast("cpu", dtype=torch.bfloat16)(model.forward)
    )
    turns: dict[bool, list[list[tuple[int, ...]]]] = {}
    for fixed in (False, True):
        policy = TransformersPolicy(
            tok, model, sampling=SamplingConfig(batch_size=2, fixed_shapes=fixed)
        )
        episodes = _episodes(
            policy, ["short?", "a longer question than the other?"], 12, LONG_SYSTEM
        )
        turns[fixed] = []
        for turn in range(2):  # the second turn decodes over the first's stored past
            gens = policy.act([e.request() for e in episodes])
            turns[fixed].append([g.ids for g in gens])
            for e, g in zip(episodes, gens, strict=True):
                e.add_generation(g)
                e.add_observation(f"<tool_response>\nresult {turn}\n</tool_response>")
    assert all(len(ids) == 12 for turn in turns[True] for ids in turn)
    assert turns[True] == turns[False]


@pytest.mark.parametrize("fixed", [False, True])
def test_rows_with_the_same_context_prefill_once_and_sample_as_they_would_alone(
    tiny, fixed: bool
) -> None:
    """Three rollouts of one question (a GRPO group) and another: the prefill runs over the two
    distinct contexts, and each row, with its own seed, samples what it samples alone."""
    tok, model = tiny
    policy = TransformersPolicy(
        tok, model, sampling=SamplingConfig(temperature=1.0, batch_size=8, fixed_shapes=fixed)
    )
    reqs = _requests(policy, ["the same question?"] * 3 + ["another one?"], system=LONG_SYSTEM)
    rows: list[int] = []
    hook = model.register_forward_pre_hook(
        lambda _, a, kw: rows.append(kw["input_ids"].shape[0]), with_kwargs=True
    )
    together = policy.act(reqs)
    hook.remove()
    assert rows[:2] == [1, 2]  # the system prompt once, then the 2 distinct contexts
    assert len({g.ids for g in together[:3]}) > 1  # the twins sample apart, by their seeds
    for req, gen in zip(reqs, together, strict=True):
        alone = policy.act([req])[0]
        assert alone.ids == gen.ids
        assert alone.logprobs == pytest.approx(gen.logprobs, abs=1e-4)


def test_fixed_shapes_sample_what_the_growing_cache_samples(tiny) -> None:
    """The CUDA-graph path's fixed buffers (run eagerly here) give the growing cache's turns: rows
    rounded up to a power of two and widths to `COLUMNS` change nothing a row samples."""
    tok, model = tiny
    questions = ["q one?", "a much longer question two?", "three?"]
    turns = {}
    for fixed in (False, True):
        cfg = SamplingConfig(temperature=1.0, top_p=0.9, batch_size=3, fixed_shapes=fixed)
        policy = TransformersPolicy(tok, model, sampling=cfg)
        episodes = _episodes(policy, questions, 40, LONG_SYSTEM)
        turns[fixed] = []
        for turn in range(2):
            gens = policy.act([e.request() for e in episodes])
            turns[fixed].append(gens)
            for e, g in zip(episodes, gens, strict=True):
                e.add_generation(g)
                e.add_observation(f"<tool_response>\nresult {turn}\n</tool_response>")
        assert (policy.fixed is not None) == fixed
    assert policy.fixed is not None and policy.fixed.rows == 4  # 3 rows and a filler
    assert policy.fixed.width % COLUMNS == 0 and policy.fixed.replays == 0  # no graphs on a CPU
    for grown, fixed_turn in zip(turns[False], turns[True], strict=True):
        assert [g.ids for g in fixed_turn] == [g.ids for g in grown]
        for a, b in zip(fixed_turn, grown, strict=True):
            assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_the_fixed_step_traces_as_one_graph_under_lora_in_train_mode(tiny) -> None:
    """What a CUDA graph replays must not read a tensor on the host: TorchDynamo finds one graph,
    no break, in the step as GRPO samples it (LoRA, train mode)."""
    from peft import LoraConfig, get_peft_model

    tok, base = tiny_model(1)
    model = get_peft_model(base, LoraConfig(r=4, target_modules="all-linear")).train()
    policy = TransformersPolicy(tok, model, sampling=SamplingConfig(fixed_shapes=True))
    policy.act(_requests(policy, ["q one?", "two?"], max_new=4, system=LONG_SYSTEM))
    assert policy.fixed is not None
    with torch.inference_mode():
        found = torch._dynamo.explain(policy.fixed._forward)()
    assert (found.graph_count, found.graph_break_count) == (1, 0), found.break_reasons


def test_rows_stop_at_stop_strings_end_of_turn_or_budget(tiny) -> None:
    tok, model = tiny
    policy = TransformersPolicy(tok, model)
    enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    assert policy._stopped(enc('<tool_call>\n{"name": "search"}\n</tool_call>'), 100)
    assert policy._stopped(enc("<answer>Paris</answer>"), 100)
    assert policy._stopped([*enc("text"), tok.eos_token_id], 100)
    assert not policy._stopped(enc("<answer>Paris"), 100)
    assert policy._stopped(enc("<answer>Paris"), len(enc("<answer>Paris")))
    rows = policy.generate([enc("<|im_start|>assistant\n")] * 2, [1, 5], [0, 0])
    assert [len(r[0]) for r in rows][0] == 1 and len(rows[1][0]) <= 5


def test_sampling_config_validates() -> None:
    with pytest.raises(ConfigError, match="top_p=0"):
        SamplingConfig(top_p=0)
    with pytest.raises(ConfigError, match=r"presence_penalty=2.5 must be in \[-2, 2\]"):
        SamplingConfig(presence_penalty=2.5)
    with pytest.raises(
        ConfigError, match="decode_dtype='float16' must be one of float32, bfloat16"
    ):
        SamplingConfig(decode_dtype="float16")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown policy 'nope'"):
        make_policy("nope")
    with pytest.raises(ConfigError, match="openai:MODEL@BASE_URL"):
        make_policy("openai:qwen")


def test_a_bf16_policy_decodes_a_copy_and_leaves_the_trained_weights_as_they_are() -> None:
    """A trainer's LoRA model sampled in bf16: the policy decodes a merged bf16 copy, the
    trainer's model keeps its fp32 weights, adapters and train mode, and the turns are seeded
    as in fp32 (the same ones each time) while coming from other arithmetic."""
    from peft import LoraConfig, get_peft_model

    tok, base = tiny_model(1)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    for name, p in model.named_parameters():
        if "lora_B" in name:  # a trained adapter: not the identity peft starts from
            torch.nn.init.normal_(p, std=0.5, generator=torch.Generator().manual_seed(0))
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    sampling = SamplingConfig(temperature=1.0, batch_size=4)
    bf16 = TransformersPolicy(tok, model, sampling=replace(sampling, decode_dtype="bfloat16"))
    fp32 = TransformersPolicy(tok, model, sampling=sampling)
    assert fp32.model is model and bf16.model is not model
    assert {p.dtype for p in bf16.model.parameters()} == {torch.bfloat16}
    assert not any("lora" in k for k in bf16.model.state_dict()) and not bf16.model.training
    reqs = _requests(fp32, ["q one?", "a much longer question two?", "three?"])
    turns = bf16.act(reqs)
    assert turns == bf16.act(reqs) and [g.logprobs for g in turns] != [
        g.logprobs for g in fp32.act(reqs)
    ]
    state = model.state_dict()
    assert state.keys() == before.keys() and all(torch.equal(state[k], before[k]) for k in state)
    assert model.training and any(p.requires_grad for p in model.parameters())


def test_a_policy_loaded_from_a_folder_is_cast_where_it_loads(tmp_path) -> None:
    tok, model = tiny_model(1)
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    policy = make_policy(str(tmp_path), decode_dtype="bfloat16")
    assert isinstance(policy, TransformersPolicy)
    assert {p.dtype for p in policy.model.parameters()} == {torch.bfloat16}
    assert [g.ids for g in policy.act(_requests(policy, ["q?"]))]


def test_best_span_picks_the_answer_shaped_span() -> None:
    text = (
        "Paris is a city. The Eiffel Tower was designed by the engineering company of Gustave Eiffel. "
        "It opened in 1889."
    )
    assert best_span("Whose company designed the Eiffel Tower?", text) == "Gustave Eiffel"
    assert best_span("In which year did the Eiffel Tower open?", text) == "1889"
    assert best_span("Is Paris a city?", text) == "yes"


def _req(messages: list[dict], turn: int) -> TurnRequest:
    return TurnRequest(messages=tuple(messages), ids=(), max_new_tokens=10, seed=0, turn=turn)


def test_search_answer_searches_visits_the_top_hit_and_answers() -> None:
    q = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "In which year did the Eiffel Tower open?"},
    ]
    p = SearchAnswerPolicy()
    t0 = p.turn(_req(q, 0))
    assert tool_names(t0) == ("search",) and "Eiffel Tower open" in t0
    hits = "<tool_response>\n1. [Eiffel Tower](https://en.wikipedia.org/wiki/Eiffel_Tower)\n</tool_response>"
    t1 = p.turn(
        _req([*q, {"role": "assistant", "content": t0}, {"role": "user", "content": hits}], 1)
    )
    assert tool_names(t1) == ("visit",) and "https://en.wikipedia.org/wiki/Eiffel_Tower" in t1
    page = (
        "<tool_response>\nThe Eiffel Tower opened in 1889 for the World's Fair.\n</tool_response>"
    )
    msgs = [
        *q,
        {"role": "assistant", "content": t0},
        {"role": "user", "content": hits},
        {"role": "assistant", "content": t1},
        {"role": "user", "content": page},
    ]
    assert extract_answer(p.turn(_req(msgs, 2))) == "1889"


def test_oracle_visits_every_evidence_page_then_answers() -> None:
    q = [{"role": "system", "content": "s"}, {"role": "user", "content": "Q?"}]
    task = Task(
        "t1",
        "Q?",
        ("X", "Y"),
        ("https://en.wikipedia.org/wiki/A", "https://en.wikipedia.org/wiki/B"),
    )
    p = OraclePolicy(TaskSet([task], "one"))
    turns = [p.turn(_req(q, i)) for i in range(4)]
    assert [tool_names(t) for t in turns[:3]] == [("search",), ("visit",), ("visit",)]
    assert "wiki/A" in turns[1] and "wiki/B" in turns[2]
    assert extract_answer(turns[3]) == "X"


def test_a_batch_the_device_cannot_hold_is_retried_at_half_the_size(tiny) -> None:
    """An out-of-memory batch halves until it fits; the turns are those of the smaller size
    from the start, and the retried turn still prefills only what is new since the last."""
    tok, model = tiny

    def episodes(policy: TransformersPolicy) -> list[Episode]:
        questions = ["short?", "a longer question?", "mid?", "fourth one?", "five?"]
        return _episodes(policy, questions, 10, LONG_SYSTEM)

    def play(policy: TransformersPolicy) -> list[tuple[int, ...]]:
        eps, ids = episodes(policy), []
        for turn in range(2):
            widths.append([])
            rows[0] = 8 if turn == 0 else 2  # longer contexts: room for fewer rows
            reqs = [e.request() for e in eps]
            shortest.append(min(len(r.ids) for r in reqs))
            for e, g in zip(eps, policy.act(reqs), strict=True):
                ids.append(g.ids)
                e.add_generation(g)
                e.add_observation(f"<tool_response>\nresult {turn}\n</tool_response>")
        return ids

    def device_of_few_rows(_, args, kwargs):  # a device with memory for `rows` rows
        if kwargs["input_ids"].shape[0] > rows[0]:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        widths[-1].append(kwargs["input_ids"].shape[1])

    widths: list[list[int]] = []  # each forward's new tokens, by turn
    shortest: list[int] = []  # each turn's shortest context
    rows = [8]
    hook = model.register_forward_pre_hook(device_of_few_rows, with_kwargs=True)
    try:
        small = play(TransformersPolicy(tok, model, sampling=SamplingConfig(batch_size=2)))
        small_widths = widths[1]
        big = TransformersPolicy(tok, model, sampling=SamplingConfig(batch_size=8))
        widths.clear()
        assert play(big) == small
    finally:
        hook.remove()
    assert big.oom_backoffs == [(8, 2)]  # half the 5 rows that did not fit
    # turn 2 prefilled only the tool response, as a run at 2 rows from the start does
    assert widths[1] == small_widths and max(widths[1]) < shortest[1] / 2
    with pytest.raises(torch.OutOfMemoryError):  # one row that does not fit is the device's limit
        hook = model.register_forward_pre_hook(
            lambda *_: (_ for _ in ()).throw(torch.OutOfMemoryError("no room")), with_kwargs=True
        )
        try:
            TransformersPolicy(tok, model, sampling=SamplingConfig(batch_size=1)).act(
                [episodes(big)[0].request()]
            )
        finally:
            hook.remove()
