"""Which chat sentences only react ("Wow, Caroline!") and which tell something."""

from __future__ import annotations

import pytest

from mnemo_text.indexable import memory_text_indexable
from mnemo_text.sentences import is_chatter


@pytest.mark.parametrize(
    "sentence",
    [
        "Wow, Caroline!",
        "That's so awesome, Mel!",
        "Thanks, Mel!",
        "Hey Caroline, hope all's good!",
        "Oh man, sorry to hear that, Melanie.",
        "Congrats Caroline!",
        "So proud of you!",
        "Caroline, that's amazing!",
    ],
)
def test_reactions_are_chatter(sentence):
    assert is_chatter(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Yes, Paris.",  # an acknowledgement with a name may answer a question
        "I love pottery!",
        "That's great news about your job!",
        "Portugal is great!",  # a place is no vocative
        "Go Caroline!",
        "That was awesome, see you at 5!",  # a time
        "Wow, did you see that band?",  # a question
        "I just signed up for a pottery class yesterday.",
    ],
)
def test_sentences_that_tell_something_are_not_chatter(sentence):
    assert not is_chatter(sentence)


def test_thanks_for_the_help_says_nothing_but_thanks_with_news_does():
    assert not memory_text_indexable("Thanks so much, that's really helpful!")
    assert not memory_text_indexable("I appreciate it, thanks.")
    assert not memory_text_indexable("Awesome, that helps a lot.")
    assert not memory_text_indexable("Got it, thanks a ton!")
    assert not memory_text_indexable("Sounds good 👍")
    assert not memory_text_indexable("Thanks! 😊")
    assert not memory_text_indexable("lol ok")
    assert memory_text_indexable("lol my cat knocked the tree over")
    assert memory_text_indexable("Thanks so much, I moved to Denver.")
    assert memory_text_indexable("Great, I moved to Denver.")
    assert memory_text_indexable("That is really helpful advice about my visa.")
