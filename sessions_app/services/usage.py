"""Usage and cost accounting, one row per model call that produced tokens."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings

from memory_site.providers.base import JsonResult
from sessions_app.models import ChatSession, UsageLog


def usage_cost_usd(*, model: str, tokens_in: int, tokens_out: int) -> Decimal:
    """Cost from MNEMO_PRICE_TABLE (USD per 1M tokens); models not in the table cost 0."""
    price_in, price_out = settings.MNEMO_PRICE_TABLE.get(model, [0.0, 0.0])
    cost = (Decimal(str(price_in)) * tokens_in + Decimal(str(price_out)) * tokens_out) / Decimal(
        1_000_000
    )
    return cost.quantize(Decimal("0.000001"))


def usage_record(
    *,
    user,
    model: str,
    tokens_in: int,
    tokens_out: int,
    session: ChatSession | None = None,
    kind: str = "chat",
    app_id: str | None = None,
) -> UsageLog:
    return UsageLog.objects.create(
        user=user,
        session=session,
        app_id=app_id or (session.app_id if session else settings.MNEMO_DEFAULT_APP_ID),
        kind=kind,
        model=model,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=usage_cost_usd(model=model, tokens_in=tokens_in, tokens_out=tokens_out),
    )


def usage_record_json(
    *,
    user,
    result: JsonResult,
    kind: str,
    session: ChatSession | None = None,
    app_id: str | None = None,
) -> UsageLog:
    """The usage row of one structured model call, with the counts its provider returned."""
    return usage_record(
        user=user,
        model=result.model,
        tokens_in=result.tokens_in,
        tokens_out=result.tokens_out,
        session=session,
        kind=kind,
        app_id=app_id,
    )
