"""Fill every table that holds user-owned rows, generically, so privacy tests cover models
added later by any app: each owned model gets rows whose text columns carry a marker string."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.contrib.postgres.fields import ArrayField
from django.db import connection, models, transaction
from django.utils import timezone
from pgvector.django import VectorField

from ingestion_app.models import FactHistory, MemoryItem
from privacy_app.services.user_data import user_owned_models
from sessions_app.services.usage import usage_record
from tests.factories import add_message, open_session
from webhooks_app.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint


def _value(field: models.Field, *, user, marker: str, made: dict):
    if field.is_relation:
        target = field.related_model
        if target is type(user):
            return user
        if target in made:
            return made[target]
        # A shared row (content type, group, permission): any existing one will do.
        return target._base_manager.order_by("pk").first()
    if field.choices:
        return field.choices[0][0]
    if isinstance(field, VectorField):
        return [1.0] + [0.0] * (settings.EMBEDDING_DIMENSIONS - 1)
    if isinstance(field, ArrayField):
        return []
    if isinstance(field, models.JSONField):
        return {"note": f"{marker} json"}
    if isinstance(field, models.GenericIPAddressField):
        return "10.0.0.1"
    if isinstance(field, (models.CharField, models.TextField)):
        text = f"{marker} {field.name}"
        return text[: field.max_length] if field.max_length else text
    if isinstance(field, models.BooleanField):
        return False
    if isinstance(field, (models.IntegerField, models.BigIntegerField)):
        return 1
    if isinstance(field, models.FloatField):
        return 0.5
    if isinstance(field, models.DecimalField):
        return Decimal("0.01")
    if isinstance(field, models.DateTimeField):
        return timezone.now()
    if isinstance(field, models.DateField):
        return dt.date.today()
    if isinstance(field, models.UUIDField):
        return uuid.uuid4()
    if isinstance(field, models.BinaryField):
        return marker.encode()
    return None


def _generic_row(model, *, user, marker: str, made: dict):
    values = {}
    for field in model._meta.concrete_fields:
        if getattr(field, "generated", False) or isinstance(field, models.AutoField):
            continue
        if field.primary_key and not field.is_relation and field.has_default():
            continue
        textual = isinstance(field, (models.CharField, models.TextField)) and not field.choices
        if field.has_default() and not textual and not field.is_relation:
            continue
        if field.null and field.is_relation and field.related_model is not type(user):
            continue
        value = _value(field, user=user, marker=marker, made=made)
        if value is None and not field.null:
            return None
        values[field.name] = value
    with transaction.atomic():
        return model._base_manager.create(**values)


def fill_every_owned_table(user, *, marker: str) -> dict[str, int]:
    """Realistic rows through the services, then a generic row for every other owned model.

    Returns the number of the user's rows per owned model label; raises when a model could not
    be filled, naming it, so a new model nobody can fill is noticed.
    """
    Group.objects.get_or_create(name="privacy-test-group")
    user.groups.add(Group.objects.get(name="privacy-test-group"))
    user.user_permissions.add(Permission.objects.order_by("pk").first())
    session = open_session(user, title=f"{marker} session")
    message = add_message(
        session, "user", f"{marker}: reach me at {marker}@example.com", run_hooks=False
    )
    add_message(session, "assistant", f"Noted, {marker}.", run_hooks=False)
    memory = MemoryItem.objects.create(
        user=user,
        chat_session=session,
        source=MemoryItem.Source.FACT,
        content=f"{marker} likes hiking",
        embedding=[0.0, 1.0] + [0.0] * (settings.EMBEDDING_DIMENSIONS - 2),
        source_message_ids=[message.id],
    )
    FactHistory.objects.create(memory=memory, user=user, event="ADD", new_content=memory.content)
    MemoryItem.objects.create(
        user=user,
        chat_session=session,
        source=MemoryItem.Source.CHUNK,
        content=f"{marker} chunk",
        raw_content=f"{marker} raw original",
        chunk_id=f"chunk-{marker}",
        embedding=[1.0] + [0.0] * (settings.EMBEDDING_DIMENSIONS - 1),
    )
    usage_record(user=user, session=session, model="gpt-4o-mini", tokens_in=10, tokens_out=5)
    endpoint = WebhookEndpoint.objects.create(
        user=user, url=f"https://{marker}.example.com/hooks", secret=f"whsec_{marker}"
    )
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, event="memory.created", body=f'{{"data": "{marker}"}}'
    )
    WebhookAttempt.objects.create(delivery=delivery, status_code=200, response_snippet=marker)

    owned = user_owned_models()
    made = {type(user): user, type(session): session, type(message): message, MemoryItem: memory}
    pending = [o.model for o in owned if o.direct and not o.rows_of(user.pk).exists()]
    errors: dict[str, str] = {}
    for _ in range(len(pending) + 1):  # dependency order: retry until nothing changes
        progress = False
        for model in list(pending):
            try:
                row = _generic_row(model, user=user, marker=marker, made=made)
            except Exception as exc:  # noqa: BLE001 - reported below with the model name
                errors[model._meta.label] = repr(exc)
                continue
            if row is not None:
                made[model] = row
                pending.remove(model)
                errors.pop(model._meta.label, None)
                progress = True
        if not progress:
            break
    if pending:
        raise AssertionError(f"could not fill {[m._meta.label for m in pending]}: {errors}")
    return {o.label: o.rows_of(user.pk).count() for o in owned}


def tables_mentioning(text: str) -> dict[str, int]:
    """Rows of every table in the database whose text form contains `text`."""
    found = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(
                f'SELECT count(*) FROM "{table}" AS r WHERE r::text LIKE %s', [f"%{text}%"]
            )
            count = cursor.fetchone()[0]
            if count:
                found[table] = count
    return found


def user_fk_columns() -> list[tuple[str, str]]:
    """(table, column) of every foreign key to the user table, read from the database itself."""
    user_table = settings.AUTH_USER_MODEL.lower().replace(".", "_")
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT cl.relname, att.attname
            FROM pg_constraint con
            JOIN pg_class cl ON cl.oid = con.conrelid
            JOIN pg_class ref ON ref.oid = con.confrelid
            JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = ANY(con.conkey)
            WHERE con.contype = 'f' AND ref.relname = %s
            """,
            [user_table],
        )
        return sorted(cursor.fetchall())
