"""Tool definitions made lean for the model: what a definition costs is paid in every prompt, and a small model's
window is small (mcp-server-git's 12 tools took a fifth of the embedded model's before any message).

What a model needs to call a tool stays: every tool's name, every parameter's name, type, `required`, enum and const
values, defaults, bounds, formats, and the nesting of objects and arrays. What goes:

- `title` keywords: pydantic writes one for every property and for the arguments object ("Repo Path",
  "statusArguments"), repeating the name it sits under;
- a description's second and later paragraphs (usage notes, "Args:" lists that repeat the schema), and its runs of
  whitespace and indentation;
- a description beyond DESCRIPTION_CHARS, cut at the end of a sentence where one ends in reach, else at a word (…);
- `additionalProperties: false` beside `properties`: the toolbox checks the arguments against the tool's own schema
  all the same, and a forced call's schema sets it again (core/providers/call_schema.py).

The session offers the lean definitions (Session.use_tools): the same ones are sent and counted.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from .tools import ToolSpec

DESCRIPTION_CHARS = 400  # a tool's description; a parameter's gets half
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"[.!?](?=\s)")
# Keywords whose value is a map of names to schemas, or a list of schemas; `properties`' names are the parameters'.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
                  "unevaluatedProperties", "unevaluatedItems", "additionalItems")


def lean_spec(spec: ToolSpec) -> ToolSpec:
    """The definition as it is sent to the model (see the module's doc); `spec` is not changed."""
    return replace(spec, description=lean_description(spec.description, DESCRIPTION_CHARS),
                   parameters=lean_schema(spec.parameters))


def lean_description(text: str, chars: int) -> str:
    """The first paragraph, whitespace collapsed, at most `chars` characters."""
    first = " ".join(_PARAGRAPH_BREAK.split(text.strip(), maxsplit=1)[0].split())
    if len(first) <= chars:
        return first
    ends = [match.end() for match in _SENTENCE_END.finditer(first, 0, chars)]
    if ends and ends[-1] >= chars // 2:
        return first[:ends[-1]]
    return first[:chars - 1].rsplit(" ", 1)[0] + "…"


def lean_schema(schema: Any) -> Any:
    """A JSON schema without titles, with lean descriptions and no `additionalProperties: false` beside
    `properties`; everything else as it was (a new object: `schema` is not changed)."""
    if not isinstance(schema, dict):
        return schema
    lean: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "additionalProperties" and value is False and "properties" in schema:
            continue
        if key == "default" and value is None:
            continue
        if key == "anyOf" and (types := _plain_types(value)) is not None and "type" not in schema:
            lean["type"] = types
            continue
        if key == "description" and isinstance(value, str):
            if described := lean_description(value, DESCRIPTION_CHARS // 2):
                lean[key] = described
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            lean[key] = {name: lean_schema(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            lean[key] = [lean_schema(sub) for sub in value]
        elif key in _SCHEMA_VALUES:
            lean[key] = [lean_schema(sub) for sub in value] if isinstance(value, list) else lean_schema(value)
        else:
            lean[key] = value
    return lean


def _plain_types(schemas: Any) -> list[Any] | None:
    """The types of `anyOf` branches that say nothing but a type ({"type": "string"}, {"type": "null"}: pydantic's
    optional parameter), or None when any says more."""
    if not isinstance(schemas, list) or not schemas:
        return None
    if not all(isinstance(sub, dict) and set(sub) == {"type"} and isinstance(sub["type"], str) for sub in schemas):
        return None
    return [sub["type"] for sub in schemas]
