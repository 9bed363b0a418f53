"""What a learning run's evaluated episodes did: tool use, grounding, what the wrong answers were.

bench/learn_agent.py reports these per held-out set and stage; each figure is read off the
trajectories the harness wrote, through the env's one turn parser."""

from __future__ import annotations

import statistics

from agent.eval.metrics import think_closes
from agent.eval.stats import bootstrap_mean
from agent.rollout.trajectory import Trajectory
from agent.train.sft import answer_observed
from agent.train.teachers import echoes, evidence_text, grounded_in, refused
from wikisim.env.reward import normalize_answer
from wikisim.env.tasks import TaskSet
from wikisim.tools.protocol import TOOL_CALL, ToolCall, parse_turn, tool_parameters
from wikisim.tools.search import SearchTool, as_list


def observed(t: Trajectory) -> list[str]:
    """The episode's observations as evidence: tool responses, their echo of the call's arguments
    left out."""
    return [evidence_text(u.observation) for u in t.turns if u.observation]


def gold_seen(t: Trajectory, tasks: TaskSet) -> bool:
    """A gold answer was written in one of the episode's observations: whether retrieval put it
    in front of the policy."""
    texts = observed(t)
    return any(grounded_in(a, texts) for a in tasks.get(t.task_id).answers)


WRONG = ("no_answer", "echo", "misread", "unread")
UNSEARCHED = ("tried", "skipped")
SEARCH_PARAMETERS = tool_parameters([SearchTool(None).schema])  # type: ignore[arg-type]


def queries(t: Trajectory) -> list[str]:
    """The search queries of an episode's turns, as the env's one parser reads them (a call
    with several queries gives each)."""
    out = []
    for u in t.turns:
        for call in parse_turn(u.text, SEARCH_PARAMETERS).items:
            if isinstance(call, ToolCall) and call.name == "search":  # its schema checked
                out += as_list(call.arguments["query"])
    return out


def query_stats(trajs: list[Trajectory], tasks: TaskSet) -> dict[str, float]:
    """What the policy searches, per query: its words (normalised as answers are), the share of
    one-word queries, and the share of a query's words that are the question's. GRPO's policies
    were seen to wear their queries down to one stock word ("page", "place") while still
    searching once an episode: the search count alone hides it."""
    words, mine = [], []
    for t in trajs:
        question = set(normalize_answer(tasks.get(t.task_id).question).split())
        for q in queries(t):
            w = normalize_answer(q).split()
            words.append(len(w))
            mine.append(sum(x in question for x in w) / len(w) if w else 0.0)
    return {
        "queries": len(words) / len(trajs),
        "query_words": statistics.mean(words) if words else 0.0,
        "one_word_queries": statistics.mean(n <= 1 for n in words) if words else 0.0,
        "query_in_question": statistics.mean(mine) if mine else 0.0,
    }


def unsearched(t: Trajectory) -> str | None:
    """Why an episode ran no search, or None when one ran: "tried" when the policy wrote a tool
    call the env did not run as a search (not JSON, cut by the token limit, another tool's or
    wrong arguments), "skipped" when it wrote none. The searches-an-episode target counts
    calls, so this says whether a shortfall is a policy that skips its tools or one that
    misspells them."""
    if queries(t):
        return None
    return "tried" if any(TOOL_CALL.open in u.text for u in t.turns) else "skipped"


def after_errors(t: Trajectory) -> list[bool]:
    """For each turn the env refused with an error (every turn but an episode's last gets an
    observation): whether the next turn's call ran (a retry), rather than answering or failing
    again (a call's name is recorded even when refused, so its observation decides; a call in
    the episode's last turn, which the turn budget cut, did not run). A student trained only
    on clean teacher episodes answered right after an error (session 53)."""
    return [
        bool(after.tool_calls) and bool(after.observation) and not refused(after.observation)
        for u, after in zip(t.turns, t.turns[1:], strict=False)
        if refused(u.observation)
    ]


def wrong_kind(t: Trajectory, tasks: TaskSet) -> str | None:
    """What a wrong answer was, read off it: none given; words of the question (echo); another
    span of its observations (misread); neither (unread: guessed or garbled). None when right."""
    if t.metrics.get("em", 0.0) >= 1.0:
        return None
    if t.answer is None or not t.answer.strip():
        return "no_answer"
    if echoes(t.answer, tasks.get(t.task_id).question):
        return "echo"
    return "misread" if grounded_in(t.answer, observed(t)) else "unread"


def episode_stats(trajs: list[Trajectory], tasks: TaskSet) -> dict:
    """Per-episode tool use, grounding and length; intervals are bootstraps over tasks.

    `gold_seen` and `em_when_seen` split the failures: an episode whose observations never held
    the answer failed at search; one that saw it and answered otherwise failed at reading.
    `wrong_*` are the shares of episodes whose wrong answer was of each `wrong_kind`.
    """
    kinds = [wrong_kind(t, tasks) for t in trajs]
    ids = [t.task_id for t in trajs]
    seen = [t for t in trajs if gold_seen(t, tasks)]
    em = [t.metrics.get("em", 0.0) for t in trajs]
    f1 = [t.metrics.get("f1", 0.0) for t in trajs]
    calls = [[n for u in t.turns for n in u.tool_calls] for t in trajs]
    correct = [t for t in trajs if t.metrics.get("em", 0.0) >= 1.0]
    answered = [t for t in trajs if t.answer is not None]
    ci = {k: bootstrap_mean(v, ids).to_dict() for k, v in (("em", em), ("f1", f1))}
    return {
        "episodes": len(trajs),
        "em": statistics.mean(em),
        "em_by_task": dict(zip(ids, em, strict=True)),  # the gains paired by question
        "f1": statistics.mean(f1),
        "em_ci95": [ci["em"]["low"], ci["em"]["high"]],
        "f1_ci95": [ci["f1"]["low"], ci["f1"]["high"]],
        "search_calls": statistics.mean(c.count("search") for c in calls),
        "visit_calls": statistics.mean(c.count("visit") for c in calls),
        "malformed_calls": statistics.mean(t.metrics.get("malformed", 0.0) for t in trajs),
        "answered": len(answered) / len(trajs),
        "truncated": statistics.mean(float(t.truncated) for t in trajs),
        "grounded_share_of_answers": sum(map(answer_observed, answered)) / max(len(answered), 1),
        "grounded_share_of_correct": sum(map(answer_observed, correct)) / max(len(correct), 1),
        "gold_seen": len(seen) / len(trajs),
        "em_when_seen": statistics.mean(t.metrics.get("em", 0.0) for t in seen) if seen else 0.0,
        "tokens_per_episode": statistics.mean(sum(len(u.ids) for u in t.turns) for t in trajs),
        "think_closes": think_closes(trajs),
        "context_tokens_per_episode": statistics.mean(len(t.token_ids()) for t in trajs),
        **{f"wrong_{k}": kinds.count(k) / len(trajs) for k in WRONG},
        **{
            f"unsearched_{k}": statistics.mean(unsearched(t) == k for t in trajs)
            for k in UNSEARCHED
        },
        # per episode, as the tool calls are (they pool over sets alike): retries / refused turns
        # is the share of errors the policy recovered from
        "refused_turns": statistics.mean(len(after_errors(t)) for t in trajs),
        "retries": statistics.mean(sum(after_errors(t)) for t in trajs),
        **query_stats(trajs, tasks),
    }
