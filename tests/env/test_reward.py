"""Reward: SQuAD EM/F1 against all golds, and the LLM judge over a real loopback HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fakes.replies import send_json

from wikisim.backends.llm import ChatClient, ChatConfig
from wikisim.env.reward import Judge, exact_match, f1_score, normalize_answer, score
from wikisim.errors import BackendError, ConfigError


def test_normalisation_is_squad_s() -> None:
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple, a pear") == "apple pear"


def test_exact_match_takes_any_gold() -> None:
    assert exact_match("the Beatles", ["Rolling Stones", "Beatles"]) == 1.0
    assert exact_match("Beatles band", ["Beatles"]) == 0.0


def test_f1_is_best_over_golds() -> None:
    assert f1_score("Wilhelm Röntgen", ["Wilhelm Conrad Röntgen"]) == pytest.approx(0.8)
    assert f1_score("nothing", ["Paris"]) == 0.0
    assert f1_score("Paris France", ["London", "Paris"]) == pytest.approx(2 / 3)


def test_score_rejects_unknown_kinds_and_missing_judge() -> None:
    with pytest.raises(ConfigError, match="reward must be one of"):
        score("bleu", "q", "a", ["a"])
    with pytest.raises(ConfigError, match="needs a judge"):
        score("judge", "q", "a", ["a"])


class _ChatServer(BaseHTTPRequestHandler):
    """Speaks the chat-completions wire format; CORRECT when the prediction's line names a gold."""

    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        prompt = body["messages"][-1]["content"]
        golds = prompt.split("Gold answers: ")[1].split("\n")[0].split(" | ")
        pred = prompt.split("Predicted answer: ")[1].split("\n")[0]
        verdict = "CORRECT" if any(g.lower() in pred.lower() for g in golds) else "INCORRECT"
        send_json(
            self,
            {
                "id": "x",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": verdict},
                    }
                ],
            },
        )

    def log_message(self, *args) -> None:
        pass


@pytest.fixture()
def chat_server() -> Iterator[str]:
    _ChatServer.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_judge_over_http_is_cached(chat_server: str, tmp_path) -> None:
    judge = Judge(ChatClient(ChatConfig(chat_server, "judge-model", api_key="k"), cache=tmp_path))
    assert judge("Capital of France?", "It is Paris, France", ["Paris"]) == 1.0
    assert judge("Capital of France?", "Lyon", ["Paris"]) == 0.0
    assert judge("Capital of France?", "It is Paris, France", ["Paris"]) == 1.0  # from the cache
    assert len(_ChatServer.requests) == 2
    first = _ChatServer.requests[0]
    assert first["path"] == "/v1/chat/completions" and first["auth"] == "Bearer k"
    assert first["body"]["temperature"] == 0.0 and first["body"]["model"] == "judge-model"
    assert score("judge", "Capital of France?", "Lyon", ["Paris"], judge) == 0.0


def test_judge_server_down_is_a_backend_error(tmp_path) -> None:
    client = ChatClient(
        ChatConfig("http://127.0.0.1:9/v1", "m", retries=1, timeout_s=2), cache=tmp_path
    )
    with pytest.raises(BackendError, match="check that the server is up"):
        Judge(client)("q", "a", ["a"])


def test_chat_config_validates() -> None:
    with pytest.raises(ConfigError, match="base_url must start with http"):
        ChatConfig("localhost:8000", "m")
