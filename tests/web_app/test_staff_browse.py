"""Users see only their own data; staff with the browse permission see anyone's, and every such
page view is written to the access log."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from imports_app.models import ImportJob
from privacy_app.models import AccessLog
from tests.factories import add_message, make_user, open_session
from tests.web_app.helpers import store_memory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_message_hooks")]


@pytest.fixture
def auditor(client):
    staff = make_user("auditor", staff=True)
    staff.user_permissions.add(
        Permission.objects.get(
            codename="browse_all_memories", content_type__app_label="privacy_app"
        )
    )
    client.force_login(staff)
    return staff


@pytest.fixture
def bob_data(other_user):
    session = open_session(other_user, title="Bee keeping")
    message = add_message(session, "user", "I keep bees, call me at +1 415 555 0100")
    fact = store_memory(
        other_user,
        "Bob keeps bees in Lyon.",
        session=session,
        message_ids=[message.id],
        embed=False,
    )
    job = ImportJob.objects.create(user=other_user, status=ImportJob.Status.DONE)
    return {"session": session, "fact": fact, "job": job}


@pytest.mark.parametrize("path", ["/memories/", "/memories/sessions/", "/memories/imports/", "/"])
@pytest.mark.parametrize("username", ["bob", "nobody"])
def test_plain_user_naming_another_user_gets_a_403_page_not_their_own_data(
    client, user, bob_data, path, username
):
    store_memory(user, "Alice grows basil.", embed=False)
    client.force_login(user)

    response = client.get(path, {"user": username})

    html = response.content.decode()
    assert response.status_code == 403
    assert "You can’t open this page" in html
    assert "Only staff with the browse permission" in html
    assert "basil" not in html and "bees" not in html.lower()
    assert not AccessLog.objects.exists()


def test_plain_user_naming_another_user_on_a_detail_page_gets_a_403(client, user, bob_data):
    mine = store_memory(user, "Alice grows basil.", embed=False)
    session = open_session(user, title="Herbs")
    job = ImportJob.objects.create(user=user, status=ImportJob.Status.DONE)
    client.force_login(user)

    for path in (
        f"/memories/{mine.id}/",
        f"/memories/sessions/{session.id}/",
        f"/memories/imports/{job.id}/",
    ):
        assert client.get(path).status_code == 200
        response = client.get(path, {"user": "bob"})
        assert response.status_code == 403, path
        assert "basil" not in response.content.decode()


def test_naming_yourself_in_user_is_your_own_page(client, user):
    store_memory(user, "Alice grows basil.", embed=False)
    client.force_login(user)

    response = client.get("/memories/", {"user": user.username})

    assert response.status_code == 200
    assert "basil" in response.content.decode()


def test_plain_user_cannot_open_another_users_objects(client, user, bob_data):
    client.force_login(user)
    assert client.get(f"/memories/sessions/{bob_data['session'].id}/").status_code == 404
    assert client.get(f"/memories/imports/{bob_data['job'].id}/").status_code == 404
    assert not AccessLog.objects.exists()


def test_staff_without_the_permission_sees_only_their_own(client, bob_data):
    client.force_login(make_user("helpdesk", staff=True))
    assert client.get("/memories/", {"user": "bob"}).status_code == 403
    assert client.get(f"/memories/{bob_data['fact'].id}/").status_code == 404


def test_staff_with_permission_browses_and_each_view_is_logged(
    client, auditor, other_user, bob_data
):
    fact, session, job = bob_data["fact"], bob_data["session"], bob_data["job"]

    listing = client.get("/memories/", {"user": "bob"})
    detail = client.get(f"/memories/{fact.id}/")
    sessions = client.get("/memories/sessions/", {"user": "bob"})
    session_page = client.get(f"/memories/sessions/{session.id}/")
    imports = client.get("/memories/imports/", {"user": "bob"})
    import_page = client.get(f"/memories/imports/{job.id}/")

    assert "Bob keeps bees in Lyon." in listing.content.decode()
    assert "recorded in the access log" in listing.content.decode()
    assert all(
        r.status_code == 200
        for r in (listing, detail, sessions, session_page, imports, import_page)
    )
    logs = list(AccessLog.objects.order_by("id"))
    assert [(log.object_type, log.object_id) for log in logs] == [
        ("memory_list", ""),
        ("memory", str(fact.id)),
        ("session_list", ""),
        ("session", str(session.id)),
        ("import_list", ""),
        ("import", str(job.id)),
    ]
    assert {(log.viewer_id, log.viewer_username, log.target_user_id) for log in logs} == {
        (auditor.id, "auditor", other_user.id)
    }
    assert logs[0].path == "/memories/?user=bob"


def test_staff_reads_redacted_text_and_cannot_edit(client, auditor, bob_data):
    fact, session = bob_data["fact"], bob_data["session"]

    session_html = client.get(f"/memories/sessions/{session.id}/").content.decode()
    detail_html = client.get(f"/memories/{fact.id}/").content.decode()

    assert "555 0100" not in session_html  # the transcript shows the redacted copy
    assert "Only its owner can edit or delete it." in detail_html
    assert "/edit/" not in detail_html
    assert client.post(f"/memories/{fact.id}/edit/", {"content": "changed"}).status_code == 404
    assert client.post(f"/memories/{fact.id}/delete/").status_code == 404
    fact.refresh_from_db()
    assert fact.content == "Bob keeps bees in Lyon."


def test_own_pages_are_not_logged(client, auditor):
    store_memory(auditor, "The auditor likes audits.", embed=False)
    client.get("/memories/")
    client.get("/memories/", {"user": "auditor"})
    assert not AccessLog.objects.exists()


def test_unknown_user_is_not_found(client, auditor):
    assert client.get("/memories/", {"user": "nobody"}).status_code == 404


def test_access_log_admin_lists_views_and_is_read_only(client, auditor, bob_data):
    from django.contrib.auth import get_user_model

    client.get("/memories/", {"user": "bob"})
    root = get_user_model().objects.create_superuser(username="root", password="pass-word-123")
    client.force_login(root)

    listing = client.get("/admin/privacy_app/accesslog/", {"q": "auditor"})

    assert listing.status_code == 200
    assert "/memories/?user=bob" in listing.content.decode()
    assert client.get("/admin/privacy_app/accesslog/add/").status_code == 403
