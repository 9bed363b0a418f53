"""The system prompt in the released agents' layout: tool signatures inside <tools></tools>,
calls inside <tool_call></tool_call>, the final answer inside <answer></answer>.

A model trained on Tongyi DeepResearch / WebSailor-V2 prompts reads the same structure here.
The date is the corpus's, not the wall clock's, so prompts are reproducible.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

INTRO = (
    "You are a deep research assistant. Investigate the user's question thoroughly: search, read "
    "the pages that matter, check facts across sources, and compute with code when it helps. When "
    "you have gathered enough evidence, give the final answer, as short as the question allows, "
    "enclosed in <answer></answer> tags."
)


def system_prompt(schemas: Sequence[dict[str, Any]], date: str) -> str:
    tools = "\n".join(json.dumps(s, ensure_ascii=False) for s in schemas if s["function"]["name"] != "answer")
    return (
        f"{INTRO}\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{tools}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
        + (f"\n\nCurrent date: {date}" if date else "")
    )

