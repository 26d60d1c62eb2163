"""The background entity work: the model's extraction (one structured call per item) and the
name-embedding merge of near-duplicate entities."""

from __future__ import annotations

import pytest

from entities_app.models import CrossReference, Entity
from entities_app.services.entities import entities_extract
from ingestion_app.models import MemoryItem

pytestmark = pytest.mark.django_db


def item(user, content: str) -> MemoryItem:
    return MemoryItem.objects.create(user=user, source="fact", content=content)


def test_the_model_refines_types_descriptions_and_relations(
    user, fake_openai_embeddings, settings, django_capture_on_commit_callbacks
):
    settings.MNEMO_ENTITY_TASKS = True
    calls = []

    def model(body):
        calls.append(body["response_format"]["json_schema"]["name"])
        return {
            "entities": [
                {
                    "name": "Nightjar",
                    "type": "project",
                    "description": "the user's board game",
                    "aliases": ["the game"],
                },
                {
                    "name": "Ines",
                    "type": "person",
                    "description": "co-designer, email a@b.co",
                    "aliases": [],
                },
                {"name": "Atlantis", "type": "place", "description": "invented", "aliases": []},
            ],
            "relations": [{"source": "Ines", "target": "Nightjar", "reason": "designs it"}],
        }

    fake_openai_embeddings.json_responder = model
    stored = item(user, "Ines and I are testing Nightjar rules tonight.")
    with django_capture_on_commit_callbacks(execute=True):
        entities_extract(items=[stored])

    assert calls == ["entities"]
    nightjar = Entity.objects.get(user=user, normalized_name="nightjar")
    assert (nightjar.type, nightjar.description) == ("project", "the user's board game")
    assert "game" in nightjar.aliases  # normalized: "the" dropped
    ines = Entity.objects.get(user=user, normalized_name="ines")
    assert "a@b.co" not in ines.description  # the model's text is redacted
    assert not Entity.objects.filter(normalized_name="atlantis").exists()  # not in the text
    link = CrossReference.objects.get(user=user, reason="designs it")
    assert {link.source_id, link.target_id} == {ines.id, nightjar.id}
    assert Entity.objects.get(id=ines.id).embedding is not None


def test_similar_names_merge_by_embedding(
    user, fake_embedder, settings, django_capture_on_commit_callbacks
):
    settings.MNEMO_ENTITY_TASKS = True
    settings.MNEMO_ENTITY_SIMILARITY = 0.99
    with django_capture_on_commit_callbacks(execute=True):
        entities_extract(items=[item(user, "I met Ines Garcia at the market.")])
    with django_capture_on_commit_callbacks(execute=True):
        entities_extract(items=[item(user, "Later Garcia Ines called me.")])
    # The loopback embedder is a bag of words: both orders embed alike, while their
    # normalized names differ, so only the similarity pass can merge them.
    people = list(Entity.objects.filter(user=user, type="person"))
    assert [(entity.name, entity.mention_count) for entity in people] == [("Ines Garcia", 2)]
    assert "garcia ines" in people[0].aliases
