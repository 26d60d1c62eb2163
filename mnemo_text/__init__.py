"""Derived text without a model: deterministic summaries, facts, headers, titles and tags.

When no OpenAI-compatible model is configured, every piece of derived text in Mnemo comes from
here. Everything is pure Python (regular expressions, counters and a small TF-IDF), so the same
input always gives the same output, nothing touches the network or the database, and a typical
turn pair is processed in well under a millisecond (the importer needs >1,000 pairs/s).

Modules, one job each (lower ones first; each imports only those above it):

- ``words``: stop-words, noise removal and the cached tokenizer every other module uses.
- ``keywords``: ``keywords``, ``tags``, ``title``.
- ``sentences``: sentence splitting, speaker roles, filler/question/request tests.
- ``third_person``: "I moved" -> "The user moved".
- ``facts``: ``extract_facts``.
- ``summaries``: ``summarize``, ``fold_summaries``.
- ``fact_updates``: ``fact_subject``, ``is_update``.
- ``headers``: ``contextual_header``.

Callers import each function from its module (``from mnemo_text.facts import
extract_facts``) and tests patch it there; names with a leading underscore are shared inside
this package only. This is not a provider: it runs with or without an LLM (tags and keywords
always come from here).

Design choices worth knowing:

- Keywords come from content words and short keyphrases (runs of 2-3 content words between
  stop-words and punctuation). English, chat filler and a small multilingual stop list are
  removed, as are numbers, placeholders such as ``[EMAIL]``, URLs, code blocks and laughter.
  Plurals are folded ("recipes" and "recipe" count together). The confidence (0-1) grows with
  the evidence (how often, in how many texts) and with the keyword's rank.
- Summaries are extractive bullet digests: sentences are scored by TF-IDF centrality (or by an
  optional, caller-supplied sentence embedder), picked with maximal marginal relevance so they
  do not repeat each other, compressed (filler openers dropped, long sentences clipped) and
  rewritten in the third person for the user's own statements. A digest never exceeds
  ``max_chars`` nor (past 160 characters) half of the transcript, so it cannot turn into a
  transcript replay.
- Facts come only from the user's own first-person statements. What the assistant says is never
  turned into a fact, not even when it "confirms" something: an assistant restating or guessing
  is exactly how wrong memories are born, and a true fact the user said is already captured.
- ``is_update`` is a documented pattern rule (see its docstring), not a model judgement.
"""
