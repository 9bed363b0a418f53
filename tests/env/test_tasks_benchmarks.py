"""FlashRAG's unified JSONL and FRAMES files, detected by `load_tasks` (what `wikisim eval --tasks FILE` uses)."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

import pytest

from wikisim.env.tasks import load_tasks, read_flashrag, read_frames
from wikisim.errors import TaskError

FLASHRAG = [
    {"id": "test_0", "question": "who wrote the iliad", "golden_answers": ["Homer"]},
    {
        "id": "dev_1",
        "question": "Which magazine was started first?",
        "golden_answers": ["Arthur's Magazine"],
        "metadata": {
            "type": "comparison",
            "level": "medium",
            "supporting_facts": {
                "title": ["Arthur's Magazine", "First for Women", "Arthur's Magazine"],
                "sent_id": [0, 0, 1],
            },
        },
    },
    {
        "id": "2wiki_2",
        "question": "Who was born first?",
        "golden_answers": ["Ada", "Ada Lovelace"],
        "metadata": {"supporting_facts": [["Ada Lovelace", 0], ["Charles Babbage", 1]]},
    },
]

FRAMES_ROWS = [
    {
        "": "0",
        "Prompt": "If my future wife has the same first name as the 15th first lady ...",
        "Answer": "Jane Ballou",
        "wikipedia_link_1": "https://en.wikipedia.org/wiki/President_of_the_United_States",
        "reasoning_types": "Numerical reasoning | Tabular reasoning",
        "wiki_links": "['https://en.wikipedia.org/wiki/President_of_the_United_States', "
        "'https://en.wikipedia.org/wiki/James_Buchanan', 'https://en.wikipedia.org/wiki/Harriet_Lane']",
    },
    {
        "": "1",
        "Prompt": "How many years earlier did the first ... ?",
        "Answer": "12",
        "wikipedia_link_1": "https://en.wikipedia.org/wiki/Apollo_11",
        "reasoning_types": "Temporal reasoning",
        "wiki_links": "['https://en.wikipedia.org/wiki/Apollo_11']",
    },
]


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _write_frames(path: Path, rows: list[dict], delimiter: str) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_flashrag_jsonl_keeps_answers_metadata_and_supporting_pages(tmp_path: Path) -> None:
    tasks = load_tasks(_write_jsonl(tmp_path / "hotpotqa-dev.jsonl", FLASHRAG))
    assert tasks.name == "hotpotqa-dev" and tasks.ids() == ["test_0", "dev_1", "2wiki_2"]
    assert tasks[0].answers == ("Homer",) and tasks[0].evidence == ()
    assert tasks[1].evidence == (
        "https://en.wikipedia.org/wiki/Arthur's_Magazine",
        "https://en.wikipedia.org/wiki/First_for_Women",
    )
    assert tasks[1].extra["metadata"]["type"] == "comparison"
    assert tasks[2].answers == ("Ada", "Ada Lovelace") and len(tasks[2].evidence) == 2
    assert (
        load_tasks(tasks_path := tmp_path / "hotpotqa-dev.jsonl").ids()
        == read_flashrag(tasks_path).ids()
    )


def test_flashrag_bad_rows_name_the_line(tmp_path: Path) -> None:
    path = _write_jsonl(
        tmp_path / "nq.jsonl", [FLASHRAG[0], {"id": "x", "question": "q", "golden_answers": []}]
    )
    with pytest.raises(TaskError, match=r"nq.jsonl:2"):
        load_tasks(path)


@pytest.mark.parametrize(("name", "delimiter"), [("test.tsv", "\t"), ("frames.csv", ",")])
def test_frames_tsv_and_csv(tmp_path: Path, name: str, delimiter: str) -> None:
    tasks = load_tasks(_write_frames(tmp_path / name, FRAMES_ROWS, delimiter))
    assert tasks.ids() == ["frames-0", "frames-1"]
    first = tasks.get("frames-0")
    assert first.answers == ("Jane Ballou",) and first.extra == {
        "reasoning_types": "Numerical reasoning | Tabular reasoning",
        "hops": 3,
    }
    assert first.evidence[1] == "https://en.wikipedia.org/wiki/James_Buchanan"
    assert tasks.get("frames-1").evidence == ("https://en.wikipedia.org/wiki/Apollo_11",)


def test_frames_as_json_records(tmp_path: Path) -> None:
    rows = [
        {**r, "wiki_links": ast.literal_eval(r["wiki_links"])} for r in FRAMES_ROWS
    ]  # HF's list-typed export
    assert load_tasks(_write_jsonl(tmp_path / "frames.jsonl", rows)).ids() == [
        "frames-0",
        "frames-1",
    ]
    (tmp_path / "frames.json").write_text(json.dumps(rows), encoding="utf-8")
    assert read_frames(tmp_path / "frames.json")[1].answers == ("12",)


def test_frames_bad_input_is_located(tmp_path: Path) -> None:
    bad = [{**FRAMES_ROWS[0], "wiki_links": "['https://en.wikipedia.org/wiki/A'"}]
    with pytest.raises(TaskError, match=r"test.tsv:2: wiki_links is not a list"):
        load_tasks(_write_frames(tmp_path / "test.tsv", bad, "\t"))
    other = _write_frames(tmp_path / "other.tsv", [{"question": "q", "answer": "a"}], "\t")
    with pytest.raises(TaskError, match="must be FRAMES"):
        load_tasks(other)
