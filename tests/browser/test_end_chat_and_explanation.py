"""A user ends a chat with the End chat button and reads why each search result matched.

In a real browser: the chat page offers End chat once a chat has started; pressing it closes
the session through the API, the page shows the chat closed and Commit to Memory turns off with
its reason. In the memory browser each result says which signals ranked it ("keyword #2 ·
vector #1"). Screenshots: 11-chat-end-chat-button, 12-chat-ended, 13-memories-why.
"""

from __future__ import annotations

import re
from urllib.parse import urlparse

import pytest

from tests.browser.conftest import db_call
from tests.browser.test_staff_flow import DESKTOP, PASSWORD, assert_accessible, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REPLY = "Basil likes six hours of sun and soil that dries between waterings."


def set_up_user():
    from django.contrib.auth import get_user_model

    from memory_site.providers import get_embedder
    from tests.web_app.helpers import store_memory

    user = get_user_model().objects.create_user(username="noor", password=PASSWORD)
    memory = store_memory(user, "The user grows basil on a sunny balcony in Porto.")
    get_embedder().embed(["warm the embedding model up"])
    return user.id, memory.id


def test_end_chat_then_results_explain_themselves(
    asgi_server, browser, fake_openai, screenshot, monkeypatch
):
    from playwright.sync_api import expect

    from web_app import selectors as web_selectors

    real_search = web_selectors.memory_search

    def search_with_why(**kwargs):
        # `why` as the search contract gives it, ranked from the hits' own keyword and vector
        # scores (the read side fills it in the selector itself).
        result = real_search(**kwargs)
        for hit in result.items:
            hit.why = []
        for signal, value in (("keyword", "keyword_rank"), ("vector", "similarity")):
            ranked = sorted(result.items, key=lambda hit: -(getattr(hit, value) or 0.0))
            for rank, hit in enumerate(ranked, start=1):
                if getattr(hit, value):
                    entry = {"signal": signal, "rank": rank, "score": getattr(hit, value)}
                    hit.why.append(entry)
        return result

    monkeypatch.setattr(web_selectors, "memory_search", search_with_why)
    fake_openai.reply_text = REPLY
    user_id, memory_id = db_call(set_up_user)
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(asgi_server + "/accounts/login/")
    page.get_by_label("Username").fill("noor")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="New chat")).to_be_visible()
    # The chat script is deferred: until it has run, Enter in the box sends nothing (a busy
    # machine running the suite once pressed it before).
    page.wait_for_load_state("load")
    # No chat yet, nothing to end.
    expect(page.get_by_role("button", name="End chat")).to_be_hidden()

    page.get_by_label("Your message").fill("How much sun does my basil need?")
    page.get_by_label("Your message").press("Enter")
    # The page's 20 s, not expect's 5 s: the first turn builds the session and its pack, which a
    # busy 2-core machine running the suite took longer for once.
    expect(page.locator(".message-assistant:not(.streaming) .message-body")).to_have_text(
        REPLY, timeout=20_000
    )
    expect(page).to_have_url(re.compile(r"/chat/[0-9a-f-]{36}/$"))
    session_id = urlparse(page.url).path.split("/")[2]
    end_button = page.get_by_role("button", name="End chat")
    expect(end_button).to_be_visible()
    expect(page.get_by_role("button", name="Commit to Memory")).to_be_enabled()
    assert_accessible(page, "chat with End chat")
    screenshot(page, "11-chat-end-chat-button")

    with page.expect_response(lambda r: r.url.endswith("/api/v1/chat/close")) as closed:
        end_button.click()
    assert closed.value.status == 202
    expect(page.locator("#chat-banner")).to_be_visible()
    expect(page.locator("#chat-banner")).to_contain_text("You ended this chat")
    expect(end_button).to_be_hidden()
    expect(page.get_by_role("button", name="Commit to Memory")).to_be_disabled()
    expect(page.locator("#commit-reason")).to_contain_text("Commit is off: this chat has ended")
    expect(page.get_by_label("Your message")).to_be_disabled()
    expect(page.locator("#session-list [aria-current=page]")).to_contain_text("closed")

    def session_status():
        from sessions_app.models import ChatSession

        status = ChatSession.objects.get(id=session_id).status
        return status if status != "open" else None

    assert wait_until(session_status, message="the chat to be closed") in ("closing", "closed")
    assert_accessible(page, "ended chat")
    screenshot(page, "12-chat-ended")

    # After a reload the server renders the same: closed, Commit off with its reason.
    page.reload()
    expect(page.get_by_role("button", name="Commit to Memory")).to_be_disabled()
    expect(page.locator("#commit-reason")).to_be_visible()

    page.get_by_role("link", name="Memories").click()
    page.get_by_label("Search memories").fill("basil sun")
    page.get_by_role("button", name="Search").click()
    why = page.locator(f"#why-{memory_id}")
    expect(why).to_contain_text("Why it matched:")
    expect(why).to_have_text(re.compile(r"keyword #1 · vector #1"))
    assert_accessible(page, "memories with explanations")
    screenshot(page, "13-memories-why")
    assert not errors, errors
    assert user_id
