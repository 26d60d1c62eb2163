"""Forms of the staff pages: they validate and say what is wrong; writes go through services
(memories, imports) or are the same model saves the admin makes (context settings)."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from retrieval.search import SOURCES

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
