"""The offline summarizer/extractor: what a user would notice in summaries, tags, facts and
headers when Mnemo runs without a language model."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_site.providers import local_text as lt

BERLIN_CHAT = [
    (
        "user",
        "Hi! I moved to Berlin last month and I work as a nurse at Charité. "
        "My sister Anna is a nurse too.",
    ),
    (
        "assistant",
        "Welcome to Berlin! As a nurse in Germany you will need to have your qualification "
        "recognised. Here are the steps:\n"
        "1. Register your address (Anmeldung) at the Bürgeramt within 14 days.\n"
        "2. Apply for the Berufserlaubnis with the LAGeSo.\n"
        "3. Open a German bank account.",
    ),
    (
        "user",
        "How do I book an appointment for the Anmeldung? The Bürgeramt website is confusing.",
    ),
    (
        "assistant",
        "You can book an Anmeldung appointment online via https://service.berlin.de/dienstleistung/. "
        "Appointments are scarce, so look early in the morning when new slots are released. "
        "Bring your passport and the Wohnungsgeberbestätigung from your landlord.",
    ),
    ("user", "Thanks! Also I'm vegetarian, can you recommend restaurants near Kreuzberg?"),
    (
        "assistant",
        "Sure! Kreuzberg has great vegetarian options: Café V, Let It Be, and Markthalle Neun "
        "on Thursdays for street food.",
    ),
    ("user", "ok thanks"),
]

JAPAN_USER = (
    "I'm planning a two-week trip to Japan in April with my partner. We want to see Kyoto and "
    "Osaka, and I'd love tips on the Japan Rail Pass. How much does it cost and is it worth it "
    "for our itinerary?"
)
JAPAN_ASSISTANT = (
    "Great question! The Japan Rail Pass costs about 50,000 yen for 7 days and 80,000 yen for "
    "14 days since the 2023 price increase. For a Tokyo-Kyoto-Osaka loop it usually does not pay "
    "off anymore; individual Shinkansen tickets are often cheaper. Consider the Kansai Area Pass "
    "if you spend most days around Kyoto, Osaka and Nara. Cherry blossom season in early April "
    "is busy, so book hotels early.\n\n- Tokyo to Kyoto by Nozomi: about 14,000 yen\n"
    "- Kyoto to Osaka: about 600 yen by local train\n\nLet me know if you want an itinerary!"
)

STOP_OR_JUNK = {
    "the",
    "and",
    "thanks",
    "thank",
    "please",
    "hi",
    "hello",
    "ok",
    "okay",
    "lol",
    "haha",
    "email",
    "phone",
    "just",
    "really",
    "want",
    "know",
    "und",
    "der",
    "les",
    "que",
}


def user_texts(turns):
    return [text for role, text in turns if role == "user"]


# ----------------------------------------------------------------------------------- keywords


def test_keywords_name_the_topic_with_bounded_decreasing_confidence():
    ranked = lt.keywords([JAPAN_USER, JAPAN_ASSISTANT], k=8)

    words = [word for word, _confidence in ranked]
    assert len(ranked) == 8
    assert {"kyoto", "osaka"} <= set(words)
    assert "japan rail pass" in words  # a repeated proper phrase stays one keyphrase
    confidences = [confidence for _word, confidence in ranked]
    assert all(0.0 <= confidence <= 1.0 for confidence in confidences)
    assert confidences == sorted(confidences, reverse=True)


def test_keywords_drop_stop_words_numbers_placeholders_and_laughter():
    texts = [
        "Hi!!! thanks lol hahaha. My number is [PHONE] and my mail [EMAIL], ok? 2024 12345 42",
        "Der Hund und die Katze. Les chats que je vois. The sourdough starter needs feeding.",
    ]

    words = [word for word, _confidence in lt.keywords(texts, k=20)]

    assert "sourdough starter" in words or "sourdough" in words
    for word in words:
        assert not re.fullmatch(r"[\d\s]+", word), word
        assert "[" not in word and "]" not in word
        assert not set(word.split()) & {"the", "and", "thanks", "lol", "hahaha", "und", "les"}
        assert word == word.lower()


def test_keywords_fold_plurals_into_one_keyword():
    ranked = lt.keywords(["I collect recipes. This recipe is my favourite of all the recipes."])

    words = [word for word, _confidence in ranked]
    assert words[0] == "recipe"
    assert "recipes" not in words


def test_keywords_ignore_urls_and_code_blocks():
    text = (
        "See https://example.com/some/path and www.tracking-site.io for the docs.\n"
        "```python\nimport numpy as np\nvariable_name = np.zeros(10)\n```\n"
        "The docs explain vector indexes."
    )

    words = " ".join(word for word, _confidence in lt.keywords([text], k=20))

    for junk in ("https", "example", "tracking", "numpy", "variable_name", "zeros"):
        assert junk not in words
    assert "vector" in words


def test_keywords_ignore_bare_domains_and_upper_case_web_addresses():
    text = (
        "The guide at Docs.Example.COM/setup/guide and WWW.Tracker-Site.IO/page covers "
        "vector indexes; vector indexes need tuning."
    )

    words = " ".join(word for word, _confidence in lt.keywords([text], k=20))

    for junk in ("docs", "example", "setup", "tracker", "page"):
        assert junk not in words
    assert "vector" in words


# -------------------------------------------------------------------------------- tags, title


def test_tags_are_one_to_three_lowercase_kebab_tags_without_junk():
    result = lt.tags([JAPAN_USER, "ok thanks lol", "[EMAIL] 2024"])

    assert 1 <= len(result) <= 3
    for tag in result:
        assert re.fullmatch(r"[^\W_A-Z]+(?:-[^\W_A-Z]+)*", tag), tag
        assert not set(tag.split("-")) & STOP_OR_JUNK
    assert "japan" in "-".join(result)


def test_tags_skip_a_tag_already_inside_a_better_one():
    result = lt.tags(["The Japan Rail Pass is pricey. Is the Japan Rail Pass worth it in Japan?"])

    assert "japan-rail-pass" in result
    assert "japan" not in result and "rail" not in result


def test_tags_of_small_talk_are_empty():
    assert lt.tags(["hi", "thanks!", "ok lol", "[EMAIL]"]) == []


def test_title_is_three_to_five_title_case_words_about_the_conversation():
    result = lt.title(user_texts(BERLIN_CHAT))

    words = result.split()
    assert 3 <= len(words) <= 5
    assert all(word[0].isupper() or word in {"on"} for word in words)
    assert "Berlin" in words or "Nurse" in words


def test_title_keeps_acronyms_and_pads_short_topics():
    assert "API" in lt.title(["What is an API gateway and do I need one for my iPhone app?"])
    short = lt.title(["postgres vacuum"])
    assert short == "Notes on Postgres Vacuum"
    assert lt.title([]) == "Untitled Conversation"


# ---------------------------------------------------------------------------------- summaries


def test_summary_is_a_short_bullet_digest_holding_the_key_facts():
    transcript_length = sum(len(text) for _role, text in BERLIN_CHAT)

    summary = lt.summarize(BERLIN_CHAT)

    lines = summary.splitlines()
    assert lines and all(line.startswith("- ") for line in lines)
    assert len(summary) <= transcript_length / 2
    assert "Berlin" in summary and "nurse" in summary
    # The user's statements are retold, not replayed: no first person.
    assert "The user moved to Berlin" in summary
    assert not re.search(r"\bI moved\b", summary)


def test_summary_never_replays_a_turn_or_keeps_filler():
    summary = lt.summarize(BERLIN_CHAT, max_chars=2000)

    for _role, text in BERLIN_CHAT:
        assert text not in summary or len(text) < 20
    for line in summary.splitlines():
        assert not re.fullmatch(r"- (?:User|Assistant): (?:ok thanks|Thanks!?|Sure!?)", line)


@pytest.mark.parametrize("max_chars", [1, 10, 60, 150, 300, 800])
def test_summary_always_fits_the_budget_at_a_line_boundary(max_chars):
    summary = lt.summarize(BERLIN_CHAT * 5, max_chars=max_chars)

    assert len(summary) <= max_chars
    if max_chars >= 150:
        assert all(line.startswith("- ") and len(line) > 10 for line in summary.splitlines())


def test_summary_of_nothing_or_small_talk_is_empty():
    assert lt.summarize([]) == ""
    assert lt.summarize([("user", ""), ("assistant", "   ")]) == ""
    assert lt.summarize([("user", "hi"), ("assistant", "Hello!"), ("user", "thanks")]) == ""
    assert lt.summarize([("user", "I moved to Berlin last month.")], max_chars=0) == ""


def test_summary_uses_the_supplied_embedder_to_drop_repeats():
    turns = [
        ("user", "I adopted a puppy called Rex last week."),
        ("assistant", "Puppies need vaccinations at eight and twelve weeks."),
        ("assistant", "Crate training helps puppies sleep through the night."),
    ]
    calls = []

    def same_vector_for_everything(texts):
        calls.append(list(texts))
        return [[1.0, 0.0, 0.0] for _text in texts]

    summary = lt.summarize(turns, embed=same_vector_for_everything)

    assert calls, "the embedder was not used"
    # Every sentence looks identical to this embedder, so only one line survives.
    assert len(summary.splitlines()) == 1
    assert len(lt.summarize(turns).splitlines()) >= 2


def test_fold_summaries_fits_budget_prefers_newest_and_keeps_older_sessions():
    newest = "- The user moved to Berlin.\n- User asked: How to register an address?"
    middle = "- The user works as a nurse.\n- The user's sister Anna is a nurse."
    oldest = "The user plays the piano. The user likes jazz."

    folded = lt.fold_summaries([newest, middle, oldest], max_chars=120)

    assert len(folded) <= 120
    lines = folded.splitlines()
    assert all(line.startswith("- ") for line in lines)
    assert lines[0] == "- The user moved to Berlin."  # newest first
    assert "- The user plays the piano." in lines  # older sessions still represented


def test_fold_summaries_keeps_one_copy_of_a_repeated_line():
    digest = "- The user moved to Berlin.\n- The user works as a nurse."

    folded = lt.fold_summaries([digest, digest, "- The user moved to Berlin!"], max_chars=500)

    assert folded.count("moved to Berlin") == 1
    assert folded.count("nurse") == 1
    assert lt.fold_summaries([], max_chars=100) == ""
    assert len(lt.fold_summaries(["- " + "word " * 100], max_chars=40)) <= 40


# -------------------------------------------------------------------------------------- facts


def test_facts_are_self_contained_third_person_statements():
    facts = lt.extract_facts(BERLIN_CHAT)

    assert "The user moved to Berlin last month." in facts
    assert "The user works as a nurse at Charité." in facts
    assert "The user's sister Anna is a nurse too." in facts
    assert "The user is vegetarian." in facts
    for fact in facts:
        assert not re.search(r"\b(?:I|me|my|mine|I'm|I've)\b", fact), fact
        assert fact.endswith(".")


@pytest.mark.parametrize(
    "statement, expected",
    [
        ("I moved to Berlin last month", ["The user moved to Berlin last month."]),
        ("My sister Anna is a nurse", ["The user's sister Anna is a nurse."]),
        (
            "I live in Paris and my wife works at Airbus.",
            ["The user lives in Paris.", "The user's wife works at Airbus."],
        ),
        ("My wife and I live in Rome.", ["The user's wife and the user live in Rome."]),
        ("I go to the gym every morning.", ["The user goes to the gym every morning."]),
        ("i study computer science", ["The user studies computer science."]),
        ("I don't eat meat.", ["The user doesn't eat meat."]),
        ("Please remember that my birthday is May 5.", ["The user's birthday is May 5."]),
        ("Hi, I'm Sam!", ["The user's name is Sam."]),
        ("When I was ten, I lived in Spain.", ["When the user was ten, the user lived in Spain."]),
    ],
)
def test_first_person_statements_become_atomic_facts(statement, expected):
    assert lt.extract_facts([("user", statement)]) == expected


@pytest.mark.parametrize(
    "message",
    [
        "Hello! How are you?",
        "Thanks so much, that was helpful.",
        "How do I renew my passport?",
        "Can you help me write a cover letter?",
        "Write a poem about my cat.",
        "I see, thanks!",
        "I love it!",
        "I'm not sure.",
        "If I moved to Spain, would I need a visa?",
        "My email is [EMAIL].",
        "Tell me about Rome",
    ],
)
def test_questions_greetings_commands_and_placeholders_are_not_facts(message):
    assert lt.extract_facts([("user", message)]) == []


def test_facts_ignore_the_assistant_and_drop_duplicates():
    turns = [
        ("assistant", "You live in Paris and you love jazz."),
        ("user", "I live in Paris."),
        ("user", "i live in paris!"),
        ("system", "I am a system prompt."),
    ]

    assert lt.extract_facts(turns) == ["The user lives in Paris."]


def test_facts_use_the_given_user_name():
    facts = lt.extract_facts(
        [("user", "I live in Oslo and my dog is called Max.")], user_name="Alice"
    )

    assert facts == ["Alice lives in Oslo.", "Alice's dog is called Max."]


def test_fact_subject_names_who_the_fact_is_about():
    assert lt.fact_subject("The user lives in Paris.") == "the user"
    assert lt.fact_subject("The user's sister Anna is a nurse.") == "the user's sister anna"
    assert lt.fact_subject("The user's favourite colour is blue.") == "the user's favourite colour"
    assert lt.fact_subject("Alice works at Airbus.", user_name="Alice") == "alice"
    assert lt.fact_subject("") == ""


@pytest.mark.parametrize(
    "old, new",
    [
        ("The user lives in Paris.", "The user moved to Berlin."),
        ("The user lives in Paris.", "The user lives in Berlin."),
        ("The user works at Google.", "The user joined Meta in 2023."),
        ("The user's favourite colour is blue.", "The user's favourite colour is green."),
        ("The user likes coffee.", "The user doesn't like coffee anymore."),
        ("The user has two kids.", "The user has three kids."),
        ("The user is 34 years old.", "The user is 35 years old."),
        ("The user is vegetarian.", "The user is vegan."),
    ],
)
def test_a_new_value_for_the_same_subject_and_relation_is_an_update(old, new):
    assert lt.is_update(old, new)


@pytest.mark.parametrize(
    "old, new",
    [
        ("The user lives in Berlin.", "The user moved to Berlin last month."),
        ("The user lives in Paris.", "The user's sister lives in Rome."),
        ("The user likes coffee.", "The user likes tea."),
        ("The user has a dog.", "The user has a cat."),
        ("The user is a nurse.", "The user is vegetarian."),
        ("The user lives in Paris.", "The user lives in Paris."),
        ("The user lives in Paris.", "The user works at Airbus."),
    ],
)
def test_additions_restatements_and_other_subjects_are_not_updates(old, new):
    assert not lt.is_update(old, new)


# ------------------------------------------------------------------------------------ headers


def test_header_names_topic_intent_platform_and_date():
    header = lt.contextual_header(
        user_text=BERLIN_CHAT[2][1],
        assistant_text=BERLIN_CHAT[3][1],
        title="Moving to Berlin",
        prior="- The user moved to Berlin last month.",
        platform="chatgpt",
        date="2024-03-05T10:00:00Z",
    )

    sentences = re.findall(r"[^.?!]+(?:[.?!]\"?|$)", header.replace('."', '".'))
    assert 2 <= len([s for s in sentences if s.strip()]) <= 4
    assert "2024-03-05" in header and "ChatGPT" in header
    assert "anmeldung" in header.lower()  # the topic
    assert "How do I book an appointment for the Anmeldung?" in header  # the intent
    assert "moved to Berlin" in header  # the prior context
    assert "this chunk discusses" not in header.lower()


def test_header_uses_given_topics_and_is_specific_even_without_metadata():
    header = lt.contextual_header(
        user_text=JAPAN_USER, assistant_text=JAPAN_ASSISTANT, topics=["japan-rail-pass"]
    )

    assert header.startswith("Conversation about japan rail pass.")
    assert "Kyoto" in header or "kyoto" in header
    assert header.count(". ") + 1 <= 5


def test_header_without_text_still_has_two_sentences():
    header = lt.contextual_header(user_text="", assistant_text="", date="2024-01-01")

    assert "2024-01-01" in header
    assert len(re.findall(r"[.?!](?:\s|$)", header)) >= 2


# ------------------------------------------------------------------------ robustness and speed


def test_empty_huge_and_non_english_input_is_handled():
    huge = "The vector index rebuild takes hours on large tables. " * 50_000
    assert lt.keywords([huge])[0][0] in {"vector index rebuild", "vector index", "index rebuild"}
    assert len(lt.summarize([("user", huge)], max_chars=300)) <= 300
    assert lt.extract_facts([("user", huge)]) == []

    german = "Ich möchte nächsten Sommer nach Portugal reisen. Lissabon ist schön, Lissabon!"
    assert lt.keywords([german])[0][0] == "lissabon"
    chinese = lt.keywords(["我想学习机器学习和深度学习。机器学习很有趣。"])
    assert chinese and chinese[0][0] == "学习"
    for function in (lt.keywords, lt.tags):
        assert function([]) == []
        assert function(["", "   "]) == []


def test_outputs_are_identical_across_processes():
    """Hash randomisation must not change anything: run the same calls in two processes."""
    script = (
        "from memory_site.providers import local_text as lt\n"
        "from tests.memory_site.test_local_text import BERLIN_CHAT, JAPAN_USER, JAPAN_ASSISTANT\n"
        "print(lt.keywords([JAPAN_USER, JAPAN_ASSISTANT]))\n"
        "print(lt.tags([t for r, t in BERLIN_CHAT]), lt.title([JAPAN_USER]))\n"
        "print(lt.summarize(BERLIN_CHAT))\n"
        "print(lt.extract_facts(BERLIN_CHAT))\n"
        "print(lt.contextual_header(user_text=JAPAN_USER, assistant_text=JAPAN_ASSISTANT))\n"
    )
    root = Path(__file__).resolve().parents[2]
    outputs = []
    for seed in ("1", "2"):
        environment = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        completed = subprocess.run(
            [sys.executable, "-c", script],
            cwd=root,
            env=environment,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        outputs.append(completed.stdout)
    assert outputs[0] == outputs[1]
    assert "Berlin" in outputs[0]


def test_a_turn_pair_is_processed_in_well_under_five_milliseconds():
    pairs = [
        (f"{JAPAN_USER} Day {index}: what about Hakone number {index}?", JAPAN_ASSISTANT)
        for index in range(300)
    ]
    started = time.perf_counter()
    for user_text, assistant_text in pairs:
        topics = lt.tags([user_text, assistant_text])
        lt.contextual_header(
            user_text=user_text,
            assistant_text=assistant_text,
            topics=topics,
            platform="chatgpt",
            date="2024-02-01",
        )
        lt.extract_facts([("user", user_text), ("assistant", assistant_text)])
    per_pair = (time.perf_counter() - started) / len(pairs)

    assert per_pair < 0.005, f"{per_pair * 1000:.2f} ms per turn pair"
