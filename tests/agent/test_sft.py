"""SFT: rejection sampling bookkeeping, masked loss, determinism and exact resume on a tiny model."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from agent.rollout.models import tiny_model
from agent.rollout.trajectory import Trajectory, Turn
from agent.train.config import SFTConfig
from agent.train.loop import collate, read_metrics
from agent.train.losses import masked_nll, token_logprobs
from agent.train.sft import (
    cap_direct,
    gold_retrieved,
    rejection_sample,
    sft_loss,
    train_sft,
    well_formed_correct,
)
from wikisim.errors import ConfigError


def make_traj(
    tok, qid: str, answer: str, *, reward: float = 1.0, truncated: bool = False, seed: int = 0
) -> Trajectory:
    """A two-turn episode tokenised by the tiny tokenizer: search, observation, answer."""
    enc = lambda s: tuple(tok(s, add_special_tokens=False)["input_ids"])  # noqa: E731
    prompt = enc(f"<|im_start|>user\nWhat is {qid}?<|im_end|>\n<|im_start|>assistant\n")
    call = enc(
        '<tool_call>\n{"name": "search", "arguments": {"query": ["' + qid + '"]}}\n</tool_call>'
    )
    obs = enc(
        f"<|im_end|>\n<|im_start|>user\n<tool_response>\n{qid} is {answer}.\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    ans = enc(f"<answer>{answer}</answer>")
    turns = (
        Turn(
            text="call",
            ids=call,
            logprobs=(0.0,) * len(call),
            observation=f"{qid} is {answer}.",
            observation_ids=obs,
            tool_calls=("search",),
        ),
        Turn(text="answer", ids=ans, logprobs=(0.0,) * len(ans)),
    )
    return Trajectory(
        task_id=qid,
        seed=seed,
        policy="test",
        prompt_ids=prompt,
        turns=turns,
        answer=None if truncated else answer,
        reward=reward,
        terminated=not truncated,
        truncated=truncated,
        manifest_hash="h",
        version="0",
    )


@pytest.fixture(scope="module")
def tok():
    return tiny_model(0)[0]


@pytest.fixture(scope="module")
def data(tok):
    words = ["Paris", "Algeria", "Andorra", "Alabama", "Aristotle", "Achilles", "Autism", "Albedo"]
    return [make_traj(tok, f"x{i}", w) for i, w in enumerate(words)]


def cfg(tmp_path, **kw) -> SFTConfig:
    base = dict(
        output_dir=str(tmp_path),
        seed=0,
        lr=3e-3,
        epochs=2,
        batch_size=4,
        micro_batch_size=2,
        cpu=True,
    )
    return SFTConfig(**{**base, **kw})


def test_gold_retrieved_counts_only_the_policys_own_calls_and_not_a_guess(tok):
    t = make_traj(tok, "q", "Paris", reward=0.0)  # its search's observation reads "q is Paris."
    assert gold_retrieved(t, ["paris", "Lutetia"])
    assert not gold_retrieved(t, ["Lyon"])
    started = dataclasses.replace(
        t, turns=(dataclasses.replace(t.turns[0], forced=True), *t.turns[1:])
    )
    assert not gold_retrieved(started, ["Paris"])  # a teacher's replayed search found it
    guessed = dataclasses.replace(
        t, turns=(dataclasses.replace(t.turns[0], text="search Paris"), *t.turns[1:])
    )
    assert not gold_retrieved(guessed, ["Paris"])  # the query named it before it was read


def test_rejection_sample_keeps_correct_distinct_and_reports(tok):
    good, bad = make_traj(tok, "a", "Paris"), make_traj(tok, "a", "Rome", reward=0.0)
    cut = make_traj(tok, "b", "Paris", truncated=True)

    def play(task_ids, attempt):
        return [good if attempt < 2 else bad, cut] if list(task_ids) == ["a", "b"] else []

    kept, report = rejection_sample(play, ["a", "b"], k=3)
    assert kept == [good]  # the second identical success is a duplicate
    assert report.tried == {"a": 3, "b": 3} and report.kept == {"a": 1, "b": 0}
    assert report.as_dict()["per_question"]["a"] == [1, 3]
    assert not well_formed_correct(cut) and not well_formed_correct(bad)
    malformed = dataclasses.replace(
        good, turns=(dataclasses.replace(good.turns[0], tool_calls=("?",)), good.turns[1])
    )
    assert well_formed_correct(good) and not well_formed_correct(malformed)
    given = dataclasses.replace(  # a teacher's forced broken call, recovered from: not learned
        malformed, turns=(dataclasses.replace(malformed.turns[0], forced=True), good.turns[1])
    )
    assert well_formed_correct(given)


def test_cap_direct_keeps_every_longer_episode_and_caps_the_direct_ones(tok, data):
    search = data[0].turns[0]
    longer = [  # search, search again, answer
        dataclasses.replace(t, turns=(search, *t.turns)) for t in data[:2]
    ]
    kept = [*data, *longer]  # 8 direct, 2 longer
    assert cap_direct(kept, 1.0, seed=0) == kept
    half = cap_direct(kept, 0.5, seed=0)
    assert len(half) == 4 and longer[0] in half and longer[1] in half
    assert [t for t in half if t in data] == [t for t in data if t in half]  # order kept
    assert cap_direct(kept, 0.5, seed=0) == half  # the same draw for the same seed
    assert {t.task_id for t in cap_direct(kept, 0.5, seed=1)} != {t.task_id for t in half}
    assert cap_direct(kept, 0.9, seed=0) == kept  # 8 of 10 is under 0.9: nothing to drop
    with pytest.raises(ConfigError, match="direct_share=0"):
        cap_direct(kept, 0.0, seed=0)


def test_observation_tokens_get_exactly_zero_gradient(tok, data):
    _, model = tiny_model(0)
    batch = collate(data[:2], tok.pad_token_id)
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    logits.retain_grad()
    masked_nll(token_logprobs(logits, batch.input_ids), batch.loss_mask).backward()
    # logits at position t score token t+1: rows predicting prompt/observation/padding tokens
    off = batch.loss_mask == 0
    assert torch.count_nonzero(logits.grad[:, :-1][off]) == 0
    assert torch.count_nonzero(logits.grad[:, :-1][~off]) > 0
    assert torch.count_nonzero(logits.grad[:, -1]) == 0


def test_the_loss_at_kept_positions_equals_the_full_logits_loss(tok, data):
    """sft_loss runs the lm_head only where the loss mask keeps: same loss, same gradients."""
    _, model = tiny_model(0)
    batch = collate(data[:3], tok.pad_token_id)
    n = float(batch.loss_mask.sum())
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    full = masked_nll(token_logprobs(logits, batch.input_ids), batch.loss_mask, n)
    full.backward()
    expect = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    kept = sft_loss(model, batch, slice(0, 3), n)
    kept.backward()
    assert torch.allclose(kept, full, atol=1e-6)
    for got, want in zip((p.grad for p in model.parameters()), expect, strict=True):
        assert torch.allclose(got, want, atol=1e-6)


def test_a_micro_batch_runs_the_model_over_its_own_longest_row(tok, data):
    """Rows are padded to the batch's longest; a micro-batch is cut to its own: same loss and grads."""
    _, model = tiny_model(0)
    batch = collate(data[:3], tok.pad_token_id)
    lengths = batch.attention_mask.sum(1).tolist()
    assert len(set(lengths)) == 3
    n = float(batch.loss_mask.sum())
    whole = sft_loss(model, batch, slice(0, 3), n)
    whole.backward()
    expect = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    widths: list[int] = []
    hook = model.register_forward_pre_hook(
        lambda _, args, kwargs: widths.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    parts = sum(sft_loss(model, batch, slice(i, i + 1), n) for i in range(3))
    parts.backward()
    hook.remove()
    assert widths == lengths and torch.allclose(parts, whole, atol=1e-6)
    for got, want in zip((p.grad for p in model.parameters()), expect, strict=True):
        assert torch.allclose(got, want, atol=1e-6)


@pytest.fixture(scope="module")
def six_epochs(tmp_path_factory, data):
    """One straight 12-step run that several tests compare against."""
    path = tmp_path_factory.mktemp("sft6")
    return path, train_sft(cfg(path, epochs=6), data)


def test_loss_falls_and_final_model_saved(six_epochs):
    path, res = six_epochs
    assert res.steps == 12 and len(res.losses) == 12
    assert res.losses[-1] < 0.8 * res.losses[0]
    assert (path / "final" / "config.json").is_file() and (path / "curves.png").is_file()
    rows = read_metrics(path / "metrics.jsonl")
    assert [r["step"] for r in rows] == list(range(1, 13))


def test_same_seed_same_curve_and_exact_resume(tmp_path, data):
    a = train_sft(cfg(tmp_path / "a"), data).losses
    b = train_sft(cfg(tmp_path / "b"), data).losses
    assert a == b  # bit-identical on CPU
    first = train_sft(cfg(tmp_path / "c"), data, stop_after=2)
    assert first.losses == a[:2] and first.final_dir == ""
    rest = train_sft(cfg(tmp_path / "c"), data)
    assert rest.losses == a[2:]
    logged = [
        json.loads(line)["loss"]
        for line in (tmp_path / "c" / "metrics.jsonl").read_text().splitlines()
    ]
    assert logged == a
    other = train_sft(cfg(tmp_path / "d", seed=1), data).losses
    assert other != a


def test_stop_loss_and_max_steps_end_early_with_a_final_model(tmp_path, data, six_epochs):
    full = six_epochs[1].losses
    threshold = sum(full[4:9]) / 5 + 1e-6
    stop = next(
        k for k in range(5, 13) if sum(full[k - 5 : k]) / 5 < threshold
    )  # first 5-step window under it
    res = train_sft(cfg(tmp_path / "b", epochs=6, stop_loss=threshold), data)
    assert stop < 12 and res.losses == full[:stop] and res.steps == stop
    assert (tmp_path / "b" / "final" / "config.json").is_file()
    assert (
        train_sft(cfg(tmp_path / "b", epochs=6, stop_loss=threshold), data).losses == []
    )  # resumed: already done
    assert train_sft(cfg(tmp_path / "c", epochs=6, max_steps=3), data).steps == 3


def test_lora_trains_adapters_and_saves_a_merged_model(tmp_path, data):
    from agent.rollout.models import load_local

    res = train_sft(cfg(tmp_path, lora_rank=4, epochs=2), data)
    assert res.losses[-1] < res.losses[0]
    _, merged = load_local(res.final_dir)
    _, base = tiny_model(0)
    assert not any("lora" in k for k in merged.state_dict())
    changed = [
        k for k, v in merged.state_dict().items() if not torch.equal(v, base.state_dict()[k])
    ]
    assert changed and all("proj" in k for k in changed)  # only the adapted linear layers moved


def test_a_micro_batch_out_of_memory_retries_the_step_at_half_the_size(tmp_path, data, monkeypatch):
    """A device with room for 2 rows: a run asked for 4-row micro-batches trains exactly as a run
    of 2-row ones (the failed pass leaves no gradient) and logs the size it kept."""
    import agent.train.sft as sft_module

    load = sft_module.load_model

    def device_of(rows: int):  # load_model, on a device with memory for `rows` rows
        def check(_, args, kwargs):
            if kwargs["input_ids"].shape[0] > rows:
                raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

        def loaded(*args, **kwargs):
            tok, model = load(*args, **kwargs)
            model.register_forward_pre_hook(check, with_kwargs=True)
            return tok, model

        return loaded

    two = train_sft(cfg(tmp_path / "a", micro_batch_size=2), data).losses
    monkeypatch.setattr(sft_module, "load_model", device_of(2))
    four = train_sft(cfg(tmp_path / "b", micro_batch_size=4), data).losses
    assert four == two
    assert {r["micro_batch"] for r in read_metrics(tmp_path / "b" / "metrics.jsonl")} == {2}
    monkeypatch.setattr(sft_module, "load_model", device_of(0))
    with pytest.raises(torch.OutOfMemoryError):  # one row that does not fit: the device's limit
        train_sft(cfg(tmp_path / "c", micro_batch_size=1), data)


def test_keep_checkpoints_leaves_the_newest_complete_ones(tmp_path):
    """A run that saves often keeps only `keep_checkpoints` of them (each holds the model and the
    optimizer's moments), the newest, and resumes from the newest; an incomplete one (no trainer
    state: the process died while writing it) is never counted or resumed from."""
    from accelerate import Accelerator

    from agent.train.loop import RunDir

    accelerator = Accelerator(cpu=True)
    model = accelerator.prepare(torch.nn.Linear(2, 2))
    cfg = SFTConfig(output_dir=str(tmp_path), keep_checkpoints=2)
    run = RunDir(cfg, accelerator)
    (tmp_path / "checkpoints" / "step-9").mkdir()  # cut while writing: no trainer_state.json
    for step in (1, 2, 3):
        with torch.no_grad():
            model.weight.fill_(float(step))
        run.save(step, {"loss": step / 10})
    assert [p.name for p in run.checkpoints()] == ["step-2", "step-3"]
    assert (tmp_path / "checkpoints" / "step-9").is_dir()  # not a checkpoint: left alone
    with torch.no_grad():
        model.weight.zero_()
    assert run.resume() == (3, {"loss": 0.3})
    assert torch.all(model.weight == 3.0)
    with pytest.raises(ConfigError, match="keep_checkpoints"):
        SFTConfig(output_dir=str(tmp_path), keep_checkpoints=-1)
