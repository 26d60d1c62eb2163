"""Staff see which session each chat-app conversation writes to, and cannot edit the rows."""

from __future__ import annotations

import pytest

from gateway_app.models import GatewayConversation
from gateway_app.services.conversations import conversation_turn_log

pytestmark = pytest.mark.django_db


def test_conversations_are_listed_with_their_session_and_read_only(staff_client, user):
    logged = conversation_turn_log(
        user=user,
        messages=[
            {"role": "user", "content": "Plan my week."},
            {"role": "assistant", "content": "Monday: gym."},
            {"role": "user", "content": "Add yoga."},
        ],
    )
    conversation = GatewayConversation.objects.get(user=user)

    page = staff_client.get(f"/admin/gateway_app/gatewayconversation/?q={user.username}")
    html = page.content.decode()
    assert page.status_code == 200
    assert conversation.key[:12] in html and str(logged.session.id) in html
    other = staff_client.get("/admin/gateway_app/gatewayconversation/?q=nobody").content
    assert conversation.key[:12] not in other.decode()

    detail = staff_client.get(f"/admin/gateway_app/gatewayconversation/{conversation.id}/change/")
    assert detail.status_code == 200 and ">3<" in detail.content.decode()  # messages stored
    assert staff_client.get("/admin/gateway_app/gatewayconversation/add/").status_code == 403
    staff_client.post(
        f"/admin/gateway_app/gatewayconversation/{conversation.id}/delete/", {"post": "yes"}
    )
    assert GatewayConversation.objects.filter(id=conversation.id).exists()
