"""Task sets: our JSONL, the HotpotQA / MuSiQue / NQ loaders, and the bundled hand-written tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikisim.corpus.page import title_to_url
from wikisim.env.tasks import (
    SAMPLE_TASKS,
    Task,
    TaskSet,
    load_tasks,
    read_jsonl,
    task_sources,
    title_of,
)
from wikisim.errors import TaskError
from wikisim.index import open_index
from wikisim.paths import QA_DIR


def write(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_our_jsonl_keeps_extra_fields(tmp_path: Path) -> None:
    tasks = read_jsonl(
        write(
            tmp_path / "t.jsonl",
            [
                {"id": "a", "question": "Q1?", "answer": "x", "hops": 2, "source": "me"},
                {
                    "id": "b",
                    "question": "Q2?",
                    "answers": ["y", "z"],
                    "evidence": ["https://en.wikipedia.org/wiki/Y"],
                },
            ],
        )
    )
    assert [t.id for t in tasks] == ["a", "b"]
    assert tasks[0].answers == ("x",) and tasks[0].extra == {"hops": 2, "source": "me"}
    assert tasks[1].answers == ("y", "z") and tasks[1].evidence == (
        "https://en.wikipedia.org/wiki/Y",
    )
    out = tmp_path / "round.jsonl"
    tasks.to_jsonl(out)
    assert [t.to_dict() for t in read_jsonl(out)] == [t.to_dict() for t in tasks]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([{"id": "a", "question": "Q?"}], 'needs "id", "question" and "answer" or "answers"'),
        ([{"id": "a", "question": "", "answer": "x"}], "question must be a non-empty string"),
        ([{"id": "a", "question": "Q?", "answers": []}], "at least one non-empty gold answer"),
        ([{"id": "a", "question": "Q?", "answers": 3}], "answers must be a string or a list"),
        ([{"id": "a", "question": "Q?", "answer": "x"}] * 2, "task id 'a' appears twice"),
        (["not an object"], "a task must be a JSON object"),
    ],
)
def test_bad_task_files_name_the_problem_and_line(
    tmp_path: Path, rows: list, expected: str
) -> None:
    with pytest.raises(TaskError, match=expected):
        read_jsonl(write(tmp_path / "bad.jsonl", rows))


def test_bad_json_line_is_located(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "question": "Q", "answer": "x"}\n{oops\n', encoding="utf-8")
    with pytest.raises(TaskError, match=r"bad.jsonl:2 is not valid JSON"):
        read_jsonl(path)


def test_get_suggests_near_ids() -> None:
    tasks = TaskSet([Task("apollo11-year", "Q?", ("1969",))])
    assert tasks.get("apollo11-year").answers == ("1969",)
    with pytest.raises(TaskError, match="Did you mean 'apollo11-year'"):
        tasks.get("apollo-11-year")


def test_training_tasks_drop_those_answered_by_a_held_out_answer() -> None:
    train = TaskSet(
        [
            Task("luanda", "Which capital is in OPEC?", ("Luanda",)),
            Task("alias", "Who wrote it?", ("Eric Blair", "George Orwell")),
            Task("yes", "Is it so?", ("yes",)),
            Task("year", "When?", ("1969",)),
            Task("kept", "Which city?", ("Tirana",)),
        ],
        "train",
    )
    held = [
        Task("angola-capital", "What is the capital of Angola?", ("luanda.",)),
        Task("orwell", "Who wrote Animal Farm?", ("The George Orwell",)),
        Task("same", "Was it?", ("Yes",)),
        Task("apollo", "Which year?", ("1969",)),
    ]
    kept = train.without_answers_of(held)
    assert kept.ids() == ["yes", "year", "kept"] and kept.name == "train"


def test_hotpotqa_musique_and_nq_loaders() -> None:
    hotpot = load_tasks(QA_DIR / "hotpotqa-train-100.json")
    assert len(hotpot) == 100
    first = hotpot[0]
    assert first.answers == ("a spirit",) and first.extra["type"] == "bridge"
    assert first.evidence == (
        "https://en.wikipedia.org/wiki/Al%C3%BB",
        "https://en.wikipedia.org/wiki/Lilu_(mythology)",
    )
    simon = next(t for t in hotpot if t.question.startswith("Simon & Simon"))
    assert "https://en.wikipedia.org/wiki/Simon_%26_Simon" in simon.evidence  # not "&amp;"
    musique = load_tasks(QA_DIR / "musique-train-100.json")
    assert len(musique) == 100
    assert (
        musique[0].answers == ("G. Stanley Hall", "Stanley Hall") and musique[0].extra["hops"] == 2
    )
    assert len(musique[0].evidence) == 2
    nq = load_tasks(QA_DIR / "nq-sample-16.jsonl")
    lines = (QA_DIR / "nq-sample-16.jsonl").read_text(encoding="utf-8").splitlines()
    assert (
        len(nq) == len([x for x in lines if x.strip()])
        and nq.get("test_6").answers[0] == "Xiu Li Dai"
    )


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('[{"q": 1}]', encoding="utf-8")
    with pytest.raises(TaskError, match="unknown task format"):
        load_tasks(tmp_path / "x.json")
    with pytest.raises(TaskError, match="no task file at"):
        load_tasks(tmp_path / "missing.jsonl")


def test_bundled_tasks_are_answered_by_their_evidence(sample_index: Path) -> None:
    tasks = load_tasks()
    assert tasks.name == SAMPLE_TASKS.stem and len(tasks) >= 30
    store = open_index(sample_index).store
    for task in tasks:
        assert task.evidence and task.extra["hops"] >= 1, task.id
        texts = []
        for url in task.evidence:
            page = store.resolve(url)
            assert page is not None, f"{task.id}: evidence {url} is not in the sample"
            texts.append(page.text.lower())
        assert any(a.lower() in t for a in task.answers for t in texts), (
            f"{task.id}: no gold answer in its evidence"
        )


def test_several_files_each_sliced_make_one_task_set(tmp_path: Path, monkeypatch) -> None:
    spec = "data/tasks/sample.jsonl[:3],data/qa/hotpotqa-train-100.json[-2:]"
    monkeypatch.chdir(tmp_path)  # `data/...` names the bundled files from any directory
    tasks = load_tasks(spec)
    hotpot = list(load_tasks(QA_DIR / "hotpotqa-train-100.json"))
    assert tasks.ids() == [*load_tasks(None).ids()[:3], *(t.id for t in hotpot[-2:])]
    assert tasks.name == spec
    parts = spec.split(",")
    assert task_sources(spec) == {t.id: parts[i >= 3] for i, t in enumerate(tasks)}
    assert set(task_sources(None).values()) == {str(SAMPLE_TASKS)}  # as load_tasks(None)
    with pytest.raises(TaskError, match=r"selects no tasks"):
        load_tasks("data/tasks/sample.jsonl[5:5]")
    with pytest.raises(TaskError, match="no task file at nowhere.jsonl"):
        load_tasks("data/tasks/sample.jsonl,nowhere.jsonl")
    with pytest.raises(TaskError, match="names no file"):
        load_tasks(" , ")


def test_a_title_is_read_off_its_url_as_the_backend_reads_it() -> None:
    """An evidence URL percent-encodes its title: the teacher searches and names the title a
    page shows, not its escapes (38 training evidence URLs of the learning bench had them)."""
    for title in ("Peter schießt den Vogel ab", "Lilo & Stitch", "Who's Afraid of Virginia Woolf?"):
        url = title_to_url(title)
        assert "%" in url
        assert title_of(url) == title
    assert title_of("https://example.org/docs/some_page/") == "some page"
