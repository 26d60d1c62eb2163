"""ChatGPT conversations.json: branches, hidden/tool messages, shapes, encodings, truncation."""

from __future__ import annotations

import json
import os

import pytest

from ingestion_app.parsers import ParseError, detect_format, iso_utc, parse_file
from tests.ingestion_app.export_builders import (
    BASE_TS,
    chatgpt_linear,
    chatgpt_node,
    write_json,
)


def _branched_conversation(displayed: int) -> dict:
    """One user prompt answered three times (regenerations); ``displayed`` is the one shown."""
    mapping = {
        "root": chatgpt_node("root", None, None, parent=None, children=["sys"]),
        "sys": chatgpt_node("sys", "system", "", parent="root", children=["u1"], hidden=True),
        "u1": chatgpt_node(
            "u1", "user", "Suggest a name for my bakery", parent="sys", create_time=BASE_TS
        ),
    }
    answers = ["Crumb & Co", "Rise and Shine", "The Daily Loaf"]
    for number, answer in enumerate(answers):
        node_id = f"a{number}"
        mapping["u1"]["children"].append(node_id)
        mapping[node_id] = chatgpt_node(
            node_id, "assistant", answer, parent="u1", create_time=BASE_TS + 10 + number
        )
    # a follow-up continues only under the displayed answer
    mapping[f"a{displayed}"]["children"] = ["u2"]
    mapping["u2"] = chatgpt_node(
        "u2", "user", "Why that one?", parent=f"a{displayed}", create_time=BASE_TS + 100
    )
    mapping["u2"]["children"] = ["a-final"]
    mapping["a-final"] = chatgpt_node(
        "a-final", "assistant", "Because it is warm.", parent="u2", create_time=BASE_TS + 110
    )
    return {
        "title": "Bakery names",
        "create_time": BASE_TS,
        "mapping": mapping,
        "current_node": "a-final",
        "id": "conv-bakery",
    }


def test_displayed_branch_is_followed_even_when_it_is_not_the_last_child(tmp_path):
    path = write_json(tmp_path / "conversations.json", [_branched_conversation(displayed=0)])

    [conversation] = list(parse_file(path))

    assert [p.assistant_text for p in conversation.pairs] == ["Crumb & Co", "Because it is warm."]
    assert [p.user_text for p in conversation.pairs] == [
        "Suggest a name for my bakery",
        "Why that one?",
    ]


def test_middle_regeneration_is_chosen_when_current_node_points_there(tmp_path):
    path = write_json(tmp_path / "c.json", [_branched_conversation(displayed=1)])

    [conversation] = list(parse_file(path))

    assert conversation.pairs[0].assistant_text == "Rise and Shine"


def test_hidden_system_tool_and_empty_messages_stay_out_of_pairs(tmp_path):
    mapping = {
        "root": chatgpt_node("root", None, None, parent=None, children=["sys"]),
        "sys": chatgpt_node(
            "sys", "system", "You are ChatGPT", parent="root", children=["ctx"], hidden=True
        ),
        "ctx": chatgpt_node(
            "ctx",
            "user",
            None,
            parent="sys",
            children=["u1"],
            content_type="user_editable_context",
            hidden=True,
        ),
        "u1": chatgpt_node(
            "u1", "user", "What is the weather in Delft?", parent="ctx", create_time=BASE_TS
        ),
        "call": chatgpt_node(
            "call",
            "assistant",
            'search("weather Delft")',
            parent="u1",
            content_type="code",
            recipient="browser",
            create_time=BASE_TS + 1,
        ),
        "tool": chatgpt_node(
            "tool",
            "tool",
            "Delft: 14 C, rain",
            parent="call",
            content_type="tether_browsing_display",
            author_name="browser",
            create_time=BASE_TS + 2,
        ),
        "empty": chatgpt_node("empty", "assistant", "", parent="tool", create_time=BASE_TS + 3),
        "a1": chatgpt_node(
            "a1", "assistant", "It is 14 °C with rain.", parent="empty", create_time=BASE_TS + 4
        ),
    }
    for parent, child in [("u1", "call"), ("call", "tool"), ("tool", "empty"), ("empty", "a1")]:
        mapping[parent]["children"].append(child)
    raw = {"title": "Weather", "create_time": BASE_TS, "mapping": mapping, "current_node": "a1"}
    raw["id"] = "conv-weather"
    path = write_json(tmp_path / "c.json", [raw])

    [conversation] = list(parse_file(path))

    assert len(conversation.pairs) == 1
    pair = conversation.pairs[0]
    assert pair.user_text == "What is the weather in Delft?"
    assert pair.assistant_text == "It is 14 °C with rain."
    assert "You are ChatGPT" not in pair.user_text + pair.assistant_text
    assert "search(" not in pair.assistant_text


def test_reply_cut_at_token_limit_is_joined_with_its_continuation(tmp_path):
    raw = chatgpt_linear("Long answer", [("Write a poem", "Roses are red,\nviolets")])
    first_answer = raw["current_node"]
    raw["mapping"][first_answer]["message"]["metadata"]["finish_details"] = {"type": "max_tokens"}
    raw["mapping"][first_answer]["children"] = ["more"]
    raw["mapping"]["more"] = chatgpt_node(
        "more", "assistant", " are blue.", parent=first_answer, create_time=BASE_TS + 500
    )
    raw["current_node"] = "more"
    path = write_json(tmp_path / "c.json", [raw])

    [conversation] = list(parse_file(path))

    assert conversation.pairs[0].assistant_text == "Roses are red,\nviolets are blue."


def test_single_conversation_object_file_is_parsed(tmp_path):
    raw = chatgpt_linear("Solo", [("Hello there, what is 2+2?", "4")])
    path = write_json(tmp_path / "one.json", raw)

    assert detect_format(path) == "chatgpt"
    [conversation] = list(parse_file(path))
    assert conversation.title == "Solo"
    assert conversation.pairs[0].assistant_text == "4"


def test_split_export_files_are_each_recognized_by_content(tmp_path):
    first = write_json(
        tmp_path / "conversations-000.json", [chatgpt_linear("A", [("q1", "a1"), ("q2", "a2")])]
    )
    second = write_json(tmp_path / "conversations-001.json", [chatgpt_linear("B", [("q3", "a3")])])
    renamed = write_json(tmp_path / "whatever.txt", [chatgpt_linear("C", [("q4", "a4")])])

    titles = [c.title for path in (first, second, renamed) for c in parse_file(path)]

    assert titles == ["A", "B", "C"]


def test_images_are_named_in_the_prompt(tmp_path):
    raw = chatgpt_linear("Painting", [("x", "A surreal painting.")])
    user_node = raw["mapping"][f"{raw['id']}-u1"]["message"]
    user_node["content"] = {
        "content_type": "multimodal_text",
        "parts": [
            {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-abc"},
            "Interpret this painting",
        ],
    }
    user_node["metadata"]["attachments"] = [{"id": "file-abc", "name": "sunset.jpeg"}]
    path = write_json(tmp_path / "c.json", [raw])

    [conversation] = list(parse_file(path))

    assert conversation.pairs[0].user_text == "[image: sunset.jpeg]\nInterpret this painting"
    assert conversation.pairs[0].attachments == ["sunset.jpeg"]


def test_crlf_and_escaped_unicode_are_normalized(tmp_path):
    raw = chatgpt_linear(
        "Cafe\u0301 \U0001f9e0",
        [("Line one\r\nLine two\rLine three", "Zeker, hier is het advies \u2014 voilà \U0001f600")],
    )
    path = write_json(tmp_path / "c.json", [raw], crlf=True, ascii_only=True)
    assert b"\\ud83e\\udde0" in path.read_bytes()  # surrogate-pair escapes on disk

    [conversation] = list(parse_file(path))

    pair = conversation.pairs[0]
    assert pair.user_text == "Line one\nLine two\nLine three"
    assert pair.assistant_text == "Zeker, hier is het advies — voilà 😀"
    assert conversation.title == "Café 🧠"  # NFC composed


def test_utf8_bom_file_is_read(tmp_path):
    raw = chatgpt_linear("Bom", [("q", "a")])
    path = tmp_path / "c.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([raw]).encode())

    assert detect_format(path) == "chatgpt"
    assert [c.title for c in parse_file(path)] == ["Bom"]


def test_truncated_json_raises_parse_error(tmp_path):
    data = json.dumps([chatgpt_linear("A", [("q", "a")]), chatgpt_linear("B", [("q", "a")])])
    path = tmp_path / "conversations.json"
    path.write_text(data[: len(data) - 200])

    with pytest.raises(ParseError, match="truncated or invalid JSON"):
        list(parse_file(path))


def test_timestamps_are_iso_utc_and_missing_ones_fall_back(tmp_path):
    raw = chatgpt_linear("Times", [("q1", "a1"), ("q2", "a2")])
    for node in raw["mapping"].values():
        if node["message"]:
            node["message"]["create_time"] = None
    raw["create_time"] = None
    path = write_json(tmp_path / "c.json", [raw])
    os.utime(path, (1_600_000_000, 1_600_000_000))

    [conversation] = list(parse_file(path))

    assert [iso_utc(p.timestamp) for p in conversation.pairs] == [
        "2020-09-13T12:26:40Z",
        "2020-09-13T12:26:40Z",
    ]


def test_unanswered_last_prompt_is_kept_as_a_pair(tmp_path):
    raw = chatgpt_linear("Cut", [("q1", "a1")])
    last = raw["current_node"]
    raw["mapping"][last]["children"] = ["u-last"]
    raw["mapping"]["u-last"] = chatgpt_node(
        "u-last", "user", "And one more thing?", parent=last, create_time=BASE_TS + 999
    )
    raw["current_node"] = "u-last"
    path = write_json(tmp_path / "c.json", [raw])

    [conversation] = list(parse_file(path))

    assert [(p.user_text, p.assistant_text) for p in conversation.pairs] == [
        ("q1", "a1"),
        ("And one more thing?", ""),
    ]


def test_dalle_image_from_a_tool_is_named_in_the_reply(tmp_path):
    raw = chatgpt_linear("Draw", [("Draw a cat", "Here is your cat.")])
    answer = raw["current_node"]
    user = raw["mapping"][answer]["parent"]
    raw["mapping"][user]["children"] = ["call"]
    raw["mapping"]["call"] = chatgpt_node(
        "call",
        "assistant",
        '{"prompt": "a cat"}',
        parent=user,
        recipient="dalle.text2im",
        children=["tool"],
    )
    raw["mapping"]["tool"] = chatgpt_node(
        "tool",
        "tool",
        None,
        parent="call",
        children=[answer],
        content_type="multimodal_text",
        author_name="dalle.text2im",
        parts=[{"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-cat"}],
    )
    raw["mapping"][answer]["parent"] = "tool"
    path = write_json(tmp_path / "c.json", [raw])

    [conversation] = list(parse_file(path))

    assert "[image: file-cat]" in conversation.pairs[0].assistant_text
    assert "Here is your cat." in conversation.pairs[0].assistant_text


def test_canvas_documents_and_voice_transcripts_are_kept(tmp_path):
    raw = chatgpt_linear("Essay", [("placeholder", "I drafted it in the canvas.")])
    answer = raw["current_node"]
    user = raw["mapping"][answer]["parent"]
    raw["mapping"][user]["message"]["content"] = {
        "content_type": "multimodal_text",
        "parts": [
            {"content_type": "audio_transcription", "text": "Write an essay about tides"},
            {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://file-voice"},
        ],
    }
    raw["mapping"][user]["children"] = ["canvas"]
    raw["mapping"]["canvas"] = chatgpt_node(
        "canvas",
        "assistant",
        json.dumps({"name": "tides_essay", "type": "document", "content": "# Tides\nThe moon."}),
        parent=user,
        recipient="canmore.create_textdoc",
        content_type="code",
        children=[answer],
    )
    raw["mapping"][answer]["parent"] = "canvas"
    path = write_json(tmp_path / "c.json", [raw])

    [conversation] = list(parse_file(path))

    pair = conversation.pairs[0]
    assert pair.user_text == "Write an essay about tides"
    assert pair.assistant_text == (
        "[canvas: tides_essay]\n# Tides\nThe moon.\n\nI drafted it in the canvas."
    )
