"""OpenAIPolicy against a real HTTP server on 127.0.0.1 that speaks chat completions and misbehaves."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fakes.turns import extract_answer, tool_names

from agent.rollout.policies.openai_policy import OpenAIConfig, OpenAIPolicy
from agent.rollout.react import TurnRequest
from wikisim.errors import BackendError, ConfigError
from wikisim.tools.protocol import close_stopped


class ChatServer(ThreadingHTTPServer):
    """Answers /v1/chat/completions like vLLM; `faults` is a per-question queue of misbehaviours.

    A fault is one of "timeout" (reply after the client gave up), "429", "500", "malformed"
    (200 with a body that is not JSON) or "shapeless" (200 JSON without choices).
    """

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.faults: dict[str, list[str]] = {}
        self.log: list[tuple[str, str]] = []  # (question, outcome)
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: ChatServer

    def log_message(self, *args: object) -> None:  # keep test output clean
        return

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert self.path == "/v1/chat/completions"
        question = body["messages"][1]["content"]
        with self.server.lock:
            queue = self.server.faults.get(question, [])
            fault = queue.pop(0) if queue else "ok"
            self.server.log.append((question, fault))
        if fault == "timeout":
            time.sleep(0.6)
        if fault in ("429", "500"):
            return self._send(int(fault), b'{"error": {"message": "busy"}}')
        if fault == "malformed":
            return self._send(200, b'{"choices": [{"message": ')
        if fault == "shapeless":
            return self._send(200, b'{"object": "chat.completion"}')
        # the server strips the stop string, like vLLM and the OpenAI API do
        n_turns = sum(m["role"] == "assistant" for m in body["messages"])
        content = (
            '<think>search first</think>\n<tool_call>\n{"name": "search", "arguments": {"query": ["x"]}}\n'
            if n_turns == 0
            else f"<answer>{question} seed={body['seed']}"
        )
        reply = {
            "id": "c",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
        self._send(200, json.dumps(reply).encode())

    def _send(self, status: int, payload: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
            pass


@pytest.fixture()
def server() -> Iterator[ChatServer]:
    srv = ChatServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _config(url: str, **kw: object) -> OpenAIConfig:
    base = {
        "base_url": url,
        "model": "m",
        "timeout_s": 0.3,
        "backoff_s": 0.01,
        "max_backoff_s": 0.05,
        "concurrency": 4,
    }
    return OpenAIConfig(**{**base, **kw})


def _request(question: str, turn: int, seed: int) -> TurnRequest:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": question}]
    if turn:
        messages += [
            {"role": "assistant", "content": "<tool_call>{}</tool_call>"},
            {"role": "user", "content": "<tool_response>r</tool_response>"},
        ]
    return TurnRequest(messages=tuple(messages), ids=(), max_new_tokens=64, seed=seed, turn=turn)


def test_every_fault_is_retried_and_no_episode_is_lost(server: ChatServer) -> None:
    kinds = ["timeout", "429", "500", "malformed", "shapeless"]
    questions = [f"q{i}" for i in range(10)]
    for i, q in enumerate(questions):  # each question meets one or two faults, of every kind
        server.faults[q] = [kinds[i % 5]] + ([kinds[(i + 2) % 5]] if i % 2 else [])
    policy = OpenAIPolicy(_config(server.url))
    first = policy.act([_request(q, 0, i) for i, q in enumerate(questions)])
    assert [tool_names(g.text) for g in first] == [("search",)] * 10
    assert all(g.text.endswith("</tool_call>") and g.ids is None for g in first)
    final = policy.act([_request(q, 1, 100 + i) for i, q in enumerate(questions)])
    assert [extract_answer(g.text) for g in final] == [
        f"{q} seed={100 + i}" for i, q in enumerate(questions)
    ]
    outcomes = [o for _, o in server.log]
    assert {k: outcomes.count(k) for k in kinds} == {
        "timeout": 3,
        "429": 3,
        "500": 3,
        "malformed": 3,
        "shapeless": 3,
    }
    assert outcomes.count("ok") == 20 and policy.attempts == 35
    policy.close()


def test_persistent_failure_raises_a_backend_error_naming_the_fix(server: ChatServer) -> None:
    server.faults["q"] = ["500"] * 3
    policy = OpenAIPolicy(_config(server.url, max_attempts=3))
    with pytest.raises(
        BackendError, match="no valid chat completion after 3 attempts.*raise max_attempts"
    ):
        policy.act([_request("q", 0, 0)])
    assert len(server.log) == 3


def test_client_errors_are_not_retried() -> None:
    srv = ChatServer()
    srv.RequestHandlerClass = type(
        "NotFound", (_Handler,), {"do_POST": lambda self: self._send(404, b"no such model")}
    )
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        policy = OpenAIPolicy(_config(srv.url))
        with pytest.raises(BackendError, match="HTTP 404: no such model"):
            policy.act([_request("q", 0, 0)])
        assert policy.attempts == 1
    finally:
        srv.shutdown()
        srv.server_close()


def test_stop_strings_are_restored_and_config_validates() -> None:
    assert close_stopped("<tool_call>\n{}\n") == "<tool_call>\n{}\n</tool_call>"
    assert close_stopped("<answer>x") == "<answer>x</answer>"
    assert close_stopped("<answer>x</answer>") == "<answer>x</answer>"
    with pytest.raises(ConfigError, match="base_url='localhost:8000'"):
        OpenAIConfig(base_url="localhost:8000", model="m")
