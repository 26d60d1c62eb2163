"""Forms of the context settings that staff edit on the settings page: every tunable of the
pack, the opt-out list and topic overrides, validated by the models' own validators (the same
records the admin edits)."""

from __future__ import annotations

import uuid

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from context_app.models import ContextSettings, OptOut, TopicOverride
from sessions_app.selectors import session_get


class ContextSettingsForm(forms.ModelForm):
    """Every tunable of the context pack, validated by the model's own validators."""

    class Meta:
        model = ContextSettings
        exclude = ["updated_at"]
        labels = {
            "augmentation_enabled": "Add stored context to replies",
            "min_user_turns": "Start at user message number",
            "max_context_share": "Max share of a turn's tokens",
            "reply_reserve_tokens": "Tokens reserved for the reply",
            "total_cap_chars": "Total cap",
            "recent_cap_chars": "[Recent context] cap",
            "history_cap_chars": "[Long-term history] cap",
            "topic_cap_chars": "[Topic] cap",
            "memories_cap_chars": "[Relevant memories] cap",
            "attachment_cap_chars": "Attachment text cap",
            "memory_top_k": "Memories per turn (top K)",
            "memory_min_similarity": "Minimum similarity",
            "memory_recency_half_life_days": "Recency half-life (days)",
            "topic_keyword_turns": "User turns read for keywords",
            "topic_score_threshold": "Topic score threshold",
            "topic_drift_margin": "Drift margin",
            "topic_summary_ttl_hours": "Topic summary lifetime (hours)",
            "refresh_every_turns": "Rebuild every K user turns",
            "refresh_every_minutes": "… or every T minutes",
            "refresh_cooldown_seconds": "Cooldown (seconds)",
            "latency_budget_ms": "Latency budget (ms)",
        }

    FIELDSETS = [
        ("Logging", ["verbose_logging"]),
        (
            "Context pack",
            ["augmentation_enabled", "min_user_turns", "max_context_share", "reply_reserve_tokens"],
        ),
        (
            "Caps (characters)",
            [
                "total_cap_chars",
                "recent_cap_chars",
                "history_cap_chars",
                "topic_cap_chars",
                "memories_cap_chars",
                "attachment_cap_chars",
            ],
        ),
        (
            "Relevant memories",
            ["memory_top_k", "memory_min_similarity", "memory_recency_half_life_days"],
        ),
        (
            "Topics",
            [
                "topic_keyword_turns",
                "topic_score_threshold",
                "topic_drift_margin",
                "topic_summary_ttl_hours",
            ],
        ),
        (
            "Refresh cadence",
            [
                "refresh_every_turns",
                "refresh_every_minutes",
                "refresh_cooldown_seconds",
                "latency_budget_ms",
            ],
        ),
    ]

    def fieldsets(self):
        """(title, bound fields) in page order; fields not listed go in a last group."""
        listed = {name for _, names in self.FIELDSETS for name in names}
        groups = [
            (title, [self[name] for name in names if name in self.fields])
            for title, names in self.FIELDSETS
        ]
        rest = [self[name] for name in self.fields if name not in listed]
        if rest:
            groups.append(("Other", rest))
        return [(title, fields) for title, fields in groups if fields]

    def clean(self):
        data = super().clean()
        total = data.get("total_cap_chars")
        for name in (
            "recent_cap_chars",
            "history_cap_chars",
            "topic_cap_chars",
            "memories_cap_chars",
        ):
            value = data.get(name)
            if total is not None and value is not None and value > total:
                self.add_error(name, f"Cannot be larger than the total cap ({total} characters).")
        return data


def _user_by_username(username: str):
    user = get_user_model().objects.filter(username=username.strip()).first()
    if user is None:
        raise ValidationError(f"No user called “{username.strip()}”.")
    return user


class OptOutForm(forms.Form):
    username = forms.CharField(label="Username", max_length=150)
    reason = forms.CharField(label="Reason (optional)", required=False, max_length=200)

    def clean_username(self):
        user = _user_by_username(self.cleaned_data["username"])
        if OptOut.objects.filter(user=user).exists():
            raise ValidationError(f"{user.get_username()} is already opted out.")
        return user

    def save(self) -> OptOut:
        return OptOut.objects.create(
            user=self.cleaned_data["username"], reason=self.cleaned_data.get("reason", "")
        )


class TopicOverrideForm(forms.Form):
    username = forms.CharField(label="Username", max_length=150)
    session_id = forms.CharField(
        label="Session id (optional)",
        required=False,
        max_length=36,
        help_text="Empty: the topic applies to every session of the user.",
    )
    title = forms.CharField(label="Topic title", max_length=200)
    note = forms.CharField(label="Note (optional)", required=False, max_length=200)

    def __init__(self, *args, created_by=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.created_by = created_by
        self.instance: TopicOverride | None = None

    def clean_username(self):
        return _user_by_username(self.cleaned_data["username"])

    def clean_session_id(self):
        value = self.cleaned_data["session_id"].strip()
        if not value:
            return None
        try:
            session_id = uuid.UUID(value)
        except ValueError:
            raise ValidationError("Not a session id (a UUID like 6f1c1f56-2d7a-…).") from None
        session = session_get(session_id)
        if session is None:
            raise ValidationError("No session with this id.")
        return session

    def clean(self):
        data = super().clean()
        user, title = data.get("username"), data.get("title")
        if user is None or not title or self.errors:
            return data
        session = data.get("session_id")
        override = TopicOverride(
            user=user,
            session=session,
            title=title,
            note=data.get("note", ""),
            created_by=self.created_by,
        )
        try:
            override.full_clean(
                exclude=["key", "created_by"], validate_unique=False, validate_constraints=False
            )
        except ValidationError as exc:
            for name, messages in exc.message_dict.items():
                target = {"user": "username", "session": "session_id"}.get(name, name)
                for message in messages:
                    if target in self.fields:
                        self.add_error(target, message)
                    else:
                        self.add_error(None, message)
            return data
        scope = (
            TopicOverride.objects.filter(session=session)
            if session
            else (TopicOverride.objects.filter(user=user, session__isnull=True))
        )
        if scope.exists():
            where = "this session" if session else f"all of {user.get_username()}'s sessions"
            self.add_error(None, f"There is already a topic override for {where}; remove it first.")
        self.instance = override
        return data

    def save(self) -> TopicOverride:
        self.instance.save()
        return self.instance
