import os
import signal
import subprocess
import sys

from wikisim.errors import BackendError
from wikisim.index.jvm import pyserini_module, worker_start_method


def test_a_fork_of_the_process_that_started_the_jvm_gets_an_error_not_a_hang() -> None:
    pyserini_module("search.lucene")  # the JVM starts in this process
    pid = os.fork()
    if pid == 0:  # the child: only Python here, then straight out
        signal.alarm(30)  # a hang kills the child (exit -14) instead of the test run
        try:
            pyserini_module("search.lucene")
        except BackendError as e:
            os._exit(0 if "fork" in str(e) and "forkserver" in str(e) else 2)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert pyserini_module("search.lucene")  # the process that started it goes on using it


def test_workers_start_with_forkserver_once_the_jvm_runs_here() -> None:
    fresh = subprocess.run(
        [
            sys.executable,
            "-c",
            "from wikisim.index.jvm import worker_start_method as w; print(w())",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert fresh.stdout.strip() == "None"  # no JVM yet: the default (fork) shares loaded indexes
    pyserini_module("search.lucene")
    assert worker_start_method() == "forkserver"
