"""The subject of a fact and the documented rule that says when a new fact replaces
an old one (``is_update``)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from mnemo_text.facts import _fact_key, extract_facts
from mnemo_text.third_person import _MODALS, _VERB_HINTS, _names
from mnemo_text.words import STOP_WORDS, plural_fold, verb_lemma

_SUBJECT_VERBS = (
    _VERB_HINTS
    | _MODALS
    | frozenset(
        """doesn't isn't wasn't hasn't haven't aren't weren't didn't won't moves relocated resides
    resided turned joined started works worked teaches taught studies studied owns speaks plans
    plans loves hates enjoys prefers drives runs lives""".split()
    )
)


_LEAD_IN = re.compile(r"\s*[\w' -]{1,30}:\s+")


def _split_subject(fact: str, user_name: str) -> tuple[list[str], list[str]]:
    """(subject words, predicate words), lowercase."""
    name_words = _names(user_name)[0].lower().split()
    # A short lead-in before the user's name ("Big news: the user moved to Denver") is not
    # part of the subject.
    lead = _LEAD_IN.match(fact)
    if lead and fact[lead.end() :].lower().startswith(" ".join(name_words)):
        fact = fact[lead.end() :]
    lowered = [word.lower() for word in re.findall(r"[\w'-]+", fact.replace("’", "'"))]
    count = len(name_words)
    if count and len(lowered) >= count and lowered[: count - 1] == name_words[:-1]:
        head = lowered[count - 1]
        if head == name_words[-1]:
            return lowered[:count], lowered[count:]
        if head in {name_words[-1] + "'s", name_words[-1] + "'"}:
            # "The user's older sister Anna is ...": the word after the possessive is always
            # part of the subject, which then runs to the first verb.
            for index in range(count + 1, min(len(lowered), count + 7)):
                word = lowered[index]
                if word in _SUBJECT_VERBS or (word.endswith("ed") and len(word) > 4):
                    return lowered[:index], lowered[index:]
            return lowered[: count + 1], lowered[count + 1 :]
    for index in range(1, min(len(lowered), 8)):
        if lowered[index] in _SUBJECT_VERBS:
            return lowered[:index], lowered[index:]
    return lowered[:2], lowered[2:]


def fact_subject(fact: str, *, user_name: str = "The user") -> str:
    """The lowercase subject of a fact: "the user" or "the user's sister anna".

    For facts written by ``extract_facts`` the subject is the user or a possessive phrase about
    the user ending before the first verb; other sentences fall back to the words before their
    first common verb.
    """
    if not fact or not fact.strip():
        return ""
    subject, _predicate = _split_subject(fact, user_name)
    return " ".join(subject)


_NEGATIONS = frozenset({"not", "never", "no", "longer", "doesn't", "isn't", "wasn't", "don't"})
_TIME_WORDS = frozenset(
    """now currently recently just still also already again anymore last next this ago since
    week weeks month months year years yesterday today tomorrow soon lately finally then
    january february march april may june july august september october november december
    spring summer autumn fall winter back""".split()
)
# Words that say when or how sure, never what: "just moved to", "finally got married".
_PREDICATE_ADVERBS = frozenset(
    "does do did now currently recently just finally officially actually also still".split()
)
# Adjectives that date a possessive subject without changing it: "my new favourite cafe" is
# the same subject as "my favourite cafe".
_SUBJECT_DATING = frozenset("new current latest old previous former".split())
_NUMBER_WORDS = {
    word: index
    for index, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
_RELATION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        (
            "residence",
            r"^(?:(?:is|has been|was) )?(?:lives?|lived|living|moved|moves|moving|relocated|"
            r"relocates|relocating|resides|resided|based|located|settled)(?: (?:back|over))?"
            r"(?: (?:in|to|at|near|into|out to))?\b",
        ),
        (
            "employer",
            r"^(?:(?:is|has been|was) )?(?:works?|worked|working|employed) (?:at|for|by)\b|"
            r"^(?:joined|got a job (?:at|with)|started (?:a new job|working) (?:at|for)|"
            r"started at)\b",
        ),
        ("job", r"^(?:(?:is|has been|was) )?(?:works?|worked|working|employed) as\b"),
        ("name", r"^(?:is called|is named|goes by)\b"),
        (
            "age",
            # "is 35" alone: "Actually I'm 35" after "I'm 34 years old".
            r"^(?:is|turned|turns) (?:\d+|[a-z]+-?[a-z]*) years? old\b|^turned \d+\b|"
            r"^is \d{1,3}$",
        ),
        ("origin", r"^(?:is|comes|came|was) (?:originally )?from\b|^was born in\b"),
        (
            "marital",
            r"^(?:is|got|was) (?:married|single|divorced|engaged|widowed|separated)\b",
        ),
        ("diet", r"^is (?:a )?(?:vegan|vegetarian|pescatarian|carnivore|keto)\b"),
    )
)
# The end of a job, said as such: the employer relation, negated ("quit the user's job at
# Globex" replaces "works at Globex"; "is unemployed" replaces any employer).
_EMPLOYMENT_ENDS = re.compile(
    r"^quit (?:(?:the user's|my|his|her|their|a|the) )?(?:(?:job|position|role) )?(?:(?:at|with) )?|"
    r"^(?:left|lost) (?:the user's|my|his|her|their|a|the) (?:job|position|role)(?: (?:at|with))?\b|"
    r"^(?:was|got|has been|is) (?:fired|laid off)(?: (?:from|by))?\b|"
    r"^(?:is|became) (?:now )?unemployed\b|^(?:is|became) out of work\b"
)
# Relations a person holds one value of at a time; a different value replaces the old one.
_SINGLE_VALUED = frozenset(
    {"residence", "employer", "job", "name", "age", "origin", "marital", "diet", "attribute"}
)


@dataclass(frozen=True)
class _ParsedFact:
    subject: str
    relation: str
    value: frozenset[str]
    numbers: tuple[float, ...]
    negated: bool


_YEAR_RE = re.compile(r"(?:1[89]|20)\d\d")


def _is_number(word: str) -> bool:
    return word in _NUMBER_WORDS or word.replace(".", "", 1).isdigit()


def _parse_fact(fact: str, user_name: str) -> _ParsedFact:
    subject_words, predicate = _split_subject(fact, user_name)
    if any(word.endswith(("'s", "'")) for word in subject_words):
        subject_words = [word for word in subject_words if word not in _SUBJECT_DATING]
    negated = any(word in _NEGATIONS or word.endswith("n't") for word in predicate)
    cleaned: list[str] = []
    for word in predicate:
        if word in _NEGATIONS or word in _PREDICATE_ADVERBS:
            continue
        if word.endswith("n't"):
            word = {"isn't": "is", "wasn't": "was", "hasn't": "has", "aren't": "is"}.get(word, "")
            if not word:
                continue
        cleaned.append(word)
    phrase = " ".join(cleaned)
    relation, rest = "", phrase
    ended = _EMPLOYMENT_ENDS.match(phrase)
    if ended:
        relation, rest, negated = "employer", phrase[ended.end() :], True
    for name, pattern in () if relation else _RELATION_PATTERNS:
        match = pattern.match(phrase)
        if match:
            # For age, diet and marital status the value is inside the matched words.
            relation = name
            rest = phrase if name in {"age", "diet", "marital"} else phrase[match.end() :]
            break
    if not relation and cleaned:
        possessive = any(word.endswith(("'s", "'")) for word in subject_words)
        verb, rest = cleaned[0], " ".join(cleaned[1:])
        if possessive and verb in {"is", "are", "was", "were"}:
            relation = "attribute"
        else:
            relation = "verb:" + verb_lemma(verb)
            following = cleaned[1] if len(cleaned) > 1 else ""
            if (
                verb in {"is", "are", "was", "were", "am"}
                and following
                and following not in {"a", "an", "the"}
                and not _is_number(following)
            ):
                # "is vegan" and "is tall" are different relations; "is a nurse" is "be".
                relation += " " + following
    value_words = re.findall(r"[\w'-]+", rest)
    numbers = tuple(
        float(_NUMBER_WORDS[word]) if word in _NUMBER_WORDS else float(word)
        for word in value_words
        if _is_number(word) and not _YEAR_RE.fullmatch(word)
    )
    value = frozenset(
        plural_fold(word)
        for word in value_words
        if word not in STOP_WORDS
        and word not in _TIME_WORDS
        and not _is_number(word)
        and not _YEAR_RE.fullmatch(word)
    )
    return _ParsedFact(" ".join(subject_words), relation, value, numbers, negated)


def _same_subject(a: str, b: str) -> bool:
    """Equal, or a longer name for the same possessive ("sister" / "sister anna")."""
    if a == b:
        return True
    shorter, longer = sorted((a.split(), b.split()), key=len)
    has_possessive = any(word.endswith(("'s", "'")) for word in shorter[:-1])
    return has_possessive and longer[: len(shorter)] == shorter


def is_update(old: str, new: str, *, user_name: str = "The user") -> bool:
    """True if ``new`` replaces ``old``: same subject, same relation, a different value.

    The rule, applied to facts in ``extract_facts`` form:

    1. Both facts are split into subject (``fact_subject``), relation and value. Relations are
       normalised into classes so that wording does not matter: residence ("lives in", "moved
       to", "relocated to", "is based in"), employer ("works at/for", "joined"), job ("works
       as"), name, age, origin, marital status, diet; a possessive subject with "is" is an
       attribute ("The user's favourite colour is ..."); any other verb is its own relation.
    2. Subjects must match (a longer name of the same possessive counts: "sister" / "sister
       Anna"), and relations must be the same class.
    3. Single-valued relations (the classes above and attributes) are updated when their values
       differ, ignoring time words: "lives in Paris" -> "moved to Berlin last month" is an
       update, "moved to Berlin" -> "lives in Berlin" is not.
    4. Any relation is updated when only its polarity flips ("likes coffee" -> "doesn't like
       coffee") or only its number changes ("has two kids" -> "has three kids").
    5. Multi-valued relations ("likes", "has", "speaks"...) with a different value are additions,
       not updates. Identical facts are not updates.
    """
    if not old or not new or _fact_key(old) == _fact_key(new):
        return False
    return _parsed_update(_parse_fact(old, user_name), _parse_fact(new, user_name))


def _parsed_update(before: _ParsedFact, after: _ParsedFact) -> bool:
    """`is_update` of two parsed facts (rules 2-5)."""
    if not _same_subject(before.subject, after.subject):
        return False
    if before.relation != after.relation or not before.relation:
        return False
    same_value = before.value == after.value or bool(
        before.value
        and after.value
        and (before.value <= after.value or after.value <= before.value)
    )
    if before.negated != after.negated and same_value:
        return True
    if after.negated and not after.value and not before.negated:
        # "is unemployed" after "works at Globex": no value any more.
        return before.relation in _SINGLE_VALUED
    if before.numbers != after.numbers and before.value == after.value and before.numbers:
        return True
    if before.relation in _SINGLE_VALUED and before.negated == after.negated:
        return bool(before.value or after.value) and not same_value
    return False


# The words a statement of each single-valued relation uses, for a first-person question
# about it ("where do I live now?" must find "I just moved to Denver", which shares no word
# with it): the keyword leg of search adds them (context_app.search_quality).
RELATION_TERMS: dict[str, str] = {
    "residence": "live lives living moved move relocated based home",
    "employer": "work works working job company employer joined hired",
    "job": "work works job profession career role position",
    "age": "old age birthday turned",
    "marital": "married engaged divorced single partner wife husband wedding",
    "diet": "vegan vegetarian pescatarian diet eat",
}
_RELATION_QUESTIONS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        (
            "residence",
            r"\bwhere (?:do|did|am|have) i (?:currently |now )?(?:live|living|lived|"
            r"move|moved|relocate|stay|based)\b|\b(?:city|town|country|state|place) "
            r"(?:do|did|am|have) i (?:currently |now )?(?:live|living|lived|move|moved)|"
            r"\bwhere (?:is|'s) my (?:current |new )?(?:home|house|apartment|flat)\b",
        ),
        (
            "employer",
            r"\bwhere (?:do|did|am) i (?:currently |now )?(?:work|working)\b|"
            r"\b(?:company|employer|firm) (?:do|did|am) i (?:currently |now )?(?:work|working)",
        ),
        (
            "job",
            r"\bwhat (?:is|'s) my (?:current )?(?:job|profession|occupation|role)\b|"
            r"\bwhat do i do for (?:a )?(?:living|work)\b",
        ),
        ("age", r"\bhow old am i\b"),
        ("marital", r"\bam i (?:married|engaged|single|divorced)\b"),
    )
)


def question_relation(question: str) -> str:
    """The single-valued relation a first-person question asks about ("where do I live?" ->
    "residence"), or ""."""
    for name, pattern in _RELATION_QUESTIONS:
        if pattern.search(question):
            return name
    return ""


def _clauses(fact: str, user_name: str) -> list[str]:
    """A fact of two clauses with one subject as two facts: "The user lives in Austin and
    works at Globex" -> "the user lives in austin", "the user works at globex" (a new value of
    one is not a new value of the other)."""
    subject, predicate = _split_subject(fact, user_name)
    clauses: list[list[str]] = [[]]
    for index, word in enumerate(predicate):
        following = [w for w in predicate[index + 1 : index + 3] if w not in _PREDICATE_ADVERBS]
        if (
            word == "and"
            and clauses[-1]
            and following
            and following[0] in _SUBJECT_VERBS
            and following[0] not in _MODALS
        ):
            clauses.append([])
            continue
        clauses[-1].append(word)
    if len(clauses) == 1:
        return [fact]
    return [" ".join([*subject, *clause]) for clause in clauses if clause]


def statements_parse(facts: list[str], *, user_name: str = "The user") -> list[_ParsedFact]:
    """The facts parsed once for `statement_updates` (distinct facts only; a fact of two
    clauses is two)."""
    seen, parsed = set(), []
    for fact in facts:
        key = _fact_key(fact)
        if key and key not in seen:
            seen.add(key)
            parsed.extend(_parse_fact(clause, user_name) for clause in _clauses(fact, user_name))
    return parsed


def statements_replaced(older: list, newer: list, *, relation: str = "") -> bool:
    """Whether `newer` replaces what `older` states (both ``statements_parse`` results): each
    of older's statements is updated by one of newer's (``is_update``), or, with `relation`
    (what a question asks about: "residence"), each of its statements of that relation. One
    statement updated among others ("lives in Austin and works at Globex", then "moved to
    Denver") leaves the rest standing."""
    considered = [fact for fact in older if not relation or fact.relation == relation]
    return bool(considered) and all(
        any(
            before.relation == after.relation and _parsed_update(before, after)
            for after in newer
            if before != after
        )
        for before in considered
    )


def statement_updates(older: list, newer: list, *, user_name: str = "The user") -> bool:
    """Whether any fact of `newer` replaces one of `older` (``is_update``); both are fact
    strings or, cheaper when compared many times, ``statements_parse`` results."""
    if older and isinstance(older[0], str):
        older = statements_parse(older, user_name=user_name)
    if newer and isinstance(newer[0], str):
        newer = statements_parse(newer, user_name=user_name)
    return any(
        before.relation == after.relation and _parsed_update(before, after)
        for before in older
        for after in newer
        if before != after
    )


USER_STATEMENT_CHARS = 600
_USER_LINE = re.compile(r"^(?:\*\*)?User:(?:\*\*)?\s*", re.IGNORECASE)
_OTHER_LINE = re.compile(r"^(?:\*\*)?[A-Z][\w .'-]{0,40}:(?:\*\*)?\s", re.MULTILINE)


_DIGEST_USER_LINE = re.compile(r"^- (the user\b.*)$", re.IGNORECASE | re.MULTILINE)


@functools.lru_cache(maxsize=4096)
def user_statements(content: str, *, is_fact: bool = False, is_summary: bool = False) -> tuple:
    """The facts the user states in an item, parsed (``extract_facts`` of its "User:" part): a
    chat message or passage "User: ...", an imported exchange "**User:** ... **Assistant:**
    ...", a committed fact ("The user lives in Austin" or in the user's words), or a session
    summary's "- The user ..." lines. Other speakers' lines and the assistant's are left out.
    Cached by text: the same items come back search after search, and parsing them was ~1 ms of
    each (a tuple: shared between searches)."""
    if is_fact and content.lower().startswith("the user"):
        return tuple(statements_parse([content]))
    if is_summary:
        lines = _DIGEST_USER_LINE.findall(content[: USER_STATEMENT_CHARS * 2])
        return tuple(statements_parse(lines))
    text = content
    if not is_fact:
        match = _USER_LINE.match(content)
        if match is None:
            return ()
        text = content[match.end() :]
        # From the second character: a sentence of the user's own that opens with "Big news:"
        # is not another speaker's line.
        following = _OTHER_LINE.search(text, 1)
        if following is not None:
            text = text[: following.start()]
    text = _WE.sub(lambda match: _WE_AS_I[match.group(0).lower()], text[:USER_STATEMENT_CHARS])
    return tuple(statements_parse(extract_facts([("user", text)])))


# "We just moved to Denver", "We're vegetarian now": what the user says of their household is
# said of the user too (only for comparing statements; stored facts keep the user's words).
_WE_AS_I = {
    "we're": "I'm",
    "we've": "I've",
    "we'll": "I'll",
    "we'd": "I'd",
    "we are": "I am",
    "we were": "I was",
    "we": "I",
}
_WE = re.compile(r"(?<![\w'])(?:we're|we've|we'll|we'd|we are|we were|we)(?![\w'])", re.IGNORECASE)
