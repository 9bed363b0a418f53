"""The turn protocol of WebSailor-V2 / Tongyi DeepResearch, owned here and nowhere else.

A policy turn is an optional `<think>...</think>`, then one or more
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, or `<answer>...</answer>`; each tool
result comes back wrapped in `<tool_response>...</tool_response>`. The env, the policies, the
model server and the trainer take their tags, stop strings, formatting and the one parser
(`parse_turn`) from this module.

Which answer counts: the FIRST `<answer>...</answer>` block after `</think>` (an empty one is an
error, not a pass to a later block); in a turn with no `<answer>` block, the first valid call of
the `answer` tool with a non-empty answer among the turn's first MAX_CALLS_PER_TURN calls. An
answer ends the episode, so anything after it, and tool calls beside it, are not run. A dict
`{"name", "arguments"}` is accepted as a one-call turn.

A turn ends where the policy writes `<tool_response>`: only the env writes tool results, and the
released agents stop generating there (it is one of their stop strings, and one of ours), so text
from it on is never read, even when a stop-free sampler produced it.

A call's JSON is read as the released agents' harness reads it (Tongyi DeepResearch's
`react_agent.py`): JSON5 where plain JSON fails (single quotes, a trailing comma, unquoted keys),
keys beside "name" and "arguments" ignored, and an argument a tool does not know dropped (each of
its tools reads the arguments it knows), so a call that runs there runs here.

Nothing here raises on bad input: every defect becomes a `CallError` whose message says what
was wrong and what is accepted, so the env shows it to the policy as an observation and goes on.
Text before `</think>` is the think even when the opening tag is missing (chat templates
often put it in the prompt).
"""

from __future__ import annotations

import contextlib
import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import json5

from wikisim.errors import ToolCallError
from wikisim.tools.arguments import check_arguments, known_arguments, short, type_name, usage

_UNREAD = object()  # what a call body neither JSON nor JSON5 reads parses to


@dataclass(frozen=True)
class Tag:
    """An XML-style tag of the turn format."""

    name: str

    @property
    def open(self) -> str:
        return f"<{self.name}>"

    @property
    def close(self) -> str:
        return f"</{self.name}>"


THINK = Tag("think")
TOOL_CALL = Tag("tool_call")
TOOL_RESPONSE = Tag("tool_response")
ANSWER = Tag("answer")
CODE = Tag("code")
#: Where a policy's generation of one turn stops (the closing tag is kept): after a call or an
#: answer, or where it starts writing a tool result itself, as the released agents stop it.
STOP_STRINGS: tuple[str, ...] = (TOOL_CALL.close, ANSWER.close, TOOL_RESPONSE.open)
#: Separates the tool responses of a turn with several calls.
RESPONSE_SEPARATOR = "\n"

#: Longest turn parsed; a longer one is rejected whole (1 MB of junk costs one `len`).
MAX_ACTION_CHARS = 262_144
#: Most tool calls executed from one turn.
MAX_CALLS_PER_TURN = 10

#: Names the released agents use for our tools (Tongyi DeepResearch calls python
#: `PythonInterpreter` with the code in a `<code>` block, and scholar `google_scholar`).
ALIASES = {"PythonInterpreter": "python", "google_scholar": "scholar", "google_search": "search"}

_SURROGATE = re.compile("[\ud800-\udfff]")
# a call whose arguments are strings: `"query": "the song "X""` copies a question's quoted title
_STRING_ARGUMENTS = re.compile(
    r'(\{\s*"name"\s*:\s*"[^"\\]*"\s*,\s*"arguments"\s*:\s*\{\s*"\w+"\s*:\s*")(.*)("\s*\}\s*\})',
    flags=re.S,
)
_NEXT_STRING_ARGUMENT = re.compile(r'("\s*,\s*"\w+"\s*:\s*")')


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(hash=False)

    def canonical(self) -> str:
        """The call as sorted JSON: what trajectories record and what info reports."""
        return json.dumps(
            {"name": self.name, "arguments": self.arguments}, ensure_ascii=False, sort_keys=True
        )


@dataclass(frozen=True)
class CallError:
    """A malformed turn or call: `message` is shown to the policy verbatim."""

    message: str
    name: str = ""  # the tool it was meant for, when that much was readable


@dataclass(frozen=True)
class Action:
    think: str
    items: tuple[ToolCall | CallError, ...]  # calls and errors in the order they appeared
    answer: str | None = None  # set when the turn ends the episode

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        return tuple(i for i in self.items if isinstance(i, ToolCall))

    @property
    def errors(self) -> tuple[CallError, ...]:
        return tuple(i for i in self.items if isinstance(i, CallError))


def format_tool_call(name: str, arguments: Mapping[str, Any], think: str = "") -> str:
    """A turn that calls one tool, exactly as the released agents write it."""
    call = json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)
    return f"{_think(think)}{TOOL_CALL.open}\n{call}\n{TOOL_CALL.close}"


def format_answer(answer: str, think: str = "") -> str:
    """A turn that gives the final answer."""
    return f"{_think(think)}{ANSWER.open}{answer}{ANSWER.close}"


def _think(think: str) -> str:
    return f"{THINK.open}\n{think}\n{THINK.close}\n" if think else ""


def wrap_observation(text: str) -> str:
    """One tool's result as the policy sees it."""
    return f"{TOOL_RESPONSE.open}\n{text}\n{TOOL_RESPONSE.close}"


def join_observations(texts: Sequence[str]) -> str:
    """The observation of a turn: every call's wrapped result, in call order."""
    return RESPONSE_SEPARATOR.join(wrap_observation(t) for t in texts)


def close_stopped(text: str) -> str:
    """Put back the closing tag of a `<tool_call>` or `<answer>` that a server's stop handling cut off."""
    for tag in (TOOL_CALL, ANSWER):
        if text.rfind(tag.open) > text.rfind(tag.close):
            return text + tag.close
    return text


def call_names(action: Action) -> tuple[str, ...]:
    """Names of the tools a parsed turn calls, in order ("?" where the call named no known tool)."""
    return tuple(item.name or "?" for item in action.items)


def tool_parameters(schemas: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Tool name -> its parameter schema, from OpenAI-style tool schemas (what `parse_turn` checks against)."""
    return {s["function"]["name"]: s["function"]["parameters"] for s in schemas}


def format_help(tools: Mapping[str, Mapping[str, Any]]) -> str:
    """What a turn may contain, with every tool's signature: appended to turn-level errors."""
    sigs = "; ".join(usage(n, p) for n, p in tools.items())
    return (
        "Accepted: an optional <think>...</think>, then one or more "
        '<tool_call>{"name": <tool>, "arguments": {...}}</tool_call>, or a final <answer>...</answer>. '
        f"Tools: {sigs}."
    )


def _blocks(text: str, tag: Tag) -> tuple[list[str], int | None]:
    """Bodies of every <tag>...</tag> in order, and the offset of an unclosed <tag> if any."""
    open_t, close_t = tag.open, tag.close
    bodies: list[str] = []
    pos = 0
    while (start := text.find(open_t, pos)) >= 0:
        end = text.find(close_t, start + len(open_t))
        if end < 0:
            return bodies, start
        bodies.append(text[start + len(open_t) : end])
        pos = end + len(close_t)
    return bodies, None


def _split_code(body: str) -> tuple[str, str | None]:
    """Tongyi's python form: JSON head, then `<code>...</code>`; returns (head, code)."""
    start = body.find(CODE.open)
    end = body.rfind(CODE.close)
    if start < 0 or end < start:
        return body, None
    code = body[start + len(CODE.open) : end].strip()
    fence = re.fullmatch(r"```[a-zA-Z0-9]*\n(.*?)\n?```", code, flags=re.S)
    return body[:start], (fence.group(1) if fence else code)


def _call_from_object(
    obj: Any, tools: Mapping[str, Mapping[str, Any]], where: str, code: str | None
) -> ToolCall | CallError:
    shape = 'A tool call is a JSON object {"name": <tool>, "arguments": {...}}'
    if not isinstance(obj, dict):
        return CallError(
            f"Error: {where} must be a JSON object, got {type_name(obj)} ({short(obj)}). {shape}."
        )
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        got = 'no "name"' if "name" not in obj else f'"name" {type_name(name)} ({short(name, 40)})'
        return CallError(
            f'Error: {where} has {got}; "name" must be one of: {", ".join(tools)}. {shape}.'
        )
    canonical = ALIASES.get(name, name)
    if canonical not in tools:
        close = difflib.get_close_matches(name, list(tools) + list(ALIASES), n=1)
        hint = f' Did you mean "{ALIASES.get(close[0], close[0])}"?' if close else ""
        return CallError(
            f"Error: {where} names an unknown tool {short(name, 40)}.{hint} Available tools: {', '.join(tools)}.",
            name,
        )
    arguments = obj.get("arguments", {} if code is not None else None)
    if arguments is None and "arguments" not in obj:
        return CallError(
            f'Error: {where} ({canonical}) has no "arguments". Usage: {usage(canonical, tools[canonical])}',
            canonical,
        )
    if isinstance(arguments, str):  # OpenAI's wire form: arguments as a JSON string
        with contextlib.suppress(ValueError, RecursionError):
            arguments = json.loads(arguments)
    if code is not None and isinstance(arguments, dict) and "code" not in arguments:
        arguments = {**arguments, "code": code}
    try:
        check_arguments(canonical, tools[canonical], arguments, unknown="ignore")
    except ToolCallError as e:
        return CallError(f"Error: {where}: {e}", canonical)
    # check_arguments made sure it is an object
    return ToolCall(canonical, known_arguments(tools[canonical], cast(dict[str, Any], arguments)))


def _parse_call(
    body: str, tools: Mapping[str, Mapping[str, Any]], where: str
) -> ToolCall | CallError:
    head, code = _split_code(body)
    head = head.strip()
    try:
        obj = json.loads(head)
    except (ValueError, RecursionError) as e:
        obj, why = _UNREAD, "nested too deeply" if isinstance(e, RecursionError) else str(e)
        if isinstance(e, ValueError):  # the released harness reads JSON5
            with contextlib.suppress(ValueError, RecursionError):
                obj = json5.loads(head)
        if obj is _UNREAD:
            return CallError(
                f"Error: {where} is not valid JSON ({why}): {short(head)}.{_quote_hint(head)} "
                'A tool call is a JSON object {"name": <tool>, "arguments": {...}}.'
            )
    return _call_from_object(obj, tools, where, code)


def _quote_hint(head: str) -> str:
    """The call as it was meant, when its string arguments hold an unescaped double quote: the
    error names the fix, and the call is not run (the format stays the released agents')."""
    match = _STRING_ARGUMENTS.fullmatch(head)
    if match is None:
        return ""
    # values and the `", "key": "` between them, alternately
    pieces = _NEXT_STRING_ARGUMENT.split(match.group(2))
    values = pieces[::2]
    if not any('"' in v for v in values):
        return ""
    pieces[::2] = [re.sub(r'(?<!\\)"', r'\\"', v) for v in values]
    meant = match.group(1) + "".join(pieces) + match.group(3)
    try:
        json.loads(meant)
    except ValueError:
        return ""
    if len(meant) > 300:
        return ' A double quote inside a string is written \\".'
    return f' A double quote inside a string is written \\", as in {meant}'


def _answer_of(call: ToolCall) -> str:
    return str(call.arguments.get("answer", ""))


def parse_turn(action: Any, tools: Mapping[str, Mapping[str, Any]]) -> Action:
    """Parse one turn: the one parser. `tools` maps each tool name (answer included) to its parameter schema."""
    if isinstance(action, dict):
        item = _call_from_object(action, tools, "the action dict", None)
        if isinstance(item, ToolCall) and item.name == "answer":
            return Action("", (), _answer_of(item))
        return Action("", (item,))
    text = _turn_text(action, tools)
    if isinstance(text, CallError):
        return Action("", (text,))
    text, forged = _own_text(text)
    think, rest = "", text
    if (
        THINK.close in text
    ):  # released chat templates open <think> in the prompt: the tag may be missing
        head, rest = text.split(THINK.close, 1)
        think = head.split(THINK.open, 1)[-1].strip()
    answers, open_answer = _blocks(rest, ANSWER)
    bodies, open_call = _blocks(rest, TOOL_CALL)
    # an unclosed tag's offset counts from the turn's start, think included
    at = len(text) - len(rest)
    open_answer = None if open_answer is None else open_answer + at
    open_call = None if open_call is None else open_call + at
    if answers:
        answer = answers[0].strip()
        if answer:
            return Action(think, (), answer)
        return Action(
            think,
            (
                CallError(
                    "Error: <answer></answer> is empty; put the final answer between the tags."
                ),
            ),
        )
    if not bodies:
        if forged is not None:
            return Action(think, (_forged(forged, open_call, open_answer, tools),))
        return Action(think, (_no_call(open_call, open_answer, tools),))
    return _calls(think, bodies, open_call, tools)


def _own_text(text: str) -> tuple[str, int | None]:
    """The turn up to where the policy starts writing a tool result (never generated under the
    released agents' stop strings), and that offset, or None."""
    at = text.find(TOOL_RESPONSE.open)
    return (text, None) if at < 0 else (text[:at], at)


def _forged(
    at: int, open_call: int | None, open_answer: int | None, tools: Mapping[str, Mapping[str, Any]]
) -> CallError:
    unclosed = (
        f" The <tool_call> at character {open_call} is not closed before it."
        if open_call is not None
        else f" The <answer> at character {open_answer} is not closed before it."
        if open_answer is not None
        else ""
    )
    return CallError(
        f"Error: the turn writes {TOOL_RESPONSE.open} at character {at}: only tool results "
        f"start with it, so the turn ends there and nothing after it is read.{unclosed} "
        f"{format_help(tools)}"
    )


def _turn_text(action: Any, tools: Mapping[str, Mapping[str, Any]]) -> str | CallError:
    """The turn as text a parser can read, or why it is not."""
    if isinstance(action, bytes):
        try:
            action = action.decode("utf-8")
        except UnicodeDecodeError as e:
            return CallError(
                f"Error: the turn is not valid UTF-8 ({e}). Send text. {format_help(tools)}"
            )
    if not isinstance(action, str):
        return CallError(
            f"Error: an action must be a string (the turn's text) or a dict "
            f'{{"name", "arguments"}}, got {type(action).__name__}. {format_help(tools)}'
        )
    if len(action) > MAX_ACTION_CHARS:
        return CallError(
            f"Error: the turn is {len(action):,} characters long; at most "
            f"{MAX_ACTION_CHARS:,} are accepted. {format_help(tools)}"
        )
    bad = _SURROGATE.search(action)
    if bad:
        n = len(_SURROGATE.findall(action))
        return CallError(
            f"Error: the turn contains {n} unpaired UTF-16 surrogate code point(s) (first {bad.group()!r} at "
            f"character {bad.start()}), which is not valid UTF-8 text. Send valid Unicode. {format_help(tools)}"
        )
    if not action.strip():
        return CallError(f"Error: the turn is empty. {format_help(tools)}")
    return action


def _no_call(
    open_call: int | None, open_answer: int | None, tools: Mapping[str, Mapping[str, Any]]
) -> CallError:
    if open_call is not None:
        return CallError(
            f"Error: the <tool_call> at character {open_call} is never closed with </tool_call>. {format_help(tools)}"
        )
    if open_answer is not None:
        return CallError(
            f"Error: the <answer> at character {open_answer} is never closed with </answer>. {format_help(tools)}"
        )
    return CallError(
        f"Error: the turn has no <tool_call>...</tool_call> and no <answer>...</answer>. {format_help(tools)}"
    )


def _calls(
    think: str, bodies: Sequence[str], open_call: int | None, tools: Mapping[str, Mapping[str, Any]]
) -> Action:
    """The turn's calls in order; a valid call of the answer tool ends the turn as an answer."""
    items: list[ToolCall | CallError] = []
    for i, body in enumerate(bodies[:MAX_CALLS_PER_TURN]):
        where = "the tool call" if len(bodies) == 1 else f"tool call {i + 1}"
        item = _parse_call(body, tools, where)
        if isinstance(item, ToolCall) and item.name == "answer":
            answer = _answer_of(item).strip()
            if answer:
                return Action(think, (), answer)
        items.append(item)
    if len(bodies) > MAX_CALLS_PER_TURN:
        items.append(
            CallError(
                f"Error: the turn has {len(bodies)} tool calls; only the first "
                f"{MAX_CALLS_PER_TURN} were run. Split the rest over later turns."
            )
        )
    if open_call is not None:
        items.append(
            CallError(
                f"Error: the <tool_call> at character {open_call} is never closed with </tool_call>; it was not run."
            )
        )
    return Action(think, tuple(items))
