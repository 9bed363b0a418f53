"""Tool-call arguments against a tool's JSON schema: checked in this one place, with one exception.

`check_arguments` raises `ToolCallError` whose message says what is wrong and shows the tool's
usage line; the turn parser and `ToolBox.call` turn it into an observation.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from wikisim.errors import ToolCallError

#: what `check_arguments` does with an argument the tool's schema lacks
Unknown = Literal["refuse", "ignore"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def type_name(value: Any) -> str:
    names = {
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        list: "an array",
        dict: "an object",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)


def short(value: Any, n: int = 80) -> str:
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
        if kind is None or (
            kind == "integer" and isinstance(value, int) and not isinstance(value, bool)
        ):
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
    return f"must be {describe_spec(spec)}, got {type_name(value)} ({short(value, 40)})"


def known_arguments(parameters: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments the schema names (all of them where it names none): what a tool that reads
    only its own arguments, as the released agents' tools do, is given."""
    props = parameters.get("properties")
    return {k: v for k, v in arguments.items() if not props or k in props}


def check_arguments(
    name: str, parameters: Mapping[str, Any], arguments: Any, *, unknown: Unknown = "refuse"
) -> None:
    """Raise `ToolCallError` (what is wrong, then the usage line) unless `arguments` fit the schema.

    `unknown="ignore"` lets pass an argument the schema lacks, for a caller that drops it: the
    released agents' tools read the arguments they know (`wikisim.tools.protocol`); a server's
    caller (`ToolBox.call`) is told instead.
    """
    why = _argument_error(name, parameters, arguments, unknown)
    if why is not None:
        raise ToolCallError(f"{why} Usage: {usage(name, parameters)}")


def _argument_error(
    name: str, parameters: Mapping[str, Any], arguments: Any, unknown: Unknown
) -> str | None:
    if not isinstance(arguments, dict):
        return f'"arguments" of {name} must be a JSON object, got {type_name(arguments)} ({short(arguments)}).'
    props = parameters.get("properties", {})
    known = known_arguments(parameters, arguments)
    strangers = [str(k) for k in arguments if k not in known]
    for key in parameters.get("required", []):
        if key not in arguments:
            close = difflib.get_close_matches(key, strangers, n=1)
            hint = f" (it got {short(close[0], 40)})" if close else ""
            return f'{name} is missing the required argument "{key}"{hint}.'
    if strangers and unknown == "refuse":
        close = difflib.get_close_matches(strangers[0], list(props), n=1)
        hint = f' Did you mean "{close[0]}"?' if close else ""
        return f"{name} got an unexpected argument {short(strangers[0], 40)}.{hint}"
    for key in props:
        if key in arguments:
            why = _matches(arguments[key], props[key])
            if why is not None:
                return f'{name} argument "{key}" {why}.'
    return None
