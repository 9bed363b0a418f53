"""Tasks for the env: our JSONL, plus loaders for HotpotQA, MuSiQue, FlashRAG's unified JSONL (NQ,
TriviaQA, PopQA, HotpotQA, 2Wiki, MuSiQue, Bamboogle, ...) and FRAMES files.

Every format becomes the same frozen `Task`; fields a format has beyond ours are kept in
`extra`, so nothing a benchmark reports on is lost in loading.
"""

from __future__ import annotations

import ast
import csv
import difflib
import json
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikisim.corpus.page import title_to_url, url_to_title
from wikisim.errors import TaskError
from wikisim.paths import DATA_DIR, PACKAGE_ROOT

TASKS_DIR = DATA_DIR / "tasks"
SAMPLE_TASKS = TASKS_DIR / "sample.jsonl"
_SLICED = re.compile(r"^(?P<path>.+?)\[(?P<start>-?\d*):(?P<stop>-?\d*)\]$")


@dataclass(frozen=True)
class Task:
    id: str
    question: str
    answers: tuple[str, ...]  # every accepted gold answer
    evidence: tuple[str, ...] = ()  # URLs of the pages that support the answer
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise TaskError(f"task id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.question, str) or not self.question.strip():
            raise TaskError(
                f"task {self.id!r}: question must be a non-empty string, got {self.question!r}"
            )
        if not self.answers or not all(isinstance(a, str) and a.strip() for a in self.answers):
            raise TaskError(
                f"task {self.id!r}: needs at least one non-empty gold answer, got {self.answers!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "answers": list(self.answers),
            "evidence": list(self.evidence),
            **self.extra,
        }


def task_from_dict(d: dict[str, Any], where: str) -> Task:
    """Our JSONL record: {"id", "question", "answer" | "answers", "evidence"?, ...extra kept}."""
    if not isinstance(d, dict):
        raise TaskError(f"{where}: a task must be a JSON object, got {type(d).__name__}")
    missing = [k for k in ("id", "question") if k not in d]
    if missing or ("answer" not in d and "answers" not in d):
        raise TaskError(
            f'{where}: task needs "id", "question" and "answer" or "answers"; missing {missing or ["answer"]}'
        )
    answers = d.get("answers", d.get("answer"))
    answers = [answers] if isinstance(answers, str) else answers
    if not isinstance(answers, list):
        raise TaskError(f"{where}: answers must be a string or a list of strings, got {answers!r}")
    extra = {
        k: v for k, v in d.items() if k not in ("id", "question", "answer", "answers", "evidence")
    }
    try:
        return Task(
            str(d["id"]), d["question"], tuple(answers), tuple(d.get("evidence", ())), extra
        )
    except TaskError as e:
        raise TaskError(f"{where}: {e}") from e


class TaskSet(Sequence[Task]):
    """An ordered, immutable set of tasks with unique ids; `get(id)` suggests near misses."""

    def __init__(self, tasks: Iterable[Task], name: str = "") -> None:
        self._tasks = tuple(tasks)
        self.name = name
        self._by_id: dict[str, int] = {}
        for i, t in enumerate(self._tasks):
            if t.id in self._by_id:
                raise TaskError(
                    f"task id {t.id!r} appears twice in {name or 'the task set'}; ids must be unique"
                )
            self._by_id[t.id] = i
        if not self._tasks:
            raise TaskError(f"{name or 'the task set'} has no tasks")

    def __len__(self) -> int:
        return len(self._tasks)

    def __getitem__(self, i):
        return self._tasks[i]

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks)

    def ids(self) -> list[str]:
        return [t.id for t in self._tasks]

    def get(self, task_id: str) -> Task:
        if task_id not in self._by_id:
            close = difflib.get_close_matches(str(task_id), list(self._by_id), n=3)
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            raise TaskError(
                f"no task {task_id!r} in {self.name or 'the task set'} ({len(self)} tasks).{hint}"
            )
        return self._tasks[self._by_id[task_id]]

    def by_question(self, question: str) -> Task:
        """The first task asking `question`: how a policy given the task set (the oracle) finds its task,
        since a request carries what a model sees, not task ids (which may spell the answer)."""
        if not hasattr(self, "_by_question"):
            self._by_question: dict[str, int] = {}
            for i, t in enumerate(self._tasks):
                self._by_question.setdefault(t.question, i)
        if question not in self._by_question:
            raise TaskError(f"no task of the set {self.name!r} asks {question[:80]!r}")
        return self._tasks[self._by_question[question]]

    def without_answers_of(self, held: Iterable[Task]) -> TaskSet:
        """These tasks less any whose answer (or accepted alias) is one of `held`'s answers.

        Held out means neither the question nor its answer was trained on: a training question
        answered "Luanda" teaches a held-out "What is the capital of Angola?". Answers any
        question may share (yes, no, a number) do not count.
        """
        from wikisim.env.reward import normalize_answer

        def entities(t: Task) -> set[str]:
            names = {normalize_answer(a) for a in t.answers}
            return {a for a in names if a and a not in ("yes", "no") and not a.isdigit()}

        banned = set().union(*(entities(t) for t in held))
        return TaskSet([t for t in self if not entities(t) & banned], self.name)

    def to_jsonl(self, path: str | Path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for t in self._tasks:
                f.write(json.dumps(t.to_dict(), ensure_ascii=False) + "\n")


def _read_jsonl(path: Path) -> list[tuple[str, Any]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    out.append((f"{path}:{n}", json.loads(line)))
                except ValueError as e:
                    raise TaskError(
                        f"{path}:{n} is not valid JSON ({e}); each line must be one task object"
                    ) from e
    return out


def read_jsonl(path: str | Path) -> TaskSet:
    path = Path(path)
    return TaskSet((task_from_dict(d, where) for where, d in _read_jsonl(path)), path.stem)


def _supporting_titles(metadata: Any) -> list[str]:
    """Pages of FlashRAG's `metadata.supporting_facts` ({"title": [...]} or [[title, sent], ...]), in order."""
    facts = metadata.get("supporting_facts") if isinstance(metadata, dict) else None
    if isinstance(facts, dict):
        titles = facts.get("title", [])
    elif isinstance(facts, list):
        titles = [f[0] for f in facts if isinstance(f, list | tuple) and f]
    else:
        titles = []
    return list(dict.fromkeys(t for t in titles if isinstance(t, str) and t.strip()))


def read_flashrag(path: str | Path) -> TaskSet:
    """FlashRAG's unified JSONL: {"id", "question", "golden_answers", "metadata"?}.

    The same layout for NQ, TriviaQA, PopQA, HotpotQA, 2Wiki, MuSiQue and Bamboogle; evidence is
    the pages of `metadata.supporting_facts` where the dataset gives them (HotpotQA, 2Wiki).
    """
    path = Path(path)
    rows = []
    for where, d in _read_jsonl(path):
        if isinstance(d, dict):
            evidence = [title_to_url(t) for t in _supporting_titles(d.get("metadata"))]
            d = {
                **{k: v for k, v in d.items() if k != "golden_answers"},
                "answers": d.get("golden_answers"),
                "evidence": evidence,
            }
        rows.append((where, d))
    return TaskSet((task_from_dict(d, w) for w, d in rows), path.stem)


def title_of(url: str) -> str:
    """The page title an evidence URL names, percent-decoded as the backend reads it ("Peter
    schießt den Vogel ab", not "Peter schie%C3%9Ft ..."); off Wikipedia, its last path part."""
    return url_to_title(url) or url.rstrip("/").rsplit("/", 1)[-1].replace("_", " ")


def _wiki_links(value: Any, where: str) -> list[str]:
    """FRAMES' `wiki_links`: a list, or the Python-list string the TSV holds; Wikipedia URLs normalised."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value) if value.strip() else []
        except (ValueError, SyntaxError) as e:
            raise TaskError(
                f"{where}: wiki_links is not a list of URLs ({e}): {value[:200]!r}"
            ) from None
    if not isinstance(value, list) or not all(isinstance(u, str) for u in value):
        raise TaskError(f"{where}: wiki_links must be a list of URLs, got {value!r}"[:300])
    out = []
    for url in value:
        title = url_to_title(url)
        out.append(title_to_url(title) if title else url.strip())
    return list(dict.fromkeys(out))


def read_frames(path: str | Path) -> TaskSet:
    """FRAMES (google/frames-benchmark): "Prompt", "Answer", "wiki_links", "reasoning_types".

    The released TSV (or a CSV, or the same records as JSON / JSONL); evidence = wiki_links.
    Ids are "frames-<row>", the row being the file's unnamed index column when it has one.
    """
    path = Path(path)
    if path.suffix in (".tsv", ".csv"):
        with open(path, encoding="utf-8", newline="") as f:
            rows = [
                (f"{path}:{n}", r)
                for n, r in enumerate(
                    csv.DictReader(f, delimiter="\t" if path.suffix == ".tsv" else ","), 2
                )
            ]
    elif path.suffix == ".jsonl":
        rows = _read_jsonl(path)
    else:
        rows = [(f"{path}[{i}]", d) for i, d in enumerate(_read_json_list(path))]
    tasks = []
    for i, (where, d) in enumerate(rows):
        if not isinstance(d, dict) or "Prompt" not in d or "Answer" not in d:
            raise TaskError(f'{where}: a FRAMES row needs "Prompt" and "Answer"')
        row = str(d.get("") or d.get("Unnamed: 0") or i).strip()
        links = _wiki_links(d.get("wiki_links", []), where)
        extra = {"reasoning_types": d.get("reasoning_types", ""), "hops": len(links)}
        try:
            tasks.append(
                Task(f"frames-{row}", d["Prompt"], (str(d["Answer"]),), tuple(links), extra)
            )
        except TaskError as e:
            raise TaskError(f"{where}: {e}") from e
    return TaskSet(tasks, path.stem)


def _read_json_list(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise TaskError(f"{path} is not valid JSON ({e})") from e
    if not isinstance(data, list):
        raise TaskError(f"{path}: expected a JSON list of questions, got {type(data).__name__}")
    return data


def read_hotpotqa(path: str | Path) -> TaskSet:
    """HotpotQA distractor format: evidence = the pages of the supporting facts."""
    path = Path(path)
    tasks = []
    for i, d in enumerate(_read_json_list(path)):
        titles = list(dict.fromkeys(t for t, _ in d.get("supporting_facts", [])))
        extra: dict[str, Any] = {k: d[k] for k in ("type", "level", "supporting_facts") if k in d}
        extra["hops"] = len(titles)
        tasks.append(
            Task(
                str(d.get("_id", i)),
                d["question"],
                (d["answer"],),
                tuple(title_to_url(t) for t in titles),
                extra,
            )
        )
    return TaskSet(tasks, path.stem)


def read_musique(path: str | Path) -> TaskSet:
    """MuSiQue: answer plus aliases; evidence = the supporting paragraphs' pages."""
    path = Path(path)
    tasks = []
    for d in _read_json_list(path):
        titles = list(
            dict.fromkeys(p["title"] for p in d.get("paragraphs", []) if p.get("is_supporting"))
        )
        extra = {
            "hops": len(d.get("question_decomposition", [])),
            "answerable": d.get("answerable", True),
            "question_decomposition": d.get("question_decomposition", []),
        }
        answers = tuple(dict.fromkeys([d["answer"], *d.get("answer_aliases", [])]))
        tasks.append(
            Task(
                str(d["id"]), d["question"], answers, tuple(title_to_url(t) for t in titles), extra
            )
        )
    return TaskSet(tasks, path.stem)


def load_tasks(source: str | Path | TaskSet | None = None) -> TaskSet:
    """Tasks from files of any supported format (detected from their content), or the bundled sample.

    `source` is one file, or several joined by commas, each with an optional Python slice:
    `data/tasks/synth-sample-train.jsonl,data/qa/hotpotqa-train-100.json[:70]` is the synthesized
    train split and the first 70 HotpotQA items (`[-30:]` would be the last 30). A relative path
    not found from the working directory is taken from the package, so `data/...` names the
    bundled files from anywhere, in a checkout or an installed wheel.
    """
    if isinstance(source, TaskSet):
        return source
    if source is None:
        return _read_file(SAMPLE_TASKS)
    spec = os.fspath(source)
    parts = _parts(spec)
    if len(parts) == 1 and not _SLICED.match(parts[0]):
        return _read_file(_locate(parts[0]))
    return TaskSet([t for part in parts for t in _read_part(part, spec)], spec)


def task_sources(source: str | Path | None) -> dict[str, str]:
    """Task id -> the part of `source` (as `load_tasks` reads it, None the bundled sample) that
    holds it: the file, or slice of one, a question came from, for drawing evenly from each
    (`agent.train.episodes.drawn`)."""
    spec = os.fspath(source if source is not None else SAMPLE_TASKS)
    return {t.id: part for part in _parts(spec) for t in _read_part(part, spec)}


def _parts(spec: str) -> list[str]:
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts:
        raise TaskError(f"task source {spec!r} names no file; write FILE[,FILE[a:b]...]")
    return parts


def _read_part(part: str, spec: str) -> list[Task]:
    """One part of a comma-joined source: a file, or a slice of one."""
    m = _SLICED.match(part)
    items = list(_read_file(_locate(m.group("path") if m else part)))
    if m:
        start, stop = (int(x) if x else None for x in (m.group("start"), m.group("stop")))
        items = items[start:stop]
    if not items:
        raise TaskError(f"task source {part!r} (in {spec!r}) selects no tasks")
    return items


def _locate(path: str) -> Path:
    here = Path(path)
    if here.exists() or here.is_absolute() or not (PACKAGE_ROOT / path).exists():
        return here
    return PACKAGE_ROOT / path


def _read_file(path: Path) -> TaskSet:
    if not path.is_file():
        raise TaskError(f"no task file at {path}; give a JSONL/JSON task file or a TaskSet")
    if path.suffix in (".tsv", ".csv"):
        with open(path, encoding="utf-8", newline="") as f:
            header = next(csv.reader(f, delimiter="\t" if path.suffix == ".tsv" else ","), [])
        if "Prompt" in header and "Answer" in header:
            return read_frames(path)
        raise TaskError(
            f"{path}: a {path.suffix} task file must be FRAMES (Prompt, Answer, wiki_links columns); "
            f"its header is {header[:8]}"
        )
    if path.suffix == ".jsonl":
        first: dict[str, Any] = next((d for _, d in _read_jsonl(path)), {})
        if "Prompt" in first:
            return read_frames(path)
        return (
            read_flashrag(path)
            if "golden_answers" in first and "answers" not in first
            else read_jsonl(path)
        )
    data = _read_json_list(path)
    first = data[0] if data else {}
    if "supporting_facts" in first:
        return read_hotpotqa(path)
    if "question_decomposition" in first:
        return read_musique(path)
    if "Prompt" in first:
        return read_frames(path)
    raise TaskError(
        f"{path}: unknown task format; expected our JSONL, HotpotQA, MuSiQue, FlashRAG JSONL or FRAMES"
    )
