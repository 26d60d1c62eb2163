"""The offline entity extractor: names, types, relations and offsets a user would rely on."""

from __future__ import annotations

import pytest

from mnemo_text.buckets import bucket_classify
from mnemo_text.entities import extract_entities, normalize_entity_name
from mnemo_text.entity_tokens import entity_dates


def names_and_types(text: str, **kwargs) -> list[tuple[str, str]]:
    return [(entity.name, entity.type) for entity in extract_entities(text, **kwargs)]


def names_and_descriptions(text: str) -> list[tuple[str, str]]:
    return [(entity.name, entity.description) for entity in extract_entities(text)]


def names_types_and_descriptions(text: str) -> list[tuple[str, str, str]]:
    return [(entity.name, entity.type, entity.description) for entity in extract_entities(text)]


def test_possessive_relations_give_type_and_description():
    found = extract_entities("My sister Ines adopted a kitten named Pepper.", speaker="Ana")

    assert [(e.name, e.type, e.description) for e in found] == [
        ("Ines", "person", "Ana's sister"),
        ("Pepper", "pet", "kitten"),
    ]
    assert found[0].relation == "sister"


def test_offsets_and_sentence_point_at_the_mention():
    text = "We met at noon. Later Ines flew to Lisbon!"
    found = extract_entities(text)

    assert [text[e.start : e.end] for e in found] == ["Ines", "Lisbon"]
    assert found[1].type == "place"
    assert found[1].sentence == "Later Ines flew to Lisbon!"


def test_sentence_openers_dates_and_placeholders_are_not_entities():
    text = "Yesterday I called [PERSON_NAME] on Monday. Can you remind me in June? Thanks!"
    assert extract_entities(text) == []


def test_an_assistants_opening_word_is_not_a_person():
    # Chat models open replies with these; each was once stored as a person and shown in packs.
    for opener in ("Noted", "Understood", "Absolutely", "Excellent", "Congratulations"):
        assert names_and_types(f"{opener}, your sister Anna lives in Lisbon.") == [
            ("Anna", "person"),
            ("Lisbon", "place"),
        ]
    assert names_and_types("Ned, your brother called.") == [("Ned", "person")]


def test_an_instructions_opening_verb_is_not_a_person():
    # Assistant replies are full of these; a name opening a sentence is followed by its verb.
    reply = "Preheat the oven. Add a pinch of salt. Bleed the radiator. Ask your sister Anna."
    assert names_and_types(reply) == [("Anna", "person")]
    assert names_and_types("Anna lives in Lisbon. Oscar, call me.") == [
        ("Anna", "person"),
        ("Lisbon", "place"),
        ("Oscar", "person"),
    ]


def test_context_types_places_organizations_projects_events():
    assert names_and_types("I have an interview at Brightwave next week.") == [
        ("Brightwave", "organization")
    ]
    assert names_and_types("The Apollo migration slipped again.") == [("Apollo", "project")]
    assert names_and_types("We hiked up Mount Rainier and then drove to Tacoma.") == [
        ("Mount Rainier", "place"),
        ("Tacoma", "place"),
    ]
    assert names_and_types("I'm running the Berlin Marathon at Christmas.") == [
        ("Berlin Marathon", "event"),
        ("Christmas", "event"),
    ]


def test_conjuncts_share_a_type_and_languages_are_concepts():
    assert names_and_types("We drove through Arizona and Nevada.") == [
        ("Arizona", "place"),
        ("Nevada", "place"),
    ]
    assert names_and_types("I'm learning Japanese, not the Thai menu.") == [("Japanese", "concept")]


def test_normalized_names_merge_case_accents_and_possessives():
    assert normalize_entity_name("Tomás") == normalize_entity_name("tomas") == "tomas"
    assert normalize_entity_name("Ines's") == "ines"
    assert normalize_entity_name("The Loose Threads") == "loose threads"


def test_dates_are_found_in_a_sentence():
    assert entity_dates("The wedding is on June 5, 2024, and we leave next week.") == [
        "June 5, 2024",
        "next week",
    ]


def test_bucket_rules():
    assert bucket_classify("My sister is getting married and my dog is sick.") == "PERSONAL_LIFE"
    assert bucket_classify("Fixed the bug in the API and deployed the server.") == "CREATOR"
    assert bucket_classify("The project roadmap has a new milestone.") == "PROJECTS"
    assert bucket_classify("Okay.") == "OTHER"


def test_bucket_cue_words_are_whole_words_whatever_surrounds_them():
    # Cue words count only as whole words of [a-z'-] after lower-casing: not inside a
    # hyphenated or possessive word, and not joined to a letter by ' or -; any other
    # character (digits, accents, CJK, underscores) separates them.
    assert bucket_classify("The ROADMAP, the milestone.") == "PROJECTS"
    assert bucket_classify("re-release of the pre-launch mid-sprint") == "OTHER"
    assert bucket_classify("the project's sprint's") == "OTHER"
    assert bucket_classify("--'release' -launch 'sprint") == "PROJECTS"
    assert bucket_classify("déjà-vu: 日本project2sprint_launch é-release") == "PROJECTS"
    assert bucket_classify("x-'-sprint 'x-launch") == "OTHER"
    # İ lower-cases to "i" plus a combining dot, which separates words.
    assert bucket_classify("Dİet DOG") == "PERSONAL_LIFE"


def test_a_pet_or_baby_introduced_before_its_name_takes_the_relation():
    found = names_types_and_descriptions
    assert found("We got a puppy last week. Her name is Biscuit.") == [
        ("Biscuit", "pet", "the user's puppy")
    ]
    assert found("We adopted a rescue dog and named him Pepper.") == [
        ("Pepper", "pet", "the user's dog")
    ]
    assert found("Our dog's name is Rex.") == [("Rex", "pet", "the user's dog")]
    assert found("My sister's name is Ines.") == [("Ines", "person", "the user's sister")]
    assert found("My sister got a kitten. Its name is Mochi.") == [("Mochi", "pet", "kitten")]
    assert found("We had a baby girl in May! Her name is Ada.") == [
        ("Ada", "person", "the user's baby")
    ]
    # Only an introduced ("a ...") person: "my boss" hired him, he is not the boss.
    assert found("My boss hired someone new. His name is Raj.") == [("Raj", "person", "")]
    assert found("I met a guy at the gym. His name is Omar.") == [("Omar", "person", "")]


def test_a_relation_after_the_name_skips_adjectives_and_reads_is_my():
    found = names_and_descriptions
    assert found("Tom Becker is my oldest friend.") == [("Tom Becker", "the user's friend")]
    assert found("Raj, my old roommate, moved.") == [("Raj", "the user's roommate")]
    assert found("Biscuit is our new puppy.") == [("Biscuit", "the user's puppy")]
    assert found("Lisbon is my favorite city.") == [("Lisbon", "the user's favourite city")]
    assert found("Anna is my sister's friend.") == [("Anna", "")]


def test_a_name_after_the_is_a_place_or_an_organization_not_a_person():
    assert names_and_types("We had dinner at The Golden Fork.") == [("Golden Fork", "place")]
    assert names_and_types("She lives in the Mission district.") == [("Mission", "place")]
    assert names_and_types("I love the Shoreditch area.") == [("Shoreditch", "place")]
    assert names_and_types("We met at Bean There Cafe.") == [("Bean There Cafe", "place")]
    assert names_and_types("I volunteer with the Red Cross.") == [("Red Cross", "organization")]


def test_she_or_his_after_one_named_person_is_that_persons():
    found = names_and_descriptions
    assert found("My friend Anna visited. She has a cat named Olive.") == [
        ("Anna", "the user's friend"),
        ("Olive", "Anna's cat"),
    ]
    assert found("Tom moved to Berlin. His dog Rex loves it.") == [
        ("Tom", ""),
        ("Berlin", ""),
        ("Rex", "Tom's dog"),
    ]
    # Two people, or a pronoun that does not fit the relation: whose is not guessed.
    assert found("Tom met Lea. She has a cat named Olive.")[2] == ("Olive", "cat")
    assert found("My brother Tom called. She has a cat named Olive.")[1] == ("Olive", "cat")
    assert found("She has a cat named Olive.") == [("Olive", "cat")]


def test_is_a_relation_noun_types_and_describes_the_name():
    found = names_types_and_descriptions
    assert found("Waffles is a beagle.") == [("Waffles", "pet", "beagle")]
    assert found("Tom, a friend of mine, came by.") == [("Tom", "person", "the user's friend")]
    # The relation noun inside a compound is not the name's relation.
    assert found("Anna is a dog trainer.") == [("Anna", "person", "")]


def test_sentence_adverbs_and_chat_openers_are_trimmed_but_names_ending_in_ly_are_not():
    assert names_and_types("Luckily Anna came. Tbh work was long. Dinner with Hiroshi!") == [
        ("Anna", "person"),
        ("Hiroshi", "person"),
    ]
    assert names_and_types("Emily called. Kelly and Lily came.") == [
        ("Emily", "person"),
        ("Kelly", "person"),
        ("Lily", "person"),
    ]
    assert names_and_types("I voted for the Labour Party.") == [("Labour Party", "organization")]


def test_common_nouns_and_gerunds_opening_a_sentence_are_not_people():
    # A chat about hobbies and pets used to list "Dogs", "Wedding" and "Pottery" as people.
    for text in (
        "Dogs are always there for us.",
        "Wedding planning is stressful.",
        "Pottery class was amazing yesterday.",
        "Meditation helped me sleep better.",
        "Kids grow up so fast.",
        "Concerts are too loud for me these days.",
        "Aww, that is so sweet!",
        "Super proud of you!",
    ):
        assert names_and_types(text) == [], text


def test_names_opening_a_sentence_stay_names_and_a_common_opener_leaves_the_name():
    assert names_and_types("Tom came over last night.") == [("Tom", "person")]
    assert names_and_types("James has been my best friend since school.") == [("James", "person")]
    assert names_and_types("Irving said the report is late.") == [("Irving", "person")]
    assert names_and_types("Cooking for Marco was fun.") == [("Marco", "person")]
    assert names_and_types("Surfing in Portugal was a dream.") == [("Portugal", "place")]
    assert names_and_types("Anytime Nate, good luck!") == [("Nate", "person")]


def test_a_name_owning_the_place_one_is_at_is_a_person():
    assert names_and_types("Dancing at Kate's party was fun.") == [("Kate", "person")]
    assert names_and_types("We had dinner at Nando's.") == [("Nando", "place")]


def test_a_named_owner_is_written_as_a_name_in_the_description():
    assert names_types_and_descriptions("Sam's mom Eleanor is visiting from Boston.") == [
        ("Sam", "person", ""),
        ("Eleanor", "person", "Sam's mom"),
        ("Boston", "place", ""),
    ]
    assert names_and_descriptions("My mom's friend Linda called.") == [
        ("Linda", "the user's mom's friend")
    ]


def test_a_place_name_with_a_common_first_word_stays_whole_at_a_sentence_start():
    found = names_and_types
    assert found("New York is expensive.") == [("New York", "place")]
    assert found("Los Angeles is sunny. San Diego has great tacos.") == [
        ("Los Angeles", "place"),
        ("San Diego", "place"),
    ]
    assert found("North Carolina was lovely.") == [("North Carolina", "place")]
    assert found("New Year was fun.") == [("New Year", "event")]


def test_a_name_after_an_employer_and_a_comma_is_a_person_with_its_relation():
    found = names_types_and_descriptions
    assert found("My manager at Globex, Dana Reyes, wants a report.") == [
        ("Globex", "organization", ""),
        ("Dana Reyes", "person", "the user's manager"),
    ]
    assert found("My friend from Acme, Tom Becker, called.")[1] == (
        "Tom Becker",
        "person",
        "the user's friend",
    )
    # A comma after an opening phrase is not a list: Dana does not take Globex's type.
    assert found("At Globex, Dana runs the design team.")[1] == ("Dana", "person", "")
    # A real list still shares its type.
    assert names_and_types("We saw Arizona, Utah and Nevada.") == [
        ("Arizona", "place"),
        ("Utah", "place"),
        ("Nevada", "place"),
    ]


def test_to_names_a_destination_but_not_after_talking_giving_or_thanking():
    found = names_and_types
    assert found("Thanks to Paul, I got the job.") == [("Paul", "person")]
    assert found("I gave the book to Maria.") == [("Maria", "person")]
    assert found("We're taking the kids to Disneyland.") == [("Disneyland", "place")]
    assert found("We drove to Porto.") == [("Porto", "place")]


def test_a_given_name_that_is_a_common_word_counts_only_after_a_relation():
    found = names_types_and_descriptions
    assert found("My son Will starts school in September.") == [
        ("Will", "person", "the user's son")
    ]
    assert found("I told my aunt May about Ohio.")[0] == ("May", "person", "the user's aunt")
    assert found("Will you help me? May I ask? We fly in June.") == []


def test_pets_by_the_vet_and_by_breed_and_compound_relation_nouns():
    found = names_types_and_descriptions
    assert found("We took Max to the vet today.") == [("Max", "pet", "")]
    assert found("Max is our golden retriever.") == [("Max", "pet", "the user's retriever")]
    assert found("Kenji is my business partner now.") == [("Kenji", "person", "the user's partner")]
    assert found("My tennis coach Sergio is strict.") == [("Sergio", "person", "the user's coach")]


def test_a_relation_before_is_names_the_person_and_all_capitals_name_nobody():
    found = names_types_and_descriptions
    assert found("My sister is Ines.") == [("Ines", "person", "the user's sister")]
    assert found("My best friend is Tom Becker.") == [
        ("Tom Becker", "person", "the user's best friend")
    ]
    assert found("My favorite city is Lisbon.") == [
        ("Lisbon", "place", "the user's favourite city")
    ]
    assert found("JOHN IS MY BROTHER. I LOVE MY DOG MAX") == []


def test_a_name_the_relation_noun_and_a_chain_of_possessives():
    found = names_types_and_descriptions
    assert found("Steve the cat knocked over a vase.") == [("Steve", "pet", "cat")]
    assert found("I walked Rex the dog.") == [("Rex", "pet", "dog")]
    # Instructions keep naming nobody.
    assert found("Feed the cat. Email the landlord about the heating.") == []
    assert found("My wife's sister Clara visited.") == [
        ("Clara", "person", "the user's wife's sister")
    ]


def test_a_verb_opening_a_chat_sentence_is_not_part_of_the_name():
    assert names_and_types("Called Sarah about the lease.") == [("Sarah", "person")]
    assert names_and_types("Texted Jen afterwards.") == [("Jen", "person")]
    assert names_and_types("Met up with Rachel for lunch.") == [("Rachel", "person")]
    assert names_and_types("Saw Hannah Lee at yoga.") == [("Hannah Lee", "person")]
    assert names_and_types("Ninety is a milestone!") == []
    # A given name ending in -ed stays a name.
    assert names_and_types("Alfred called yesterday.") == [("Alfred", "person")]


def test_a_person_after_congrats_a_text_from_or_ran_into_is_not_a_place():
    assert names_and_types("Congrats to Jen, she got promoted.") == [("Jen", "person")]
    assert names_and_types("Got a text from Mike: he's moving to Denver!") == [
        ("Mike", "person"),
        ("Denver", "place"),
    ]
    assert names_and_types("Then I ran into Oliver Grant downtown.") == [("Oliver Grant", "person")]
    assert names_and_types("I flew back from Lisbon.") == [("Lisbon", "place")]


def test_a_family_title_is_the_relation_and_the_name_follows_it():
    assert names_types_and_descriptions("Aunt Rosa is coming too.") == [
        ("Rosa", "person", "the user's aunt")
    ]
    assert names_types_and_descriptions("Visited Grandpa Walt in Phoenix.") == [
        ("Walt", "person", "the user's grandpa"),
        ("Phoenix", "place", ""),
    ]
    assert names_types_and_descriptions("We saw Uncle Joe there.") == [
        ("Joe", "person", "the user's uncle")
    ]
    assert names_and_types("Grandma is coming.") == []


def test_venues_companies_shows_and_pets_named_by_what_they_are():
    assert names_and_types("We stayed at a little hotel called Hotel Koe.") == [
        ("Hotel Koe", "place")
    ]
    assert names_and_types("Working from a cafe called Blue Bottle today.") == [
        ("Blue Bottle", "place")
    ]
    assert names_and_types("We found a great ramen place called Afuri.") == [("Afuri", "place")]
    assert names_and_types("A final round at Acme Holdings, Inc. next week.") == [
        ("Acme Holdings", "organization")
    ]
    assert names_and_types("I started at Globex last month.") == [("Globex", "organization")]
    assert names_and_types("Bought tickets for Hamilton.") == [("Hamilton", "event")]
    assert names_types_and_descriptions("The parrot Kiwi would not stop squawking.") == [
        ("Kiwi", "pet", "parrot")
    ]


def test_a_nickname_said_right_after_a_name_points_back_to_it():
    found = extract_entities("My best friend is Kat, short for Katherine. Tom called Anna.")

    assert [(e.name, e.alias_of) for e in found] == [
        ("Kat", ""),
        ("Katherine", "kat"),
        ("Tom", ""),
        ("Anna", ""),
    ]


def test_a_products_model_number_is_part_of_its_name_a_count_is_not():
    assert names_and_types("I ordered an iPhone 15 yesterday.") == [("iPhone 15", "product")]
    assert names_and_types("Bought a MacBook 2 weeks ago.") == [("MacBook", "product")]


def test_a_favourite_is_a_preference_typed_by_its_noun_not_the_users_own():
    found = names_types_and_descriptions
    assert found("My favourite band is Radiohead.") == [
        ("Radiohead", "organization", "the user's favourite band")
    ]
    assert found("Dune is my all-time favourite book.") == [
        ("Dune", "product", "the user's favourite book")
    ]
    assert found("My favorite movie is Inception.") == [
        ("Inception", "product", "the user's favourite movie")
    ]
    assert found("Brisket is my favourite food.") == [
        ("Brisket", "concept", "the user's favourite food")
    ]
    # A relation said before the name stays the relation.
    assert found("My sister Ines is my favourite person.") == [
        ("Ines", "person", "the user's sister")
    ]


def test_a_digest_retelling_a_favourite_keeps_it_a_favourite():
    """The session digest says "The user's favourite band is Radiohead": the same description
    as the user's own words, not "the user's band"."""
    found = names_types_and_descriptions
    assert found("The user's favourite band is Radiohead.") == [
        ("Radiohead", "organization", "the user's favourite band")
    ]
    assert found("Radiohead is the user's favourite band.") == [
        ("Radiohead", "organization", "the user's favourite band")
    ]
    assert found("My favourite team is the Warriors.") == [
        ("Warriors", "organization", "the user's favourite team")
    ]


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("Patterns in my sleep data look odd lately.", set()),
        ("Problems with my landlord keep piling up.", set()),
        ("Thomas in accounting looks tired.", {("Thomas", "person")}),
        ("Douglas from work came over for dinner.", {("Douglas", "person")}),
    ],
)
def test_a_plural_opening_a_sentence_before_a_phrase_and_its_verb_is_no_name(sentence, expected):
    assert {(e.name, e.type) for e in extract_entities(sentence)} == expected


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("Astronomy club meets on Thursdays.", set()),
        ("Marker pens and index cards help me rehearse.", set()),
        ("Compass apps drain my battery.", set()),
        ("Pottery classes start in March with Dana.", {("Dana", "person")}),
        ("Ines has a new studio in Porto.", {("Ines", "person"), ("Porto", "place")}),
        ("Tom said the Atlas project slipped.", {("Tom", "person"), ("Atlas", "project")}),
    ],
)
def test_a_word_modifying_the_noun_after_it_at_a_sentence_start_is_no_name(sentence, expected):
    """ "Astronomy club meets": the capitalized word is the club's kind, not a person."""
    assert {(e.name, e.type) for e in extract_entities(sentence)} == expected


@pytest.mark.parametrize(
    "sentence, expected",
    [
        # The noun before "called" gives the type: a cabin is a place, not a person.
        ("We booked a cabin called Pine Hollow.", [("Pine Hollow", "place", "")]),
        (
            "Ines chose a quinta called Quinta da Pacheca.",
            [("Ines", "person", ""), ("Quinta da Pacheca", "place", "")],
        ),
        # A book the user reads is someone else's work; one the user writes is the user's.
        ("I'm reading a book called The Overstory.", [("Overstory", "product", "")]),
        ("We watched a series called Severance.", [("Severance", "product", "")]),
        ("I'm writing a book called The Overstory.", [("Overstory", "project", "the user's book")]),
    ],
)
def test_a_thing_called_by_name_takes_its_type_from_the_noun_before(sentence, expected):
    assert names_types_and_descriptions(sentence) == expected


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("I started a new job at Siemens.", [("Siemens", "organization", "the user's employer")]),
        ("My job at Acme is stressful.", [("Acme", "organization", "the user's employer")]),
        ("My sister works at Globex.", [("Globex", "organization", "")]),  # not the user's
        ("We just moved to Denver.", [("Denver", "place", "the user's home")]),
        ("I lived in Tokyo for two years.", [("Tokyo", "place", "the user's former home")]),
        ("I'm originally from Porto.", [("Porto", "place", "the user's hometown")]),
        ("I flew in from Berlin.", [("Berlin", "place", "")]),
        # A second clause shares the first one's subject, the user's or someone else's.
        (
            "I live in Austin and work at Globex.",
            [
                ("Austin", "place", "the user's home"),
                ("Globex", "organization", "the user's employer"),
            ],
        ),
        (
            "My sister lives in Austin and works at Globex.",
            [("Austin", "place", ""), ("Globex", "organization", "")],
        ),
        (
            "I met Tom, who lives in Austin and works at Globex.",
            [("Tom", "person", ""), ("Austin", "place", ""), ("Globex", "organization", "")],
        ),
    ],
)
def test_the_users_own_employer_home_and_hometown_are_described(sentence, expected):
    assert names_types_and_descriptions(sentence) == expected


def test_a_best_friend_is_told_from_any_other_friend():
    """ "my best friend" names one person (kept in the relation, so it becomes the alias and
    description); "my old friend", "my oldest friend" are friends like any other."""
    found = names_types_and_descriptions
    assert found("My best friend Priyanka is getting married.") == [
        ("Priyanka", "person", "the user's best friend")
    ]
    assert found("Ana, my best friend, moved away.") == [
        ("Ana", "person", "the user's best friend")
    ]
    assert found("My old friend Sam called.") == [("Sam", "person", "the user's friend")]
    assert found("My oldest friend Raj visited.") == [("Raj", "person", "the user's friend")]
