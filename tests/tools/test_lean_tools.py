"""Tool definitions made lean before they are sent (core/model/lean_tools.py): whatever schema a server writes, the
model still sees every tool, parameter, type, `required` list and enum value; the real mcp-server-git's definitions
take fewer tokens; and the definitions a session counts are the ones the model is sent."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from precis.core.chat.session import ChatSession
from precis.core.model.lean_tools import DESCRIPTION_CHARS, lean_description, lean_spec
from precis.core.model.messages import Message
from precis.core.model.tokens import TokenCounter
from precis.core.model.tools import ToolSpec, specs_json
from precis.core.providers.local import LocalProvider
from precis.core.storage.store import open_store
from precis.core.tools.mcp_config import ServerConfig
from precis.core.tools.mcp_servers import RUNNING, McpServers

BIN = Path(sys.executable).parent
STARTED_WITHIN = 120  # seconds: a loaded machine imports slowly

# Names a server may give its parameters, the schema keywords among them: a parameter called "title" or
# "description" is a parameter, not a keyword.
NAMES = st.sampled_from(["path", "title", "description", "default", "type", "items", "anyOf", "additionalProperties",
                         "repo_path", "max_count"])
WORDS = st.text(alphabet=st.sampled_from("ab .\n\t"), max_size=60)
SCALAR_TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null"])


def _decorated(schema: dict, extras: dict) -> dict:
    return {**schema, **extras}


NOISE = st.fixed_dictionaries({}, optional={"title": WORDS, "description": WORDS, "default": st.none() | st.integers(),
                                            "examples": st.lists(st.fixed_dictionaries({"title": WORDS}), max_size=2)})
SCALARS = st.builds(_decorated, st.fixed_dictionaries(
    {"type": SCALAR_TYPES}, optional={"enum": st.lists(st.integers() | st.text(max_size=5) | st.none(), max_size=4)}),
    NOISE)


def _containers(children):
    objects = st.builds(
        lambda properties, required, closed, extras: _decorated(
            {"type": "object", "properties": properties,
             "required": sorted(set(required) & set(properties)),
             **({"additionalProperties": False} if closed else {})}, extras),
        st.dictionaries(NAMES, children, max_size=4), st.lists(NAMES, max_size=4), st.booleans(), NOISE)
    arrays = st.builds(lambda items, extras: _decorated({"type": "array", "items": items}, extras), children, NOISE)
    unions = st.builds(lambda branches, extras: _decorated({"anyOf": branches}, extras),
                       st.lists(children, min_size=1, max_size=3), NOISE)
    return objects | arrays | unions


# pydantic's Optional[T] parameter, the commonest union (mcp-server-git's git_log, git_branch)
OPTIONALS = st.builds(lambda kind, extras: _decorated({"anyOf": [{"type": kind}, {"type": "null"}], "default": None},
                                                       extras), SCALAR_TYPES, NOISE)
SCHEMAS = st.recursive(SCALARS | OPTIONALS, _containers, max_leaves=12)
TOP = st.builds(lambda properties, required, extras: _decorated(
    {"type": "object", "properties": properties, "required": sorted(set(required) & set(properties))}, extras),
    st.dictionaries(NAMES, SCHEMAS, max_size=5), st.lists(NAMES, max_size=5), NOISE)


def what_a_model_needs(schema, path=()) -> set:
    """Each parameter's place, with the types it may take (its own and its anyOf/oneOf branches'), its `required`
    list and enum values: walked here without the code under test."""
    found: set = set()
    if not isinstance(schema, dict):
        return found

    def types(node) -> frozenset:
        own = node.get("type", [])
        kinds = set([own] if isinstance(own, str) else own)
        for key in ("anyOf", "oneOf"):
            for branch in node.get(key, []):
                kinds |= types(branch)
        return frozenset(kinds)

    found.add((path, "types", types(schema)))
    if "required" in schema:
        found.add((path, "required", tuple(schema["required"])))
    if "enum" in schema:
        found.add((path, "enum", json.dumps(schema["enum"])))
    for name, sub in schema.get("properties", {}).items():
        found |= what_a_model_needs(sub, (*path, name))
    if "items" in schema:
        found |= what_a_model_needs(schema["items"], (*path, "[]"))
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key, []):  # a branch's own parameters, at the place of the union
            found |= {entry for entry in what_a_model_needs(branch, path) if entry[1] != "types" or entry[0] != path}
    return found


@given(name=st.text(min_size=1, max_size=10), description=WORDS, parameters=TOP)
def test_a_lean_definition_keeps_what_the_model_needs(name, description, parameters):
    spec = ToolSpec(name, description, parameters, read_only=True, source="git")
    before = copy.deepcopy(parameters)
    lean = lean_spec(spec)
    assert parameters == before  # the toolbox checks calls against the server's own schema: it stays whole
    assert (lean.name, lean.read_only, lean.source) == (name, True, "git")
    assert what_a_model_needs(lean.parameters) == what_a_model_needs(parameters)
    assert "title" not in lean.parameters and "\n" not in lean.description
    assert len(specs_json([lean])) <= len(specs_json([spec]))


def test_a_long_description_keeps_its_first_paragraph_to_a_sentence_end():
    text = ("Search files for a pattern.  It reads\n   every file. " + "More words here. " * 40
            + "\n\nArgs:\n    pattern: the pattern\n")
    lean = lean_description(text, DESCRIPTION_CHARS)
    assert lean.startswith("Search files for a pattern. It reads every file. More words here.")
    assert lean.endswith(".") and len(lean) <= DESCRIPTION_CHARS and "Args" not in lean
    assert lean_description("one " * 200, 50).endswith("…")


def git_specs() -> list[ToolSpec]:
    with McpServers([ServerConfig("git", command=str(BIN / "mcp-server-git"))]) as servers:
        assert servers.wait_started(STARTED_WITHIN)
        status = servers.status("git")
        assert status.state == RUNNING, status.detail
        return list(status.tools)


def test_the_real_git_servers_definitions_shrink_and_keep_every_parameter():
    specs = git_specs()
    lean = [lean_spec(spec) for spec in specs]
    counter = TokenCounter()
    full_tokens, lean_tokens = counter.count_text(specs_json(specs)), counter.count_text(specs_json(lean))
    assert lean_tokens < 0.85 * full_tokens, (full_tokens, lean_tokens)
    assert [spec.name for spec in lean] == [spec.name for spec in specs]
    for spec, made in zip(specs, lean, strict=True):
        assert what_a_model_needs(made.parameters) == what_a_model_needs(spec.parameters), spec.name
        assert made.description == " ".join(spec.description.split())  # git's are one short sentence each


def test_the_definitions_counted_are_the_ones_the_model_is_sent(tmp_path):
    specs = git_specs()
    store = open_store(tmp_path)
    provider = LocalProvider()
    session = ChatSession(store, store.create_chat("git"), provider)
    session.build_engine(estimate=False)
    session.use_tools(specs)
    assert session.tools == [lean_spec(spec) for spec in specs]
    assert session.engine.setup.tool_text == specs_json(session.tools)  # the gauge, the prompt view, What was sent
    prompt = provider.request_body([Message(role="user", content="status?")], tools=session.tools)["prompt"]
    for spec in session.tools:
        assert json.dumps(spec.parameters, separators=(",", ":")) in prompt
    assert '"title"' not in prompt
