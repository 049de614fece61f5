"""Reading the `conversations.json` of a ChatGPT or a Claude.ai account's data export: many chats in one file.

ChatGPT keeps each chat as a tree (`mapping`: node id -> {message, parent, children}); the chat is the path from the
root to `current_node`, and the other children of a node on it (a message edited, a reply regenerated) become the
versions of its message, each with the messages that followed it, as Precis keeps versions. Claude.ai keeps each
chat as a list (`chat_messages`). Text is kept; what has none here (images, files, tool runs) is counted and said.
Bad input raises TranscriptError naming the file, the conversation's line and place, and the field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..model.counted import counted
from ..model.messages import Message, Role
from ..model.titles import NEW_CHAT_TITLE, title_from
from .interchange import NESTED_TOO_DEEP, TranscriptError
from .json_items import DECODER, items_with_lines, skip_between
from .version_table import Branches, BranchMessage, Versions


@dataclass
class ExportedChat:
    title: str
    messages: list[Message]
    created_at: float | None = None
    updated_at: float | None = None
    versions: dict[str, Versions] = field(default_factory=dict)  # message id -> its versions
    branches: dict[str, Branches] = field(default_factory=dict)  # message id -> its versions' branches


@dataclass
class AccountExport:
    chats: list[ExportedChat]
    left_out: Counter[str]  # what was not imported (a noun, as counted() takes it) -> how many

    def left_out_described(self) -> str:
        """'3 images, 1 tool output' ('' when nothing was left out), most first."""
        return ", ".join(counted(n, what) for what, n in self.left_out.most_common())


def export_kind(text: str) -> str | None:
    """'chatgpt' or 'claude-ai' when `text` is a JSON array whose first element is a conversation of that export."""
    pos = skip_between(text + "]", 0)
    if text[pos:pos + 1] != "[":
        return None
    try:
        first, _ = DECODER.raw_decode(text, skip_between(text, pos + 1))
    except (ValueError, IndexError, RecursionError):
        return None  # the reader of the format reports the problem
    if isinstance(first, dict) and "mapping" in first and "current_node" in first:
        return "chatgpt"
    if isinstance(first, dict) and "chat_messages" in first:
        return "claude-ai"
    return None


class _Conversation:
    """Where in the file a conversation is, to name it in an error."""

    def __init__(self, source: str, line: int, number: int, title: Any):
        self.source, self.line, self.number = source, line, number
        self.named = f"conversation {number}" + (f" ({title!r})" if isinstance(title, str) and title else "")

    def error(self, field_name: str, problem: str) -> TranscriptError:
        return TranscriptError(self.source, self.line, f"{self.named}: field '{field_name}' {problem}")


def _read(text: str, source: str, read_one: Callable[[dict, _Conversation, Counter[str]], ExportedChat | None]
          ) -> AccountExport:
    chats: list[ExportedChat] = []
    left_out: Counter[str] = Counter()
    for number, (item, line) in enumerate(items_with_lines(text, source), start=1):
        if not isinstance(item, dict):
            raise TranscriptError(source, line, f"conversation {number}: expected an object, got "
                                                f"{type(item).__name__}")
        where = _Conversation(source, line, number, item.get("title", item.get("name")))
        chat = read_one(item, where, left_out)
        if chat is None:
            left_out["empty conversation"] += 1
        else:
            chats.append(chat)
    return AccountExport(chats, left_out)


def _title(value: Any, where: _Conversation, field_name: str) -> str:
    if value is not None and not isinstance(value, str):
        raise where.error(field_name, f"must be a string, got {type(value).__name__}")
    return (value or "").strip()


def _message(role: Role, content: str, created: float | None) -> Message:
    extra: dict[str, Any] = {"created_at": created} if created is not None else {}  # else Message's default: now
    return Message(role=role, content=content, **extra)


# ----------------------------------------------------------------------------------------------------- ChatGPT

def read_chatgpt(text: str, source: str) -> AccountExport:
    return _read(text, source, _chatgpt_conversation)


def _seconds(value: Any, where: _Conversation, field_name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise where.error(field_name, f"must be a time in seconds, got {value!r}")
    return float(value)


def _chatgpt_text(message: dict, where: _Conversation, at: str, left_out: Counter[str]) -> str:
    """The text of a ChatGPT message; what has no text is counted in `left_out` (an image is marked '[image]')."""
    content = message.get("content")
    if not isinstance(content, dict):
        raise where.error(f"{at}.content", "must be an object with 'content_type'")
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        parts = content.get("parts", [])
        if not isinstance(parts, list):
            raise where.error(f"{at}.content.parts", f"must be a list, got {type(parts).__name__}")
        texts = []
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):  # an audio transcription
                texts.append(part["text"])
            elif isinstance(part, dict) and part.get("content_type") == "image_asset_pointer":
                texts.append("[image]")
                left_out["image"] += 1
            else:
                left_out[f"{part.get('content_type', 'part') if isinstance(part, dict) else 'part'} part"] += 1
        return "\n".join(t for t in texts if t)
    if kind == "code" and isinstance(content.get("text"), str):
        return f"```{content.get('language') or ''}\n{content['text']}\n```"
    if kind == "tether_quote" and isinstance(content.get("text"), str):
        return f"> {content.get('title') or content.get('url') or 'Quote'}\n\n{content['text']}"
    if kind in ("thoughts", "reasoning_recap"):
        return ""  # the model's private reasoning: not conversation, as a Claude Code session's thinking
    left_out[f"{kind or 'unknown'} message"] += 1
    return ""


class _ChatGPTTree:
    """One conversation's tree, with the nodes that become no message (the root, hidden ones, tool runs) passed
    through: a kept node's children are the kept nodes nearest below it."""

    def __init__(self, mapping: dict, where: _Conversation, left_out: Counter[str]):
        self.mapping, self.where, self.left_out = mapping, where, left_out
        self.messages: dict[str, Message | None] = {}

    def node(self, node_id: Any, at: str) -> dict:
        node = self.mapping.get(node_id) if isinstance(node_id, str) else None
        if not isinstance(node, dict):
            raise self.where.error(at, f"names node {node_id!r}, which 'mapping' lacks")
        return node

    def message(self, node_id: str) -> Message | None:
        """The node's message, None for a node that is none (read once: its left-out parts are counted once)."""
        if node_id not in self.messages:
            self.messages[node_id] = self._read_message(node_id)
        return self.messages[node_id]

    def _read_message(self, node_id: str) -> Message | None:
        at = f"mapping.{node_id}.message"
        raw = self.node(node_id, "current_node").get("message")
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise self.where.error(at, f"must be an object or null, got {type(raw).__name__}")
        author = raw.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        if role not in ("user", "assistant", "system", "tool"):
            raise self.where.error(f"{at}.author.role", f"must be user, assistant, system or tool, got {role!r}")
        metadata = given if isinstance(given := raw.get("metadata"), dict) else {}
        if role == "system" and (metadata.get("is_visually_hidden_from_conversation")
                                 or metadata.get("is_user_system_message")):
            return None  # hidden from the chat: custom instructions, the empty system message at the start
        if role == "tool":
            self.left_out["tool output"] += 1  # browsing, code runs, image generation: answered no call here
            return None
        content = _chatgpt_text(raw, self.where, at, self.left_out)
        if not content.strip():
            return None
        created = _seconds(raw.get("create_time"), self.where, f"{at}.create_time")
        return _message(role, content, created)

    def kept_children(self, node_id: str) -> list[str]:
        children = self.node(node_id, "current_node").get("children") or []
        if not isinstance(children, list):
            raise self.where.error(f"mapping.{node_id}.children", "must be a list of node ids")
        kept: list[str] = []
        for child in children:
            self.node(child, f"mapping.{node_id}.children")
            kept.extend([child] if self.message(child) is not None else self.kept_children(child))
        return kept

    def versions(self, group: list[str], shown: str) -> tuple[Versions | None, Branches]:
        """The versions of the message of `shown` among its siblings `group`, and what followed each not shown."""
        message = self.message(shown)
        assert message is not None
        siblings = [self.message(node) for node in group]
        if len(group) < 2:
            return None, {}
        if any(s is None or s.role != message.role for s in siblings):
            self.left_out["other branch"] += len(group) - 1  # a version is of the same kind of message
            return None, {}
        place = group.index(shown)
        branches = {n: branch for n, node in enumerate(group) if n != place and (branch := self.branch_after(node))}
        return Versions(tuple(s.content for s in siblings if s is not None), place), branches

    def branch_after(self, node_id: str) -> tuple[BranchMessage, ...]:
        """The messages that followed a version not shown: at each fork the newest child, as ChatGPT shows it."""
        branch: list[BranchMessage] = []
        group = self.kept_children(node_id)
        while group:
            chosen = group[-1]
            message = self.message(chosen)
            assert message is not None
            branch.append(BranchMessage(message, *self.versions(group, chosen)))
            group = self.kept_children(chosen)
        return tuple(branch)


def _chatgpt_conversation(item: dict, where: _Conversation, left_out: Counter[str]) -> ExportedChat | None:
    mapping = item.get("mapping")
    if not isinstance(mapping, dict):
        raise where.error("mapping", "must be an object of node id -> node")
    tree = _ChatGPTTree(mapping, where, left_out)
    path: list[str] = []
    node_id = item.get("current_node")
    while node_id is not None:  # up from the current node to the root
        if len(path) > len(mapping):
            raise where.error("mapping", "has a loop: a node is its own ancestor")
        path.append(node_id)
        node_id = tree.node(node_id, "current_node" if len(path) == 1 else f"mapping.{path[-2]}.parent").get("parent")
    path.reverse()
    kept_path = [node for node in path if tree.message(node) is not None]
    chat = ExportedChat(title=_title(item.get("title"), where, "title"), messages=[],
                        created_at=_seconds(item.get("create_time"), where, "create_time"),
                        updated_at=_seconds(item.get("update_time"), where, "update_time"))
    if not kept_path:
        return None
    chat.title = chat.title or title_from(next((m.content for node in kept_path if (m := tree.message(node))
                                               and m.role == "user"), NEW_CHAT_TITLE))
    try:
        # The first message's siblings are below the root (an edit of the first message), when the root is no message.
        previous = path[0] if path[0] != kept_path[0] else None
        for node in kept_path:
            message = tree.message(node)
            assert message is not None
            group = tree.kept_children(previous) if previous is not None else [node]
            kept, branches = tree.versions(group, node) if node in group else (None, {})
            chat.messages.append(message)
            if kept is not None:
                chat.versions[message.id] = kept
            if branches:
                chat.branches[message.id] = branches
            previous = node
    except RecursionError:  # edits of edits thousands deep
        raise TranscriptError(where.source, where.line, f"{where.named}: {NESTED_TOO_DEEP}") from None
    return chat


# --------------------------------------------------------------------------------------------------- Claude.ai

def read_claude_ai(text: str, source: str) -> AccountExport:
    return _read(text, source, _claude_conversation)


def _iso_seconds(value: Any, where: _Conversation, field_name: str) -> float | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise where.error(field_name, f"must be an ISO 8601 time, got {value!r}") from None


def _claude_text(raw: dict, where: _Conversation, at: str, left_out: Counter[str]) -> str:
    """A Claude.ai message's text: its text blocks (else `text`), then the text of its attachments, then a marker
    for each file whose contents the export does not hold."""
    blocks = raw.get("content") or []
    if not isinstance(blocks, list):
        raise where.error(f"{at}.content", f"must be a list of blocks, got {type(blocks).__name__}")
    texts = []
    for n, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise where.error(f"{at}.content[{n}]", f"must be an object, got {type(block).__name__}")
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") in ("tool_use", "tool_result"):
            left_out[block["type"].replace("_", " ")] += 1  # web search, artifacts: runs of tools not here
        # thinking blocks are the model's private reasoning: not conversation.
    if not blocks:
        given = raw.get("text", "")
        if not isinstance(given, str):
            raise where.error(f"{at}.text", f"must be a string, got {type(given).__name__}")
        texts.append(given)
    for n, attachment in enumerate(raw.get("attachments") or []):
        if not isinstance(attachment, dict):
            raise where.error(f"{at}.attachments[{n}]", f"must be an object, got {type(attachment).__name__}")
        name = attachment.get("file_name") or "attachment"
        texts.append(f"[attachment: {name}]\n{attachment.get('extracted_content') or ''}".rstrip())
    for n, file in enumerate(raw.get("files") or []):
        if not isinstance(file, dict):
            raise where.error(f"{at}.files[{n}]", f"must be an object, got {type(file).__name__}")
        texts.append(f"[file: {file.get('file_name') or 'unnamed'}]")
        left_out["file"] += 1
    return "\n\n".join(t for t in texts if t)


def _claude_conversation(item: dict, where: _Conversation, left_out: Counter[str]) -> ExportedChat | None:
    raw_messages = item.get("chat_messages")
    if not isinstance(raw_messages, list):
        raise where.error("chat_messages", "must be a list of messages")
    roles: dict[str, Role] = {"human": "user", "assistant": "assistant"}
    messages = []
    for n, raw in enumerate(raw_messages):
        at = f"chat_messages[{n}]"
        if not isinstance(raw, dict):
            raise where.error(at, f"must be an object, got {type(raw).__name__}")
        role = roles.get(sender) if isinstance(sender := raw.get("sender"), str) else None
        if role is None:
            raise where.error(f"{at}.sender", f"must be human or assistant, got {raw.get('sender')!r}")
        content = _claude_text(raw, where, at, left_out)
        created = _iso_seconds(raw.get("created_at"), where, f"{at}.created_at")
        if content.strip():
            messages.append(_message(role, content, created))
    if not messages:
        return None
    first = next((m.content for m in messages if m.role == "user"), NEW_CHAT_TITLE)
    return ExportedChat(title=_title(item.get("name"), where, "name") or title_from(first), messages=messages,
                        created_at=_iso_seconds(item.get("created_at"), where, "created_at"),
                        updated_at=_iso_seconds(item.get("updated_at"), where, "updated_at"))


READERS: dict[str, Callable[[str, str], AccountExport]] = {"chatgpt": read_chatgpt, "claude-ai": read_claude_ai}
