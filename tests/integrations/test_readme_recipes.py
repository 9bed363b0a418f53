"""The README's "Use wikisim from ..." recipes run as written, against a real `wikisim serve`, with the
server's URL and the index path filled in (and, for TRL, the tiny model and 2 GRPO steps on CPU)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
from serve_procs import start, stop

from wikisim.paths import REPO_ROOT

SECTION = "## Use wikisim from ..."


def recipes() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```py\n(.*?)```", section, re.S)


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def server(sample_index) -> Iterator[str]:
    proc, url = start("serve", sample_index)
    yield url
    stop(proc)


def fill(code: str, server: str, index) -> str:
    return code.replace("http://127.0.0.1:8765", server).replace('"runs/index"', repr(str(index)))


def test_the_section_has_a_recipe_per_stack():
    names = [
        next(w for w in ("retrieve", "verl", "serper", "mcp", "trl") if w in code)
        for code in recipes()
    ]
    assert names == ["retrieve", "verl", "serper", "mcp", "trl"]


def test_search_r1_skyrl_gem_asearcher_recipe(server, sample_index):
    out = run(fill(recipes()[0], server, sample_index)).splitlines()
    assert re.match(r"^\d+\.\d+ \".+\"$", out[0]) and out[1]


def test_verl_recipe(server, sample_index):
    assert "A Google search for 'Apollo 11' found" in run(fill(recipes()[1], server, sample_index))


def test_tongyi_serper_jina_recipe(server, sample_index):
    out = run(fill(recipes()[2], server, sample_index)).strip()
    title = out.split(" Title: ")[0]
    assert out.endswith(f"Title: {title}")


def test_mcp_recipe(server, sample_index):
    out = run(fill(recipes()[3], server, sample_index))
    assert (
        out.startswith("['search', 'visit', 'scholar'") and "A Google search for 'Apollo 11'" in out
    )


@pytest.mark.slow
def test_trl_recipe(server, sample_index, tmp_path):
    tiny = (
        "from pathlib import Path\nimport trl\nfrom trl.chat_template_utils import add_response_schema\n"
        "from agent.rollout.models import tiny_model\ntokenizer, model = tiny_model()\n"
        "tokenizer.chat_template = (Path(trl.__file__).parent / 'chat_templates' / 'qwen2_5.jinja').read_text()\n"
        "add_response_schema(tokenizer)\n"
    )
    code = fill(recipes()[4], server, sample_index)
    code = re.sub(
        r'tokenizer = AutoTokenizer.from_pretrained\("Qwen/Qwen3-0.6B"\)\nmodel = .*\n', tiny, code
    )
    code = code.replace(
        'output_dir="runs/trl", max_steps=200',
        f"output_dir={str(tmp_path)!r}, max_steps=2, max_completion_length=16, use_cpu=True, "
        'report_to=[], save_strategy="no", gradient_checkpointing=False, logging_steps=1',
    )
    code = code.replace("per_device_train_batch_size=4", "per_device_train_batch_size=2").replace(
        "num_generations=4", "num_generations=2"
    )
    assert "tiny_model" in code and "max_steps=2" in code
    report = (
        "\nlogs = [h for h in trainer.state.log_history if 'rewards/WikiSimTRLEnv/mean' in h]\n"
        "print(trainer.state.global_step, len(logs), all('tools/call_frequency' in h for h in logs))\n"
    )
    out = run("import os\nos.environ['TRL_EXPERIMENTAL_SILENCE'] = '1'\n" + code + report)
    # 2 GRPO steps, each scored by the env's get_reward
    assert out.split()[-3:] == ["2", "2", "True"], out[-2000:]
