"""The inspector's Prompt section (issue 26): the next prompt as sent, part by part, read off the window's thread;
choosing a part shows where it came from; Copy gives the whole prompt."""

from __future__ import annotations

from precis.core.context.prompt_parts import PRIMING, SUMMARY
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from tests.gui.test_inspector_layout import open_chain_of_three
from tests.timing import WAIT_MS


def test_the_next_prompt_part_by_part_leads_to_its_sources(qtbot, make_window, store):
    window = open_chain_of_three(qtbot, make_window, store, 1400, 900)
    inspector, view = window.inspector, window.inspector.prompt
    assert not inspector.prompt_section.expanded  # opened when wanted
    qtbot.mouseClick(inspector.prompt_section.header, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.list.count() > 0, timeout=WAIT_MS)
    engine = window.chat.session.engine
    assert [p.text for p in view.parts if p.text] == [m.content for m in engine.assemble().messages]
    assert sum(p.tokens for p in view.parts) == engine.assemble().tokens
    assert view.total_label.text().startswith(f"{engine.assemble().tokens:,} tokens in {len(view.parts)} parts")
    assert view.parts[-1].kind == PRIMING

    # A summary's part selects that summary in the chain.
    number = next(n for n, part in enumerate(view.parts) if part.kind == SUMMARY)
    item = view.list.item(number)
    view.list.scrollToItem(item)
    qtbot.mouseClick(view.list.viewport(), Qt.MouseButton.LeftButton, pos=view.list.visualItemRect(item).center())
    assert inspector.chain.selected_record_id() == view.parts[number].source

    view.copy_button.click()
    copied = QGuiApplication.clipboard().text()
    assert copied.startswith(f"[{view.parts[0].role}: {view.parts[0].kind}]\n{view.parts[0].text}")
    assert all(message.content in copied for message in engine.assemble().messages)



def test_copy_request_gives_the_providers_json_without_its_key(qtbot, make_window, store):
    # The provider is never asked anything here: the chat sets its window, and no message is sent.
    import json

    from precis.core.model.messages import Message
    from precis.core.providers.openai_compat import OpenAICompatProvider

    key = "sk-test-" + "K3y5ecret" * 3
    window = make_window(provider=OpenAICompatProvider("http://127.0.0.1:9/v1", "test-model", key))
    chat_id = store.create_chat("keys", settings={"context_window": 8192, "system_prompt": "Answer briefly."})
    store.add_messages(chat_id, [Message(role="user", content="What is a lighthouse for?")])
    window.refresh_chats()
    window.open_chat(chat_id)
    inspector, view = window.inspector, window.inspector.prompt
    qtbot.mouseClick(inspector.prompt_section.header, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.copy_request_button.isEnabled(), timeout=WAIT_MS)
    view.copy_request_button.click()
    body = json.loads(QGuiApplication.clipboard().text())
    assert body["model"] == "test-model" and body["messages"] == [
        {"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is a lighthouse for?"}]
    assert key not in QGuiApplication.clipboard().text()
