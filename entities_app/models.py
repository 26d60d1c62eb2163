"""The entity graph over the rag_store: named things a user talks about, where each is
mentioned, and typed links between items and entities.

Its own app above the rag_store (ingestion_app): every mention points at a MemoryItem and is
written when the item is, on the store's `memory_items_written` signal, so the store never
imports this app. retrieval and context_app only read it (the entity leg, "Known entities" in
the context pack). Plain PostgreSQL tables, named as when ingestion_app held them: no graph
database.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.utils import timezone
from pgvector.django import VectorField

from mnemo_text.entity_tokens import entity_prompt_line


class Entity(models.Model):
    class Type(models.TextChoices):
        PERSON = "person"
        PLACE = "place"
        ORGANIZATION = "organization"
        PROJECT = "project"
        PET = "pet"
        PRODUCT = "product"
        EVENT = "event"
        CONCEPT = "concept"
        OTHER = "other"

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="entities"
    )
    app_id = models.CharField(max_length=64, default="default")
    name = models.CharField(max_length=200)
    # mnemo_text.entities.normalize_entity_name(name): the key mentions resolve on.
    normalized_name = models.CharField(max_length=200)
    # Other normalized names that resolve here ("ines garcia", "sis"), each unique per scope
    # in practice: resolution looks a name up in names and aliases alike.
    aliases = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    type = models.CharField(max_length=16, choices=Type.choices, default=Type.OTHER)
    description = models.TextField(blank=True, default="")
    # Earlier descriptions, oldest first: [{"description", "replaced_at", "source"}].
    description_history = models.JSONField(default=list, blank=True)
    mention_count = models.PositiveIntegerField(default=0)
    first_mentioned_at = models.DateTimeField(null=True, blank=True)
    last_mentioned_at = models.DateTimeField(null=True, blank=True)
    # Embedding of "name: description"; resolution compares a new name with it (threshold
    # MNEMO_ENTITY_SIMILARITY). Null until embedded.
    embedding = VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "entities"
        ordering = ["-mention_count", "name"]
        verbose_name_plural = "entities"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "app_id", "normalized_name"], name="entity_unique_name"
            )
        ]
        indexes = [
            models.Index(fields=["user", "app_id", "-mention_count"], name="entity_user_mentions"),
            models.Index(fields=["user", "app_id", "type"], name="entity_user_type"),
            GinIndex(fields=["aliases"], name="entity_aliases"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.type})"

    def prompt_line(self) -> str:
        """The line the context pack and search results show: "[ENTITY: pet] Max (my dog): a
        dog"."""
        return entity_prompt_line(self.type, self.name, self.aliases, self.description or "")


class EntityMention(models.Model):
    class Kind(models.TextChoices):
        # Named in the item's text, at start..end of content.
        TEXT = "text"
        # The item's speaker (a message's author): no offsets.
        SPEAKER = "speaker"

    id = models.BigAutoField(primary_key=True)
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="mentions")
    memory = models.ForeignKey(
        "ingestion_app.MemoryItem", on_delete=models.CASCADE, related_name="entity_mentions"
    )
    # Denormalized from the item so scoped reads never join the rag_store first.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="entity_mentions"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.TEXT)
    sentence = models.TextField(blank=True, default="")
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "entity_mentions"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["entity", "memory", "kind"], name="entity_mention_unique"
            )
        ]
        indexes = [
            # The newest mentions of an entity: the entity leg and the previous-item link.
            models.Index(fields=["entity", "-memory"], name="mention_entity_recent"),
            models.Index(fields=["memory"], name="mention_memory"),
        ]

    def __str__(self) -> str:
        return f"{self.entity_id} in #{self.memory_id}"


class CrossReference(models.Model):
    class NodeType(models.TextChoices):
        ITEM = "item"
        ENTITY = "entity"

    class Relationship(models.TextChoices):
        MENTIONS_SAME_ENTITY = "mentions_same_entity"
        UPDATES = "updates"
        FOLLOWS_UP = "follows_up"
        RELATED = "related"

    id = models.BigAutoField(primary_key=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="cross_references"
    )
    source_type = models.CharField(max_length=8, choices=NodeType.choices)
    source_id = models.BigIntegerField()
    target_type = models.CharField(max_length=8, choices=NodeType.choices)
    target_id = models.BigIntegerField()
    relationship = models.CharField(max_length=24, choices=Relationship.choices)
    reason = models.TextField(blank=True, default="")
    # How often the link was seen (two entities named together in N items -> N), capped 1000.
    strength = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "cross_references"
        ordering = ["-strength", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=[
                    "user",
                    "source_type",
                    "source_id",
                    "target_type",
                    "target_id",
                    "relationship",
                ],
                name="cross_reference_unique",
            )
        ]
        indexes = [
            models.Index(fields=["user", "source_type", "source_id"], name="xref_source"),
            models.Index(fields=["user", "target_type", "target_id"], name="xref_target"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.source_type}:{self.source_id} {self.relationship} "
            f"{self.target_type}:{self.target_id}"
        )
