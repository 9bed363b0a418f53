"""Any OpenAI-compatible chat-completions server as a policy (vLLM, SGLang, llama.cpp, hosted).

With `token_in=True` (RL) a turn is one `/completions` call whose prompt is the episode's
exact token ids and whose reply carries the sampled ids (`return_token_ids`, vLLM's field)
and their log-probabilities: nothing is re-tokenised on either side. Otherwise the chat
messages are sent and the reply's text is kept.

Requests for one batch run concurrently on a thread pool; each one retries timeouts,
connection errors, 429, 5xx and malformed bodies with exponential backoff (tenacity), so a
flaky server slows a rollout down but never loses an episode. Servers strip the stop string
from the content; it is put back so the env sees a complete `</tool_call>` or `</answer>`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from agent.rollout.react import ChatFormat, Generation, TurnRequest
from wikisim.errors import BackendError, ConfigError
from wikisim.tools.protocol import STOP_STRINGS, close_stopped


class RetryableError(BackendError):
    """A reply worth retrying: 429, 5xx, or a body that is not a chat completion."""


@dataclass(frozen=True)
class OpenAIConfig:
    """Attributes:
    base_url: up to and including `/v1`, e.g. `http://127.0.0.1:8000/v1`.
    model: the model name the server expects.
    api_key: sent as a bearer token when set.
    temperature, top_p: sampling; the per-turn seed is always sent.
    presence_penalty: sent where not 0 (Tongyi DeepResearch's harness sends 1.1).
    timeout_s: per request (connect + read).
    max_attempts: attempts per request, the first included.
    backoff_s: first wait between attempts; doubles up to `max_backoff_s`.
    concurrency: requests in flight at once.
    token_in: send the episode's token ids to `/completions` and keep the ids and
        log-probs the server sampled (needs a `chat` on the policy and a server that
        accepts token prompts and `return_token_ids`: vLLM, SGLang, `agent.rollout.model_server`).
    """

    base_url: str
    model: str
    api_key: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    presence_penalty: float = 0.0
    timeout_s: float = 60.0
    max_attempts: int = 6
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    concurrency: int = 8
    token_in: bool = False

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url={self.base_url!r} must start with http:// or https://")
        if (
            self.timeout_s <= 0
            or self.max_attempts < 1
            or self.concurrency < 1
            or self.backoff_s < 0
        ):
            raise ConfigError(
                f"timeout_s={self.timeout_s}, max_attempts={self.max_attempts}, concurrency={self.concurrency}, "
                f"backoff_s={self.backoff_s}: need timeout_s > 0, max_attempts >= 1, concurrency >= 1, backoff_s >= 0"
            )


class OpenAIPolicy:
    """Chat completions over HTTP; `chat` (optional) gives trajectories token ids in a local tokenizer."""

    def __init__(
        self, config: OpenAIConfig, *, name: str | None = None, chat: ChatFormat | None = None
    ):
        self.config = config
        self.name = name or f"openai:{config.model}"
        self.chat = chat
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = httpx.Client(
            base_url=config.base_url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(config.timeout_s),
            limits=httpx.Limits(max_connections=config.concurrency),
        )
        self.attempts = 0  # total HTTP attempts, retries included (read by tests and benchmarks)

    def close(self) -> None:
        self._client.close()

    def act(self, requests: Sequence[TurnRequest]) -> list[Generation]:
        with ThreadPoolExecutor(max_workers=self.config.concurrency) as pool:
            return list(pool.map(self._complete, requests))

    def _complete(self, request: TurnRequest) -> Generation:
        cfg = self.config
        retrying = Retrying(
            stop=stop_after_attempt(cfg.max_attempts),
            wait=wait_exponential(multiplier=cfg.backoff_s, max=cfg.max_backoff_s),
            retry=retry_if_exception_type(
                (httpx.TimeoutException, httpx.TransportError, RetryableError)
            ),
            reraise=True,
        )
        if cfg.token_in and not request.ids:
            raise ConfigError(
                "OpenAIConfig.token_in needs token contexts: give the policy a chat format (tokenizer)"
            )
        try:
            return retrying(self._post, request)
        except (httpx.HTTPError, RetryableError) as e:
            raise BackendError(
                f"{cfg.base_url}: no valid {'' if cfg.token_in else 'chat '}completion after {cfg.max_attempts} attempts ({e!r}); "
                "check the server, or raise max_attempts / timeout_s"
            ) from e

    def _post(self, request: TurnRequest) -> Generation:
        cfg = self.config
        self.attempts += 1
        body: dict[str, Any] = {
            "model": cfg.model,
            "temperature": cfg.temperature,
            "top_p": cfg.top_p,
            "max_tokens": request.max_new_tokens,
            "stop": list(STOP_STRINGS),
            "seed": request.seed,
        }
        if cfg.presence_penalty:
            body["presence_penalty"] = cfg.presence_penalty
        if cfg.token_in:
            body.update(prompt=list(request.ids), return_token_ids=True, logprobs=1)
        else:
            body["messages"] = list(request.messages)
        route = "/completions" if cfg.token_in else "/chat/completions"
        response = self._client.post(route, json=body)
        if response.status_code == 429 or response.status_code >= 500:
            raise RetryableError(f"HTTP {response.status_code}: {response.text[:200]}")
        if response.status_code != 200:
            raise BackendError(
                f"{cfg.base_url}{route} answered HTTP {response.status_code}: {response.text[:300]}; "
                "check model name, api_key and request"
            )
        return (
            _sampled(response)
            if cfg.token_in
            else Generation(text=close_stopped(_content(response)))
        )


def _content(response: httpx.Response) -> str:
    try:
        data: Any = response.json()
        content = data["choices"][0]["message"]["content"]
    except (json.JSONDecodeError, KeyError, IndexError, TypeError) as e:
        raise RetryableError(f"malformed chat completion body {response.text[:200]!r}") from e
    if not isinstance(content, str):
        raise RetryableError(f"chat completion content is {type(content).__name__}, not a string")
    return content


def _sampled(response: httpx.Response) -> Generation:
    """The sampled ids and log-probs of a `/completions` reply made with `return_token_ids`."""
    try:
        choice = response.json()["choices"][0]
        ids, logprobs = choice["token_ids"], choice["logprobs"]["token_logprobs"]
        return Generation(
            text=choice.get("text") or "",
            ids=tuple(int(i) for i in ids),
            logprobs=tuple(float(x) for x in logprobs),
        )
    except (json.JSONDecodeError, KeyError, IndexError, TypeError, ValueError) as e:
        raise RetryableError(
            f"completion without token_ids and token_logprobs {response.text[:200]!r}"
        ) from e
