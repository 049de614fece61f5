"""The user's requests in a summary's trail: a request said again is listed once, counted, where it was first made;
a harness's complaint repeated after every malformed step does not push the user's own requests out."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from precis.core.model.messages import Message
from precis.core.model.records import Facets
from precis.core.model.tokens import TokenCounter
from precis.core.storage.interchange import read_transcript
from precis.core.summary.facets import counted_requests, extract_facets, merge_facets
from precis.core.summary.summary_block import MAX_REQUESTS, render_artifact_trail, rule_summary

from benchmarks.miniswe_convert import convert
from tests.conftest import DATA

COUNT = TokenCounter().count_text
SESSION = DATA / "miniswe" / "django__django-15103.traj.json"
# mini-swe-agent's answer to a reply without exactly one bash block (its config/default.yaml format_error_template),
# as the session above holds it twice (found 4, then 2 actions).
COMPLAINT = """Please always provide EXACTLY ONE action in triple backticks, found {} actions.

Please format your action in triple backticks as shown in <response_example>.

<response_example>
Here are some thoughts about why you want to perform the action.

```bash
<action>
```
</response_example>

If you have completed your assignment, please consult the first message about how to
submit your solution (you will not be able to continue working on this task after that)."""


def session(tmp_path) -> list[Message]:
    """The real mini-swe-agent session, converted as the fidelity benchmark converts it."""
    path = tmp_path / "session.jsonl"
    messages = convert(json.loads(SESSION.read_text(encoding="utf-8")))
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    return read_transcript(path)


def test_the_harness_complaint_of_a_real_session_is_one_request_counted(tmp_path):
    messages = session(tmp_path)
    complaints = [m for m in messages if m.role == "user" and m.content.startswith("Please always provide EXACTLY")]
    assert [c.content.split(",")[1].split(".")[0] for c in complaints] == [" found 4 actions", " found 2 actions"]
    facets = extract_facets(messages)
    assert len(facets.user_requests) == 2
    task, complaint = facets.user_requests
    assert task.startswith("<pr_description> Consider the following PR description: Make the element_id argument")
    # The newest wording, with how many times it was said.
    assert complaint.startswith("Please always provide EXACTLY ONE action in triple backticks, found 2 actions.")
    assert complaint.endswith(" (×2)")
    trail = render_artifact_trail(facets)
    assert trail.count("Please always provide EXACTLY ONE action") == 1 and " (×2)\n" in trail


def test_repeats_leave_the_users_requests_in_their_places():
    requests = ["Fix the failing date parser in utils/dates.py", "Also keep the old format working",
                "Add a test for the leap day", "Then update CHANGELOG.md"]
    messages: list[Message] = []
    for n in range(80):  # more complaints than a trail lists requests
        if n % 20 == 0:
            messages.append(Message(role="user", content=requests[n // 20]))
        messages.append(Message(role="assistant", content=f"THOUGHT: step {n}, two blocks this time."))
        messages.append(Message(role="user", content=COMPLAINT.format(n % 3)))
    messages.append(Message(role="user", content="run   the tests\nagain"))
    messages.append(Message(role="user", content="run the tests again"))
    facets = extract_facets(messages)
    complaint = facets.user_requests[1]
    assert complaint.startswith("Please always provide EXACTLY ONE action in triple backticks, found 1 actions.")
    assert complaint.endswith(" (×80)")
    assert facets.user_requests[:1] + facets.user_requests[2:] == [*requests, "run the tests again (×2)"]
    assert len(facets.user_requests) < MAX_REQUESTS
    text, _, _ = rule_summary(messages, max_tokens=3000, count_tokens=COUNT)
    assert all(request in text for request in requests)


def test_short_requests_that_differ_in_a_number_are_different_requests():
    # A number in a short request is what it asks for; only a long text differing in its numbers is a template.
    messages = [Message(role="user", content=text) for text in
                ("serve it on port 8080", "serve it on port 9090", "serve it on port 8080")]
    assert extract_facets(messages).user_requests == ["serve it on port 8080 (×2)", "serve it on port 9090"]


def test_a_merge_counts_a_request_said_in_both_stretches_once():
    older = extract_facets([Message(role="user", content="Make element_id optional"),
                            Message(role="user", content=COMPLAINT.format(4)),
                            Message(role="user", content=COMPLAINT.format(0))])
    newer = extract_facets([Message(role="user", content=COMPLAINT.format(2)),
                            Message(role="user", content="Update the docs too")])
    merged = merge_facets([older, newer])
    assert len(merged.user_requests) == 3
    assert merged.user_requests[0] == "Make element_id optional"
    assert merged.user_requests[1].startswith("Please always provide EXACTLY ONE action in triple backticks, found 2")
    assert merged.user_requests[1].endswith(" (×3)")
    assert merged.user_requests[2] == "Update the docs too"
    assert merge_facets([merged, Facets(user_requests=["Update the docs too"])]).user_requests[2] == \
        "Update the docs too (×2)"


# Few texts, so that a list of them says some again: short ones, and long ones differing only in a number.
REQUEST = st.one_of(st.sampled_from(["fix the parser", "fix the parser again", "use port 8080", "use port 9090"]),
                    st.integers(min_value=0, max_value=3).map(lambda n: " ".join(COMPLAINT.format(n).split())))


@given(st.lists(REQUEST, max_size=30), st.integers(min_value=0, max_value=30))
def test_counting_in_stretches_then_merging_is_counting_the_whole(requests, cut):
    """However a chat is cut into stretches, the merged requests are those of the whole: each once, counted, in
    the order first made."""
    whole = counted_requests(requests)
    assert counted_requests([*counted_requests(requests[:cut]), *counted_requests(requests[cut:])]) == whole
    total = sum(int(r.rsplit("(×", 1)[1][:-1]) if r.endswith(")") and "(×" in r else 1 for r in whole)
    assert total == len(requests)
    assert len(set(whole)) == len(whole)
