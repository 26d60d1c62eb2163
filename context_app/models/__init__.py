"""context_app models, one module per concept; import them all here for Django."""

from context_app.models.context import (  # noqa: F401
    ContextSettings,
    InjectionLog,
    OptOut,
    TopicOverride,
    TopicSummary,
)
from context_app.models.rollups import SessionConsolidation, UserChatSummary  # noqa: F401
from context_app.models.session_summaries import SessionSummary, SessionTag  # noqa: F401
