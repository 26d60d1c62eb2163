"""Forms of the staff pages: they validate and say what is wrong; writes go through services
(memories, imports) or are the same model saves the admin makes (context settings)."""

from __future__ import annotations

import uuid

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from context_app.models import ContextSettings, OptOut, TopicOverride
from retrieval.search import SOURCES
from sessions_app.models import ChatSession

MAX_TOPICS = 20


class DateInput(forms.DateInput):
    input_type = "date"

    def __init__(self, **kwargs):
        super().__init__(format="%Y-%m-%d", **kwargs)


class MemorySearchForm(forms.Form):
    q = forms.CharField(
        label="Search memories",
        required=False,
        max_length=500,
        widget=forms.TextInput(
            attrs={
                "type": "search",
                "placeholder": "What do you remember about…",
                "autocomplete": "off",
            }
        ),
    )
    source = forms.MultipleChoiceField(
        label="Source",
        required=False,
        choices=[(s, s.capitalize()) for s in SOURCES],
        widget=forms.CheckboxSelectMultiple,
    )
    project = forms.CharField(label="Project", required=False, max_length=128)
    app = forms.CharField(label="App", required=False, max_length=64)
    topic = forms.CharField(label="Topic", required=False, max_length=64)
    since = forms.DateField(label="From", required=False, widget=DateInput())
    until = forms.DateField(label="To", required=False, widget=DateInput())

    def clean(self):
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            self.add_error("until", "The end date must be on or after the start date.")
        return data


class MemoryEditForm(forms.Form):
    content = forms.CharField(
        label="Text",
        max_length=20_000,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 5}),
        error_messages={"required": "The memory needs some text."},
    )
    topics = forms.CharField(
        label="Topics",
        required=False,
        max_length=2000,
        help_text="Comma-separated, at most 20.",
    )
    project_id = forms.CharField(label="Project", required=False, max_length=128)
    reason = forms.CharField(
        label="Why the change (kept in the history)", required=False, max_length=500
    )

    def clean_topics(self) -> list[str]:
        topics = [t.strip() for t in self.cleaned_data["topics"].split(",") if t.strip()]
        if len(topics) > MAX_TOPICS:
            raise ValidationError(f"At most {MAX_TOPICS} topics.")
        too_long = [t for t in topics if len(t) > 64]
        if too_long:
            raise ValidationError(f"Topics are at most 64 characters: “{too_long[0][:70]}”.")
        return list(dict.fromkeys(topics))


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    widget = MultipleFileInput

    def clean(self, data, initial=None):
        single = super().clean
        if not data:
            if self.required:
                raise ValidationError(self.error_messages["required"], code="required")
            return []
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data]
        return [single(data, initial)]


class ImportUploadForm(forms.Form):
    files = MultipleFileField(
        label="Chat exports",
        help_text="ChatGPT, Claude, Gemini or Open WebUI exports (JSON, HTML, Markdown) or zip "
        "archives of them. Select several files at once if you like.",
        error_messages={"required": "Choose at least one file to import."},
    )
    project_id = forms.CharField(label="Project (optional)", required=False, max_length=128)


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
        session = ChatSession.objects.filter(id=session_id).first()
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
