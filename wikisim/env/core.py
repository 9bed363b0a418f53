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
Over an index past 500k passages, set WIKISIM_SEARCH_THREADS=1 in the workers' environment:
each would otherwise search Lucene's segments on every core.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from wikisim import ENV_ID, __version__, register_envs
from wikisim.backends.base import Backend
from wikisim.backends.llm import ChatClient, ChatConfig
from wikisim.env.config import EnvConfig, open_backend, resolve_index
from wikisim.env.prompts import make_system_prompt
from wikisim.env.reward import Judge, answer_metrics, score
from wikisim.env.tasks import Task, TaskSet, load_tasks
from wikisim.errors import ConfigError
from wikisim.text import count_tokens
from wikisim.tools.protocol import (
    MAX_ACTION_CHARS,
    Action,
    CallError,
    join_observations,
    parse_turn,
    wrap_observation,
)
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
        return isinstance(other, AnyText) and (self.min_length, self.max_length) == (
            other.min_length,
            other.max_length,
        )

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"


class WikiSimEnv(gym.Env[str, str | dict]):
    """Deep research over a Wikipedia dump: search, visit, scholar, python, answer.

    Args:
        config: the env's settings (`EnvConfig`; its docstring documents every default).
        tasks: a TaskSet held in memory instead of `config.tasks` (a file path also works).
        backend: a Backend built elsewhere (shared by several envs): its builder closes it;
            without one the env builds `config.backend` and closes it in `close()`.
        backend_kwargs: keyword arguments for the backend the env builds (e.g. `config=ExecutorConfig(...)`).
        render_mode: None or "ansi".
        **settings: `EnvConfig` fields overriding `config` (what `gym.make("WikiSim-v0", max_turns=8)` passes).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        config: EnvConfig | None = None,
        *,
        tasks: str | Path | TaskSet | None = None,
        backend: str | Backend | None = None,
        backend_kwargs: Mapping[str, Any] | None = None,
        render_mode: str | None = None,
        **settings: Any,
    ) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ConfigError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        config = config or EnvConfig()
        if isinstance(tasks, str | Path):
            settings["tasks"] = tasks
        if isinstance(backend, str):
            settings["backend"] = backend
        config = config.replace(**settings) if settings else config
        self.tasks = tasks if isinstance(tasks, TaskSet) else load_tasks(config.tasks)
        if isinstance(backend, Backend):
            own = sorted(
                k for k in ("url", "cache_mode", "cache_path") if getattr(config, k) is not None
            )
            if backend_kwargs or own:
                raise ConfigError(
                    f"{sorted(backend_kwargs or {}) + own} configure a backend the env builds; "
                    f"backend={backend.name!r} is an instance: configure it where it is built"
                )
            self.backend, self._owns_backend = backend, False
            config = config.replace(backend=backend.name)
        else:
            config = resolve_index(config)
            self.backend, self._owns_backend = open_backend(config, backend_kwargs), True
        #: the settings this env runs with (what `wikisim replay` rebuilds it from)
        self.config = config
        self.toolbox: ToolBox = default_toolbox(
            self.backend,
            k=config.search_k,
            visit_tokens=config.visit_tokens,
            python=config.python,
            python_limits=dict(config.python_limits or {}),
        )
        self._parameters = self.toolbox.parameters
        self.judge = (
            Judge(ChatClient(ChatConfig(**config.judge))) if config.judge is not None else None
        )
        self.manifest_hash: str = self.backend.manifest_hash
        self.date = (
            config.date if config.date is not None else str(self.backend.manifest().get("date", ""))
        )
        self.system_prompt = make_system_prompt(config.prompt, self.toolbox.schemas, self.date)
        self.render_mode = render_mode
        self.observation_space = AnyText(MAX_OBSERVATION_CHARS)
        self.action_space = AnyText(MAX_ACTION_CHARS)
        self.task: Task | None = None
        self._done = True
        self._last = ""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
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
            "reward": self.config.reward,
            "version": __version__,
        }
        return self.task.question, info

    def step(self, action: str | dict) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done or self.task is None:
            obs = wrap_observation(
                "Error: the episode has ended (or never started); call reset() before step()."
            )
            return (
                obs,
                0.0,
                True,
                False,
                {"error": "step after the episode ended", "manifest_hash": self.manifest_hash},
            )
        self._turn += 1
        parsed = parse_turn(action, self._parameters)
        info: dict[str, Any] = {
            "turn": self._turn,
            "task_id": self.task.id,
            "manifest_hash": self.manifest_hash,
        }
        if parsed.answer is not None:
            return self._finish(parsed, info)
        obs, step_info = self._run(parsed)
        info.update(step_info)
        self._obs_tokens += count_tokens(obs)
        truncated = (
            self._turn >= self.config.max_turns
            or self._obs_tokens > self.config.max_observation_tokens
        )
        if truncated:
            self._done = True
            info["truncation"] = (
                "max_turns" if self._turn >= self.config.max_turns else "max_observation_tokens"
            )
        info.update(
            observation_chars=len(obs),
            observation_tokens_total=self._obs_tokens,
            **self._episode_counts(),
        )
        self._last = obs
        return obs, 0.0, False, truncated, info

    def _run(self, parsed: Action) -> tuple[str, dict[str, Any]]:
        responses: list[str] = []
        calls: list[dict[str, Any]] = []
        latency: dict[str, float] = {}
        errors = malformed = 0
        for item in parsed.items:
            if isinstance(item, CallError):
                responses.append(item.message)
                malformed += 1
                continue
            result = self.toolbox.run(item)
            responses.append(result.text)
            calls.append({"name": item.name, "arguments": item.arguments})
            latency[item.name] = latency.get(item.name, 0.0) + result.latency_s
            errors += not result.ok
        self._counts["calls"] += len(calls)
        self._counts["errors"] += errors + malformed
        self._counts["malformed"] += malformed
        info = {
            "tool_calls": calls,
            "latency_s": latency,
            "calls": len(calls),
            "errors": errors + malformed,
            "malformed": malformed,
        }
        trace = self.backend.trace()
        if trace:  # an executor's retries, fallbacks and cache hits
            info["backend_trace"] = [record.as_dict() for record in trace]
        return join_observations(responses), info

    def _finish(
        self, parsed: Action, info: dict[str, Any]
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        task, answer = self.task, parsed.answer or ""
        reward = (
            score(self.config.reward, task.question, answer, task.answers, self.judge)
            if task
            else 0.0
        )
        self._done = True
        self._last = ""
        info.update(
            answer=answer,
            **answer_metrics(answer, task.answers if task else ()),
            tool_calls=[],
            latency_s={},
            calls=0,
            errors=0,
            malformed=0,
            observation_chars=0,
            observation_tokens_total=self._obs_tokens,
            **self._episode_counts(),
        )
        return "", float(reward), True, False, info

    def _episode_counts(self) -> dict[str, int]:
        return {f"episode_{k}": v for k, v in self._counts.items()}

    def render(self) -> str | None:
        return self._last if self.render_mode == "ansi" else None

    def close(self) -> None:
        if self._owns_backend:
            self.backend.close()
            self._owns_backend = False
        super().close()
