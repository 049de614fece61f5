"""Rendering: Markdown never loads remote (or local) resources; long chats paint without errors."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from precis.core.chat.rows import Row, build_rows
from precis.core.model.messages import Message, ToolCall
from precis.gui.conversation import ConversationView
from precis.gui.markdown import markdown_document
from PySide6.QtCore import QUrl
from PySide6.QtGui import QFont, QTextDocument


def test_markdown_never_fetches_images_and_ignores_raw_html(qapp):
    doc = markdown_document('![tracker](http://evil.example/pixel.png) <img src="http://evil.example/x.png"> '
                            "`code`\n\n```\nprint(1)\n```", QFont())
    assert doc.loadResource(QTextDocument.ResourceType.ImageResource.value, QUrl("http://evil.example/p.png")) is None
    assert doc.loadResource(QTextDocument.ResourceType.ImageResource.value, QUrl("file:///etc/passwd")) is None
    # The image became a link; the raw tag is shown as text, not interpreted.
    assert "<img" not in doc.toHtml()
    assert "image: tracker" in doc.toPlainText()
    assert '<img src="http://evil.example/x.png">' in doc.toPlainText()
    assert "print(1)" in doc.toPlainText()


def test_rows_show_summaries_in_place_of_archived_messages_but_keep_pinned_ones(qapp):
    from precis.core.model.records import CoveredMessage, SummaryRecord

    messages = [Message(role="user", content=f"m{i}", pinned=(i == 1)) for i in range(4)]
    record = SummaryRecord(text="s", covered=[CoveredMessage(id=m.id, sha256=m.sha256()) for m in messages[:3]])
    hidden = {messages[0].id: record.id, messages[2].id: record.id}
    rows = build_rows(messages, [record], hidden)
    assert [r.record.id if r.record else r.message.content for r in rows] == [record.id, "m1", "m3"]


def test_tool_calls_and_long_outputs_paint_compactly_and_expand(qtbot):
    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    call = Message(role="assistant", tool_calls=(ToolCall("c1", "bash", {"command": "pytest -q"}),))
    result = Message(role="tool", name="bash", tool_call_id="c1", content="\n".join(f"line {i}" for i in range(300)))
    view.rows_model.set_rows([Row(message=call), Row(message=result)])
    view.show()
    collapsed = view.sizeHintForRow(1)
    view.grab()
    view.rows_model.toggle_expanded(1)
    view.grab()
    qtbot.waitUntil(lambda: view.sizeHintForRow(1) > collapsed * 10)


def test_headings_in_a_reply_stay_close_to_the_text_size(qtbot):
    from precis.gui.markdown import markdown_document
    from PySide6.QtGui import QFont

    font = QFont()
    font.setPointSizeF(10)
    doc = markdown_document("# Test the function\n\nplain text", font)
    heading = doc.begin()
    size = heading.begin().fragment().charFormat().fontPointSize()
    assert heading.blockFormat().headingLevel() == 1 and 10 < size <= 12.5


def test_a_reply_cut_inside_code_shows_its_stop_mark_and_calls_as_text(qtbot):
    """A reply stopped at its token limit in the middle of a code block: the mark that says so (and the tool call
    after it) is read as text under the code, not as one more line of code."""
    from precis.gui.markdown import is_code_block

    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(700, 500)
    cut = Message(role="assistant", content="Here it is:\n```python\nfor line in open(name):\n    print(",
                  cut_at=512, tool_calls=(ToolCall("c1", "read_file", {"path": "notes.txt"}),))
    row = Row(message=cut)
    view.rows_model.set_rows([row])
    doc = view.delegate._document(row, 600)[0]
    blocks = [doc.findBlockByNumber(n) for n in range(doc.blockCount())]
    code = [b.text() for b in blocks if is_code_block(b)]
    text = [b.text() for b in blocks if not is_code_block(b) and b.text().strip()]
    assert code == ["for line in open(name):", "    print("]
    assert text[0] == "Here it is:" and text[-1] == "Stopped at the 512-token limit: Continue goes on from here."
    assert any("read_file" in t for t in text)


@given(st.lists(st.sampled_from(["```", "```py", "~~~", "````", "   ```", "code", "", "text ```"]), max_size=10))
def test_closing_fences_only_appends_and_leaves_nothing_open(lines):
    from precis.gui.markdown import closed_fences

    text = "\n".join(lines)
    closed = closed_fences(text)
    assert closed.startswith(text.rstrip("\n")) and closed_fences(closed) == closed


def test_an_expanded_summary_says_each_of_its_points_once(qtbot):
    """A conversation digest's key points are its lines: the expanded card showed them all again under it."""
    from precis.core.model.records import SummaryRecord
    from precis.core.model.tokens import TokenCounter
    from precis.core.summary.summarizers import RuleSummarizer, SummaryRequest

    talk = [Message(role="user" if n % 2 else "assistant",
                    content=f"{'Caroline' if n % 2 else 'Melanie'}: I painted {n} lighthouses at Lake Tahoe in May.")
            for n in range(1, 9)]
    draft = RuleSummarizer().summarize(SummaryRequest(talk, max_tokens=400, counter=TokenCounter()))
    digest = SummaryRecord(text=draft.text, key_points=draft.key_points)
    beside = SummaryRecord(text="Merged summary of 8 earlier messages.", key_points=["Caroline painted lighthouses."])
    view = ConversationView()
    qtbot.addWidget(view)
    view.rows_model.set_rows([Row(record=digest, expanded=True), Row(record=beside, expanded=True)])

    shown = view.delegate.body(view.rows_model.row_at(0))[0]
    assert digest.key_points and all(shown.count(point.split(": ", 1)[1]) == 1 for point in digest.key_points)
    assert "Caroline painted lighthouses." in view.delegate.body(view.rows_model.row_at(1))[0]
