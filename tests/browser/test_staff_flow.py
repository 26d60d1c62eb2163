"""A staff member uses Mnemo in a real browser: log in, chat with streamed replies from the
loopback OpenAI-compatible server, see the topic chip after N turns and the context of the last
turn, commit to memory and read the toast, find the fact in the memory browser, delete it, and
switch verbose logging on in settings. A screenshot of each page goes to artifacts/screenshots/.
"""

from __future__ import annotations

import json
import re
import time
from urllib.parse import urlparse

import pytest

from tests.browser.a11y import a11y_problems
from tests.browser.conftest import db_call
from tests.web_app.helpers import chatgpt_export

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"
REPLY = "Genmaicha is green tea with roasted brown rice: brew it at 85 °C for about three minutes."
FACT = "The user's favourite tea is genmaicha from Kyoto."
TURNS = [
    "I love genmaicha tea. My favourite tea is genmaicha from Kyoto.",
    "How should I brew genmaicha tea at home?",
    "Which genmaicha tea brands suit a beginner?",
]
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 860}


def model_json(body: dict) -> dict:
    """The scripted model behind every structured call the flow makes."""
    name = body.get("response_format", {}).get("json_schema", {}).get("name", "")
    prompt = str(body["messages"][-1]["content"])
    if name == "memory_facts":
        ids = [int(i) for i in re.findall(r"^\[(\d+)\] User:", prompt, re.M)]
        return {"facts": [{"text": FACT, "source_message_ids": ids[:1]}]}
    if name == "memory_decisions":
        return {"decisions": []}
    if name == "chunk_headers":
        header = "The user asks how to choose and brew genmaicha tea."
        return {"chunks": [{"index": 0, "header": header, "topics": ["tea"]}]}
    if name == "session_digest":
        return {"points": ["The user loves genmaicha tea from Kyoto."], "title": "Genmaicha tea"}
    return {}


def set_up_data():
    from django.contrib.auth import get_user_model

    from context_app.models import ContextSettings
    from memory_site.providers import get_embedder
    from tests.web_app.helpers import store_memory

    staff = get_user_model().objects.create_superuser(username="mia", password=PASSWORD)
    # A memory from an earlier chat: the pack of the third turn should carry it.
    seeded = store_memory(staff, "The user buys genmaicha tea at the Ippodo shop in Kyoto.")
    settings_row = ContextSettings.load()
    # A shared CI machine can be slow; the default budget (300 ms) would drop the pack.
    settings_row.latency_budget_ms = 20_000
    settings_row.save()
    get_embedder().embed(["warm the embedding model up"])
    return staff.id, seeded.id


def wait_until(check, *, timeout: float = 15.0, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = db_call(check)
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {message}")


def api_calls(log: list, path: str) -> list[dict]:
    return [json.loads(body or "{}") for method, url, body in log if url == path]


def assert_accessible(page, name: str):
    problems = a11y_problems(page)
    assert not problems, f"{name}: " + "\n".join(problems)


def send_turn(page, text: str, turn: int):
    from playwright.sync_api import expect

    # A turn can be sent once the previous stream has ended (the button says "Send" again).
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()
    page.get_by_label("Your message").fill(text)
    page.get_by_label("Your message").press("Enter")
    finished = page.locator(".message-assistant:not(.streaming) .message-body")
    finished.nth(turn - 1).wait_for()
    return finished.nth(turn - 1)


def pack_from_third_turn() -> None:
    """This flow shows the topic chip appearing with the first pack: the pack now starts on the
    first turn by default, so the flow sets the third (as an operator can in Settings)."""
    from context_app.models import ContextSettings

    ContextSettings.objects.update_or_create(pk=1, defaults={"min_user_turns": 3})


def test_chat_commit_find_delete_and_settings(
    asgi_server, browser, fake_openai, screenshot, tmp_path
):
    from playwright.sync_api import expect

    fake_openai.reply_text = REPLY
    fake_openai.stream_delay_seconds = 0.08
    fake_openai.json_responder = model_json
    staff_id, seeded_id = db_call(set_up_data)
    db_call(pack_from_third_turn)
    base = asgi_server

    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    calls: list[tuple[str, str, str | None]] = []
    page.on(
        "request",
        lambda r: (
            calls.append((r.method, urlparse(r.url).path, r.post_data))
            if "/api/" in r.url
            else None
        ),
    )

    # --- Log in -------------------------------------------------------------------------------
    page.goto(base + "/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    assert_accessible(page, "login")
    screenshot(page, "01-login")
    assert page.evaluate("document.activeElement.id") == "id_username"
    page.get_by_label("Username").fill("mia")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="New chat")).to_be_visible()
    page.wait_for_load_state("load")  # the deferred chat script has run: Enter sends
    page.keyboard.press("Tab")  # the first stop skips the navigation
    assert page.evaluate("document.activeElement.className") == "skip-link"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "brand"
    assert_accessible(page, "new chat")
    screenshot(page, "02-chat-new")

    # --- Chat: the first reply streams in ------------------------------------------------------
    page.get_by_label("Your message").fill(TURNS[0])
    page.get_by_label("Your message").press("Enter")
    # Part of the reply is on screen while the stream is still open.
    page.wait_for_function(
        """() => {
            const body = document.querySelector('.message-assistant.streaming .message-body');
            return body && body.textContent.length > 0;
        }"""
    )
    partial = page.locator(".message-assistant.streaming .message-body").text_content()
    assert partial and len(partial) < len(REPLY)
    expect(page.locator(".message-assistant .message-body").first).to_have_text(REPLY)
    expect(page).to_have_url(re.compile(r"/chat/[0-9a-f-]{36}/$"))
    session_id = urlparse(page.url).path.split("/")[2]
    expect(page.locator("#session-list [aria-current=page]")).to_contain_text("I love genmaicha")
    expect(page.locator("#topic-chip")).to_be_hidden()

    # --- The topic chip appears once the pack is built (third user turn, set above) ----------
    send_turn(page, TURNS[1], 2)
    expect(page.locator("#topic-chip")).to_be_hidden()
    page.get_by_role("switch", name="Show context").check()
    expect(page.locator("#debug-panel")).to_be_visible()
    send_turn(page, TURNS[2], 3)

    def last_pack():
        from context_app.models import InjectionLog

        return InjectionLog.objects.filter(session_id=session_id).order_by("-id").first()

    pack = db_call(last_pack)
    assert pack is not None and pack.topic_title, "the third turn built a pack with a topic"
    expect(page.locator("#topic-chip")).to_be_visible()
    expect(page.locator("#topic-chip-title")).to_have_text(pack.topic_title)

    # --- The debug view shows the context pack of that turn ----------------------------------
    debug = page.locator("#debug-panel")
    expect(debug).to_contain_text(f"Turn{pack.turn_number}")
    segment_names = [segment["name"] for segment in pack.segments]
    assert segment_names, "the pack has segments"
    for name in segment_names:
        expect(page.locator("#debug-segments")).to_contain_text(name)
    assert seeded_id in [memory["id"] for memory in pack.memories]
    expect(page.locator(f'#debug-memories a[href="/memories/{seeded_id}/"]')).to_be_visible()
    expect(page.locator("#debug-pack")).to_contain_text("Ippodo")

    # --- The chip follows the topic when it changes (here: an admin's override) --------------
    def override_topic():
        from context_app.models import TopicOverride

        TopicOverride.objects.create(user_id=staff_id, session_id=session_id, title="Kyoto Travel")

    db_call(override_topic)
    send_turn(page, "Any tips for a day trip from Kyoto?", 4)
    expect(page.locator("#topic-chip-title")).to_have_text("Kyoto Travel")
    expect(page.locator("#topic-chip")).to_have_class(re.compile(r"\bchanged\b"))
    expect(debug).to_contain_text("Turn4")

    # --- Commit to Memory shows the endpoint's toast ------------------------------------------
    with page.expect_response(lambda r: r.url.endswith("/api/v1/memory/commit")) as commit_info:
        page.get_by_role("button", name="Commit to Memory").click()
    toast = commit_info.value.json()["toast"]
    assert toast["level"] == "success"
    expect(page.locator("#toasts .toast-success")).to_contain_text(toast["message"])

    def stored_fact():
        from ingestion_app.models import MemoryItem

        return (
            MemoryItem.objects.filter(user_id=staff_id, source="fact", content=FACT)
            .values_list("id", flat=True)
            .first()
        )

    fact_id = db_call(stored_fact)
    assert fact_id
    assert_accessible(page, "chat")
    screenshot(page, "03-chat-streamed-topic-commit-debug")
    page.set_viewport_size(PHONE)
    assert_accessible(page, "chat (phone)")
    screenshot(page, "03-chat-phone")
    page.set_viewport_size(DESKTOP)

    # --- Heartbeat and visibility while the tab is open ---------------------------------------
    for state in ("hidden", "visible"):
        page.evaluate(
            """(state) => {
                Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => state});
                document.dispatchEvent(new Event('visibilitychange'));
            }""",
            state,
        )
    page.wait_for_function("() => true")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not api_calls(calls, "/api/v1/chat/heartbeat"):
        page.wait_for_timeout(100)
    visibility = api_calls(calls, "/api/v1/chat/visibility")
    assert [body["visible"] for body in visibility] == [False, True]
    assert {body["session_id"] for body in visibility} == {session_id}
    assert api_calls(calls, "/api/v1/chat/heartbeat")

    # --- Leaving the chat closes the session ---------------------------------------------------
    page.get_by_role("link", name="Memories").click()
    expect(page.get_by_role("heading", name="Memory browser")).to_be_visible()

    def session_status():
        from sessions_app.models import ChatSession

        status = ChatSession.objects.get(id=session_id).status
        return status if status != "open" else None

    # The close request is sent from `pagehide` (keepalive), so the server's state is the proof.
    assert wait_until(session_status, message="the chat to be closed") in ("closing", "closed")

    # --- Find the fact in the memory browser ---------------------------------------------------
    page.get_by_label("Search memories").fill("which tea do I like")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#results-summary")).to_contain_text("which tea do I like")
    result = page.locator(f'.result[data-memory-id="{fact_id}"]')
    expect(result).to_contain_text("genmaicha from Kyoto")
    expect(result).to_contain_text("score")
    page.get_by_label("Fact").check()  # filters apply at once (htmx)
    expect(page).to_have_url(re.compile(r"source=fact"))
    expect(page.locator(".result .badge-chunk")).to_have_count(0)
    assert_accessible(page, "memories")
    screenshot(page, "04-memories-search")
    page.set_viewport_size(PHONE)
    assert_accessible(page, "memories (phone)")
    screenshot(page, "04-memories-phone")
    page.set_viewport_size(DESKTOP)

    result.get_by_role("link", name=f"Memory #{fact_id}").click()
    expect(page.get_by_role("heading", name=f"Memory #{fact_id}")).to_be_visible()
    expect(page.locator("#source-heading + p")).to_contain_text("From the chat")
    expect(page.locator(".transcript")).to_contain_text("I love genmaicha tea")
    expect(page.locator(".history")).to_contain_text("Added")
    assert_accessible(page, "memory detail")
    screenshot(page, "05-memory-detail")

    # --- Delete it -----------------------------------------------------------------------------
    page.get_by_role("link", name="Delete memory…").click()
    expect(page.get_by_role("heading", name=f"Delete memory #{fact_id}?")).to_be_visible()
    assert_accessible(page, "delete confirmation")
    screenshot(page, "06-memory-delete-confirm")
    page.get_by_role("button", name="Delete for good").click()
    expect(page.locator("#toasts")).to_contain_text(f"Memory #{fact_id} deleted.")
    assert db_call(stored_fact) is None
    page.get_by_label("Search memories").fill("genmaicha")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#results-summary")).to_contain_text("genmaicha")
    expect(page.locator(f'.result[data-memory-id="{fact_id}"]')).to_have_count(0)

    # --- Sessions and imports views ------------------------------------------------------------
    page.get_by_role("link", name="Sessions").click()
    wait_until(lambda: session_status() == "closed", message="the close pipeline")
    page.reload()
    expect(page.locator(".result").first).to_contain_text("genmaicha")
    assert_accessible(page, "sessions")
    screenshot(page, "07-sessions")
    page.locator(".result a").first.click()
    expect(page.get_by_role("heading", name="Transcript")).to_be_visible()
    assert_accessible(page, "session detail")
    screenshot(page, "08-session-detail")
    page.get_by_role("link", name="← Sessions").click()
    page.get_by_role("link", name="Imports").click()
    expect(page.get_by_role("heading", name="Upload chat exports")).to_be_visible()
    assert_accessible(page, "imports")
    screenshot(page, "09-imports")
    export = tmp_path / "conversations.json"
    export.write_bytes(
        chatgpt_export(
            "Sourdough help",
            [
                ("user", "My sourdough starter smells like acetone, is it dead?"),
                ("assistant", "No, it is hungry: feed it twice a day."),
            ],
        )
    )
    page.locator("#id_files").set_input_files(str(export))
    page.get_by_label("Project (optional)").fill("baking")
    page.get_by_role("button", name="Upload and import").click()
    expect(page.locator("#toasts")).to_contain_text("Import started: 1 file uploaded.")
    expect(page.locator("#import-job-status")).to_have_text("done")
    expect(page.get_by_role("heading", name="Processing summary")).to_be_visible()
    expect(page.locator("#import-status table")).to_contain_text("conversations.json")
    assert_accessible(page, "import detail")
    screenshot(page, "09-import-detail")

    # --- Entities: the list with its relationship picture, then one entity's page ------------
    page.goto(base + "/memories/sessions/")
    page.get_by_role("link", name="Entities").click()
    kyoto = page.locator(".result a", has_text="Kyoto")
    expect(kyoto).to_be_visible()
    expect(page.locator("figure svg")).to_be_visible()
    assert_accessible(page, "entities")
    screenshot(page, "09-entities")
    kyoto.click()
    expect(page.get_by_role("heading", name=re.compile("Kyoto"))).to_be_visible()
    expect(page.locator("section[aria-labelledby=mentions]")).to_contain_text("Kyoto")
    assert_accessible(page, "entity page")
    screenshot(page, "09-entity-detail")

    # --- Settings: switch verbose logging on ---------------------------------------------------
    page.get_by_role("link", name="Settings").click()
    switch = page.get_by_label("Verbose logging")
    expect(switch).not_to_be_checked()
    assert_accessible(page, "settings")
    screenshot(page, "10-settings")
    switch.check()
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("#toasts")).to_contain_text("Settings saved.")
    expect(page.get_by_label("Verbose logging")).to_be_checked()

    def verbose_logging():
        from context_app.models import ContextSettings

        return ContextSettings.load().verbose_logging

    assert db_call(verbose_logging) is True
    page.set_viewport_size(PHONE)
    assert_accessible(page, "settings (phone)")
    screenshot(page, "10-settings-phone")

    assert not errors, f"JavaScript errors: {errors}"
    context.close()
