"""wikisim for TRL: an environment class for `GRPOTrainer(environment_factory=...)`.

TRL builds one instance per rollout, calls `reset(**row)` with the dataset row, exposes the
public methods as tools (their schemas from the type hints and Google-style docstrings, by
`transformers.utils.get_json_schema`) and scores the rollout with `get_reward()`. The tools
answer with the env's own observation text (the env's toolbox over one shared backend), and
the gold answers stay in the environment: the model sees the question and the observations.

    from wikisim.integrations.trl_env import environment_factory, trl_dataset
    factory = environment_factory(index="data/index/sample")
    trainer = GRPOTrainer(model, args=..., train_dataset=trl_dataset(factory.tasks),
                          environment_factory=factory)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from wikisim.env.reward import score
from wikisim.env.tasks import Task, TaskSet, load_tasks
from wikisim.errors import TaskError
from wikisim.index.base import DEFAULT_RETRIEVER, DENSE_RETRIEVERS, RetrieverName
from wikisim.tools.registry import ToolBox, default_toolbox


class WikiSimTRLEnv:
    """One rollout: the task named by the row's `task_id`, the env's tools, and the answer reward."""

    def __init__(self, toolbox: ToolBox, tasks: TaskSet, reward: str = "em") -> None:
        self._toolbox, self._tasks, self._reward = toolbox, tasks, reward
        self._task: Task | None = None
        self._answer: str | None = None

    def reset(self, **row: Any) -> None:
        """Start the rollout of the row's task (its `task_id` column); the prompt already holds the question."""
        if "task_id" not in row:
            raise TaskError(
                f"a TRL dataset row needs a 'task_id' column naming a task; got columns {sorted(row)}"
            )
        self._task = self._tasks.get(str(row["task_id"]))
        self._answer = None

    def search(self, query: str) -> str:
        """Search the web: the top results (title, URL, snippet) for the query.

        Args:
            query: What to search for.

        Returns:
            The results as a numbered Markdown list.
        """
        return self._toolbox.call("search", {"query": query}).text

    def visit(self, url: str, goal: str) -> str:
        """Visit a webpage and return the parts of it relevant to the goal.

        Args:
            url: The URL (or page title) to visit.
            goal: The specific information wanted from the page.

        Returns:
            The page's lead and its passages most relevant to the goal.
        """
        return self._toolbox.call("visit", {"url": url, "goal": goal}).text

    def scholar(self, query: str) -> str:
        """Search the works that the corpus's pages cite (title, authors, year, venue, citing pages).

        Args:
            query: What to search for.

        Returns:
            The matching works as a numbered Markdown list.
        """
        return self._toolbox.call("scholar", {"query": query}).text

    def answer(self, answer: str) -> str:
        """Give the final answer to the question; the last answer given is the one scored.

        Args:
            answer: The final answer, as short as possible.

        Returns:
            A confirmation.
        """
        self._answer = answer
        return "Answer recorded."

    def get_reward(self) -> float:
        """The env's answer reward (exact match by default) of the last answer; 0 without one."""
        if self._task is None:
            raise TaskError(
                "get_reward() before reset(): TRL resets an environment before each rollout"
            )
        if self._answer is None:
            return 0.0
        return score(self._reward, self._task.question, self._answer, self._task.answers)


class EnvironmentFactory:
    """`factory()` -> a fresh `WikiSimTRLEnv` sharing one loaded index and task set (TRL calls it per rollout)."""

    def __init__(self, toolbox: ToolBox, tasks: TaskSet, reward: str = "em") -> None:
        self.toolbox, self.tasks, self.reward = toolbox, tasks, reward

    def __call__(self) -> WikiSimTRLEnv:
        return WikiSimTRLEnv(self.toolbox, self.tasks, self.reward)


def environment_factory(
    index: str | Path | None = None,
    tasks: str | Path | TaskSet | None = None,
    *,
    retriever: RetrieverName = DEFAULT_RETRIEVER,
    search_k: int = 10,
    visit_tokens: int = 1500,
    reward: str = "em",
) -> EnvironmentFactory:
    """Load the index once (default: the bundled sample) and the tasks (default: the bundled ones)."""
    from wikisim.backends.wiki import WikiBackend
    from wikisim.index.build import ensure_bundled_index

    backend = WikiBackend(
        index if index is not None else ensure_bundled_index(dense=retriever in DENSE_RETRIEVERS),
        retriever=retriever,
    )
    toolbox = default_toolbox(backend, k=search_k, visit_tokens=visit_tokens, python=False)
    return EnvironmentFactory(toolbox, load_tasks(tasks), reward)


def trl_dataset(
    tasks: TaskSet, prompt: Callable[[Task], str] | None = None
) -> list[dict[str, Any]]:
    """Rows for `datasets.Dataset.from_list`: a conversational `prompt` and the `task_id` (no answers)."""
    text = prompt or (lambda t: t.question)
    return [{"prompt": [{"role": "user", "content": text(t)}], "task_id": t.id} for t in tasks]
