"""The held-out LoCoMo conversations come out the same from locomo10.json and from the repository's locomo10.zip."""

import json
import zipfile

import pytest

from benchmarks.locomo_convert import main


def sample(first: str, second: str, said: str) -> dict:
    """One LoCoMo conversation as its own file in locomo10.zip holds it (events and all)."""
    return {"speaker_a": first, "speaker_b": second,
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": first, "dia_id": "D1:1", "text": said},
                          {"speaker": second, "dia_id": "D1:2", "text": "Good for you!",
                           "blip_caption": "a photo of a cake"}],
            "events_session_1": {"events": [said]},
            "qa": [{"question": f"What did {first} say?", "answer": said, "evidence": ["D1:1"], "category": 4}]}


def test_the_zip_of_one_file_per_conversation_converts_as_locomo10_json_does(tmp_path):
    conversations = [sample("Caroline", "Melanie", "I adopted a dog"), sample("Jon", "Gina", "I opened a studio")]
    as_json = tmp_path / "locomo10.json"
    as_json.write_text(json.dumps([{"sample_id": f"conv-{n}", "conversation": {k: v for k, v in c.items()
                                                                               if not k.startswith("events")},
                                    "qa": c["qa"]} for n, c in zip((26, 30), conversations, strict=True)]))
    as_zip = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(as_zip, "w") as archive:  # written out of order: the numbers give the order
        archive.writestr("data/multimodal_dialog/locomo10_v2/30.json", json.dumps(conversations[1]))
        archive.writestr("data/multimodal_dialog/locomo10_v2/26.json", json.dumps(conversations[0]))
    main([str(as_json), str(tmp_path / "from_json"), "1", "2"])
    main([str(as_zip), str(tmp_path / "from_zip"), "1", "2"])
    for name in ("locomo_1.jsonl", "locomo_1.questions.jsonl", "locomo_2.jsonl", "locomo_2.questions.jsonl"):
        assert (tmp_path / "from_zip" / name).read_text() == (tmp_path / "from_json" / name).read_text(), name
    lines = (tmp_path / "from_zip" / "locomo_2.jsonl").read_text().splitlines()
    assert [json.loads(line)["content"] for line in lines] == [
        "Session 1 - 1:56 pm on 8 May, 2023", "Jon: I opened a studio", "Gina: Good for you! [shares an image: a "
                                                                          "photo of a cake]"]


def test_a_zip_without_the_conversations_is_refused_by_name(tmp_path):
    as_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(as_zip, "w") as archive:
        archive.writestr("README.md", "nothing here")
    with pytest.raises(SystemExit, match="other.zip holds no locomo10_v2"):
        main([str(as_zip), str(tmp_path / "out")])
