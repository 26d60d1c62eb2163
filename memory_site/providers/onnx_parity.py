"""The embedder's parity check: how close an ONNX graph's vectors are to torch's, without torch.

The export (`onnx_export.py`, the one place torch runs) stores the unmodified model's vectors
of PARITY_SENTENCES beside the graphs. Any process can then measure a graph on the CPU it runs
on with ONNX Runtime alone: a cache exported on one machine (a Docker build, say) is measured
again, not exported again, where the CPU differs, since int8 kernels differ by CPU.
"""

from __future__ import annotations

import numpy as np

# The parity check's fixed sentences: chat turns, questions, facts, mixed scripts, a text past
# the 256-token limit, the shortest inputs. Changing them changes what "parity" means.
PARITY_SENTENCES = [
    "",
    "ok",
    "Thanks!",
    "How do I bake sourdough bread at home?",
    "What's the way to make homemade sourdough loaves?",
    "The stock market fell sharply on Tuesday.",
    "When did Caroline go to the LGBTQ support group?",
    "What fields would Melanie be likely to pursue in her education?",
    "Where did I say I wanted to go hiking next summer?",
    "My sister's wedding is on the 14th of June in Porto.",
    "I switched from Postgres 15 to 17 last month and the HNSW index rebuild took two hours.",
    "Remind me what the vet said about Biscuit's diet.",
    "The quarterly VAT return is due at the end of April.",
    "Marathon taper: cut mileage by a third in the last two weeks.",
    "Kyoto in autumn: Arashiyama early, Fushimi Inari after dark, skip Kiyomizu at noon.",
    "Zürich café 日本 😊 naïve façade",
    "Ich habe gestern mit meiner Mutter über den Umzug nach Berlin gesprochen.",
    "user: can you explain django's select_related vs prefetch_related?\nassistant: "
    "select_related follows foreign keys in one SQL join; prefetch_related runs a second "
    "query per relation and joins in Python, which also works for many-to-many.",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.\n"
    "Melanie: Wow, that's amazing! What happened there?",
    "Melanie: I'm starting to paint again, mostly landscapes of the lake near our house. "
    "The kids love watching, and honestly it's the calmest part of my week.",
    "I'm allergic to penicillin and mildly to cats; my doctor is Dr. Okafor at Elm Street.",
    "Budget for the trip: flights 640 EUR, hotel 5 nights at 120, rail pass 200, food ~40/day.",
    "def embed(texts): return [model.encode(t) for t in texts]  # TODO batch this",
    "We decided to adopt a rescue dog named Pepper after volunteering at the shelter.",
    "Project Atlas kickoff moved to Thursday 10:00; Priya owns the migration plan.",
    'ERROR: relation "rag_store" does not exist at character 15',
    "I have been learning the piano for three years and just played my first recital.",
    "Do you remember the name of the book about the history of salt I mentioned?",
    " ".join(
        [
            "A long note about pruning roses in late winter, just above an outward-facing bud,",
            "removing dead, damaged and crossing stems first, then thinning the centre so air",
            "moves through the plant, feeding with a balanced fertiliser once the buds break,",
            "and mulching generously while the soil is still moist from the spring rains.",
        ]
        * 8
    ),
]


def parity_check(reference: np.ndarray, embedder) -> dict:
    """Lowest and mean cosine of the parity sentences' vectors from `embedder` (an
    OnnxEmbedder on the graph measured; each text embedded alone and all together, as the
    runtime does) to the unmodified torch model's vectors `reference`."""
    together = np.array(embedder.embed(PARITY_SENTENCES))
    alone = np.array([embedder.embed([text])[0] for text in PARITY_SENTENCES])
    cosines = np.minimum((together * reference).sum(axis=1), (alone * reference).sum(axis=1))
    worst = int(np.argmin(cosines))
    return {
        "min_cosine": round(float(cosines.min()), 5),
        "mean_cosine": round(float(cosines.mean()), 5),
        "worst_sentence": PARITY_SENTENCES[worst][:80],
        "sentences": len(PARITY_SENTENCES),
    }
