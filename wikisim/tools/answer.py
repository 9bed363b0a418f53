"""The `answer` tool: its schema tells the policy how to finish; the env ends the episode on it."""

from __future__ import annotations

from typing import Any

from wikisim.tools.base import ToolOutput


class AnswerTool:
    name = "answer"
    schema: dict[str, Any] = {
        "type": "function",
        "function": {
            "name": "answer",
            "description": "Give the final answer and end the episode (same as writing <answer>...</answer>).",
            "parameters": {
                "type": "object",
                "properties": {
                    "answer": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The final answer, concise.",
                    }
                },
                "required": ["answer"],
            },
        },
    }

    def __call__(self, **arguments: Any) -> ToolOutput:
        return ToolOutput(f"Final answer recorded: {arguments['answer'].strip()}")
