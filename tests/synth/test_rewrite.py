"""The rewriter against a loopback server that speaks the OpenAI chat-completions wire format."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from fakes.replies import send_json

from wikisim.errors import BackendError
from wikisim.synth.rewrite import Rewriter, anchor_names, keeps_constraints

TEMPLATE = "Which person was born in the late 1880s and was not born in Oldtown?"
CONSTRAINTS = [
    {"type": "IsKind", "kind": "person"},
    {
        "type": "Not",
        "inner": {
            "type": "Path",
            "steps": [{"type": "Step", "relation": "born_in", "direction": "out", "kind": "place"}],
            "end": {"type": "Named", "node": 10, "name": "Oldtown"},
        },
    },
]
FAITHFUL = "Born in the late 1880s, but not in Oldtown: which person is this?"
LOSSY = "Which person was born in the late 1880s?"


class _Chat(BaseHTTPRequestHandler):
    replies: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body["messages"][0]["role"] == "user" and TEMPLATE in body["messages"][0]["content"]
        reply = {
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": self.replies.pop(0)}}
            ]
        }
        send_json(self, reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def server():
    httpd = HTTPServer(("127.0.0.1", 0), _Chat)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def test_check_keeps_names_numbers_periods_and_negations():
    names = anchor_names(CONSTRAINTS)
    assert names == ["Oldtown"]
    assert keeps_constraints(TEMPLATE, FAITHFUL, names)
    assert not keeps_constraints(TEMPLATE, LOSSY, names)  # lost "Oldtown" and the negation
    assert not keeps_constraints(TEMPLATE, FAITHFUL.replace("late", "early"), names)
    assert not keeps_constraints(TEMPLATE, FAITHFUL.replace(" not", ""), names)


def test_paraphrase_kept_only_when_every_constraint_survives(server):
    _Chat.replies = [FAITHFUL, LOSSY]
    records = [{"id": i, "question": TEMPLATE, "constraints": CONSTRAINTS} for i in ("a", "b")]
    out, lost = Rewriter(server).rewrite_all(records)
    assert lost == 1
    assert out[0]["question"] == FAITHFUL and out[0]["question_template"] == TEMPLATE
    assert out[1]["question"] == TEMPLATE


def test_unreachable_server_raises_backend_error():
    with pytest.raises(BackendError, match="rewriter"):
        Rewriter("http://127.0.0.1:9/v1", timeout=2).paraphrase(TEMPLATE)
