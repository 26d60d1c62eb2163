"""The settings page: staff only, the same records as the admin, validation messages."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from context_app.models import ContextSettings, OptOut, TopicOverride
from tests.factories import make_user, open_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    root = get_user_model().objects.create_superuser(username="root", password="pass-word-123")
    client.force_login(root)
    return client


def settings_payload(**changes) -> dict:
    """Every field of the settings form as the page posts it (checkboxes only when on)."""
    row = ContextSettings.load()
    data = {}
    for field in row._meta.concrete_fields:
        if field.name in ("id", "updated_at"):
            continue
        value = getattr(row, field.name)
        if isinstance(value, bool):
            if value:
                data[field.name] = "on"
        else:
            data[field.name] = str(value)
    for name, value in changes.items():
        if value is False:
            data.pop(name, None)
        elif value is True:
            data[name] = "on"
        else:
            data[name] = str(value)
    return data


def test_anonymous_goes_to_login(client):
    response = client.get("/settings/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_non_staff_is_refused(client, user):
    client.force_login(user)
    response = client.get("/settings/")
    assert response.status_code == 403
    assert "Settings are for staff only." in response.content.decode()
    assert client.post("/settings/", settings_payload(verbose_logging=True)).status_code == 403
    assert ContextSettings.load().verbose_logging is False


def test_staff_sees_every_tunable_with_labels(admin_client):
    html = admin_client.get("/settings/").content.decode()
    assert '<label class="switch" for="id_verbose_logging">' in html
    assert '<label for="id_total_cap_chars">' in html
    assert "Opt-out list" in html and "Topic overrides" in html


def test_toggle_verbose_logging(admin_client):
    response = admin_client.post("/settings/", settings_payload(verbose_logging=True), follow=True)
    assert ContextSettings.load().verbose_logging is True
    assert "Settings saved." in response.content.decode()

    admin_client.post("/settings/", settings_payload(verbose_logging=False))
    assert ContextSettings.load().verbose_logging is False


def test_out_of_range_values_are_explained_and_nothing_is_saved(admin_client):
    response = admin_client.post(
        "/settings/", settings_payload(total_cap_chars=50, verbose_logging=True)
    )
    html = response.content.decode()
    assert response.status_code == 400
    assert "Ensure this value is greater than or equal to 200." in html
    assert 'aria-invalid="true"' in html
    assert ContextSettings.load().verbose_logging is False


def test_a_segment_cap_above_the_total_is_refused(admin_client):
    response = admin_client.post(
        "/settings/", settings_payload(total_cap_chars=1000, memories_cap_chars=1500)
    )
    assert response.status_code == 400
    assert "Cannot be larger than the total cap (1000 characters)." in response.content.decode()
    assert ContextSettings.load().memories_cap_chars == 1200


def test_staff_without_change_permission_can_read_but_not_save(client):
    staff = make_user("viewer", staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_contextsettings"))
    client.force_login(staff)
    html = client.get("/settings/").content.decode()
    assert "You can read these settings but not change them." in html
    assert client.post("/settings/", settings_payload(verbose_logging=True)).status_code == 403
    assert ContextSettings.load().verbose_logging is False


def test_opt_out_add_validate_and_remove(admin_client, user):
    unknown = admin_client.post("/settings/opt-outs/", {"opt_out-username": "ghost"})
    assert unknown.status_code == 400
    assert "No user called “ghost”." in unknown.content.decode()

    admin_client.post(
        "/settings/opt-outs/", {"opt_out-username": "alice", "opt_out-reason": "asked by email"}
    )
    opt_out = OptOut.objects.get(user=user)
    assert opt_out.reason == "asked by email"

    again = admin_client.post("/settings/opt-outs/", {"opt_out-username": "alice"})
    assert "alice is already opted out." in again.content.decode()

    admin_client.post(f"/settings/opt-outs/{opt_out.id}/remove/")
    assert not OptOut.objects.exists()


def test_topic_override_validation(admin_client, user, other_user):
    bobs_session = open_session(other_user)

    wrong_owner = admin_client.post(
        "/settings/topic-overrides/",
        {
            "override-username": "alice",
            "override-session_id": str(bobs_session.id),
            "override-title": "Travel",
        },
    )
    assert "The session belongs to another user." in wrong_owner.content.decode()
    not_a_uuid = admin_client.post(
        "/settings/topic-overrides/",
        {"override-username": "alice", "override-session_id": "abc", "override-title": "Travel"},
    )
    assert "Not a session id" in not_a_uuid.content.decode()
    no_letters = admin_client.post(
        "/settings/topic-overrides/", {"override-username": "alice", "override-title": "!!!"}
    )
    assert "The title needs at least one letter or digit." in no_letters.content.decode()
    assert not TopicOverride.objects.exists()

    admin_client.post(
        "/settings/topic-overrides/",
        {"override-username": "alice", "override-title": "Japan travel"},
    )
    override = TopicOverride.objects.get(user=user, session=None)
    assert override.key == "japan-travel"

    duplicate = admin_client.post(
        "/settings/topic-overrides/", {"override-username": "alice", "override-title": "Cooking"}
    )
    assert "There is already a topic override for all of alice" in duplicate.content.decode()

    admin_client.post(f"/settings/topic-overrides/{override.id}/remove/")
    assert not TopicOverride.objects.exists()
