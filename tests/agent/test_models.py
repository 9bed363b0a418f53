"""The tiny test model is deterministic and speaks the tool chat format; SmolLM2 converts offline once."""

from __future__ import annotations

import pytest
import torch

from agent.rollout.models import load_smollm2, smollm2_dir, tiny_model
from agent.rollout.react import ChatFormat


def test_tiny_model_is_deterministic_per_seed() -> None:
    tok_a, model_a = tiny_model(3)
    tok_b, model_b = tiny_model(3)
    _, model_c = tiny_model(4)
    assert tok_a.get_vocab() == tok_b.get_vocab()
    ids = torch.tensor(
        [tok_a("<tool_call>search</tool_call>", add_special_tokens=False)["input_ids"]]
    )
    with torch.inference_mode():
        la, lb, lc = (m(input_ids=ids).logits for m in (model_a, model_b, model_c))
    assert torch.equal(la, lb)
    assert not torch.equal(la, lc)


def test_tiny_chat_template_renders_tools_and_turns() -> None:
    tok, _ = tiny_model(0)
    tools = [{"type": "function", "function": {"name": "search", "parameters": {}}}]
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q?"}]
    text = tok.apply_chat_template(msgs, tools=tools, tokenize=False, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nS\n\n# Tools\n")
    assert (
        '<tools>\n{"type": "function", "function": {"name": "search", "parameters": {}}}\n</tools>'
        in text
    )
    assert text.endswith("<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\n")
    chat = ChatFormat(tok)
    assert (chat.end_of_turn, chat.user_open, chat.user_close) == (
        "<|im_end|>\n",
        "<|im_start|>user\n",
        "<|im_end|>\n<|im_start|>assistant\n",
    )
    # special tokens are single ids, so end-of-turn can be matched by id
    assert tok("<|im_end|>", add_special_tokens=False)["input_ids"] == [tok.eos_token_id]


@pytest.mark.slow
def test_smollm2_converts_once_and_reloads_from_the_cache() -> None:
    path = smollm2_dir()
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    tok, model = load_smollm2()
    assert smollm2_dir() == path and (path / "model.safetensors").stat().st_mtime_ns == stamp
    assert sum(p.numel() for p in model.parameters()) > 100_000_000
    ids = tok.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    enc = torch.tensor([tok(ids, add_special_tokens=False)["input_ids"]])
    with torch.inference_mode():
        out = model.generate(enc, max_new_tokens=8, do_sample=False)
    assert "Paris" in tok.decode(out[0, enc.shape[1] :])


@pytest.mark.parametrize("start", ["policy", "trainer"])
def test_generation_and_training_turn_cudnn_attention_off(start: str) -> None:
    """cuDNN's fused attention fails at random on CUDA (pytorch#134001): neither path may use it."""
    from agent.rollout.policies.transformers_policy import TransformersPolicy
    from agent.train.config import TrainConfig
    from agent.train.loop import make_accelerator

    torch.backends.cuda.enable_cudnn_sdp(True)
    if start == "policy":
        TransformersPolicy(*tiny_model(0))
    else:
        make_accelerator(TrainConfig(cpu=True))
    assert not torch.backends.cuda.cudnn_sdp_enabled()


SAVE_ADAPTER = """
import sys
from pathlib import Path
from peft import LoraConfig, get_peft_model
from agent.rollout.models import save_adapter, tiny_model
_, model = tiny_model(0)
model = get_peft_model(model, LoraConfig(r=2, lora_alpha=4, target_modules="all-linear"))
save_adapter(model, Path(sys.argv[1]))
"""


def test_a_saved_adapter_is_the_same_bytes_under_any_hash_seed(tmp_path) -> None:
    import os
    import subprocess
    import sys

    outs = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", SAVE_ADAPTER, str(out)], check=True, env=env)
        outs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert outs[0] == outs[1]
    assert sorted(outs[0]) == ["adapter_config.json", "adapter_model.safetensors"]
