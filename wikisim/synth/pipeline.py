"""Subgraphs -> orbits -> questions, in order, with any number of worker processes.

Why the output cannot depend on workers: subgraphs come from one seeded sampler in the
parent; each subgraph's questions are a pure function of (graph, subgraph, seed), drawn
with an rng seeded from the seed and the walk index; results are taken in sampling order.
Workers come from a forkserver, not a fork of the caller: a caller that runs a JVM, faiss
or torch threads would hand a forked child locks that no thread will ever release.
"""

from __future__ import annotations

import multiprocessing as mp
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from wikisim.errors import ConfigError
from wikisim.synth.factdb import FactDB
from wikisim.synth.orbits import orbits
from wikisim.synth.questions import make_question, question_record
from wikisim.synth.sample import WL_VERSION, SampleConfig, Sampler, Subgraph
from wikisim.synth.solver import Solver
from wikisim.synth.uncertainty import UNCERTAINTY_KINDS

BATCH = 64


@dataclass(frozen=True)
class SynthConfig:
    n: int  # questions to keep
    seed: int = 0
    workers: int = 1
    questions_per_subgraph: int = 2  # at most, each from a different orbit
    obfuscate: float = 0.35  # chance that an anchor is described instead of named
    sample: SampleConfig = field(default_factory=SampleConfig)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"SynthConfig.n must be >= 1, got {self.n}")
        if self.workers < 1:
            raise ConfigError(f"SynthConfig.workers must be >= 1, got {self.workers}")
        if self.questions_per_subgraph < 1:
            raise ConfigError(
                f"questions_per_subgraph must be >= 1, got {self.questions_per_subgraph}"
            )
        if not 0.0 <= self.obfuscate <= 1.0:
            raise ConfigError(f"obfuscate must be in [0, 1], got {self.obfuscate}")


@dataclass(frozen=True)
class SubgraphResult:
    sub: Subgraph
    n_orbits: int
    questions: tuple[dict[str, Any], ...]
    drops: tuple[str, ...]  # one reason per answer node tried and dropped


_STATE: dict[str, Any] = {}


def _init(db: FactDB, config: SynthConfig, manifest_hash: str) -> None:
    _STATE.update(db=db, solver=Solver(db), config=config, manifest_hash=manifest_hash)


def questions_for(sub: Subgraph) -> SubgraphResult:
    """All questions of one subgraph: orbits in a seeded order, one answer node per orbit."""
    db: FactDB = _STATE["db"]
    config: SynthConfig = _STATE["config"]
    rng = random.Random(f"{config.seed}:{sub.walk}")
    orbs = orbits(sub.to_networkx(db))
    order = list(range(len(orbs)))
    rng.shuffle(order)
    kept: list[dict[str, Any]] = []
    drops: list[str] = []
    for slot, i in enumerate(order):
        if len(kept) == config.questions_per_subgraph:
            break
        orbit = tuple(int(str(n)) for n in orbs[i])  # node ids, typed Hashable by networkx
        answers = [n for n in orbit if db.entity(n).answerable]
        if not answers:
            drops.append("not_an_answer_kind")
            continue
        x = answers[rng.randrange(len(answers))]
        focus = UNCERTAINTY_KINDS[(sub.walk + slot) % len(UNCERTAINTY_KINDS)]
        q, reason = make_question(db, _STATE["solver"], sub, x, orbit, rng, focus, config.obfuscate)
        if q is None:
            drops.append(reason)
            continue
        qid = f"sfq-{config.seed}-{sub.walk}-{x}"
        kept.append(
            question_record(
                db,
                q,
                sub,
                seed=config.seed,
                manifest_hash=_STATE["manifest_hash"],
                wl_version=WL_VERSION,
                qid=qid,
            )
        )
    return SubgraphResult(sub, len(orbs), tuple(kept), tuple(drops))


def _batches(it: Iterator[Subgraph], size: int) -> Iterator[list[Subgraph]]:
    batch: list[Subgraph] = []
    for s in it:
        batch.append(s)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class SynthRun:
    records: list[dict[str, Any]]
    subgraphs: list[Subgraph]
    drops: Counter
    attempts: int
    sampler_stats: dict[str, int]


def _wording(record: dict[str, Any]) -> str:
    return " ".join(record["question"].lower().split())


def generate(
    db: FactDB,
    config: SynthConfig,
    manifest_hash: str = "",
    progress: bool = True,
    giveaway: Callable[[dict[str, Any]], bool] | None = None,
) -> SynthRun:
    """Keep sampling distinct subgraphs until `config.n` questions pass verification.

    `giveaway(record)` (in this process, in sampling order) drops a question that one search
    answers; see solvability.search_gives_away."""
    sampler = Sampler(db, config.sample)
    _init(db, config, manifest_hash)
    records: list[dict[str, Any]] = []
    subs: list[Subgraph] = []
    drops: Counter = Counter()
    asked: set[str] = set()  # distinct subgraphs can still word the same question
    attempts = 0
    pool = None
    if config.workers > 1:
        pool = mp.get_context("forkserver").Pool(config.workers, _init, (db, config, manifest_hash))
    bar = tqdm(total=config.n, desc="synth", unit="q", disable=not progress)
    try:
        for batch in _batches(sampler.sample(config.seed), BATCH):
            results = (
                pool.map(questions_for, batch, chunksize=4)
                if pool
                else [questions_for(s) for s in batch]
            )
            for r in results:
                attempts += len(r.questions) + len(r.drops)
                drops.update(r.drops)
                if r.questions:
                    subs.append(r.sub)
                kept = [q for q in r.questions if giveaway is None or not giveaway(q)]
                drops["search_giveaway"] += len(r.questions) - len(kept)
                fresh = []
                for q in kept:
                    if _wording(q) not in asked:
                        asked.add(_wording(q))
                        fresh.append(q)
                drops["duplicate_question"] += len(kept) - len(fresh)
                kept = fresh
                take = kept[: config.n - len(records)]
                records.extend(take)
                bar.update(len(take))
                if len(records) >= config.n:
                    break
            if len(records) >= config.n:
                break
    finally:
        bar.close()
        if pool is not None:
            pool.terminate()
    stats = sampler.stats
    return SynthRun(
        records,
        subs,
        drops,
        attempts,
        {
            "walks": stats.walks,
            "too_small": stats.too_small,
            "duplicates": stats.duplicates,
            "distinct": stats.kept,
        },
    )
