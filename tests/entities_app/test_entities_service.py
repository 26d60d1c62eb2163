"""Entities from stored memories: resolution, mentions, cross-references, buckets, merges."""

from __future__ import annotations

import pytest

from entities_app.models import CrossReference, Entity, EntityMention
from entities_app.services.entities import entities_extract
from entities_app.services.entity_edits import entity_delete, entity_merge, entity_update
from ingestion_app.models import MemoryItem
from memory_site.errors import InvalidInput, NotFound

pytestmark = pytest.mark.django_db


def item(user, content: str, **metadata) -> MemoryItem:
    return MemoryItem.objects.create(
        user=user, source=MemoryItem.Source.CHUNK, content=content, metadata=metadata
    )


def entity(user, key: str) -> Entity:
    return Entity.objects.get(user=user, normalized_name=key)


def test_aliases_merge_into_one_entity_with_mentions_and_description(user):
    first = item(user, "My sister Ines is getting married in Lisbon.")
    second = item(user, "ines sent the dress photos. Ines Garcia is so happy.")
    third = item(user, "Ines called about the wedding.")

    entities_extract(items=[first])
    entities_extract(items=[second, third])

    ines = entity(user, "ines")
    assert ines.type == "person"
    assert ines.description == "the user's sister"
    assert "ines garcia" in ines.aliases and "my sister" in ines.aliases
    assert ines.mention_count == 3
    assert set(ines.mentions.values_list("memory_id", flat=True)) == {
        first.id,
        second.id,
        third.id,
    }
    mention = ines.mentions.get(memory=first)
    assert first.content[mention.start : mention.end] == "Ines"
    assert mention.sentence == "My sister Ines is getting married in Lisbon."
    assert entity(user, "lisbon").type == "place"
    assert not Entity.objects.filter(normalized_name="ines garcia").exists()


def test_extraction_is_idempotent_and_links_items_and_entities(user):
    first = item(user, "My dog Max loves the beach in Porto.")
    second = item(user, "Max ate my sandwich.")
    entities_extract(items=[first, second])
    entities_extract(items=[first, second])

    max_dog = entity(user, "max")
    assert max_dog.type == "pet"
    assert max_dog.mention_count == 2
    assert EntityMention.objects.filter(entity=max_dog).count() == 2
    same = CrossReference.objects.get(relationship="mentions_same_entity")
    assert (same.source_id, same.target_id) == (second.id, first.id)
    assert same.reason == "both mention Max"
    related = CrossReference.objects.get(relationship="related")
    assert {related.source_id, related.target_id} == {max_dog.id, entity(user, "porto").id}
    assert related.strength == 1


def test_speaker_and_description_history(user):
    first = item(
        user,
        "Caroline: My friend Mel is a painter.",
        granularity="message",
        speaker="Caroline",
        role="user",
    )
    second = item(
        user,
        "Caroline: Mel, my coworker, joined the team.",
        granularity="message",
        speaker="Caroline",
        role="user",
    )
    entities_extract(items=[first])
    entities_extract(items=[second])

    caroline = entity(user, "caroline")
    assert caroline.type == "person"
    assert caroline.mentions.get(memory=first).kind == "speaker"
    mel = entity(user, "mel")
    assert mel.description == "Caroline's coworker"
    assert [entry["description"] for entry in mel.description_history] == ["Caroline's friend"]
    assert "caroline friend" in mel.aliases


def test_entities_never_cross_users(user, other_user):
    entities_extract(items=[item(user, "My sister Ines lives in Porto.")])
    entities_extract(items=[item(other_user, "Ines is my neighbour in Porto.")])

    assert Entity.objects.filter(normalized_name="ines").count() == 2
    assert entity(other_user, "ines").mention_count == 1
    with pytest.raises(NotFound):
        entity_merge(
            user=other_user,
            target_id=entity(other_user, "ines").id,
            source_ids=[entity(user, "ines").id],
        )


def test_buckets_follow_the_text(user, settings):
    personal = item(user, "My sister Ines is getting married and my dog is sick.")
    creator = item(user, "I fixed the bug in the API and deployed the server.")
    entities_extract(items=[personal, creator])
    personal.refresh_from_db()
    creator.refresh_from_db()
    assert (personal.bucket, creator.bucket) == ("PERSONAL_LIFE", "CREATOR")

    settings.MNEMO_BUCKETS = ["PERSONAL_LIFE", "MISC"]
    other = item(user, "Deployed the server again.")
    entities_extract(items=[other])
    other.refresh_from_db()
    assert other.bucket == "MISC"


def test_merge_moves_mentions_aliases_and_links(user):
    entities_extract(items=[item(user, "Dr. Alvarez said to rest. Porto was rainy.")])
    entities_extract(items=[item(user, "I saw Alvie again, she is kind.")])
    target, source = entity(user, "dr alvarez"), entity(user, "alvie")

    merged = entity_merge(user=user, target_id=target.id, source_ids=[source.id])

    assert merged.mention_count == 2
    assert "alvie" in merged.aliases
    assert not Entity.objects.filter(id=source.id).exists()
    with pytest.raises(InvalidInput):
        entity_merge(user=user, target_id=target.id, source_ids=[target.id])


def test_update_keeps_history_and_delete_removes_links(user):
    entities_extract(items=[item(user, "My friend Priya moved to Oslo.")])
    priya = entity(user, "priya")

    updated = entity_update(
        user=user, entity_id=priya.id, description="Runs a bakery", type="person"
    )
    assert updated.description == "Runs a bakery"
    assert updated.description_history[-1]["description"] == "the user's friend"
    with pytest.raises(InvalidInput):
        entity_update(user=user, entity_id=priya.id, type="alien")

    entity_delete(user=user, entity_id=priya.id)
    assert not EntityMention.objects.filter(entity_id=priya.id).exists()
    assert not CrossReference.objects.filter(source_type="entity", source_id=priya.id).exists()


def test_a_speaker_addressed_after_a_relation_stays_a_person(user):
    # "tough times with my business, Jon." addresses Jon; it does not make him the business.
    jon_says = item(
        user, "Jon: I lost my job last week.", granularity="message", speaker="Jon", role="user"
    )
    gina_says = item(
        user,
        "Gina: I've had some tough times with my business, Jon.",
        granularity="message",
        speaker="Gina",
        role="user",
    )
    entities_extract(items=[jon_says])
    entities_extract(items=[gina_says])

    jon = entity(user, "jon")
    assert (jon.type, jon.description) == ("person", "")
    assert not [alias for alias in jon.aliases if "business" in alias]


def test_a_first_name_resolves_to_a_full_name_with_a_title(user):
    """ "Dr. Amy Chen" then "Amy": one person, in one batch or across batches."""
    together = item(user, "My old manager, Dr. Amy Chen, wrote me a reference. Amy is the best.")
    entities_extract(items=[together])
    later = item(user, "Lunch with Amy on Friday.")
    entities_extract(items=[later])

    people = Entity.objects.filter(user=user, type="person")
    assert [person.name for person in people] == ["Dr. Amy Chen"]
    assert "amy" in people[0].aliases
    assert set(people[0].mentions.values_list("memory_id", flat=True)) == {together.id, later.id}


def test_a_nickname_said_with_the_name_is_an_alias_of_the_same_person(user):
    first = item(user, "Elizabeth from work (everyone calls her Liz) is leaving in May.")
    entities_extract(items=[first])
    later = item(user, "Liz sent me her new address.")
    entities_extract(items=[later])

    people = Entity.objects.filter(user=user, type="person")
    assert [person.normalized_name for person in people] == ["elizabeth"]
    assert "liz" in people[0].aliases
    assert set(people[0].mentions.values_list("memory_id", flat=True)) == {first.id, later.id}


def test_a_product_said_with_and_without_its_model_number_is_one_entity(user):
    entities_extract(items=[item(user, "I finally ordered an iPhone 15 yesterday.")])
    entities_extract(items=[item(user, "The iPhone arrived with a cracked screen.")])

    products = Entity.objects.filter(user=user, type="product")
    assert [product.name for product in products] == ["iPhone 15"]
    assert "iphone" in products[0].aliases
    assert products[0].mention_count == 2
