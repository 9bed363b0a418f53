"""Server-side generation for GRPO: the OpenAI-compatible model server, token-in/token-out, weight sync."""

from __future__ import annotations

import httpx
import pytest

from agent.commands.train import SHORT_SYSTEM_PROMPT
from agent.rollout.model_server import ModelServer, RunningServer, weights_sha256
from agent.rollout.models import load_local, tiny_model
from agent.rollout.policies.openai_policy import OpenAIConfig, OpenAIPolicy
from agent.rollout.policies.transformers_policy import SamplingConfig, TransformersPolicy
from agent.rollout.react import ChatFormat, TurnRequest
from agent.train.config import GRPOConfig
from agent.train.episodes import EnvRunner
from agent.train.grpo import train_grpo
from agent.train.weight_sync import WeightSync, server_root
from wikisim.env.config import EnvConfig
from wikisim.env.tasks import Task, TaskSet
from wikisim.errors import BackendError, ConfigError


@pytest.fixture(scope="module")
def served():
    tok, model = tiny_model(0)
    with RunningServer(ModelServer(tokenizer=tok, model=model)) as srv:
        yield srv


def _requests(chat: ChatFormat, n: int) -> list[TurnRequest]:
    out = []
    for i in range(n):
        messages = (
            {"role": "system", "content": "s"},
            {"role": "user", "content": f"What is the last digit of {i}7?"},
        )
        out.append(
            TurnRequest(
                messages=messages,
                ids=chat.prompt_ids(messages, None),
                max_new_tokens=10,
                seed=1000 + i,
                turn=0,
            )
        )
    return out


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_server_gives_the_in_process_tokens(served, temperature):
    """Token-in/token-out through HTTP samples exactly what the same weights sample in-process."""
    tok, model = tiny_model(0)
    local = TransformersPolicy(tok, model, sampling=SamplingConfig(temperature=temperature))
    remote = OpenAIPolicy(
        OpenAIConfig(base_url=served.url, model="policy", temperature=temperature, token_in=True),
        chat=local.chat,
    )
    requests = _requests(local.chat, 6)
    want, got = local.act(requests), remote.act(requests)
    remote.close()
    assert [g.ids for g in got] == [w.ids for w in want] and all(len(g.ids) > 0 for g in got)
    for g, w in zip(got, want, strict=True):
        assert g.logprobs == pytest.approx(w.logprobs, abs=1e-5)
    assert {(s.prompt_ids, s.token_ids) for s in served.server.log} >= {
        (r.ids, g.ids) for r, g in zip(requests, got, strict=True)
    }


def test_the_server_samples_under_the_presence_penalty_a_client_sends(served):
    """Tongyi DeepResearch's harness sends presence_penalty=1.1: the server decodes under it, as
    the same weights do in-process; a sampling field the policy would refuse is the request's
    fault (400), not the server's."""
    tok, model = tiny_model(0)
    local = TransformersPolicy(tok, model, sampling=SamplingConfig(presence_penalty=1.1))
    remote = OpenAIPolicy(
        OpenAIConfig(base_url=served.url, model="policy", presence_penalty=1.1, token_in=True),
        chat=local.chat,
    )
    requests = _requests(local.chat, 4)
    want, got = local.act(requests), remote.act(requests)
    remote.close()
    plain = TransformersPolicy(tok, model).act(requests)
    assert [g.ids for g in got] == [w.ids for w in want] != [p.ids for p in plain]
    body = {"model": "policy", "prompt": [1, 2, 3], "max_tokens": 4}
    for field, value, why in [
        ("presence_penalty", 3, "presence_penalty=3.0 must be in [-2, 2]"),
        ("temperature", -1, "temperature=-1.0 must be >= 0"),
        ("top_p", 0, "top_p=0.0 must be in (0, 1]"),
    ]:
        r = httpx.post(f"{served.url}/completions", json={**body, field: value})
        assert r.status_code == 400 and why in r.json()["error"]["message"], (field, r.text)


def test_chat_endpoint_returns_vllm_token_ids_and_logprobs(served):
    body = {
        "model": "policy",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 5,
        "temperature": 0,
        "seed": 1,
        "return_token_ids": True,
        "logprobs": True,
    }
    reply = httpx.post(served.url + "/chat/completions", json=body).json()
    tok = served.server.tokenizer
    assert reply["prompt_token_ids"] == list(ChatFormat(tok).prompt_ids(body["messages"], None))
    choice = reply["choices"][0]
    assert (
        len(choice["token_ids"]) == len(choice["logprobs"]["content"]) == 5
        and choice["finish_reason"] == "length"
    )
    assert choice["message"]["content"] == tok.decode(choice["token_ids"], skip_special_tokens=True)
    bad = httpx.post(served.url + "/chat/completions", json={**body, "stop": ["\n"]})
    assert bad.status_code == 400 and "stops only at" in bad.json()["error"]["message"]
    # Tongyi DeepResearch's stop strings are taken: each holds one of the server's
    tongyi = {**body, "stop": ["\n<tool_response>", "<tool_response>"]}
    assert httpx.post(served.url + "/chat/completions", json=tongyi).status_code == 200


def test_a_stop_string_is_cut_from_the_text_as_the_client_asked(served):
    """The server stops at its own stop strings; a longer one the client asked for that holds
    it ("\n<tool_response>") is cut whole, as vLLM would, and the first stop in the text wins."""
    tok = served.server.tokenizer
    text = "<think>\nx\n</think>\n<tool_response>\n<answer>y</answer>"
    ids = list(tok(text, add_special_tokens=False)["input_ids"])
    stop_text = served.server._stop_text
    assert stop_text(ids, []) == ("<think>\nx\n</think>\n", True)
    assert stop_text(ids, ["\n<tool_response>"]) == ("<think>\nx\n</think>", True)
    plain = list(tok("no stop here", add_special_tokens=False)["input_ids"])
    assert stop_text(plain, ["\n<tool_response>"]) == ("no stop here", False)


def test_reload_from_disk_reports_the_new_weights(served, tmp_path):
    tok, other = tiny_model(7)
    other.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    root = server_root(served.url)
    before = httpx.get(root + "/model_info").json()
    reply = httpx.post(
        root + "/update_weights_from_disk",
        json={"model_path": str(tmp_path / "m"), "weight_version": "v7"},
    )
    assert reply.json()["success"] is True
    info = httpx.get(root + "/model_info").json()
    assert (
        info["weight_version"] == "v7"
        and info["weights_sha256"] == weights_sha256(other) != before["weights_sha256"]
    )
    missing = httpx.post(
        root + "/update_weights_from_disk", json={"model_path": str(tmp_path / "none")}
    )
    assert missing.status_code == 400 and missing.json()["success"] is False


@pytest.mark.parametrize("protocol", ["sglang", "vllm"])
def test_grpo_samples_from_the_server_and_syncs_it_after_every_update(
    protocol, tmp_path, sample_index
):
    tasks = TaskSet(
        [
            Task(f"n{n}", f"What is the last digit of {n}?", (str(n % 10),))
            for n in (123, 4567, 890, 2024)
        ],
        "digits",
    )
    runner = EnvRunner(
        tasks,
        EnvConfig(index=str(sample_index), max_turns=2, retriever="bm25s", python=False),
        max_new_tokens=8,
        max_context_tokens=4096,
        slots=8,
        system_prompt=SHORT_SYSTEM_PROMPT,
    )
    tok, server_model = tiny_model(9)  # the trainer's first push replaces these weights
    batches = []
    with RunningServer(ModelServer(tokenizer=tok, model=server_model)) as srv:
        # an untrained model never answers (all rewards 0): the entropy bonus still moves the weights
        cfg = GRPOConfig(
            output_dir=str(tmp_path / "run"),
            seed=4,
            steps=2,
            questions_per_step=2,
            group_size=4,
            lr=1e-2,
            cpu=True,
            dev_every=0,
            max_new_tokens=8,
            generation_server=srv.url,
            entropy_coef=0.1,
            exclude_truncated=False,
            sync_protocol=protocol,
        )
        sample = runner.sampler(tok, srv.url)

        def recording(*args):
            batches.append(sample(*args))
            return batches[-1]

        res = train_grpo(cfg, tasks.ids(), recording)
    syncs = res.weight_syncs
    assert [s["step"] for s in syncs] == [0, 1, 2] and len({s["sha256"] for s in syncs}) == 3
    if protocol == "sglang":  # SGLang reports the version it loaded; vLLM's reload only answers 200
        assert all(s["server"]["weights_sha256"] == s["sha256"] for s in syncs)
    else:
        assert all(s["server"] == {"results": [None]} for s in syncs)
    version = (
        "weight_version" if protocol == "sglang" else "path"
    )  # vLLM has no version: the path stands for it
    assert weights_sha256(load_local(res.final_dir)[1]) == syncs[-1]["sha256"] == srv.server.sha256
    log = {(s.prompt_ids, s.token_ids): s.weight_version for s in srv.server.log}
    assert len(batches) == 2
    for batch, sync in zip(
        batches, syncs, strict=False
    ):  # batch k was sampled with the weights after update k
        for t in batch:
            context = t.prompt_ids
            for turn in (
                t.turns
            ):  # the exact context went in, the server's ids came out, from those weights
                assert log[(context, turn.ids)] == sync[version]
                context += turn.ids + turn.observation_ids
    assert all(r["time_weight_sync"] > 0 for r in res.history)


def test_server_generation_config_is_checked():
    with pytest.raises(ConfigError, match="generation_server='localhost:8000'"):
        GRPOConfig(generation_server="localhost:8000")
    with pytest.raises(ConfigError, match="token_in needs token contexts"):
        OpenAIPolicy(OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="m", token_in=True)).act(
            [TurnRequest(messages=(), ids=(), max_new_tokens=4, seed=0, turn=0)]
        )


def test_vllm_reload_route_checks_its_call(served, tmp_path):
    root = server_root(served.url)
    other = httpx.post(root + "/collective_rpc", json={"method": "sleep"})
    assert other.status_code == 400 and "reload_weights" in other.json()["error"]
    no_path = httpx.post(root + "/collective_rpc", json={"method": "reload_weights"})
    assert no_path.status_code == 400 and "weights_path" in no_path.json()["error"]
    missing = httpx.post(
        root + "/collective_rpc",
        json={"method": "reload_weights", "kwargs": {"weights_path": str(tmp_path / "none")}},
    )
    assert missing.status_code == 400 and "cannot load" in missing.json()["error"]
    assert httpx.post(root + "/reset_prefix_cache").status_code == 200


def test_weight_sync_names_a_server_without_the_vllm_route(tmp_path):
    from accelerate import Accelerator

    tok, model = tiny_model(3)
    with RunningServer(ModelServer(tokenizer=tok, model=model)) as srv:
        srv.server.app.router.routes = [
            r for r in srv.server.app.router.routes if r.path != "/collective_rpc"
        ]
        sync = WeightSync(srv.url, tmp_path / "sync", tok, Accelerator(cpu=True), protocol="vllm")
        with pytest.raises(BackendError, match="HTTP 404.*VLLM_SERVER_DEV_MODE=1"):
            sync.push(model, 0)
    with pytest.raises(ConfigError, match="sync_protocol='triton'"):
        GRPOConfig(sync_protocol="triton")
