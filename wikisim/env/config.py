"""`EnvConfig`: everything that decides what a WikiSim-v0 episode observes and how it is scored.

One frozen config, used by the env, `wikisim eval`, `wikisim train`, sweeps and replay, with one
documented default per setting (the paper's where the paper has one). Runtime objects (a task
set held in memory, a backend built elsewhere) are not settings: they are passed to the env
beside its config.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from wikisim.backends.base import Backend
from wikisim.backends.cache import CacheMode
from wikisim.backends.factory import make_backend
from wikisim.checks import at_least, check_literals
from wikisim.errors import ConfigError
from wikisim.flags import config_to_dict
from wikisim.index.base import (
    DEFAULT_RETRIEVER,
    DENSE_RETRIEVERS,
    MIN_SNIPPET_CHARS,
    SNIPPET_CHARS,
    RetrieverName,
)

BackendName = Literal["wiki", "remote", "web"]
RewardName = Literal["em", "f1", "judge"]
PromptName = Literal["full", "compact"]

#: Keys older trajectory records carry that are not settings.
_RECORD_ONLY = frozenset({"tasks_name"})


@dataclass(frozen=True)
class EnvConfig:
    """The settings of WikiSim-v0.

    Attributes:
        index: a built index directory, or the name of a bundled index built once into the cache:
            "sample" (the 2014 sample) or "sample-qa" (it plus the bundled HotpotQA and MuSiQue
            corpora) (None: "sample").
        tasks: task files: our JSONL, HotpotQA, MuSiQue, NQ, ..., several joined by commas, each
            optionally sliced `[a:b]` (see `wikisim.env.tasks.load_tasks`; None: the bundled
            sample tasks).
        max_turns: policy turns before the episode is truncated without an answer reward.
        max_observation_tokens: observation tokens (words and punctuation marks) per episode;
            the step that crosses it is the last, truncated.
        reward: "em" | "f1" | "judge" (the judge needs `judge`).
        backend: "wiki" (the local index) | "remote" (a `wikisim serve` at `url`) | "web".
        url: the `wikisim serve` address of the remote backend.
        cache_mode, cache_path: the backend's tool cache: "off" | "read-write" | "replay-only"
            (None: the backend's default: off for wiki and remote, read-write for web) and its
            SQLite file (None: one per backend in the cache dir).
        retriever: the wiki backend's retriever.
        search_k: results per search query.
        snippet_chars: characters of each search result's snippet (the wiki backend makes
            them; a remote server's and a web engine's snippets are their own).
        visit_tokens: token budget of each visited page's extract.
        prompt: the system prompt: the paper's ("full"), or "compact" (one line per tool, same
            turn format) for small models on small contexts.
        python: include the python sandbox tool (None: when it is installed).
        python_limits: the sandbox's limits (SandboxConfig fields: wall_seconds, memory_mb, ...).
        judge: {"base_url", "model", ...} of the LLM judge's chat server (reward="judge").
        date: "Current date" of the system prompt (None: the manifest's date, else none).
    """

    index: str | None = None
    tasks: str | None = None
    max_turns: int = 30
    max_observation_tokens: int = 100_000
    reward: RewardName = "em"
    backend: BackendName = "wiki"
    url: str | None = None
    cache_mode: CacheMode | None = None
    cache_path: str | None = None
    retriever: RetrieverName = DEFAULT_RETRIEVER
    search_k: int = 10
    snippet_chars: int = SNIPPET_CHARS
    visit_tokens: int = 1500
    prompt: PromptName = "full"
    python: bool | None = None
    python_limits: Mapping[str, Any] | None = None
    judge: Mapping[str, Any] | None = None
    date: str | None = None

    def __post_init__(self) -> None:
        for name in (
            "index",
            "tasks",
            "cache_path",
        ):  # paths are recorded as text, whatever a caller passed
            value = getattr(self, name)
            if isinstance(value, os.PathLike):
                object.__setattr__(self, name, os.fspath(value))
        check_literals(self)
        at_least(
            "EnvConfig",
            1,
            max_turns=self.max_turns,
            max_observation_tokens=self.max_observation_tokens,
            search_k=self.search_k,
            visit_tokens=self.visit_tokens,
        )
        at_least("EnvConfig", MIN_SNIPPET_CHARS, snippet_chars=self.snippet_chars)
        if self.reward == "judge" and self.judge is None:
            raise ConfigError(
                'EnvConfig.reward="judge" needs judge={"base_url": ..., "model": ...}'
            )
        if self.url is not None and self.backend != "remote":
            raise ConfigError(
                f"EnvConfig.url={self.url!r} is the remote backend's address; backend={self.backend!r}"
            )

    def replace(self, **changes: Any) -> EnvConfig:
        """A copy with some settings changed (checked again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able settings: what trajectory records and results carry."""
        return config_to_dict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> EnvConfig:
        """The config a record or a YAML file describes; an unknown key is an error that names it."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known - _RECORD_ONLY)
        if unknown:
            raise ConfigError(f"unknown env setting(s) {unknown}; known: {sorted(known)}")
        return cls(**{k: v for k, v in values.items() if k in known})


def resolve_index(config: EnvConfig) -> EnvConfig:
    """The wiki backend's index made a built path: a bundled index's (the sample when none is set)."""
    from wikisim.index.build import BUNDLED_INDEXES, ensure_bundled_index

    if config.backend != "wiki" or (
        config.index is not None and config.index not in BUNDLED_INDEXES
    ):
        return config
    built = ensure_bundled_index(
        config.index or "sample", dense=config.retriever in DENSE_RETRIEVERS
    )
    return config.replace(index=str(built))


def open_backend(config: EnvConfig, backend_kwargs: Mapping[str, Any] | None = None) -> Backend:
    """The backend `config` names, built (its caller closes it)."""
    kwargs = dict(backend_kwargs or {})
    kwargs |= {
        k: getattr(config, k)
        for k in ("url", "cache_mode", "cache_path")
        if getattr(config, k) is not None
    }
    if config.backend == "wiki":
        kwargs |= {
            "index": resolve_index(config).index,
            "retriever": config.retriever,
            "snippet_chars": config.snippet_chars,
        }
    elif config.snippet_chars != SNIPPET_CHARS:
        raise ConfigError(
            f"EnvConfig.snippet_chars={config.snippet_chars} needs the wiki backend: the "
            f"{config.backend} backend's snippets are made by its server or search engine"
        )
    return make_backend(config.backend, **kwargs)
