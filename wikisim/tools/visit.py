"""The `visit` tool: a goal-directed extract of each page, in the layout the released Tongyi
DeepResearch visit tool uses ("The useful information in URL for user goal GOAL as follows").

`PageView.extract` is the body after that header ("Evidence in page: ... Summary: ..."),
written by the backend's extractor.
"""

from __future__ import annotations

from typing import Any

from wikisim.backends.base import Backend, PageView
from wikisim.errors import WikisimError
from wikisim.tools.base import ToolOutput
from wikisim.tools.search import QUERY_SEPARATOR, as_list

MAX_URLS = 5
NOT_FOUND_SUMMARY = (
    "The webpage content could not be processed, and therefore, no information is available."
)


def format_visit(url: str, goal: str, view: PageView) -> str:
    head = f"The useful information in {url} for user goal {goal} as follows: \n\n"
    if view.found:
        return head + view.extract + "\n\n"
    body = "The provided webpage content could not be accessed."
    if view.extract:
        body += " " + view.extract
    if view.suggestions:
        body += " Closest pages: " + "; ".join(view.suggestions) + "."
    return head + f"Evidence in page: \n{body}\n\nSummary: \n{NOT_FOUND_SUMMARY}\n\n"


class VisitTool:
    name = "visit"

    def __init__(self, backend: Backend, max_tokens: int = 1500) -> None:
        self.backend = backend
        self.max_tokens = max_tokens
        self.schema: dict[str, Any] = {
            "type": "function",
            "function": {
                "name": self.name,
                "description": "Visit webpage(s) and return the parts relevant to the goal: the page's lead and "
                "its most relevant passages, with section headings.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "url": {
                            "anyOf": [
                                {"type": "string", "minLength": 1},
                                {
                                    "type": "array",
                                    "items": {"type": "string", "minLength": 1},
                                    "minItems": 1,
                                    "maxItems": MAX_URLS,
                                },
                            ],
                            "description": "The URL(s) (or page titles) to visit.",
                        },
                        "goal": {
                            "type": "string",
                            "minLength": 1,
                            "description": "The specific information goal for visiting the page(s).",
                        },
                    },
                    "required": ["url", "goal"],
                },
            },
        }

    def __call__(self, **arguments: Any) -> ToolOutput:
        goal = arguments["goal"].strip()
        out, ok = [], []
        for url in (u.strip() for u in as_list(arguments["url"])):
            try:
                view = self.backend.visit(url, goal, self.max_tokens)
                ok.append(True)
            except WikisimError as e:
                view = PageView(
                    url=url,
                    title="",
                    found=False,
                    extract=f"The {self.backend.name} backend failed: {e}.",
                )
                ok.append(False)
            out.append(format_visit(url, goal, view))
        return ToolOutput(QUERY_SEPARATOR.join(out), ok=all(ok))
