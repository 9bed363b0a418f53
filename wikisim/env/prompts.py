"""The system prompt in the released agents' layout: tool signatures inside <tools></tools>,
calls inside <tool_call></tool_call>, the final answer inside <answer></answer>.

A model trained on Tongyi DeepResearch / WebSailor-V2 prompts reads the same structure here.
The date is the corpus's, not the wall clock's, so prompts are reproducible.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from wikisim.tools.protocol import ANSWER, TOOL_CALL

INTRO = (
    "You are a deep research assistant. Investigate the user's question thoroughly: search, read "
    "the pages that matter, check facts across sources, and compute with code when it helps. When "
    "you have gathered enough evidence, give the final answer, as short as the question allows, "
    f"enclosed in {ANSWER.open}{ANSWER.close} tags."
)
#: How the system prompts show one call: the released agents' wording.
CALL_SHAPE = f'{TOOL_CALL.open}\n{{"name": <function-name>, "arguments": <args-json-object>}}\n{TOOL_CALL.close}'


def system_prompt(schemas: Sequence[dict[str, Any]], date: str) -> str:
    tools = "\n".join(
        json.dumps(s, ensure_ascii=False) for s in schemas if s["function"]["name"] != "answer"
    )
    return (
        f"{INTRO}\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{tools}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        f"{TOOL_CALL.open}{TOOL_CALL.close} XML tags:\n{CALL_SHAPE}"
        + (f"\n\nCurrent date: {date}" if date else "")
    )


COMPACT_INTRO = (
    "You are a research assistant. Search, read the pages that matter, then give the final answer, "
    f"as short as possible, enclosed in {ANSWER.open}{ANSWER.close} tags."
)


def make_system_prompt(kind: str, schemas: Sequence[dict[str, Any]], date: str) -> str:
    """The env's system prompt: the paper's ("full") or the compact one, for `EnvConfig.prompt`."""
    return compact_system_prompt(schemas) if kind == "compact" else system_prompt(schemas, date)


def compact_system_prompt(schemas: Sequence[dict[str, Any]]) -> str:
    """The same turn format in ~100 tokens instead of ~600: one line per tool, its arguments by name.

    For small models on small contexts (a CPU budget); the paper's prompt stays the default.
    """
    lines = []
    for s in schemas:
        fn = s["function"]
        if fn["name"] == "answer":
            continue
        args = ", ".join(fn["parameters"].get("properties", {}))
        lines.append(f"- {fn['name']}({args}): {fn['description'].split('.')[0]}.")
    return (
        f"{COMPACT_INTRO}\nTools:\n"
        + "\n".join(lines)
        + f"\nCall one tool per turn as:\n{TOOL_CALL.open}\n"
        '{"name": <tool-name>, "arguments": <args-json-object>}\n' + TOOL_CALL.close
    )
