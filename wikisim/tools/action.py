"""Parse a policy's raw turn into tool calls or an answer, in the Tongyi DeepResearch format.

A turn is an optional `<think>...</think>`, then one or more
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, or `<answer>...</answer>`.
A dict `{"name", "arguments"}` is accepted too. Nothing here raises on bad input: every
defect becomes a `CallError` whose message says what was wrong and what is accepted, so the
env can show it to the policy as an observation and go on.

Conventions where the format is loose: text before `</think>` is the think even when the
opening tag is missing (chat templates often put it in the prompt); an answer ends the turn,
so tool calls beside it are not run; at most MAX_CALLS_PER_TURN calls run per turn.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Longest turn parsed; a longer one is rejected whole (1 MB of junk costs one `len`).
MAX_ACTION_CHARS = 262_144
#: Most tool calls executed from one turn.
MAX_CALLS_PER_TURN = 10

#: Names the released agents use for our tools (Tongyi DeepResearch calls python
#: `PythonInterpreter` with the code in a `<code>` block, and scholar `google_scholar`).
ALIASES = {"PythonInterpreter": "python", "google_scholar": "scholar", "google_search": "search"}

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(hash=False)

    def canonical(self) -> str:
        """The call as sorted JSON: what trajectories record and what info reports."""
        return json.dumps({"name": self.name, "arguments": self.arguments}, ensure_ascii=False, sort_keys=True)


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


def _type_name(value: Any) -> str:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "an array",
             dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _short(value: Any, n: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = _SURROGATE.sub("\ufffd", text)
    return repr(text[:n] + "..." if len(text) > n else text)


def _spec_types(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The alternatives of a JSON-schema property: `anyOf`/`oneOf` members or the spec itself."""
    alts = spec.get("anyOf") or spec.get("oneOf")
    return list(alts) if alts else [spec]


def describe_spec(spec: Mapping[str, Any]) -> str:
    """'string | array of strings' for a property schema: the wording error messages use."""
    out = []
    for alt in _spec_types(spec):
        kind = alt.get("type", "any")
        if kind == "array":
            item = alt.get("items", {}).get("type", "any")
            out.append(f"array of {item}s")
        else:
            out.append(str(kind))
    return " | ".join(out)


def usage(name: str, parameters: Mapping[str, Any]) -> str:
    """One-line signature: `search {"query": string | array of strings}`."""
    props = parameters.get("properties", {})
    required = set(parameters.get("required", []))
    parts = [f'"{k}"{"" if k in required else "?"}: {describe_spec(v)}' for k, v in props.items()]
    return f"{name} {{{', '.join(parts)}}}"


def _matches(value: Any, spec: Mapping[str, Any]) -> str | None:
    """None when `value` fits one alternative of `spec`, else why it fits none."""
    for alt in _spec_types(spec):
        kind = alt.get("type")
        if kind is None or (kind == "integer" and isinstance(value, int) and not isinstance(value, bool)):
            return None
        if kind == "string" and isinstance(value, str):
            if len(value.strip()) < alt.get("minLength", 1):
                return "is empty; give a non-empty string"
            return None
        if kind == "array" and isinstance(value, list):
            if len(value) < alt.get("minItems", 1):
                return "is an empty array; give at least one item"
            if len(value) > alt.get("maxItems", 1 << 30):
                return f"has {len(value)} items; at most {alt['maxItems']} are accepted"
            for i, item in enumerate(value):
                why = _matches(item, alt.get("items", {}))
                if why is not None:
                    return f"item {i} {why}"
            return None
    return f"must be {describe_spec(spec)}, got {_type_name(value)} ({_short(value, 40)})"


def check_arguments(name: str, parameters: Mapping[str, Any], arguments: Any) -> str | None:
    """Why `arguments` do not fit the tool's parameter schema, or None when they do."""
    why = _argument_error(name, parameters, arguments)
    return None if why is None else f"{why} Usage: {usage(name, parameters)}"


def _argument_error(name: str, parameters: Mapping[str, Any], arguments: Any) -> str | None:
    if not isinstance(arguments, dict):
        return f'"arguments" of {name} must be a JSON object, got {_type_name(arguments)} ({_short(arguments)}).'
    props = parameters.get("properties", {})
    for key in parameters.get("required", []):
        if key not in arguments:
            return f'{name} is missing the required argument "{key}".'
    for key in arguments:
        if key not in props:
            close = difflib.get_close_matches(str(key), list(props), n=1)
            hint = f' Did you mean "{close[0]}"?' if close else ""
            return f"{name} got an unexpected argument {_short(key, 40)}.{hint}"
    for key in props:
        if key in arguments:
            why = _matches(arguments[key], props[key])
            if why is not None:
                return f'{name} argument "{key}" {why}.'
    return None


def format_help(tools: Mapping[str, Mapping[str, Any]]) -> str:
    """What a turn may contain, with every tool's signature: appended to turn-level errors."""
    sigs = "; ".join(usage(n, p) for n, p in tools.items())
    return (
        "Accepted: an optional <think>...</think>, then one or more "
        '<tool_call>{"name": <tool>, "arguments": {...}}</tool_call>, or a final <answer>...</answer>. '
        f"Tools: {sigs}."
    )


def _blocks(text: str, tag: str) -> tuple[list[str], int | None]:
    """Bodies of every <tag>...</tag> in order, and the offset of an unclosed <tag> if any."""
    open_t, close_t = f"<{tag}>", f"</{tag}>"
    bodies, pos = [], 0
    while (start := text.find(open_t, pos)) >= 0:
        end = text.find(close_t, start + len(open_t))
        if end < 0:
            return bodies, start
        bodies.append(text[start + len(open_t):end])
        pos = end + len(close_t)
    return bodies, None


def _split_code(body: str) -> tuple[str, str | None]:
    """Tongyi's python form: JSON head, then `<code>...</code>`; returns (head, code)."""
    start = body.find("<code>")
    end = body.rfind("</code>")
    if start < 0 or end < start:
        return body, None
    code = body[start + len("<code>"):end].strip()
    fence = re.fullmatch(r"```[a-zA-Z0-9]*\n(.*?)\n?```", code, flags=re.S)
    return body[:start], (fence.group(1) if fence else code)


def _call_from_object(obj: Any, tools: Mapping[str, Mapping[str, Any]], where: str, code: str | None) -> ToolCall | CallError:
    shape = 'A tool call is a JSON object {"name": <tool>, "arguments": {...}}'
    if not isinstance(obj, dict):
        return CallError(f"Error: {where} must be a JSON object, got {_type_name(obj)} ({_short(obj)}). {shape}.")
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        got = "no \"name\"" if "name" not in obj else f'"name" {_type_name(name)} ({_short(name, 40)})'
        return CallError(f'Error: {where} has {got}; "name" must be one of: {", ".join(tools)}. {shape}.')
    canonical = ALIASES.get(name, name)
    if canonical not in tools:
        close = difflib.get_close_matches(name, list(tools) + list(ALIASES), n=1)
        hint = f' Did you mean "{ALIASES.get(close[0], close[0])}"?' if close else ""
        return CallError(f'Error: {where} names an unknown tool {_short(name, 40)}.{hint} Available tools: {", ".join(tools)}.', name)
    extra = set(obj) - {"name", "arguments"}
    if extra:
        return CallError(f"Error: {where} has unexpected keys {sorted(extra)}. {shape}.", canonical)
    arguments = obj.get("arguments", {} if code is not None else None)
    if arguments is None and "arguments" not in obj:
        return CallError(f'Error: {where} ({canonical}) has no "arguments". Usage: {usage(canonical, tools[canonical])}', canonical)
    if isinstance(arguments, str):  # OpenAI's wire form: arguments as a JSON string
        with contextlib.suppress(ValueError, RecursionError):
            arguments = json.loads(arguments)
    if code is not None and isinstance(arguments, dict) and "code" not in arguments:
        arguments = {**arguments, "code": code}
    why = check_arguments(canonical, tools[canonical], arguments)
    if why is not None:
        return CallError(f"Error: {where}: {why}", canonical)
    return ToolCall(canonical, dict(arguments))


def _parse_call(body: str, tools: Mapping[str, Mapping[str, Any]], where: str) -> ToolCall | CallError:
    head, code = _split_code(body)
    head = head.strip()
    try:
        obj = json.loads(head)
    except (ValueError, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        return CallError(
            f"Error: {where} is not valid JSON ({why}): {_short(head)}. "
            'A tool call is a JSON object {"name": <tool>, "arguments": {...}}.'
        )
    return _call_from_object(obj, tools, where, code)


def _answer_of(call: ToolCall) -> str:
    return str(call.arguments.get("answer", ""))


def parse_action(action: Any, tools: Mapping[str, Mapping[str, Any]]) -> Action:
    """Parse one turn. `tools` maps each tool name (answer included) to its parameter schema."""
    if isinstance(action, bytes):
        try:
            action = action.decode("utf-8")
        except UnicodeDecodeError as e:
            return Action("", (CallError(f"Error: the turn is not valid UTF-8 ({e}). Send text. {format_help(tools)}"),))
    if isinstance(action, dict):
        item = _call_from_object(action, tools, "the action dict", None)
        if isinstance(item, ToolCall) and item.name == "answer":
            return Action("", (), _answer_of(item))
        return Action("", (item,))
    if not isinstance(action, str):
        return Action("", (CallError(f"Error: an action must be a string (the turn's text) or a dict "
                                     f'{{"name", "arguments"}}, got {type(action).__name__}. {format_help(tools)}'),))
    if len(action) > MAX_ACTION_CHARS:
        return Action("", (CallError(f"Error: the turn is {len(action):,} characters long; at most "
                                     f"{MAX_ACTION_CHARS:,} are accepted. {format_help(tools)}"),))
    bad = _SURROGATE.search(action)
    if bad:
        n = len(_SURROGATE.findall(action))
        return Action("", (CallError(
            f"Error: the turn contains {n} unpaired UTF-16 surrogate code point(s) (first {bad.group()!r} at "
            f"character {bad.start()}), which is not valid UTF-8 text. Send valid Unicode. {format_help(tools)}"),))
    if not action.strip():
        return Action("", (CallError(f"Error: the turn is empty. {format_help(tools)}"),))

    think, rest = "", action
    if "</think>" in action:  # released chat templates open <think> in the prompt: the tag may be missing
        head, rest = action.split("</think>", 1)
        think = head.split("<think>", 1)[-1].strip()
    answers, open_answer = _blocks(rest, "answer")
    bodies, open_call = _blocks(rest, "tool_call")
    if answers:
        answer = answers[0].strip()
        if answer:
            return Action(think, (), answer)
        return Action(think, (CallError("Error: <answer></answer> is empty; put the final answer between the tags."),))
    if not bodies:
        if open_call is not None:
            msg = f"Error: the <tool_call> at character {open_call} is never closed with </tool_call>. {format_help(tools)}"
        elif open_answer is not None:
            msg = f"Error: the <answer> at character {open_answer} is never closed with </answer>. {format_help(tools)}"
        else:
            msg = f"Error: the turn has no <tool_call>...</tool_call> and no <answer>...</answer>. {format_help(tools)}"
        return Action(think, (CallError(msg),))
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
        items.append(CallError(f"Error: the turn has {len(bodies)} tool calls; only the first "
                               f"{MAX_CALLS_PER_TURN} were run. Split the rest over later turns."))
    if open_call is not None:
        items.append(CallError(f"Error: the <tool_call> at character {open_call} is never closed with </tool_call>; it was not run."))
    return Action(think, tuple(items))
