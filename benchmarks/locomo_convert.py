"""Convert LoCoMo's data/locomo10.json into the interchange files of tests/data/conversations/.

Used to get held-out conversations (4-10) for the fidelity benchmark; it reproduces the shared files 1-3 exactly.
Usage: python -m benchmarks.locomo_convert LOCOMO10_JSON OUT_DIR [FIRST LAST]   (default: all ten)

LOCOMO10_JSON may also be the repository's earlier data/locomo10.zip (its one file per conversation,
multimodal_dialog/locomo10_v2/26.json ... 50.json, taken in the order of their numbers): the same conversations and
questions, without the session summaries; it too reproduces the shared 1-3 byte for byte.
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import Path


def _sessions(conversation: dict) -> list[int]:
    numbers = {int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key))}
    return sorted(n for n in numbers if conversation[f"session_{n}"])


def _message(role: str, content: str) -> dict:
    return {"role": role, "content": content, "name": None, "tool_args": None}


def convert(sample: dict) -> tuple[list[dict], list[dict], list[dict]]:
    conversation = sample["conversation"]
    first_speaker = conversation["speaker_a"]
    messages: list[dict] = []
    line_of: dict[str, int] = {}
    summaries: list[dict] = []
    for number in _sessions(conversation):
        first = len(messages)
        messages.append(_message("system", f"Session {number} - {conversation[f'session_{number}_date_time']}"))
        for turn in conversation[f"session_{number}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares an image: {turn['blip_caption']}]"
            line_of[turn["dia_id"]] = len(messages)
            messages.append(_message("user" if turn["speaker"] == first_speaker else "assistant", text))
        summary = sample.get("session_summary", {}).get(f"session_{number}_summary")
        if summary:
            summaries.append({"session": number, "first_message_index": first,
                              "last_message_index": len(messages) - 1, "summary": summary})
    questions = []
    for qa in sample["qa"]:
        # A few evidence entries hold several ids in one string ("D8:6; D9:17"), one is "D:11:26".
        evidence = [f"D{d}:{t}" for entry in qa.get("evidence", []) for d, t in re.findall(r"D:?(\d+):(\d+)", entry)]
        evidence = [e for e in evidence if e in line_of]
        question = {"question": qa["question"],
                    "answer": None if qa.get("answer") is None else str(qa["answer"]),
                    "evidence_message_indices": sorted({line_of[e] for e in evidence}),
                    "category": qa["category"], "evidence": qa.get("evidence", [])}
        if "adversarial_answer" in qa:
            question["adversarial_answer"] = qa["adversarial_answer"]
        questions.append(question)
    return messages, questions, summaries


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def read_samples(source: Path) -> list[dict]:
    """LoCoMo's samples from locomo10.json, or from the zip of one file per conversation (see above)."""
    if not zipfile.is_zipfile(source):
        return json.loads(source.read_text(encoding="utf-8"))
    with zipfile.ZipFile(source) as archive:
        names = {int(m.group(1)): name for name in archive.namelist()
                 if (m := re.fullmatch(r".*/locomo10_v2/(\d+)\.json", name))}
        if not names:
            raise SystemExit(f"locomo_convert: {source} holds no locomo10_v2/NN.json")
        conversations = [json.loads(archive.read(names[n])) for n in sorted(names)]
    return [{"conversation": {k: v for k, v in c.items() if k.startswith(("speaker_", "session_"))}, "qa": c["qa"]}
            for c in conversations]


def main(argv: list[str]) -> None:
    source, out = Path(argv[0]), Path(argv[1])
    first, last = (int(argv[2]), int(argv[3])) if len(argv) > 3 else (1, 10)
    out.mkdir(parents=True, exist_ok=True)
    samples = read_samples(source)
    for number in range(first, last + 1):
        messages, questions, summaries = convert(samples[number - 1])
        _write(out / f"locomo_{number}.jsonl", messages)
        _write(out / f"locomo_{number}.questions.jsonl", questions)
        _write(out / f"locomo_{number}.session_summaries.jsonl", summaries)


if __name__ == "__main__":
    main(sys.argv[1:])
