"""Can the questions be solved through the env's own steps, and not by one search?

Why both, and why through `env.step`: a scripted oracle that follows a record's evidence
(visit each fact's page with the fact's far end as the goal, see that end named in what the
env shows, then answer) shows the recorded facts are readable by an agent with the env's
tools. A baseline that searches the question and answers with the top hit's title shows the
question cannot be shortcut. Both play whole episodes: reset, tool calls, an answer, a reward.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from wikisim.backends.base import Backend
from wikisim.corpus.page import normalize_title, url_to_title
from wikisim.env import WikiSimEnv
from wikisim.env.tasks import TaskSet, task_from_dict
from wikisim.index import open_index
from wikisim.synth.names import display_name

_HIT = re.compile(r"\((https?://[^)\s]+)\)")


@dataclass(frozen=True)
class SolveRates:
    questions: int
    oracle: float
    search_top1: float
    oracle_failures: dict[str, int]


def task_set(records: Sequence[dict[str, Any]]) -> TaskSet:
    return TaskSet([task_from_dict(r, f"record {i}") for i, r in enumerate(records)], name="synth")


def _visible(obs: str, f: dict[str, Any], own_title: str) -> bool:
    """The fact's far end (the entity, or the value) is named in what the visit showed."""
    if "relation" in f:
        far = f["object"] if f["subject"] == own_title else f["subject"]
        return display_name(far).lower() in obs.lower()
    value = f["value"]
    digits = str(int(value)) if value == int(value) else str(value)
    return digits in obs.replace(",", "")


def oracle_episode(env: WikiSimEnv, record: dict[str, Any]) -> tuple[bool, str]:
    """Visit every evidence fact's page through env.step; answer; (solved, why not)."""
    env.reset(options={"task_id": record["id"]})
    for f in record["evidence_facts"]:
        page = url_to_title(f["url"]) or ""
        far = (
            (f["object"] if f["subject"] == page else f["subject"])
            if "relation" in f
            else f["attribute"]
        )
        obs, *_ = env.step(
            {"name": "visit", "arguments": {"url": f["url"], "goal": display_name(far)}}
        )
        if not _visible(obs, f, page):
            env.step({"name": "answer", "arguments": {"answer": "unknown"}})
            return False, f"fact_not_visible:{f.get('source', 'attribute')}"
    _, reward, done, _, _ = env.step({"name": "answer", "arguments": {"answer": record["answer"]}})
    return (reward >= 1.0 and done), "" if reward >= 1.0 else "wrong_answer"


def search_episode(env: WikiSimEnv, record: dict[str, Any]) -> bool:
    """Search the question, answer with the top hit's title: solved?"""
    env.reset(options={"task_id": record["id"]})
    obs, *_ = env.step({"name": "search", "arguments": {"query": record["question"]}})
    hit = _HIT.search(obs)
    title = (url_to_title(hit.group(1)) or "") if hit else ""
    _, reward, *_ = env.step(
        {"name": "answer", "arguments": {"answer": display_name(title) or "none"}}
    )
    return reward >= 1.0


def search_gives_away(backend: Backend) -> Callable[[dict[str, Any]], bool]:
    """A filter for generate(): does searching the question put the answer's page first?"""

    def gives_away(record: dict[str, Any]) -> bool:
        hits = backend.search([record["question"]], 1)[0]
        if not hits:
            return False
        title = url_to_title(hits[0].url) or hits[0].title
        # the answer page's titles, not every accepted answer: "Atlanta" names the album
        # "Atlanta (album)" but titles the city
        names = [record["answer"], *record.get("aliases", ())]
        return normalize_title(title) in {normalize_title(a) for a in names}

    return gives_away


def solve_rates(index: Any, records: Sequence[dict[str, Any]], **env_kwargs: Any) -> SolveRates:
    """Oracle and search-top-hit rates over records, each an episode of a WikiSimEnv on `index`."""
    env_kwargs.setdefault("retriever", open_index(index).default_retriever)
    env = WikiSimEnv(tasks=task_set(records), index=str(index), python=False, **env_kwargs)
    oracle = top1 = 0
    failures: dict[str, int] = {}
    for r in records:
        ok, why = oracle_episode(env, r)
        oracle += ok
        if not ok:
            failures[why] = failures.get(why, 0) + 1
        top1 += search_episode(env, r)
    n = len(records)
    env.close()
    return SolveRates(
        n, oracle / n if n else 0.0, top1 / n if n else 0.0, dict(sorted(failures.items()))
    )
