"""WikiSim-v0: a Gymnasium environment in which a deep-research agent acts exactly as on the web.

The action is the policy's raw turn (Tongyi DeepResearch format) or a dict call; the
observation is the question after `reset` and the tool responses after each `step`. Every
observation is a pure function of (index, task, action sequence): no wall clock, no
randomness after `reset`, so episodes replay byte for byte in any process.

    import gymnasium as gym, wikisim
    env = gym.make("WikiSim-v0")                      # bundled sample corpus and tasks
    question, info = env.reset(seed=0)                # info["system_prompt"], info["tools"]
    obs, reward, terminated, truncated, info = env.step(
        '<tool_call>{"name": "search", "arguments": {"query": "Apollo 11"}}</tool_call>')

Vector envs: `AsyncVectorEnv(fns, shared_memory=False)`; Gymnasium's shared memory for
`Text` spaces stores character indices of a fixed charset, which free text does not have.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from wikisim import ENV_ID, __version__, register_envs
from wikisim.backends.base import Backend
from wikisim.backends.cache import CacheMode
from wikisim.backends.factory import make_backend
from wikisim.backends.llm import ChatClient, ChatConfig
from wikisim.env.prompts import system_prompt
from wikisim.env.reward import REWARDS, Judge, answer_metrics, score
from wikisim.env.tasks import Task, TaskSet, load_tasks
from wikisim.errors import ConfigError
from wikisim.text import count_tokens
from wikisim.tools.action import MAX_ACTION_CHARS, Action, CallError, parse_action
from wikisim.tools.registry import ToolBox, default_toolbox

__all__ = ["ENV_ID", "AnyText", "WikiSimEnv", "register_envs"]

#: Printable characters the spaces sample from (any text is *contained*; see AnyText).
_SAMPLE_CHARSET = "".join(chr(c) for c in range(32, 127)) + "\n\téüß中文Ωπ"
MAX_OBSERVATION_CHARS = 1 << 22


class AnyText(spaces.Text):
    """A `Text` space that contains every string (any Unicode text within the length bounds).

    Gymnasium's `Text` checks membership against an explicit charset; all of Unicode as a
    charset costs ~280 MB and a second per instance, so membership is overridden instead and
    the charset only drives `sample()`. Strings with unpaired surrogates are not text and are
    not contained.
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | None = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        if not isinstance(x, str) or not self.min_length <= len(x) <= self.max_length:
            return False
        try:
            x.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyText) and (self.min_length, self.max_length) == (other.min_length, other.max_length)

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"


def _wrap(text: str) -> str:
    return f"<tool_response>\n{text}\n</tool_response>"


class WikiSimEnv(gym.Env[str, str | dict]):
    """Deep research over a Wikipedia dump: search, visit, scholar, python, answer.

    Args:
        index: a built index directory (default: the bundled 2014 sample, built once into the cache).
        tasks: a task file (our JSONL, HotpotQA, MuSiQue or NQ JSONL) or a TaskSet (default: bundled).
        max_turns: steps before the episode is truncated without an answer reward.
        max_observation_tokens: total observation tokens (words and punctuation marks) per episode;
            the step that crosses it is the last, truncated.
        reward: "em" | "f1" | "judge" (the judge needs `judge=ChatConfig(...)` or its dict).
        backend: "wiki" | "remote" | "web", or a Backend instance.
        backend_kwargs: keyword arguments for a named backend (e.g. `config=ExecutorConfig(...)`).
        url: shorthand for `backend_kwargs={"url": url}` (the `wikisim serve` address of "remote").
        cache_mode / cache_path: the tool cache of a named backend, the same for all three:
            "off" | "read-write" | "replay-only" (None: the backend's default, off for wiki and
            remote, read-write for web) and its SQLite file (None: one per backend in the cache dir).
        retriever: the wiki backend's retriever: "bm25s" | "lucene" | "dense" | "hybrid".
        search_k: results per search query. visit_tokens: token budget of each visited page.
        python: include the python sandbox tool (None: when installed).
        python_limits: the sandbox's limits (SandboxConfig fields: wall_seconds, memory_mb, ...).
        date: "Current date" of the system prompt (default: the manifest's "date", else none).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        index: str | Path | None = None,
        tasks: str | Path | TaskSet | None = None,
        *,
        max_turns: int = 30,
        max_observation_tokens: int = 100_000,
        reward: str = "em",
        backend: str | Backend = "wiki",
        backend_kwargs: dict[str, Any] | None = None,
        url: str | None = None,
        cache_mode: CacheMode | None = None,
        cache_path: str | Path | None = None,
        retriever: str = "bm25s",
        search_k: int = 10,
        visit_tokens: int = 1500,
        python: bool | None = None,
        python_limits: dict[str, Any] | None = None,
        judge: ChatConfig | dict[str, Any] | None = None,
        date: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        if max_turns < 1 or max_observation_tokens < 1:
            raise ConfigError(f"max_turns and max_observation_tokens must be >= 1, got {max_turns} and {max_observation_tokens}")
        if reward not in REWARDS:
            raise ConfigError(f"reward must be one of {REWARDS}, got {reward!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ConfigError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.tasks = load_tasks(tasks)
        #: what `wikisim replay` needs to rebuild this env (see wikisim.env.replay)
        self.config: dict[str, Any] = {
            "tasks": None if tasks is None or isinstance(tasks, TaskSet) else str(tasks), "tasks_name": self.tasks.name,
            "max_turns": max_turns, "max_observation_tokens": max_observation_tokens, "reward": reward,
            "backend": backend if isinstance(backend, str) else backend.name, "retriever": retriever,
            "search_k": search_k, "visit_tokens": visit_tokens, "python": python, "python_limits": python_limits,
            "date": date, "cache_mode": cache_mode, "cache_path": None if cache_path is None else str(cache_path),
        }
        backend_kwargs = dict(backend_kwargs or {})
        shorthands = {"url": url, "cache_mode": cache_mode, "cache_path": cache_path}
        backend_kwargs |= {k: v for k, v in shorthands.items() if v is not None}
        if backend_kwargs and not isinstance(backend, str):
            raise ConfigError(f"{sorted(backend_kwargs)} configure a named backend; backend={backend.name!r} is an "
                              "instance: configure it where it is built")
        self.backend = self._backend(backend, index, retriever, backend_kwargs)
        self.toolbox: ToolBox = default_toolbox(self.backend, k=search_k, visit_tokens=visit_tokens, python=python,
                                                python_limits=python_limits)
        self._parameters = self.toolbox.parameters
        self.reward_kind = reward
        if isinstance(judge, dict):
            judge = ChatConfig(**judge)
        self.judge = Judge(ChatClient(judge)) if judge is not None else None
        if reward == "judge" and self.judge is None:
            raise ConfigError('reward="judge" needs judge=ChatConfig(base_url=..., model=...) or its dict')
        self.max_turns = max_turns
        self.max_observation_tokens = max_observation_tokens
        self.render_mode = render_mode
        self.manifest_hash: str = self.backend.manifest_hash
        built = getattr(self.backend, "index", None)
        self.config["index"] = str(built.path) if built is not None else (None if index is None else str(index))
        manifest = getattr(built, "manifest", {})
        self.date = date if date is not None else str(manifest.get("date", ""))
        self.system_prompt = system_prompt(self.toolbox.schemas, self.date)
        self.observation_space = AnyText(MAX_OBSERVATION_CHARS)
        self.action_space = AnyText(MAX_ACTION_CHARS)
        self.task: Task | None = None
        self._done = True
        self._last = ""

    @staticmethod
    def _backend(backend: str | Backend, index: str | Path | None, retriever: str, kwargs: dict[str, Any]) -> Backend:
        if not isinstance(backend, str):
            return backend
        if backend == "wiki":
            if index is None:
                from wikisim.index.build import ensure_sample_index

                index = ensure_sample_index()
            return make_backend("wiki", index=index, retriever=retriever, **kwargs)
        return make_backend(backend, **kwargs)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        if "task_id" in options:
            self.task = self.tasks.get(str(options["task_id"]))
        else:
            self.task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        self._turn = 0
        self._obs_tokens = count_tokens(self.task.question)
        self._counts = {"calls": 0, "errors": 0, "malformed": 0}
        self._done = False
        self._last = self.task.question
        info = {
            "task_id": self.task.id,
            "tools": self.toolbox.schemas,
            "system_prompt": self.system_prompt,
            "manifest_hash": self.manifest_hash,
            "version": __version__,
        }
        return self.task.question, info

    def step(self, action: str | dict) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done or self.task is None:
            obs = _wrap("Error: the episode has ended (or never started); call reset() before step().")
            return obs, 0.0, True, False, {"error": "step after the episode ended", "manifest_hash": self.manifest_hash}
        self._turn += 1
        parsed = parse_action(action, self._parameters)
        info: dict[str, Any] = {"turn": self._turn, "task_id": self.task.id, "manifest_hash": self.manifest_hash}
        if parsed.answer is not None:
            return self._finish(parsed, info)
        obs, step_info = self._run(parsed)
        info.update(step_info)
        self._obs_tokens += count_tokens(obs)
        truncated = self._turn >= self.max_turns or self._obs_tokens > self.max_observation_tokens
        if truncated:
            self._done = True
            info["truncation"] = "max_turns" if self._turn >= self.max_turns else "max_observation_tokens"
        info.update(observation_chars=len(obs), observation_tokens_total=self._obs_tokens, **self._episode_counts())
        self._last = obs
        return obs, 0.0, False, truncated, info

    def _run(self, parsed: Action) -> tuple[str, dict[str, Any]]:
        responses, calls, latency = [], [], {}
        errors = malformed = 0
        for item in parsed.items:
            if isinstance(item, CallError):
                responses.append(_wrap(item.message))
                malformed += 1
                continue
            result = self.toolbox.run(item.name, item.arguments)
            responses.append(_wrap(result.text))
            calls.append({"name": item.name, "arguments": item.arguments})
            latency[item.name] = latency.get(item.name, 0.0) + result.latency_s
            errors += not result.ok
        self._counts["calls"] += len(calls)
        self._counts["errors"] += errors + malformed
        self._counts["malformed"] += malformed
        info = {"tool_calls": calls, "latency_s": latency, "calls": len(calls),
                "errors": errors + malformed, "malformed": malformed}
        pop_trace = getattr(self.backend, "pop_trace", None)
        if pop_trace is not None:  # an executor-wrapped backend: retries, fallbacks, cache hits
            info["backend_trace"] = [record.as_dict() for record in pop_trace()]
        return "\n".join(responses), info

    def _finish(self, parsed: Action, info: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        task, answer = self.task, parsed.answer or ""
        reward = score(self.reward_kind, task.question, answer, task.answers, self.judge) if task else 0.0
        self._done = True
        self._last = ""
        info.update(answer=answer, **answer_metrics(answer, task.answers if task else ()),
                    tool_calls=[], latency_s={}, calls=0, errors=0, malformed=0, observation_chars=0,
                    observation_tokens_total=self._obs_tokens, **self._episode_counts())
        return "", float(reward), True, False, info

    def _episode_counts(self) -> dict[str, int]:
        return {f"episode_{k}": v for k, v in self._counts.items()}

    def render(self) -> str | None:
        return self._last if self.render_mode == "ansi" else None

    def close(self) -> None:
        super().close()

