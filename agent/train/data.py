"""What a training config names: task sets made of several files (each optionally sliced) and indexes.

Task files are read at run time, so regenerated files (a new synthesis run) are picked up.
`tasks: data/tasks/synth-sample-train.jsonl,data/qa/hotpotqa-train-100.json[:70]` trains on the
synthesized train split and the first 70 HotpotQA items; `[-30:]` would take the last 30.
The index name `learn-agent` is the bundled 2014 sample plus the HotpotQA and MuSiQue corpora
in one bm25s index, built once into the cache, so that every one of those questions has its
pages in the env.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from wikisim.env.tasks import TaskSet, load_tasks
from wikisim.errors import ConfigError
from wikisim.paths import QA_DIR, REPO_ROOT, SAMPLE_DUMP, cache_dir

LEARN_INDEX = "learn-agent"
_SLICE = re.compile(r"^(?P<path>.+?)\[(?P<start>-?\d*):(?P<stop>-?\d*)\]$")


def load_task_spec(spec: str, name: str = "") -> TaskSet:
    """One task set from comma-separated files, each with an optional Python slice `[a:b]`.

    Relative paths are taken from the working directory, else from the repository root.
    """
    tasks = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        m = _SLICE.match(part)
        path = m.group("path") if m else part
        if not Path(path).exists() and (REPO_ROOT / path).exists():
            path = str(REPO_ROOT / path)
        items = list(load_tasks(path))
        if m:
            start, stop = (int(x) if x else None for x in (m.group("start"), m.group("stop")))
            items = items[start:stop]
        if not items:
            raise ConfigError(f"task spec {part!r} selects no tasks")
        tasks.extend(items)
    if not tasks:
        raise ConfigError(f"task spec {spec!r} names no task file; write FILE[,FILE[a:b]...]")
    return TaskSet(tasks, name or spec)


def learn_index() -> Path:
    """The 2014 sample plus the HotpotQA and MuSiQue corpora in one bm25s index, built once."""
    from wikisim.index.build import build
    from wikisim.index.layout import open_index

    out = cache_dir() / "indexes" / LEARN_INDEX
    try:
        open_index(out)
        return out
    except Exception:  # noqa: BLE001 - absent, half-built or of an older format: (re)build it
        shutil.rmtree(out, ignore_errors=True)
    build(
        [
            SAMPLE_DUMP,
            QA_DIR / "hotpotqa-train-100-corpus.json",
            QA_DIR / "musique-train-100-corpus.json",
        ],
        out,
        dense=False,
        lucene=False,
        progress=False,
    )
    return out


def resolve_index(index: str) -> str | None:
    """A config's index: "" = the bundled sample, `learn-agent` = `learn_index()`, else a built directory."""
    if index == LEARN_INDEX:
        return str(learn_index())
    return index or None
