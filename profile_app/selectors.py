"""Reads of the user profile: the entries a user sees, their history, and the profile's
segment of a context pack."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import QuerySet

from memory_site.errors import NotFound
from profile_app.models import ProfileEntry

# The order a pack and a page show the kinds in: what to do, what the user likes, who they are.
KIND_ORDER = (
    ProfileEntry.Kind.INSTRUCTION,
    ProfileEntry.Kind.PREFERENCE,
    ProfileEntry.Kind.FACT,
)
# Short: the pack's preamble already says to follow the profile; every heading character is
# one the memories below do not get.
KIND_HEADINGS = {
    ProfileEntry.Kind.INSTRUCTION: "Standing instructions:",
    ProfileEntry.Kind.PREFERENCE: "Preferences:",
    ProfileEntry.Kind.FACT: "About the user:",
}
# Entries of one kind a pack reads at most (newest first); the cap usually stops sooner.
PACK_MAX_PER_KIND = 20
# The kinds an entry may have, as (value, label) pairs, for forms of other apps.
PROFILE_KIND_CHOICES = ProfileEntry.Kind.choices


def profile_entry_is_active(entry: ProfileEntry) -> bool:
    """Whether the entry is in force (not superseded by a newer one, not withdrawn)."""
    return entry.status == ProfileEntry.Status.ACTIVE


def profile_entries(*, user, app_id: str, include_history: bool = False) -> QuerySet:
    """The user's entries in one app: active ones, or with `include_history` every version."""
    entries = ProfileEntry.objects.filter(user=user, app_id=app_id)
    if not include_history:
        entries = entries.filter(status=ProfileEntry.Status.ACTIVE)
    return entries.order_by("kind", "-stated_at", "-id")


def profile_entry_get_for_user(*, user, entry_id: int) -> ProfileEntry:
    """The user's own entry; another user's or a missing one is a 404."""
    entry = ProfileEntry.objects.filter(id=entry_id, user=user).first()
    if entry is None:
        raise NotFound(
            f"No profile entry {entry_id}.", code="profile_entry_not_found", field="entry_id"
        )
    return entry


def profile_entry_history(*, entry: ProfileEntry) -> list[ProfileEntry]:
    """The versions an entry replaced, oldest first, then the entry itself."""
    versions = [entry]
    frontier = [entry.id]
    seen = {entry.id}
    while frontier:
        older = list(
            ProfileEntry.objects.filter(superseded_by_id__in=frontier).exclude(id__in=seen)
        )
        versions.extend(older)
        frontier = [version.id for version in older]
        seen.update(frontier)
    return sorted(versions, key=lambda version: (version.stated_at, version.id))


KIND_GROUPS = {
    ProfileEntry.Kind.INSTRUCTION: "instructions",
    ProfileEntry.Kind.PREFERENCE: "preferences",
    ProfileEntry.Kind.FACT: "facts",
}


def _iso(moment) -> str | None:
    return moment.isoformat() if moment else None


def profile_entry_as_dict(entry: ProfileEntry) -> dict:
    """An entry as the API, MCP and the export show it."""
    return {
        "id": entry.id,
        "kind": entry.kind,
        "text": entry.text,
        "slot": entry.slot,
        "status": entry.status,
        "origin": entry.origin,
        "app_id": entry.app_id,
        "source_message_id": entry.source_message_id,
        "source_memory_id": entry.source_memory_id,
        "source_message_ids": list(entry.source_message_ids or []),
        "stated_at": _iso(entry.stated_at),
        "superseded_by": entry.superseded_by_id,
        "superseded_at": _iso(entry.superseded_at),
        "created_at": _iso(entry.created_at),
        "updated_at": _iso(entry.updated_at),
    }


def profile_as_dict(*, user, app_id: str, include_history: bool = False) -> dict:
    """`{app_id, instructions, preferences, facts[, history]}`: the active entries of each
    kind newest first; with `include_history` the replaced and withdrawn ones too."""
    entries = list(profile_entries(user=user, app_id=app_id, include_history=include_history))
    active = [entry for entry in entries if entry.status == ProfileEntry.Status.ACTIVE]
    body: dict = {"app_id": app_id}
    for kind, group in KIND_GROUPS.items():
        body[group] = [profile_entry_as_dict(e) for e in active if e.kind == kind]
    if include_history:
        body["history"] = [
            profile_entry_as_dict(e) for e in entries if e.status != ProfileEntry.Status.ACTIVE
        ]
    return body


@dataclass
class ProfilePack:
    """The profile's segment text and the entries it carries (for the injection log); `lines`
    are the text's lines per entry (a kind's heading joined to its first entry) with the
    entry, for benchmarks that score what a pack carries."""

    text: str = ""
    lines: list[tuple[str, ProfileEntry]] = field(default_factory=list)

    @property
    def entry_ids(self) -> list[int]:
        return [entry.id for _, entry in self.lines]


def _line(entry: ProfileEntry) -> str:
    return f"- {entry.text} ({entry.stated_at:%Y-%m-%d})"


def profile_for_pack(*, user_id: int, app_id: str, cap_chars: int) -> ProfilePack:
    """The profile as a pack shows it, within `cap_chars`: instructions, then preferences,
    then facts, newest first in each; an entry that does not fit is left out whole (a shorter
    one after it may still fit). One query."""
    if cap_chars <= 0:
        return ProfilePack()
    rows = list(
        ProfileEntry.objects.filter(
            user_id=user_id, app_id=app_id, status=ProfileEntry.Status.ACTIVE
        )
        .only("id", "kind", "text", "stated_at", "source_message_ids", "source_memory_id")
        .order_by("-stated_at", "-id")
    )
    pack = ProfilePack()
    used = 0
    for kind in KIND_ORDER:
        entries = [row for row in rows if row.kind == kind][:PACK_MAX_PER_KIND]
        heading = KIND_HEADINGS[kind]
        first = True
        for entry in entries:
            line = _line(entry) if not first else f"{heading}\n{_line(entry)}"
            cost = len(line) + (1 if pack.lines else 0)
            if used + cost > cap_chars:
                continue
            pack.lines.append((line, entry))
            used += cost
            first = False
    pack.text = "\n".join(line for line, _ in pack.lines)
    return pack
