"""Trajectory files and their replay: the proof that an episode is reproducible.

A trajectory file is JSONL, one episode per line: manifest hash, package version, env
config, task, seed, and every action with the SHA-256 of the observation it produced.
`replay` re-runs each episode and reports every step whose observation, reward or flags differ.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym

from wikisim import __version__
from wikisim.errors import TaskError

if TYPE_CHECKING:
    from wikisim.env.core import WikiSimEnv

RECORD_FORMAT = 1


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def encode_action(action: Any) -> dict[str, Any]:
    """Actions as JSON without loss: text (lone surrogates survive JSON's \\u escapes), bytes, or JSON."""
    if isinstance(action, str):
        return {"text": action}
    if isinstance(action, bytes):
        return {"bytes_b64": base64.b64encode(action).decode("ascii")}
    return {"json": json.loads(json.dumps(action, default=repr))}


def decode_action(encoded: dict[str, Any]) -> Any:
    if "text" in encoded:
        return encoded["text"]
    if "bytes_b64" in encoded:
        return base64.b64decode(encoded["bytes_b64"])
    return encoded["json"]


@dataclass(frozen=True)
class StepRecord:
    action: dict[str, Any]
    observation_sha256: str
    reward: float
    terminated: bool
    truncated: bool


@dataclass(frozen=True)
class EpisodeRecord:
    manifest_hash: str
    version: str
    task_id: str
    seed: int | None
    env: dict[str, Any]
    reset_sha256: str
    steps: tuple[StepRecord, ...] = ()
    format: int = RECORD_FORMAT

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EpisodeRecord:
        return cls(**{**d, "steps": tuple(StepRecord(**s) for s in d["steps"])})


class RecordEpisodes(gym.Wrapper):
    """Appends one EpisodeRecord per episode to `path` (on the next reset, or on close)."""

    def __init__(self, env: gym.Env, path: str | Path) -> None:
        super().__init__(env)
        self.path = Path(path)
        self._header: dict[str, Any] | None = None
        self._steps: list[StepRecord] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._flush()
        obs, info = self.env.reset(seed=seed, options=options)
        base = cast("WikiSimEnv", self.env.unwrapped)
        self._header = {
            "manifest_hash": base.manifest_hash,
            "version": __version__,
            "task_id": info["task_id"],
            "seed": seed,
            "env": {**base.config.to_dict(), "tasks_name": base.tasks.name},
            "reset_sha256": digest(obs),
        }
        return obs, info

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._steps.append(
            StepRecord(
                encode_action(action), digest(obs), float(reward), bool(terminated), bool(truncated)
            )
        )
        return obs, reward, terminated, truncated, info

    def _flush(self) -> None:
        if self._header is not None:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(EpisodeRecord(**self._header, steps=tuple(self._steps)).to_json() + "\n")
        self._header, self._steps = None, []

    def close(self) -> None:
        self._flush()
        super().close()


def read_records(path: str | Path) -> list[EpisodeRecord]:
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append(EpisodeRecord.from_dict(json.loads(line)))
                except (ValueError, TypeError, KeyError) as e:
                    raise TaskError(
                        f"{path}:{n} is not a trajectory record ({e}); write them with RecordEpisodes"
                    ) from e
    return out


@dataclass(frozen=True)
class Difference:
    episode: int
    step: int  # 0 is the reset observation
    what: str  # "manifest_hash" | "version" | "observation" | "reward" | "terminated" | "truncated"
    expected: Any
    got: Any

    def __str__(self) -> str:
        return f"episode {self.episode} step {self.step}: {self.what} differs: recorded {self.expected!r}, replayed {self.got!r}"


@dataclass(frozen=True)
class ReplayReport:
    episodes: int
    steps: int
    differences: tuple[Difference, ...] = field(default=())

    @property
    def identical(self) -> bool:
        return not self.differences


def _replay_episode(env: Any, i: int, rec: EpisodeRecord) -> list[Difference]:
    diffs = []
    if env.manifest_hash != rec.manifest_hash:
        diffs.append(Difference(i, 0, "manifest_hash", rec.manifest_hash, env.manifest_hash))
    if rec.version != __version__:
        diffs.append(Difference(i, 0, "version", rec.version, __version__))
    obs, _ = env.reset(seed=rec.seed, options={"task_id": rec.task_id})
    if digest(obs) != rec.reset_sha256:
        diffs.append(Difference(i, 0, "observation", rec.reset_sha256, digest(obs)))
    for n, s in enumerate(rec.steps, 1):
        obs, reward, terminated, truncated, _ = env.step(decode_action(s.action))
        got = {
            "observation": digest(obs),
            "reward": float(reward),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
        }
        want = {
            "observation": s.observation_sha256,
            "reward": s.reward,
            "terminated": s.terminated,
            "truncated": s.truncated,
        }
        diffs += [Difference(i, n, k, want[k], got[k]) for k in want if want[k] != got[k]]
    return diffs


def replay(path: str | Path, **overrides: Any) -> ReplayReport:
    """Re-run every episode of a trajectory file; `overrides` replace recorded env config (e.g. index=)."""
    from wikisim.env.config import EnvConfig
    from wikisim.env.core import WikiSimEnv

    records = read_records(path)
    envs: dict[str, WikiSimEnv] = {}
    diffs: list[Difference] = []
    for i, rec in enumerate(records):
        config = EnvConfig.from_dict({**rec.env, **overrides})
        if config.tasks is None and rec.env.get("tasks_name") not in (None, "sample"):
            raise TaskError(
                f"episode {i} used the task set {rec.env['tasks_name']!r} given as an object; "
                "pass its file with --tasks"
            )
        key = json.dumps(config.to_dict(), sort_keys=True, default=str)
        if key not in envs:
            envs[key] = WikiSimEnv(config)
        diffs += _replay_episode(envs[key], i, rec)
    for env in envs.values():
        env.close()
    return ReplayReport(len(records), sum(len(r.steps) for r in records), tuple(diffs))
