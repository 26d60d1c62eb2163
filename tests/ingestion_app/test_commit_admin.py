"""Staff screens: the rag_store (browse, search by user/project/text, delete), the commit log
with its marks, and the editable project-context mapping that a commit then follows."""

from __future__ import annotations

import pytest

from ingestion_app.models import MemoryCommitLog, MemoryItem, ProjectContext
from ingestion_app.services.commit import memory_commit
from tests.factories import add_message, open_session

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_message_hooks")]


@pytest.fixture
def committed(user, other_user):
    session = open_session(user, project_id="house")
    add_message(session, "user", "I live in Lisbon and I play the cello.")
    memory_commit(user=user, chat_session_id=session.id)
    other = open_session(other_user, project_id="garden")
    add_message(other, "user", "I grow tomatoes.")
    memory_commit(user=other_user, chat_session_id=other.id)
    return session


def test_rag_store_is_searchable_by_text_user_and_project(staff_client, committed):
    page = staff_client.get("/admin/ingestion_app/memoryitem/", {"q": "cello"})
    assert page.status_code == 200
    assert b"The user plays the cello." in page.content
    assert b"tomatoes" not in page.content
    by_user = staff_client.get("/admin/ingestion_app/memoryitem/", {"q": "bob"}).content
    assert b"tomatoes" in by_user and b"cello" not in by_user
    by_project = staff_client.get("/admin/ingestion_app/memoryitem/", {"q": "garden"}).content
    assert b"tomatoes" in by_project and b"Lisbon" not in by_project


def test_rag_store_item_can_be_deleted(staff_client, committed):
    item = MemoryItem.objects.get(content="The user lives in Lisbon.")
    response = staff_client.post(
        f"/admin/ingestion_app/memoryitem/{item.id}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert not MemoryItem.objects.filter(id=item.id).exists()


def test_commit_log_shows_the_mark(staff_client, committed):
    log = MemoryCommitLog.objects.get(chat_session=committed)
    page = staff_client.get("/admin/ingestion_app/memorycommitlog/")
    assert page.status_code == 200
    assert str(log.high_water_mark).encode() in page.content
    assert (
        staff_client.get(f"/admin/ingestion_app/memorycommitlog/{log.id}/change/").status_code
        == 200
    )


def test_project_context_added_in_admin_is_used_by_the_next_commit(staff_client, user, committed):
    response = staff_client.post(
        "/admin/ingestion_app/projectcontext/add/",
        {"chat_session": str(committed.id), "project_id": "relocation", "note": "moving"},
    )
    assert response.status_code == 302, response.content[:2000]
    mapping = ProjectContext.objects.get(chat_session=committed)
    assert mapping.user == user  # always the session's owner
    add_message(committed, "user", "I work at Acme.")
    result = memory_commit(user=user, chat_session_id=committed.id)
    assert result.project_id == "relocation"
    assert MemoryItem.objects.get(content="The user works at Acme.").project_id == "relocation"
