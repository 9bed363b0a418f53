"""`wikisim build` and `wikisim search` end to end, through the real CLI entry point."""

from __future__ import annotations

import json

import pytest

from wikisim.cli import main
from wikisim.paths import DATA_DIR

WIKI18 = DATA_DIR / "dumps" / "wiki18-passages-1000.jsonl"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "wiki18"
    rc = main(
        [
            "build",
            str(WIKI18),
            "--out",
            str(out),
            "--no-dense",
            "--no-lucene",
            "--quiet",
            "--passage-words",
            "100",
        ]
    )
    assert rc == 0
    return out


def test_build_prints_a_readable_report(built, capsys) -> None:
    # the report of the fixture's build went to stdout before this test; rebuild to see it
    rc = main(
        [
            "build",
            str(WIKI18),
            "--out",
            str(built),
            "--no-dense",
            "--no-lucene",
            "--quiet",
            "--passage-words",
            "100",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    for field in (
        "pages",
        "redirects",
        "passages",
        "links",
        "infoboxes",
        "citations",
        "skipped",
        "time",
    ):
        assert field in out
    assert "manifest" in out and str(built) in out


def test_search_json_one_object_per_query(built, capsys) -> None:
    rc = main(
        [
            "search",
            "--index",
            str(built),
            "--retriever",
            "bm25s",
            "-k",
            "3",
            "--json",
            "Evan Morris lobbyist Genentech",
            "who lobbied for Roche",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert rc == 0 and len(lines) == 2
    first = json.loads(lines[0])
    assert first["query"] == "Evan Morris lobbyist Genentech"
    assert len(first["hits"]) == 3
    assert set(first["hits"][0]) == {"docid", "title", "url", "snippet", "score"}
    assert first["hits"][0]["title"] == "Evan Morris"


def test_search_table_is_readable(built, capsys) -> None:
    assert main(["search", "--index", str(built), "-k", "2", "Evan Morris lobbyist"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("query: Evan Morris lobbyist")
    assert "score" in out and "Evan Morris" in out


def test_search_errors_are_clear(built, tmp_path, capsys) -> None:
    assert main(["search", "--index", str(tmp_path / "none"), "x"]) == 2
    assert "no index at" in capsys.readouterr().err
    half = tmp_path / "half"
    half.mkdir()
    (half / "passages.sqlite").write_bytes(b"")
    assert main(["search", "--index", str(half), "x"]) == 2
    assert "no manifest.json" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # argparse names the choices
        main(["search", "--index", str(built), "--retriever", "solr", "x"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'solr'" in capsys.readouterr().err
    assert main(["search", "--index", str(built)]) == 2
    assert "queries is required" in capsys.readouterr().err
    assert main(["search", "--index", str(built), "--retriever", "dense", "x"]) == 2
    assert "no 'dense' index" in capsys.readouterr().err
    assert main(["search", "--index", str(built), "  "]) == 2
    assert "query 1 is empty" in capsys.readouterr().err


def test_search_each_backend_on_the_sample(sample_index, capsys) -> None:
    for backend in ("hybrid", "lucene", "bm25s", "dense"):
        assert (
            main(
                [
                    "search",
                    "--index",
                    str(sample_index),
                    "--retriever",
                    backend,
                    "-k",
                    "1",
                    "--json",
                    "Autism diagnosis",
                ]
            )
            == 0
        )
        hit = json.loads(capsys.readouterr().out)["hits"][0]
        assert hit["title"] == "Autism", backend


def test_the_default_retriever_is_the_best_an_index_has(built, sample_index, capsys) -> None:
    from wikisim.index import open_index

    assert open_index(sample_index).default_retriever == "hybrid"
    assert open_index(built).default_retriever == "bm25s"  # built without dense and Lucene
    outputs = []
    for chosen in ([], ["--retriever", "bm25s"]):
        assert main(["search", "--index", str(built), *chosen, "--json", "Evan Morris"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
