"""Claude, Gemini (JSON + HTML), Open WebUI, session logs, API logs and format detection."""

from __future__ import annotations

import json

import pytest

from ingestion_app.parsers import (
    SkippedConversation,
    UnrecognizedFormat,
    detect_format,
    iso_utc,
    parse_file,
)
from tests.ingestion_app.export_builders import (
    chatgpt_linear,
    claude_conversation,
    gemini_record,
    openwebui_chat,
    write_json,
)

# ---------------------------------------------------------------------------------- Claude


def test_claude_messages_are_sorted_by_time_before_pairing(tmp_path):
    conversation = claude_conversation(
        "Photosynthesis",
        [
            ("human", "How does photosynthesis work?"),
            ("assistant", "Plants turn light into sugar."),
            ("human", "What about forests?"),
            ("assistant", "Forests do it at scale."),
        ],
    )
    conversation["chat_messages"].reverse()  # export order is not chronological
    path = write_json(tmp_path / "conversations.json", [conversation])

    [parsed] = list(parse_file(path))

    assert [(p.user_text, p.assistant_text) for p in parsed.pairs] == [
        ("How does photosynthesis work?", "Plants turn light into sugar."),
        ("What about forests?", "Forests do it at scale."),
    ]
    assert parsed.platform == "claude"
    assert iso_utc(parsed.pairs[0].timestamp) == "2024-03-13T14:00:00Z"


def test_claude_text_comes_from_content_blocks_not_the_placeholder(tmp_path):
    conversation = claude_conversation(
        "Artifact", [("human", "Write a haiku file"), ("assistant", "ignored")]
    )
    reply = conversation["chat_messages"][1]
    reply["text"] = "```\nThis block is not supported on your current device yet.\n```"
    reply["content"] = [
        {"type": "text", "text": "Here is the haiku:"},
        {
            "type": "tool_use",
            "name": "artifacts",
            "input": {"title": "haiku.txt", "content": "old pond / frog jumps in"},
        },
        {"type": "tool_result", "content": [{"type": "text", "text": "OK"}]},
        {"type": "text", "text": "Enjoy!"},
    ]
    path = write_json(tmp_path / "c.json", [conversation])

    [parsed] = list(parse_file(path))

    text = parsed.pairs[0].assistant_text
    assert "not supported on your current device" not in text
    assert text.startswith("Here is the haiku:")
    assert "[artifact: haiku.txt]" in text and "old pond / frog jumps in" in text
    assert text.endswith("Enjoy!")


def test_claude_regenerated_reply_keeps_only_the_final_one(tmp_path):
    conversation = claude_conversation(
        "Regen",
        [("human", "Name a colour"), ("assistant", "Red"), ("assistant", "Blue")],
    )
    path = write_json(tmp_path / "c.json", [conversation])

    [parsed] = list(parse_file(path))

    assert [(p.user_text, p.assistant_text) for p in parsed.pairs] == [("Name a colour", "Blue")]


def test_claude_empty_and_human_only_conversations(tmp_path):
    empty = claude_conversation("Empty", [])
    blank = claude_conversation("Blank", [("human", ""), ("assistant", "")])
    human_only = claude_conversation("Unanswered", [("human", "Are you there?")])
    path = write_json(tmp_path / "c.json", [empty, blank, human_only])

    parsed = list(parse_file(path))

    assert [(c.title, [(p.user_text, p.assistant_text) for p in c.pairs]) for c in parsed] == [
        ("Unanswered", [("Are you there?", "")])
    ]


def test_claude_attachments_are_named(tmp_path):
    conversation = claude_conversation("Files", [("human", "Summarize this"), ("assistant", "Ok")])
    conversation["chat_messages"][0]["attachments"] = [
        {"file_name": "report.pdf", "file_size": 100, "extracted_content": "secret body"}
    ]
    conversation["chat_messages"][0]["files"] = [{"file_name": "chart.png"}]
    path = write_json(tmp_path / "c.json", [conversation])

    [parsed] = list(parse_file(path))

    prompt = parsed.pairs[0].user_text
    assert "[attachment: report.pdf]" in prompt and "[image: chart.png]" in prompt


@pytest.mark.parametrize(
    "content, attachments",
    [
        # Serialised into strings, as some real exports have them.
        (lambda text: json.dumps([{"type": "text", "text": text}]), "[]"),
        (lambda text: json.dumps([{"type": "tool_use", "name": "web_search"}]), '[{"x": 1}]'),
        (lambda text: "not json at all", "also not json"),
        (lambda text: None, None),
        (lambda text: [], []),
        (lambda text: 17, 17),
    ],
    ids=["json-strings", "strings-without-text", "plain-strings", "null", "empty", "numbers"],
)
def test_claude_content_and_attachments_of_any_shape_fall_back_to_text(
    tmp_path, content, attachments
):
    conversation = claude_conversation(
        "Odd shapes", [("human", "Which pass for Kyoto?"), ("assistant", "The JR Pass.")]
    )
    for message in conversation["chat_messages"]:
        message["content"] = content(message["text"])
        message["attachments"] = attachments
        message["files"] = attachments
    path = write_json(tmp_path / "c.json", [conversation])

    [parsed] = list(parse_file(path))

    assert [(p.user_text, p.assistant_text) for p in parsed.pairs] == [
        ("Which pass for Kyoto?", "The JR Pass.")
    ]


def test_claude_missing_content_keys_fall_back_to_text(tmp_path):
    conversation = claude_conversation("Bare", [("human", "Hello?"), ("assistant", "Hi.")])
    for message in conversation["chat_messages"]:
        del message["content"], message["attachments"], message["files"]
    path = write_json(tmp_path / "c.json", [conversation])

    [parsed] = list(parse_file(path))

    assert [(p.user_text, p.assistant_text) for p in parsed.pairs] == [("Hello?", "Hi.")]


def test_claude_plain_string_content_and_role_instead_of_sender(tmp_path):
    conversation = claude_conversation("Other tool", [("human", "Hello?"), ("assistant", "Hi.")])
    for message, role in zip(conversation["chat_messages"], ["user", "assistant"], strict=True):
        message["content"] = message.pop("text")
        message["role"] = role
        del message["sender"]
    path = write_json(tmp_path / "c.json", [conversation])

    [parsed] = list(parse_file(path))

    assert [(p.user_text, p.assistant_text) for p in parsed.pairs] == [("Hello?", "Hi.")]


def test_conversations_without_usable_turns_are_reported_as_skipped(tmp_path):
    empty = claude_conversation("Empty", [], conversation_id="c-empty")
    blank = claude_conversation("Blank", [("human", " "), ("assistant", "")], conversation_id="b")
    broken = claude_conversation("Broken", [("human", "x")], conversation_id="c-broken")
    broken["chat_messages"] = "not a list"
    kept = claude_conversation("Kept", [("human", "Hi"), ("assistant", "Hello")])
    path = write_json(tmp_path / "c.json", [empty, blank, broken, kept])
    skipped: list[SkippedConversation] = []

    parsed = list(parse_file(path, skipped=skipped))

    assert [c.title for c in parsed] == ["Kept"]
    assert [(s.conversation_id, s.title) for s in skipped] == [
        ("c-empty", "Empty"),
        ("b", "Blank"),
        ("c-broken", "Broken"),
    ]
    assert all("no message with text" in s.reason for s in skipped)


def test_claude_branches_follow_the_newest_leaf(tmp_path):
    conversation = claude_conversation(
        "Edit",
        [
            ("human", "First try"),
            ("assistant", "Answer to first try"),
            ("human", "Edited prompt"),
            ("assistant", "Answer to edited prompt"),
        ],
    )
    root = "00000000-0000-4000-8000-000000000000"
    m = conversation["chat_messages"]
    m[0]["parent_message_uuid"] = root
    m[1]["parent_message_uuid"] = m[0]["uuid"]
    m[2]["parent_message_uuid"] = root  # the edit replaces the first prompt
    m[3]["parent_message_uuid"] = m[2]["uuid"]
    path = write_json(tmp_path / "c.json", [conversation])

    [parsed] = list(parse_file(path))

    assert [(p.user_text, p.assistant_text) for p in parsed.pairs] == [
        ("Edited prompt", "Answer to edited prompt")
    ]


# ---------------------------------------------------------------------------------- Gemini


def test_gemini_json_records_are_ordered_and_grouped_by_time_gaps(tmp_path):
    records = [
        gemini_record("Later topic", "<p>Answer C</p>", "2024-05-02T09:00:00.000Z"),
        gemini_record("And its follow-up", "<p>Answer B</p>", "2024-05-01T10:10:00.000Z"),
        gemini_record("First question", "<p>Answer <b>A</b></p>", "2024-05-01T10:00:00.000Z"),
        {
            "header": "Gemini Apps",
            "title": "Gave feedback: Good response",
            "time": "2024-05-01T10:01:00.000Z",
            "products": ["Gemini Apps"],
        },
        {"header": "Search", "title": "Searched for cats", "time": "2024-05-01T10:02:00Z"},
    ]
    path = write_json(tmp_path / "MyActivity.json", records)

    assert detect_format(path) == "gemini_json"
    parsed = sorted(parse_file(path), key=lambda c: c.created_at)

    assert [[p.user_text for p in c.pairs] for c in parsed] == [
        ["First question", "And its follow-up"],
        ["Later topic"],
    ]
    assert parsed[0].pairs[0].assistant_text == "Answer **A**"
    assert iso_utc(parsed[1].pairs[0].timestamp) == "2024-05-02T09:00:00Z"
    assert parsed[0].conversation_id != parsed[1].conversation_id


GEMINI_HTML_CELL = """
<div class="outer-cell mdl-cell mdl-cell--12-col mdl-shadow--2dp"><div class="mdl-grid">
<div class="header-cell mdl-cell mdl-cell--12-col"><p class="mdl-typography--title">Gemini Apps<br></p></div>
<div class="content-cell mdl-cell mdl-cell--6-col mdl-typography--body-1">{verb}&nbsp;{prompt}<br>{date}<br><p>{reply}</p></div>
<div class="content-cell mdl-cell mdl-cell--6-col mdl-typography--body-1 mdl-typography--text-right"></div>
<div class="content-cell mdl-cell mdl-cell--12-col mdl-typography--caption"><b>Products:</b><br>&emsp;Gemini Apps<br></div>
</div></div>
"""


def _gemini_html(cells: list[dict]) -> str:
    body = "".join(GEMINI_HTML_CELL.format(**cell) for cell in cells)
    return f'<html><head><meta charset="utf-8"></head><body><div class="mdl-grid">{body}</div></body></html>'


def test_gemini_html_in_czech_locale_with_local_time_zones(tmp_path):
    path = tmp_path / "MojeAktivita.html"
    path.write_text(
        _gemini_html(
            [
                {
                    "verb": "Pokyn",
                    "prompt": "Jak funguje fotosyntéza?",
                    "date": "15. 7. 2025 10:05:00 SELČ",
                    "reply": "Rostliny využívají světlo.",
                },
                {
                    "verb": "Pokyn",
                    "prompt": "Co je chlorofyl?",
                    "date": "1. 1. 2026 10:00:00 SEČ",
                    "reply": "Zelené barvivo.",
                },
            ]
        ),
        encoding="utf-8",
    )

    assert detect_format(path) == "gemini_html"
    parsed = list(parse_file(path))

    pairs = [p for c in parsed for p in c.pairs]
    assert [(p.user_text, p.assistant_text, iso_utc(p.timestamp)) for p in pairs] == [
        ("Jak funguje fotosyntéza?", "Rostliny využívají světlo.", "2025-07-15T08:05:00Z"),
        ("Co je chlorofyl?", "Zelené barvivo.", "2026-01-01T09:00:00Z"),
    ]
    assert len(parsed) == 2  # months apart: two conversations


def test_gemini_html_english_dates_with_am_pm(tmp_path):
    path = tmp_path / "MyActivity.html"
    path.write_text(
        _gemini_html(
            [
                {
                    "verb": "Prompted",
                    "prompt": "Plan a trip to Kyoto",
                    "date": "May 1, 2024, 2:03:04\u202fPM PDT",
                    "reply": "Day 1: temples.",
                }
            ]
        ),
        encoding="utf-8",
    )

    [conversation] = list(parse_file(path))

    assert iso_utc(conversation.pairs[0].timestamp) == "2024-05-01T21:03:04Z"
    assert conversation.pairs[0].user_text == "Plan a trip to Kyoto"


# ---------------------------------------------------------------------------------- Open WebUI


def test_openwebui_follows_current_branch_and_fixes_doubled_apostrophes(tmp_path):
    chat = openwebui_chat(
        "\U0001f9e0 Ethics",
        [("user", "What''s the Goldwater rule?"), ("assistant", "It''s an APA rule. x = ''")],
        extra_sibling="A newer regeneration the user did not keep",
    )
    path = write_json(tmp_path / "chat-export.json", chat, ascii_only=True)

    assert detect_format(path) == "openwebui"
    [parsed] = list(parse_file(path))

    assert parsed.title == "🧠 Ethics"
    assert [(p.user_text, p.assistant_text) for p in parsed.pairs] == [
        ("What's the Goldwater rule?", "It's an APA rule. x = ''")
    ]
    assert parsed.model == "llama3:8b"
    assert parsed.conversation_id  # derived even though the export's id is empty


def test_openwebui_list_of_exported_rows(tmp_path):
    rows = [
        {
            "id": "chat-1",
            "title": "One",
            "chat": openwebui_chat("One", [("user", "a"), ("assistant", "b")]),
        },
        {
            "id": "chat-2",
            "title": "Two",
            "chat": openwebui_chat("Two", [("user", "c"), ("assistant", "d")]),
        },
    ]
    path = write_json(tmp_path / "all.json", rows)

    parsed = list(parse_file(path))

    assert [(c.conversation_id, c.title) for c in parsed] == [("chat-1", "One"), ("chat-2", "Two")]


# ---------------------------------------------------------------------------------- local log

SESSION_LOG = """---
**Timestamp:** 2026-03-31T14:23:00Z
**Model:** sidebar-small
**Turn:** 1
**User:**
How do I switch models?
**Assistant:**
Use the model picker.

---

Here is a rule inside the reply.
---
**Timestamp:** 2026-03-31T14:25:00+02:00
**Model:** sidebar-large
**Turn:** 2
**User:**
And **bold** text?
**Assistant:**
Works too.
"""


def test_local_markdown_session_log(tmp_path):
    path = tmp_path / "2026-03-31_session-a7f3.md"
    path.write_text(SESSION_LOG.replace("\n", "\r\n"), encoding="utf-8")

    assert detect_format(path) == "local_markdown"
    [conversation] = list(parse_file(path))

    assert conversation.conversation_id == "2026-03-31_session-a7f3"
    assert conversation.platform == "local"
    assert [(p.user_text, p.assistant_text, p.model) for p in conversation.pairs] == [
        (
            "How do I switch models?",
            "Use the model picker.\n\n---\n\nHere is a rule inside the reply.",
            "sidebar-small",
        ),
        ("And **bold** text?", "Works too.", "sidebar-large"),
    ]
    assert iso_utc(conversation.pairs[1].timestamp) == "2026-03-31T12:25:00Z"


# ---------------------------------------------------------------------------------- API logs


def test_openai_api_log_lines_fold_repeated_history(tmp_path):
    system = {"role": "system", "content": "You are terse."}
    first = {
        "request": {
            "model": "gpt-4o-mini",
            "messages": [system, {"role": "user", "content": "Capital of France?"}],
        },
        "response": {
            "created": 1_700_000_000,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"message": {"role": "assistant", "content": "Paris."}}],
        },
    }
    second = {
        "request": {
            "model": "gpt-4o-mini",
            "messages": [
                system,
                {"role": "user", "content": "Capital of France?"},
                {"role": "assistant", "content": "Paris."},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "And this flag?"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,xx"}},
                    ],
                },
            ],
        },
        "response": {
            "created": 1_700_000_100,
            "choices": [{"message": {"role": "assistant", "content": "That is Italy's."}}],
        },
    }
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")

    assert detect_format(path) == "api_log"
    [conversation] = list(parse_file(path))

    assert [(p.user_text, p.assistant_text) for p in conversation.pairs] == [
        ("Capital of France?", "Paris."),
        ("And this flag?\n\n[image: inline image]", "That is Italy's."),
    ]
    assert conversation.system_prompt == "You are terse."
    assert iso_utc(conversation.pairs[0].timestamp) == "2023-11-14T22:13:20Z"
    assert iso_utc(conversation.pairs[1].timestamp) == "2023-11-14T22:15:00Z"


def test_anthropic_messages_log_skips_tool_traffic(tmp_path):
    call = {
        "model": "claude-sonnet-4",
        "system": "Be kind",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "weather", "input": {}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
        ],
        "response": {
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-20250514",
            "content": [{"type": "text", "text": "Cold and clear."}],
        },
    }
    path = write_json(tmp_path / "anthropic.json", call)

    [conversation] = list(parse_file(path))

    assert [(p.user_text, p.assistant_text) for p in conversation.pairs] == [
        ("Weather in Oslo?", "Cold and clear.")
    ]
    assert conversation.model == "claude-sonnet-4-20250514"


# ---------------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    "content",
    [
        b'{"user_name":"You","character_name":"Megumin","create_date":1}\n{"mes":"hi"}\n',
        b"just some notes\nnothing else\n",
        b'[{"uuid": "x", "full_name": "A", "email_address": "a@b.c"}]',
        b"<html><body><p>Hello</p></body></html>",
        b"",
    ],
)
def test_other_files_are_unrecognized(tmp_path, content):
    path = tmp_path / "conversations.json"  # the name must not matter
    path.write_bytes(content)

    assert detect_format(path) is None
    with pytest.raises(UnrecognizedFormat, match="unrecognized format"):
        list(parse_file(path))


def test_detection_reads_content_not_extension(tmp_path):
    chatgpt = write_json(tmp_path / "claude.json", [chatgpt_linear("x", [("q", "a")])])
    claude = write_json(tmp_path / "chatgpt.md", [claude_conversation("y", [("human", "q")])])

    assert detect_format(chatgpt) == "chatgpt"
    assert detect_format(claude) == "claude"
    assert detect_format(b"PK\x03\x04rest") == "zip"
