"""Sentence splitting, speaker roles and the sentence tests (filler, question, request)
that summaries, facts and headers share."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from itertools import chain

from mnemo_text.entity_names import ABBREVIATIONS
from mnemo_text.words import (
    _SCHEME_URL_RE,
    MAX_TEXT_CHARS,
    code_and_markup_stripped,
)

_USER_ROLES = frozenset({"user", "human", "me", "customer", "client", "you"})
_ASSISTANT_ROLES = frozenset(
    {"assistant", "ai", "bot", "model", "gpt", "chatgpt", "claude", "gemini", "llm", "agent"}
)
_SKIPPED_ROLES = frozenset({"system", "tool", "function", "developer", "ipython"})

# A title's period ends no sentence: "the vet Dr. Okafor thinks..." is one. Tested on the few
# characters before a period-ended gap (a lookbehind per title in the pattern cost the splitter
# a third of its speed).
_TITLE_TAIL = re.compile(r"(?<!\w)(?:" + "|".join(ABBREVIATIONS) + r")\.$")
_TITLE_TAIL_CHARS = max(map(len, ABBREVIATIONS)) + 2
# Each alternative captures, in its one group, the gap between two sentences.
_SENTENCE_GAP = (
    # . ! ? … and closing quotes, whitespace, then no lower-case letter: "e.g. this" goes on,
    # "He left. Then" ends.
    r"[.!?…][\"'”’)\]]*(\s+)(?=[^\sa-z])"
    # CJK full stops end a sentence with or without a space after them.
    r"|[。！？](\s*)"
)
_LINE_GAPS = {
    "none": "",
    # Every line is a sentence of its own (chat messages, displayed passages).
    "every": r"|(\n\s*)",
    # Paragraphs and list items only: a document's wrapped lines belong together.
    "blocks": r"|(\n[ \t]*\n\s*)|(\n)(?=[ \t]*(?:[-*•+]|\d+[.)])\s)",
}
_LINE_MARKER_RE = re.compile(r"^\s*(?:[-*+•>]+|\d{1,3}[.)]|#{1,6})\s*")
_EMPHASIS_RE = re.compile(r"\*\*|__|`")


@functools.cache
def _sentence_gap_re(lines: str, colons: bool) -> re.Pattern[str]:
    colon = r"|:(\s+)" if colons else ""
    return re.compile(_SENTENCE_GAP + colon + _LINE_GAPS[lines])


def sentence_spans(
    text: str, start: int = 0, *, lines: str = "none", colons: bool = False
) -> list[tuple[int, int]]:
    """The one sentence splitter of the project: (start, end) offsets of each sentence of `text`
    from `start` on, in order, whitespace around them left out, closing quotes kept.

    A sentence ends at . ! ? … before whitespace and a word that is not lower case (a title's
    period and "e.g. this" end none), or at a CJK full stop. `lines` says what a line break is:
    "none" (nothing by itself), "every" (each line ends a sentence) or "blocks" (blank lines and
    list items do; a document's wrapped lines do not). `colons` ends a clause at ": " too, for
    display. Offsets point into `text` itself, so callers cut, score or store spans of it.
    """
    spans: list[tuple[int, int]] = []
    position = start
    length = len(text)
    for end, gap_end in chain(_sentence_gaps(text, start, lines, colons), ((length, length),)):
        # A span's edges hold whitespace only where a gap did not take it (text start, a list
        # item's indentation, spaces before a line break).
        begin = position
        while begin < end and text[begin].isspace():
            begin += 1
        while end > begin and text[end - 1].isspace():
            end -= 1
        if end > begin:
            spans.append((begin, end))
        position = max(position, gap_end)
    return spans


def _sentence_gaps(text: str, start: int, lines: str, colons: bool) -> Iterator[tuple[int, int]]:
    """(start, end) of each gap between two sentences of `text` from `start` on."""
    position = start
    for match in _sentence_gap_re(lines, colons).finditer(text, start):
        group = match.lastindex or 0
        gap_start, gap_end = match.span(group)
        if (
            group == 1
            and text[gap_start - 1] == "."
            and _TITLE_TAIL.search(text, max(position, gap_start - _TITLE_TAIL_CHARS), gap_start)
        ):
            continue
        yield gap_start, gap_end
        position = gap_end


def _role_kind(role: str, user_name: str = "") -> str:
    lowered = (role or "").strip().lower()
    if lowered in _USER_ROLES or (user_name and lowered == user_name.strip().lower()):
        return "user"
    if lowered in _ASSISTANT_ROLES:
        return "assistant"
    if lowered in _SKIPPED_ROLES:
        return "skip"
    return "other"


def _sentences(text: str) -> list[str]:
    """Sentences of a message, with markdown markers, HTML tags, code blocks and URLs removed."""
    if not isinstance(text, str) or not text:
        return []
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS]
    text = unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'")
    text = code_and_markup_stripped(text)
    if "://" in text or "www." in text.lower():
        text = _SCHEME_URL_RE.sub(
            lambda match: match.group(1).removeprefix("www.").rstrip("."), text
        )
    if "**" in text or "__" in text or "`" in text:
        text = _EMPHASIS_RE.sub("", text)
    sentences: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("|"):
            continue
        line = _LINE_MARKER_RE.sub("", line)
        for begin, end in sentence_spans(line):
            # Whitespace runs as one space (str.split and \s agree on whitespace).
            sentences.append(" ".join(line[begin:end].split()))
    return sentences


def _clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary with an ellipsis."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ""
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


_FILLER_OPENER_RE = re.compile(
    r"^(?:(?:sure|certainly|of course|absolutely|great question|good question|okay|ok|alright|"
    r"great|perfect|awesome|cool|nice|wonderful|lol|haha|"
    r"well|so|yes|yeah|no|oh|hi|hello|hey|thanks (?:so much|a lot|a bunch|a ton|again)|"
    r"thank you (?:so much|very much|again)|thanks|thank you|got it|right|actually|basically|"
    r"honestly|anyway|also|and|but|btw|by the way|fyi|hmm|um|uh)\b[\s,!.:;-]*)+",
    re.IGNORECASE,
)
_FILLER_SENTENCE_RE = re.compile(
    r"^(?:hi|hello|hey|thanks?|thank you(?: so much| very much)?|thx|ok(?:ay)?|cool|great|nice|"
    r"awesome|perfect|sure|yes|no|yep|nope|lol|haha\w*|got it|sounds good|makes sense|"
    r"good (?:morning|afternoon|evening|night)|bye|goodbye|you're welcome|no problem|"
    r"i see|i agree|i understand|let me know(?: if .*)?|hope (?:this|that) helps.*|"
    r"(?:that|this|it)(?:'s| is| was) (?:really |very |so |super |extremely )?"
    r"(?:helpful|useful|perfect|clear|great|exactly what i needed)|"
    r"(?:that|this|it) helps(?: a lot| a ton)?|"
    r"(?:i )?(?:really )?appreciate (?:it|that|this|the help)|much appreciated|"
    r"(?:(?:i.m|so) )?glad to hear (?:it|that)|"
    r"(?:is there )?anything else.*|feel free .*|happy to help.*|glad (?:i could|to) help.*|"
    r"here(?:'s| is| are) (?:a|an|some|the|what|how)\b[^.]{0,60}:)"
    r"(?:[\s,]+(?:thank you|thanks)(?: so much| very much| a lot| a ton| again)?)?"
    r"[^\w]*$",  # trailing punctuation or emoji: "Sounds good 👍"
    re.IGNORECASE,
)


def _is_question(sentence: str) -> bool:
    stripped = sentence.rstrip()
    if stripped.endswith("?"):
        return True
    return bool(_QUESTION_START_RE.match(stripped))


_QUESTION_START_RE = re.compile(
    r"^(?:(?:do|does|did|can|could|would|will|should|is|are|am|was|were|have|has)\s+"
    r"(?:you|i|we|it|they|he|she|there|this|that|anyone|someone)\b|"
    r"(?:what|why|how|where|who|which)\b.*\b(?:do|does|did|can|could|should|would|is|are)\s+"
    r"(?:i|you|we|it|they)\b)",
    re.IGNORECASE,
)

_IMPERATIVE_VERBS = frozenset(
    """write tell give show explain help make create generate list summarize summarise translate
    fix find suggest recommend describe compare draft rewrite edit check review continue add
    remove delete change update convert calculate plan build design send remind draw outline
    brainstorm proofread correct improve shorten expand simplify format analyze analyse
    search look read answer respond provide share teach walk guide name define break imagine
    pretend act play let lets stop start keep go do try use run write""".split()
)
_REQUEST_START_RE = re.compile(
    r"^(?:please\b|pls\b|can you\b|could you\b|would you\b|will you\b|i want you to\b|"
    r"i need you to\b|i'd like you to\b|i would like you to\b|help me\b|let me\b|let's\b)",
    re.IGNORECASE,
)


def _is_request(sentence: str) -> bool:
    if _REQUEST_START_RE.match(sentence):
        return True
    first = sentence.split(" ", 1)[0].strip(",.:;!").lower()
    return first in _IMPERATIVE_VERBS


# A message of questions and filler this short asks; it does not tell (see is_content_free).
CONTENT_FREE_MAX_WORDS = 20
CONTENT_FREE_MAX_CHARS = 400


def is_content_free(text: str) -> bool:
    """Whether a message says nothing worth remembering: only greetings, acknowledgements and
    filler ("hi!", "thanks, got it"), or a short message (up to CONTENT_FREE_MAX_WORDS words)
    made only of questions and filler ("what am I allergic to?")."""
    if len(text) > CONTENT_FREE_MAX_CHARS:
        return False  # no run of filler is this long; the check would cost a long reply's split
    sentences = _sentences(text)
    if all(_is_filler(sentence) for sentence in sentences):
        return True
    if sum(len(sentence.split()) for sentence in sentences) > CONTENT_FREE_MAX_WORDS:
        return False
    return all(_is_filler(sentence) or sentence.rstrip().endswith("?") for sentence in sentences)


def _is_filler(sentence: str) -> bool:
    """A greeting or acknowledgement, alone or with a name ("Hey Mel!", "Thanks, got it!"), or
    no word at all ("😊", "!!")."""
    if _FILLER_SENTENCE_RE.match(sentence) or not _WORD_RE.search(sentence):
        return True
    rest = _FILLER_OPENER_RE.sub("", sentence)
    if rest == sentence:
        return False
    rest = rest.strip(" !.,;:-")
    if not rest or _FILLER_SENTENCE_RE.match(rest):
        return True
    # "Hey Mel!": a greeting with a name; "Yes, Paris." is an answer and stays.
    return bool(_GREETING_RE.match(sentence)) and len(rest.split()) <= 1


_WORD_RE = re.compile(r"\w")
_GREETING_RE = re.compile(r"^(?:hi|hello|hey|thanks|thank you|bye|goodbye)\b", re.IGNORECASE)


# Words of a sentence that only reacts to the other person (greets, thanks, praises, cheers,
# commiserates) and tells nothing: "Wow, Caroline!", "That's so awesome, Mel!", "Congrats!",
# "Oh man, sorry to hear that." A sentence made only of these (and the name it is said to) is
# chatter; one more word ("That's great news about your job!", "I love pottery!") and it
# tells something.
_CHATTER_WORDS = frozenset(
    """wow woah whoa woo aww awww omg oh ooh ah yay yey hey hi hello yo thanks thank thx ty
    congrats congratulations cheers bravo kudos haha hahaha lol hehe
    that that's thats this this's it it's its is was sounds sound looks look seems what a an how
    so really super very truly just such absolutely definitely
    great awesome amazing cool nice wonderful lovely beautiful sweet fantastic incredible
    inspiring impressive exciting fun brilliant stunning gorgeous adorable cute neat rad
    good glad happy proud pleased sorry to hear for of you your about news
    love i i'm im am me too same here hope all's all well going fine man dear wish luck
    yes yeah yep yup sure totally ok okay right true indeed agreed exactly""".split()
)
# Words that only acknowledge: a sentence of these alone ("Yes, Paris.") may be an answer.
_ACKNOWLEDGE_WORDS = frozenset("yes yeah yep yup sure ok okay right true indeed exactly".split())
_CHATTER_TOKEN_RE = re.compile(r"[A-Za-z][A-Za-z']*")
# A decimal digit of any script, found by the regex engine: a search tests every sentence of
# every candidate, and a generator over the characters cost it a millisecond.
_DIGIT_RE = re.compile(r"\d")
# Words a name can follow with no comma between: "Hey Mel!", "Congrats Caroline!".
_VOCATIVE_AFTER = frozenset(
    "hey hi hello yo thanks thank congrats congratulations bye dear oh wow aww".split()
)
CHATTER_MAX_WORDS = 10


def is_chatter(sentence: str) -> bool:
    """Whether a chat sentence only reacts and tells nothing (see _CHATTER_WORDS).

    A capitalised word outside the list counts only as the name the sentence is said to (next
    to a comma, or after "hey", "thanks", "congrats"...), at most two of them ("Thanks, Mel!");
    "Portugal is great!" tells something. Acknowledgements alone are not chatter ("Yes,
    Paris." answers a question), nor is anything with a digit or a question mark.
    """
    text = sentence.strip().replace("’", "'")
    if not text or text.endswith("?") or _DIGIT_RE.search(text):
        return False
    matches = list(_CHATTER_TOKEN_RE.finditer(text))
    if not matches or len(matches) > CHATTER_MAX_WORDS:
        return False
    names = 0
    reacting = False
    previous = ""
    for match in matches:
        word = match.group()
        lowered = word.lower()
        if lowered in _CHATTER_WORDS:
            reacting = reacting or lowered not in _ACKNOWLEDGE_WORDS
        elif word[0].isupper() and (
            text[: match.start()].rstrip().endswith(",")
            or text[match.end() :].lstrip().startswith((",", "!", "."))
            or previous in _VOCATIVE_AFTER
        ):
            names += 1
        else:
            return False
        previous = lowered
    return reacting and names <= 2
