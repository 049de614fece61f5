"""The schema a forced call's arguments are generated to on a llama.cpp model (llguidance turns it into a grammar):
the tool's own input schema, tightened so that what even a 135M model writes fits the tool's schema and ends within
the reply's token limit.

The tool's schema alone did not hold: llguidance lets whitespace run free between JSON tokens by default, and a small
model wrote newline after newline up to the token limit; with no `additionalProperties`, it invented keys; strings
and arrays had no end. Each of those left JSON cut off mid-object, which no tool can run. So here:

- compact JSON (`{"a": 1, "b": 2}`: one space after each colon and comma, none elsewhere);
- only the properties the schema names, in its order (additionalProperties false where it says nothing);
- every string at most a share of the reply's tokens, and every array at most ARRAY_ITEMS items, so the whole object
  fits the limit (a character outside ASCII, or written as an escape, can take more than one token: not counted);
- integers of at most INTEGER_DIGITS digits (a fractional number's digits stay free: JSON Schema cannot bound them).

Anything this tightening admits, the tool's schema admits too: the arguments are checked against the tool's own
schema by the toolbox all the same. Keywords llguidance does not support are ignored (`lenient`) rather than failing
the reply; the toolbox's check catches what they would have ruled out.
"""

from __future__ import annotations

import copy
import json
from typing import Any

ARRAY_ITEMS = 8
INTEGER_DIGITS = 15
SHORTEST_STRING = 16  # a string's cap, however many strings share the reply
_GUIDANCE = {"whitespace_flexible": False, "key_separator": ": ", "item_separator": ", ", "lenient": True}
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")
# The most characters a value of these types takes (a number's digits are not bounded: taken as a float's usual).
_SCALAR_CHARS = {"integer": INTEGER_DIGITS + 1, "number": 24, "boolean": 5, "null": 4}


def forced_call_schema(parameters: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """The tool's parameter schema tightened for generation (see the module's doc); `parameters` is not changed."""
    schema = copy.deepcopy(parameters) if isinstance(parameters, dict) else {}
    schema.setdefault("type", "object")
    if "properties" not in schema:  # a tool that takes no arguments (a map's keys are left free below the top)
        schema.setdefault("additionalProperties", False)
    _tighten(schema)
    strings, frame = _extent(schema)
    _cap_strings(schema, max(SHORTEST_STRING, (max_tokens - frame) // max(1, strings)))
    schema["x-guidance"] = _GUIDANCE
    return schema


def _types(schema: dict[str, Any]) -> set[Any]:
    kinds = schema.get("type")
    return set(kinds) if isinstance(kinds, list) else {kinds}


def _subschemas(schema: dict[str, Any]) -> list[Any]:
    found = [sub for key in _SUBSCHEMA_MAPS for sub in (schema.get(key) or {}).values()]
    found += [sub for key in _SUBSCHEMA_LISTS for sub in schema.get(key) or ()]
    return [*found, schema.get("items")]


def _tighten(schema: Any) -> None:
    """Arrays, integers and objects bounded, in place."""
    if not isinstance(schema, dict):
        return
    types = _types(schema)
    if "array" in types:
        schema["maxItems"] = max(min(schema.get("maxItems", ARRAY_ITEMS), ARRAY_ITEMS), schema.get("minItems", 0))
    if "integer" in types:
        schema.setdefault("maximum", 10 ** INTEGER_DIGITS - 1)
        schema.setdefault("minimum", -(10 ** INTEGER_DIGITS - 1))
    if "properties" in schema:
        schema.setdefault("additionalProperties", False)
    for sub in _subschemas(schema):
        _tighten(sub)


def _cap_strings(schema: Any, chars: int) -> None:
    if not isinstance(schema, dict):
        return
    if "string" in _types(schema):
        schema["maxLength"] = max(min(schema.get("maxLength", chars), chars), schema.get("minLength", 0))
    for sub in _subschemas(schema):
        _cap_strings(sub, chars)


def _extent(schema: Any, depth: int = 0) -> tuple[int, int]:
    """(how many strings, how many characters besides the strings' text) the longest value `schema` admits writes
    at most, once tightened: the reply's room is shared between those strings. A `$ref` is not followed."""
    if not isinstance(schema, dict) or depth > 16:
        return 0, 0
    types = _types(schema)
    options = [_extent(sub, depth + 1) for key in ("anyOf", "oneOf") for sub in schema.get(key) or ()]
    strings, frame = max((n for n, _ in options), default=0), max((c for _, c in options), default=0)
    if "enum" in schema or "const" in schema:
        frame += max(len(json.dumps(value)) for value in schema.get("enum", [schema.get("const")]))
    elif "string" in types:
        strings, frame = strings + 1, frame + 2
    else:
        frame += max(_SCALAR_CHARS.get(kind, 0) for kind in types)
    if "object" in types or "properties" in schema:
        parts = [(name, _extent(sub, depth + 1)) for name, sub in (schema.get("properties") or {}).items()]
        strings += sum(n for _, (n, _) in parts)
        frame += 2 + sum(len(json.dumps(name)) + 4 + c for name, (_, c) in parts)  # `"name": ` and `, `
    if "array" in types:
        items, chars = _extent(schema.get("items"), depth + 1)
        strings += schema["maxItems"] * items
        frame += 2 + schema["maxItems"] * (chars + 2)
    return strings, frame
