"""A teacher for rejection-sampled SFT: varied ReAct research episodes whose answer is read, not known.

`ResearchTeacher` plays each task like a careful researcher would, with variety drawn from
the turn's seed so that K attempts at one question give different trajectories: a search
phrased one of several ways (the question, its content words, an evidence page's title;
with `known_only`, only a title the question names or an earlier observation shows, as a
student can),
visits with a stated goal, further searches, and an answer once, and only once, the gold
answer is written in an observation it has seen; the think quotes the sentence it read it
in. Where the answer never shows up it answers the best span of what it read (usually
wrong, so rejection sampling drops it). It knows the gold answer and the evidence pages
through the task set, never through the request (`TurnRequest` carries no gold); it finds the task by its question.

With `recover_share`, that share of its episodes open with a broken search call of the kinds a
trained student writes (a query looped to the token budget and never closed, a title's quotes
left unescaped, a stray bracket after the JSON, a visit argument given to search), its fault on
given (no loss from there; what it shares with the well-formed call is learned), then recover:
the env's error, and the same search written well. A student that never saw an error answered
in the very next turn after one (10 of 513 evaluated episodes, session 53); 16 SFT steps with
a quarter of the episodes recovering did not teach the retry either (session 54).
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Sequence

from agent.rollout.policies.scripted import STOPWORDS, best_span, observations
from agent.rollout.react import ChatFormat, Generation, TurnRequest
from wikisim.env.reward import normalize_answer
from wikisim.env.tasks import Task, TaskSet, title_of
from wikisim.errors import ConfigError
from wikisim.tools.protocol import format_answer, format_tool_call
from wikisim.tools.search import RESULT_TITLE

_URL = re.compile(r"https?://[^\s)\]>\"'<]+")
_WORD = re.compile(r"[\w'-]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_VISITED = re.compile(r"The useful information in (\S+) for user goal")
# a rule on the answer's own name: no page states it, so it is checked on what was read
_NAME_RULE = re.compile(
    r"\bhas (?:a name that begins with the letter (?P<letter>\w)|the initials (?P<initials>[A-Z]{2,}))\b"
)
# a capitalised word past the clause's first: something to search
_NAMED = re.compile(r"\s[A-Z0-9]")
_THINKING_OF = re.compile(r"^I am thinking of\s+", re.I)
_ERROR = re.compile(r"^\s*(?:<tool_response>\s*)?Error:")
# the header of a search that ran, which echoes its query (wikisim.tools.search), in either group
_SEARCHED = re.compile(
    r"A Google search for '(.*?)' found \d+ results:|No results found for '(.*?)'\.", re.S
)

#: Teacher names (SFTConfig.teacher) -> ResearchTeacher's known_only.
RESEARCH_TEACHERS = {"research": False, "research-known": True}
SHORT_QUESTION_WORDS = 10
# known_only: the question is the best query a student can type (gold in the top 3 results for
# 73 of the 343 training questions, its six content words 47), so it is typed up to this length
TYPED_QUESTION_WORDS = 25
SEARCH_THOUGHTS = (
    "I need to find {what}. Let me search.",
    "First, search for {what}.",
    "The question asks about {what}; a search should find the page.",
    "Let me look up {what}.",
)
VISIT_THOUGHTS = (
    "The page {title} should say more. Let me read it.",
    "Read {title} for the answer.",
    "{title} looks relevant; visit it.",
)
RETRY_THOUGHTS = (
    "That did not give the answer. Try another search.",
    "Not found yet; search again with other words.",
)
# a search before answering that every episode makes, found or not: nothing the student cannot see
AGAIN_THOUGHTS = (
    "Search once more, in other words, before answering.",
    "Another phrasing may show more. Let me search again.",
    "Let me compare with a second search.",
)
# copy_queries: a further search of a title the results showed, as the student can copy it
SHOWN_THOUGHTS = (
    "The results name {title}. Let me search it too.",
    "Search {title}, which the results show, before answering.",
    "{title} is in the results; search it as well.",
)
RECOVER_THOUGHTS = (
    "That call was not valid and did not run. The same search, written correctly.",
    "The tool call failed. Let me write the search again, as the error says.",
    "The call was malformed. Try the same query once more as valid JSON.",
)
ANSWER_THOUGHTS = (
    '{source} says: "{quote}" So the answer is {answer}.',
    'From {source}: "{quote}"',
    'The result reads "{quote}", which answers the question.',
)


#: Tool-response headers that repeat the call's own arguments (query, URL, goal): not evidence.
_ECHOES = re.compile(
    rf"{_SEARCHED.pattern}|The useful information in \S+ for user goal .*? as follows:", re.S
)


def refused(observation: str) -> bool:
    """The env's answer to a turn it could not run (a malformed call or turn): an error."""
    return bool(_ERROR.match(observation))


def evidence_text(observation: str) -> str:
    """An observation without the headers that echo the call's arguments; an error (which quotes
    the broken call and the tool help) holds none."""
    return "" if refused(observation) else _ECHOES.sub(" ", observation)


def grounded_in(answer: str, texts: Sequence[str]) -> bool:
    """Whether the (normalised) answer occurs as whole words in one of the texts."""
    a = normalize_answer(answer)
    return bool(a) and any(f" {a} " in f" {normalize_answer(t)} " for t in texts)


def echoes(answer: str | None, question: str) -> bool:
    """The answer is words of the question: a policy that missed the answer fell back on an
    entity it was asked about (`EnvRunner.annotate` marks it; the learning bench counts it)."""
    return answer is not None and grounded_in(answer, [question])


def read_not_guessed(answer: str, turns: Sequence[tuple[str, str]]) -> bool:
    """(turn text, observation) pairs before the answer turn: the answer was in an observation's
    evidence before any of the policy's own turns named it (a query holding the answer is a guess)."""
    for text, observation in turns:
        if grounded_in(answer, [text]):
            return False
        if grounded_in(answer, [evidence_text(observation)]):
            return True
    return False


def keywords(question: str, limit: int = 6) -> str:
    """The question's content words in order (a terse query, as people type them)."""
    words = [w for w in _WORD.findall(question) if w.lower() not in STOPWORDS]
    return " ".join(words[:limit]) or question


def searchable(question: str) -> str:
    """The question less what no page states: the "I am thinking of" frame, sentences that name
    nothing ("Which person is it?"), and clauses that are a rule on the answer's own name (its
    letter, its initials) or a negation. The question itself when nothing is left."""
    kept = []
    for sentence in _SENTENCE.split(_THINKING_OF.sub("", question)):
        parts = sentence.split(" and ")
        useful = [p for p in parts if not _NAME_RULE.search(p) and " not " not in f" {p} "]
        if useful and (useful == parts or any(_NAMED.search(f" {p}") for p in useful)):
            text = " and ".join(useful)
            if _NAMED.search(text) or len(sentence.split()) > 6:
                kept.append(text)
    return " ".join(kept) or question


def copied(question: str) -> str:
    """The query `copy_queries` types first: the question less what no page states, its first
    TYPED_QUESTION_WORDS words; spans of the question, which a small student copies. Its double
    quotes are dropped (the search ignores them): students that copied them broke the JSON."""
    return " ".join(searchable(question).replace('"', "").split()[:TYPED_QUESTION_WORDS])


def shown_title(observation: str, question: str, searched: Sequence[str]) -> str | None:
    """The first title among an observation's results that the question does not name and no
    search typed, else the first not searched (None when none is left): a query copied from the
    screen."""
    titles = [t for t in RESULT_TITLE.findall(observation) if t not in searched]
    fresh = [t for t in titles if t.lower() not in question.lower()]
    return (fresh or titles or [None])[0]


def names(text: str) -> str:
    """The capitalised words past each sentence's first ("Kaifi Azmi", "Black Hawk War"): the
    terse query a person types for the entities a question names."""
    found = []
    for sentence in _SENTENCE.split(text):
        for word in sentence.split()[1:]:
            core = word.strip("()\"'.,;:?!")
            if core[:1].isupper() or core[:1].isdigit():
                found.append(core)
    return " ".join(found)


def name_rule(question: str) -> str | None:
    """The question's rule on the answer's own name, restated before the answer: of the names a
    page shows, the one that keeps it (None when the question has no such rule)."""
    m = _NAME_RULE.search(question)
    if m is None:
        return None
    if m.group("letter"):
        return f'The name must begin with "{m.group("letter")}".'
    return f"The initials must be {m.group('initials')}."


def _as_typed(question: str, words: int = SHORT_QUESTION_WORDS) -> tuple[str, ...]:
    """The question itself as a query or goal only when short: a student that learns to copy a long
    question overflows its turn budget (max_new_tokens) and never closes the call."""
    return (question,) if len(question.split()) <= words else ()


def broken_search(query: str, think: str, rng: random.Random) -> str:
    """A search call for `query` broken as trained students break theirs (sessions 53-54's
    evals): a word looped until the token budget cut it (never closed), a title in unescaped
    quotes, or a stray bracket after the JSON. The env answers each with an error (an argument
    of visit's given to search, which those students wrote too, runs: the released agents' tools
    ignore it)."""
    head = f'<think>\n{think}\n</think>\n<tool_call>\n{{"name": "search", "arguments": {{"query": "'
    words = query.split()
    kind = rng.randrange(3)
    if kind == 0:
        return head + " ".join([query, *[words[-1].strip("\"'.,?")] * 24])
    if kind == 1:  # its own quotes left as they are, or quotes put around the names it holds
        named = " ".join(names(query).split()[:3])
        span = named if named and named in query else query
        raw = query if '"' in query else query.replace(span, f'"{span}"', 1)
        return head + raw + '"}}\n</tool_call>'
    return head + query + rng.choice(('")}}', '"}}}', '"}},')) + "\n</tool_call>"


def quote(answer: str, text: str, width: int = 160) -> str:
    """The observed sentence holding the answer (a whole sentence before a bare title), cut to
    `width` characters around it."""
    a = normalize_answer(answer)
    sentences = [
        s for s in _SENTENCE.split(_URL.sub("", text)) if f" {a} " in f" {normalize_answer(s)} "
    ]
    for sentence in sorted(sentences, key=lambda s: len(s) < len(answer) + 20):
        s = " ".join(sentence.split()).strip("#[]() ")
        at = max(s.lower().find(answer.lower()), 0)
        start = max(0, min(at - width // 2, len(s) - width))
        end = start + width
        if start > 0:  # whole words only: a student copies the cut too
            start = s.find(" ", start, at) + 1 if " " in s[start:at] else start
        if end < len(s) and " " in s[at + len(answer) : end]:
            end = s.rfind(" ", at + len(answer), end)
        return s[start:end].strip()
    return answer


class ResearchTeacher:
    """Varied, grounded research episodes for SFT data (see the module docstring).

    Args:
        tasks: the task set the episodes are drawn from (gold answers and evidence pages).
        chat: the student's chat format (trajectory ids in its tokenizer).
        max_turns: turns it may use; the last one always answers.
        known_only: search only what a student could type: the question (up to
            TYPED_QUESTION_WORDS words), its content words, and evidence titles the question
            names or an observation already showed (a bridge entity read on the first page,
            searched next: the second hop of a multi-hop question). Otherwise an evidence page's
            title is a phrasing too, though nothing the student saw names it (its student
            learns to search titles it cannot know).
        recover_share: this share of episodes opens with a broken call and recovers.
        min_searches: searches that ran before any answer, each typed another way (a bridge
            title an observation showed first): the student cannot see whether a gold answer
            is on screen, so a teacher that searches again exactly when none is teaches it no
            rule it can follow (session 63); one that always searches this often teaches one.
    """

    name = "research-teacher"

    def __init__(
        self,
        tasks: TaskSet,
        chat: ChatFormat | None = None,
        max_turns: int = 4,
        known_only: bool = False,
        recover_share: float = 0.0,
        min_searches: int = 1,
        copy_queries: bool = False,
    ) -> None:
        if not 0 <= recover_share < 1:
            raise ConfigError(f"recover_share={recover_share} must be in [0, 1)")
        if not 1 <= min_searches < max_turns:
            raise ConfigError(f"min_searches={min_searches} must be in [1, max_turns={max_turns})")
        self.tasks, self.chat, self.max_turns = tasks, chat, max_turns
        self.known_only, self.recover_share = known_only, recover_share
        self.min_searches, self.copy_queries = min_searches, copy_queries
        # the query each broken call meant, by its text: the recovery writes that search well
        self._meant: dict[str, str] = {}

    def act(self, requests: Sequence[TurnRequest]) -> list[Generation]:
        return [self._broken(r) or Generation(text=self.turn(r)) for r in requests]

    def _broken(self, request: TurnRequest) -> Generation | None:
        """The broken first call of an episode that will recover (drawn apart from the turn's
        own choices, so the other episodes are those `recover_share=0` plays). What it shares
        with the well-formed call (the think, the tag, the query up to the fault) is learned,
        as a first turn must be; from its fault on it is given (`forced_at`). Without a chat
        format to tokenise it, the whole turn is given (`forced`)."""
        rng = random.Random(f"{request.seed}:recover")
        if request.turn or not self.recover_share or rng.random() >= self.recover_share:
            return None
        task = self.tasks.by_question(request.question)
        question = request.messages[1]["content"]
        query = self._query(task, question, observations(request), random.Random(request.seed), 0)
        think = rng.choice(SEARCH_THOUGHTS).format(what=keywords(query, 4))
        text = broken_search(query, think, rng)
        self._meant[text.strip()] = query
        if self.chat is None:
            return Generation(text=text, forced=True)
        good = format_tool_call("search", {"query": query}, think=think)
        fault = len(os.path.commonprefix([text, good]))  # the first character that differs
        enc = self.chat.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = tuple(enc["input_ids"])
        given = tuple(j for j, (_, end) in enumerate(enc["offset_mapping"]) if end > fault)
        return Generation(text=text, ids=ids, logprobs=(0.0,) * len(ids), forced_at=given)

    def turn(self, request: TurnRequest) -> str:
        task = self.tasks.by_question(request.question)
        question = request.messages[1]["content"]
        seen = observations(request)
        rng = random.Random(request.seed)
        # an episode that opened with a broken call searches in its next turn as in a first one
        recovering = request.turn > 0 and refused(seen[0])
        searched = [
            query
            for text in seen
            for m in _SEARCHED.finditer(text)
            for query in m.groups()
            if query is not None
        ]
        last = request.turn >= self.max_turns - 1
        # the first turn always searches: one search asks nothing more of the episode
        enough = self.min_searches == 1 or len(searched) >= self.min_searches
        found = self._found(task, seen)
        if found is not None and (last or enough):
            answer, source, text = found
            think = rng.choice(ANSWER_THOUGHTS).format(
                source=source, quote=quote(answer, text), answer=answer
            )
            rule = name_rule(question)
            return format_answer(answer, think=f"{rule} {think}" if rule else think)
        if last:
            return format_answer(
                best_span(question, "\n".join(seen)), think="Answer from what I read."
            )
        if request.turn - recovering == 0:
            query = self._query(task, question, seen, rng, 0)
            if recovering:  # the search the broken call meant, written well this time
                query = self._meant.get(request.messages[2]["content"].strip(), query)
            # the think names the topic in a few words: a long question repeated twice overflows a small
            # model's turn budget (max_new_tokens), and the student then never closes its call
            what = keywords(query, 4)
            think = rng.choice(RECOVER_THOUGHTS if recovering else SEARCH_THOUGHTS)
            return format_tool_call("search", {"query": query}, think=think.format(what=what))
        hop = self._next_hop(task, question, seen) if self.known_only else None
        hop_think = f"The page names {hop}, which the question needs next. Let me search it."
        if not enough:
            title = shown_title(seen[-1], question, searched) if self.copy_queries else None
            if title is not None:
                think = rng.choice(SHOWN_THOUGHTS).format(title=title)
                return format_tool_call("search", {"query": title}, think=think)
            if hop is not None:
                return format_tool_call("search", {"query": hop}, think=hop_think)
            again = self._query(task, question, seen, rng, request.turn, searched)
            if again not in searched:
                return format_tool_call(
                    "search", {"query": again}, think=rng.choice(AGAIN_THOUGHTS)
                )
        url = self._page_to_visit(task, seen, rng)
        if hop is not None and url not in task.evidence and rng.random() < 0.8:
            return format_tool_call("search", {"query": hop}, think=hop_think)
        if url is not None and rng.random() < 0.8:
            goal = rng.choice((*_as_typed(question), f"find {keywords(searchable(question))}"))
            think = rng.choice(VISIT_THOUGHTS).format(title=title_of(url))
            return format_tool_call("visit", {"url": url, "goal": goal}, think=think)
        query = self._query(task, question, seen, rng, request.turn)
        return format_tool_call("search", {"query": query}, think=rng.choice(RETRY_THOUGHTS))

    def _found(self, task: Task, seen: Sequence[str]) -> tuple[str, str, str] | None:
        """(answer as written in the gold, where it was read, the text) once an observation holds it."""
        for text in (evidence_text(t) for t in reversed(seen)):
            for answer in task.answers:
                if grounded_in(answer, [text]):
                    titles = re.findall(r"\[([^\]]+)\]\(", text) or [
                        title_of(u) for u in _URL.findall(text)
                    ]
                    return answer, (titles[0] if titles else "the page"), text
        return None

    def _query(
        self,
        task: Task,
        question: str,
        seen: Sequence[str],
        rng: random.Random,
        turn: int,
        searched: Sequence[str] = (),
    ) -> str:
        """A phrasing of the search, other than those `searched` where one is left; never one
        that names the answer (that would be a guess). With `copy_queries`, the first is `copied`."""
        if self.copy_queries and turn == 0:
            return copied(question)
        typed = _as_typed(
            question, TYPED_QUESTION_WORDS if self.known_only else SHORT_QUESTION_WORDS
        )
        terms = searchable(question)
        named = names(terms)
        options = [*typed, keywords(terms, 8), *([named] if named else [])]
        titles = [title_of(u) for u in task.evidence]
        if self.known_only:
            known = " ".join([question, *map(evidence_text, seen)]).lower()
            titles = [t for t in titles if t.lower() in known]
        options += titles
        options = [q for q in options if not any(grounded_in(a, [q]) for a in task.answers)] or [
            question
        ]
        options = [q for q in options if q not in searched] or options
        return (
            options[rng.randrange(len(options))]
            if turn == 0
            else rng.choice(options[1:] or options)
        )

    @staticmethod
    def _next_hop(task: Task, question: str, seen: Sequence[str]) -> str | None:
        """An evidence title the question does not name that an observation has shown, not yet
        searched or visited: the bridge entity a multi-hop question leads to next."""
        shown = " ".join(map(evidence_text, seen)).lower()
        done = " ".join(seen)
        for url in task.evidence:
            title = title_of(url)
            if (
                title.lower() in shown
                and title.lower() not in question.lower()
                and f"'{title}'" not in done
                and url not in done
                and not any(grounded_in(a, [title]) for a in task.answers)
            ):
                return title
        return None

    @staticmethod
    def _page_to_visit(task: Task, seen: Sequence[str], rng: random.Random) -> str | None:
        """A page a search listed and not visited yet, an evidence page first (None if none):
        the teacher visits what it found, not what it knows."""
        visited = {m.group(1) for text in seen for m in _VISITED.finditer(text)}
        listed = [
            u
            for text in seen
            if not _VISITED.search(text)
            for u in _URL.findall(text)
            if u not in visited
        ]
        listed = [
            u
            for u in dict.fromkeys(listed)
            if not any(grounded_in(a, [title_of(u)]) for a in task.answers)
        ]
        found = [u for u in listed if u in task.evidence]
        if found:
            return found[0] if rng.random() < 0.7 else rng.choice(found)
        return listed[0] if listed else None
