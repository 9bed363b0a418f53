"""Reading turns in tests through the one parser, with the env's real tool schemas."""

from __future__ import annotations

from wikisim.tools.answer import AnswerTool
from wikisim.tools.protocol import call_names, parse_turn, tool_parameters
from wikisim.tools.registry import ToolBox
from wikisim.tools.scholar import ScholarTool
from wikisim.tools.search import SearchTool
from wikisim.tools.visit import VisitTool

TOOL_PARAMS = tool_parameters(
    [SearchTool(None).schema, VisitTool(None).schema, ScholarTool(None).schema, AnswerTool.schema]
)  # type: ignore[arg-type]


def tool_names(text: str) -> tuple[str, ...]:
    return call_names(parse_turn(text, TOOL_PARAMS))


def extract_answer(text: str) -> str | None:
    return parse_turn(text, TOOL_PARAMS).answer


def call_tool(tool, **arguments) -> str:
    """A direct call as servers and adapters make it: checked against the schema once, then run."""
    return ToolBox([tool]).call(tool.name, arguments).text
