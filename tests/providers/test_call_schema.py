"""The schema a forced call is generated to on the embedded model (core/providers/call_schema.py): whatever it admits
fits the tool's own schema and ends within the reply's token limit. The model's side is in test_tool_calls_models.py."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st
from precis.core.providers.call_schema import ARRAY_ITEMS, SHORTEST_STRING, forced_call_schema

STRING = st.fixed_dictionaries({"type": st.just("string")}, optional={"title": st.text(max_size=10)})
LEAF = st.one_of(
    STRING,
    st.just({"type": "integer"}),
    st.just({"type": "boolean"}),
    st.just({"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}),  # how pydantic writes `str | None`
    st.builds(lambda items: {"type": "array", "items": items, "minItems": 1}, STRING),
)
NAMES = st.text(alphabet="abcdefghij_", min_size=1, max_size=12)


@st.composite
def tool_schemas(draw, depth: int = 0) -> dict[str, Any]:
    """An input schema as MCP servers and the workspace tools write them: an object of strings, integers, booleans,
    optional strings, arrays of strings and objects of those, some required, additionalProperties said or not."""
    properties = {}
    for name in draw(st.lists(NAMES, max_size=5, unique=True)):
        nested = depth == 0 and draw(st.booleans()) and draw(st.booleans())
        properties[name] = draw(tool_schemas(depth + 1)) if nested else draw(LEAF)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if properties:
        schema["required"] = draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return schema


def longest_instance(schema: dict[str, Any]) -> Any:
    """The longest JSON value `schema` admits, as its limits allow: every property given, every string at its
    maxLength, every array at its maxItems, every integer at its bound."""
    if "anyOf" in schema:
        return max((longest_instance(option) for option in schema["anyOf"]), key=lambda value: len(json.dumps(value)))
    kind = schema["type"]
    if kind == "object":
        return {name: longest_instance(value) for name, value in schema.get("properties", {}).items()}
    if kind == "array":
        return [longest_instance(schema["items"]) for _ in range(schema["maxItems"])]
    if kind == "string":
        return "x" * schema["maxLength"]
    if kind == "integer":
        return schema["minimum"]
    return kind == "boolean" or None


def string_caps(schema: Any) -> list[int]:
    if isinstance(schema, list):
        return [cap for item in schema for cap in string_caps(item)]
    if not isinstance(schema, dict):
        return []
    own = [schema["maxLength"]] if schema.get("type") == "string" else []
    return own + [cap for value in schema.values() for cap in string_caps(value)]


@given(tool_schemas(), st.integers(min_value=16, max_value=4096))
def test_the_longest_arguments_the_grammar_admits_fit_the_tools_schema_and_the_reply(schema, max_tokens):
    given_schema = copy.deepcopy(schema)
    tightened = forced_call_schema(schema, max_tokens)
    assert schema == given_schema  # the tool's own schema is left as it was
    longest = longest_instance(tightened)
    jsonschema.validate(longest, schema)  # nothing the grammar admits is refused by the tool
    jsonschema.validate(longest, {key: value for key, value in tightened.items() if key != "x-guidance"})
    written = json.dumps(longest, separators=(", ", ": "))  # the compact form the grammar holds it to
    caps = string_caps(tightened)
    if caps and min(caps) > SHORTEST_STRING:  # the reply had room for the keys and a share for every string
        assert len(written) <= max_tokens  # an ASCII character is at least a token's worth: the JSON ends in time
    assert tightened["x-guidance"]["whitespace_flexible"] is False


def test_only_the_named_properties_are_written_and_free_whitespace_is_gone():
    git_log = {"type": "object", "title": "logArguments", "required": ["repo_path"], "properties": {
        "repo_path": {"type": "string", "title": "Repo Path"},
        "max_count": {"type": "integer", "default": 10},
        "start_timestamp": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}}}
    tightened = forced_call_schema(git_log, 512)
    assert tightened["additionalProperties"] is False  # the model invented keys ("_branchName_") and never closed them
    assert tightened["required"] == ["repo_path"] and tightened["properties"]["max_count"]["maximum"] > 10 ** 9
    assert tightened["x-guidance"]["key_separator"] == ": " and tightened["x-guidance"]["item_separator"] == ", "
    string_caps = [tightened["properties"]["repo_path"]["maxLength"],
                   tightened["properties"]["start_timestamp"]["anyOf"][0]["maxLength"]]
    assert all(SHORTEST_STRING <= cap < 256 for cap in string_caps)
    arrays = forced_call_schema({"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"},
                                                                             "minItems": 1}}}, 512)
    assert arrays["properties"]["files"]["maxItems"] == ARRAY_ITEMS and arrays["properties"]["files"]["minItems"] == 1
    assert forced_call_schema({"type": "object"}, 512)["additionalProperties"] is False  # a tool with no arguments: {}
