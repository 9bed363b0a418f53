"""End to end on the bundled sample: graph, questions, verification, splits, tools."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from wikisim.backends.wiki import WikiBackend
from wikisim.commands import synth as synth_command
from wikisim.env.tasks import read_jsonl
from wikisim.index import open_index
from wikisim.synth.expand import ExpandConfig, expand
from wikisim.synth.pipeline import SynthConfig, generate
from wikisim.synth.report import graph_stats, plot_graph, run_stats
from wikisim.synth.sample import SampleConfig
from wikisim.synth.solvability import solve_rates
from wikisim.synth.source import graph_from_store
from wikisim.synth.uncertainty import UNCERTAINTY_KINDS
from wikisim.synth.verify import Reverifier


@pytest.fixture(scope="module")
def index(sample_index: Path):
    return open_index(sample_index)


@pytest.fixture(scope="module")
def sample_graph(index):
    return graph_from_store(index.store).kg


@pytest.fixture(scope="module")
def sample_run(sample_graph, index):
    return generate(sample_graph, SynthConfig(n=200, seed=0), index.manifest_hash, progress=False)


def test_graph_of_the_sample_is_densified_into_cycles(sample_graph, tmp_path):
    stats = graph_stats(sample_graph)
    assert stats["nodes"] == 106 and stats["mention_edges"] > 0
    assert stats["cycle_rank"] > 0 and 0 < stats["share_on_cycle"] < 1
    assert all(p.stat().st_size > 1000 for p in plot_graph(sample_graph, tmp_path))


def test_questions_are_unique_reverified_and_use_every_uncertainty_kind(sample_graph, sample_run, index):
    records = sample_run.records
    assert len(records) == 200
    verdicts = [Reverifier(sample_graph).check(r) for r in records]
    assert sum(v.ok for v in verdicts) >= 0.95 * len(records)
    assert {k for r in records for k in r["uncertainty"]} == set(UNCERTAINTY_KINDS)
    for r in records:
        assert index.store.by_title(r["answer"]) is not None  # the answer is a page of the corpus
        assert r["evidence"] and all(u.startswith("https://en.wikipedia.org/wiki/") for u in r["evidence"])
        assert r["manifest_hash"] == index.manifest_hash and r["wl_version"].startswith("networkx-")
    stats = run_stats(sample_graph, sample_run)
    assert stats["cyclic_share"] >= 0.3 and stats["drops"]  # some candidates were dropped, by reason


def test_tree_only_baseline_has_no_cycles(sample_graph):
    tree = generate(sample_graph, SynthConfig(n=50, seed=0, sample=SampleConfig(tree_only=True)), progress=False)
    assert tree.records and not any(r["subgraph"]["cyclic"] for r in tree.records)


def test_same_seed_same_bytes_for_any_worker_count(sample_graph, sample_run):
    two = generate(sample_graph, SynthConfig(n=200, seed=0, workers=2), sample_run.records[0]["manifest_hash"],
                   progress=False)
    assert json.dumps(two.records) == json.dumps(sample_run.records)
    other = generate(sample_graph, SynthConfig(n=20, seed=1), progress=False)
    assert [r["id"] for r in other.records] != [r["id"] for r in sample_run.records[:20]]


def main(argv: list[str]) -> int:
    """`wikisim synth ...` through the command module's own parser and run."""
    parser = argparse.ArgumentParser()
    synth_command.add_arguments(parser)
    return synth_command.run(parser.parse_args(argv))


def test_command_writes_splits_that_load_as_task_sets(sample_index, tmp_path):
    out = tmp_path / "q.jsonl"
    args = ["--index", str(sample_index), "--n", "150", "--seed", "3", "--out", str(out), "--quiet"]
    assert main(args) == 0
    first = out.read_bytes()
    assert main(args) == 0 and out.read_bytes() == first
    tasks = read_jsonl(out)
    assert len(tasks) == 150 and tasks[0].extra["constraints"] and tasks[0].evidence
    parts = {s: [json.loads(line) for line in (tmp_path / f"q-{s}.jsonl").read_text().splitlines()]
             for s in ("train", "dev", "test")}
    train, test = parts["train"], parts["test"]
    assert len(train) > len(test) > 0
    for t in test:
        assert all(t["wl_hash"] != u["wl_hash"] and t["answer"] != u["answer"] for u in train)
    report = json.loads((tmp_path / "q.report.json").read_text())
    assert report["run"]["questions"] == 150 and report["graph"]["nodes"] == 106


def test_oracle_solves_through_tools_and_top_hit_baseline_does_not(index, sample_run):
    rates = solve_rates(WikiBackend(index), sample_run.records[:40])
    assert rates.oracle >= 0.85
    assert rates.search_top1 <= 0.2


def test_expansion_discovers_by_search_and_visit_with_provenance(index):
    found = expand(WikiBackend(index), index.store.titles(), ["Alabama"], ExpandConfig(max_nodes=25))
    assert len(found.found) == 25 and found.found[0].via == "seed"
    vias = {d.via for d in found.found}
    assert vias == {"seed", "search", "visit"}
    assert all(d.query for d in found.found if d.via == "search")
    assert all(d.from_url.startswith("https://en.wikipedia.org/wiki/") for d in found.found if d.via == "visit")
    built = graph_from_store(index.store, backend=WikiBackend(index), seeds=2, seed=0,
                             expand_config=ExpandConfig(max_nodes=40))
    assert len(built.kg.entities) == 40 and all(e.provenance for e in built.kg.entities.values())
    run = generate(built.kg, SynthConfig(n=5, seed=0), progress=False)
    assert run.records and all(n["provenance"] for r in run.records for n in r["subgraph"]["nodes"])
