"""The contextual header that orients a model reading a chunk out of its conversation."""

from __future__ import annotations

import re

from mnemo_text.keywords import _tags, keywords
from mnemo_text.sentences import (
    _FILLER_SENTENCE_RE,
    _clip,
    _is_question,
    _is_request,
    _sentences,
)
from mnemo_text.summaries import _digest_items
from mnemo_text.words import _SPACE_RE, _content_keys

_PLATFORM_NAMES = {
    "chatgpt": "ChatGPT",
    "openai": "ChatGPT",
    "claude": "Claude",
    "gemini": "Gemini",
    "local": "Mnemo",
    "mnemo": "Mnemo",
    "api": "API",
}
_ISO_DATE_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$")


def _platform_label(platform: str) -> str:
    platform = (platform or "").strip()
    if not platform:
        return ""
    return _PLATFORM_NAMES.get(platform.lower(), platform)


def _date_label(date: str) -> str:
    date = (date or "").strip()
    match = _ISO_DATE_RE.match(date)
    return match.group(1) if match else date


def _human_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _best_sentence(sentences: list[str], topic_keys: set[str]) -> str:
    best, best_score = "", -1.0
    for sentence in sentences:
        keys = set(_content_keys(sentence))
        score = len(keys & topic_keys) + 0.1 * min(len(keys), 10)
        if _is_question(sentence) or _is_request(sentence):
            score += 2.0  # the ask is the clearest statement of intent
        if score > best_score:
            best, best_score = sentence, score
    return best


def _quoted(sentence: str, limit: int = 180) -> str:
    """A quotation that ends its sentence: 'said: "I moved".' / 'asked: "Where?"'."""
    text = _clip(sentence.strip().replace('"', "'"), limit).rstrip(" .,;:")
    return f'"{text}"' + ("" if text.endswith(("?", "!", "…")) else ".")


def contextual_header(
    *,
    user_text: str,
    assistant_text: str,
    title: str = "",
    prior: str = "",
    platform: str = "",
    date: str = "",
    topics: list[str] | None = None,
) -> str:
    """A 2-4 sentence header that orients a model reading this chunk out of context.

    Sentence 1 names the platform, the conversation title, the date and the topics (given, or
    the chunk's own tags with the user's words weighted double). Sentence 2 says what the user
    wanted, quoting their most telling question, request or statement. Sentence 3 (if ``prior``
    is given) recalls the earlier context; the last one lists what the assistant's answer
    covered. Never a generic "this chunk discusses a conversation".
    """
    user_text = user_text if isinstance(user_text, str) else ""
    assistant_text = assistant_text if isinstance(assistant_text, str) else ""
    topic_list = [t for t in (topics or []) if isinstance(t, str) and t.strip()]
    if not topic_list:
        # The user's words say what the exchange is about; the answer only helps.
        topic_list = _tags([user_text, assistant_text], 3, first_text_weight=2.0)
    topic_words = [topic.replace("-", " ").replace("_", " ").strip() for topic in topic_list]
    topic_keys = {key for topic in topic_words for key in _content_keys(topic)}

    platform_label = _platform_label(platform)
    date_label = _date_label(date)
    opening = f"{platform_label} conversation" if platform_label else "Conversation"
    if title and title.strip():
        opening += f' "{_clip(title.strip(), 80)}"'
    if date_label:
        opening += f" from {date_label}"
    user_sentences = [s for s in _sentences(user_text) if not _FILLER_SENTENCE_RE.match(s)]
    if topic_words:
        opening += f" about {_human_list(topic_words)}."
    elif user_sentences:
        opening += " with a short exchange on a single point."
    elif user_text.strip():
        opening += " opening with a greeting and no specific topic yet."
    else:
        opening += " with no user message."
    sentences = [opening]

    if user_sentences:
        ask = _best_sentence(user_sentences, topic_keys)
        quoted = _quoted(ask)
        if _is_question(ask):
            sentences.append(f"The user wanted to know: {quoted}")
        elif _is_request(ask):
            sentences.append(f"The user asked the assistant: {quoted}")
        else:
            sentences.append(f"The user said: {quoted}")
    elif user_text.strip():
        sentences.append(f"The user only wrote {_quoted(user_text.strip(), 60)}")
    else:
        sentences.append("The exchange starts from the assistant's side.")

    if prior and prior.strip():
        items = _digest_items(prior)
        prior_text = "; ".join(item[2:].rstrip(".") for item in items[:3]) if items else prior
        prior_text = _clip(_SPACE_RE.sub(" ", prior_text).strip().rstrip("."), 200)
        sentences.append(f"Earlier in the conversation: {prior_text}.")

    covered = [
        phrase
        for phrase, _confidence in keywords([assistant_text], k=6)
        if not set(_content_keys(phrase)) <= topic_keys
    ][:3]
    if covered:
        sentences.append(f"The assistant's answer covered {_human_list(covered)}.")
    elif assistant_text.strip() and len(sentences) < 3:
        reply = _sentences(assistant_text)
        if reply:
            sentences.append(f"The assistant replied: {_quoted(reply[0], 120)}")
    return " ".join(sentences[:4])
