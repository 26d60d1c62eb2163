"""Write a small dev set of long technical assistant chats in LoCoMo format.

Shaped like the chats a working user has with an assistant over a project that runs for months:
short user turns (a request, an error, a decision, ~100-300 characters), long assistant replies
(~3,000-4,500 characters of explanation and code), a few sessions per user weeks apart. Planted
in the user's turns, each said once: standing instructions and preferences (asked about later
by questions that share no words with the request they govern), facts about the user and the
project, facts that change later (the later turn is the evidence), and things done in order.

Every text comes from the templates below with a seeded random generator, so the file is the
same on every run; nothing is taken from the benchmark files. Run:

    python bench/longchat_dev.py --out /tmp/longchat-dev.json
    python bench/locomo.py --data /tmp/longchat-dev.json --data-dir /tmp/longchat_data

The questions have a `question_type` (instruction, preference, user-fact, update, order, and
instruction-applies / preference-applies: a later request the statement must shape, sharing no
words with it), so
bench/locomo.py imports the chats as an export (its default for such files); `--ingest chat`
sends them message by message instead.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import datetime, timedelta

# Per project: what it is, the nouns its requests use, and what the user states in it.
PROJECTS = [
    {
        "id": "budget-tracker",
        "intro": "I'm building a personal budget tracker in Flask with SQLite.",
        "things": [
            "the transactions table",
            "the monthly report",
            "the CSV import",
            "the category chart",
            "the login page",
            "the recurring payments job",
        ],
        "instruction": (
            "Always format code snippets with syntax highlighting and the file name on top.",
            "How should you format the code you show me?",
        ),
        "preference": (
            "I prefer minimal dependencies, so no big frameworks on top of Flask.",
            "What do I prefer when it comes to libraries?",
        ),
        "fact": (
            "My first sprint ends on March 14, and my sister Dana is my only tester.",
            "When does my first sprint end?",
            "March 14",
        ),
        "update": (
            ("The demo for my team is on April 2.", "We moved the team demo to April 9."),
            "When is the team demo now?",
            "April 9",
        ),
        "later": (
            "Could you show me how to implement a password reset feature?",
            "Which package should I add for parsing dates in receipts?",
        ),
        "order": (
            ["the CSV import", "the category chart", "the recurring payments job"],
            "In what order did I build the CSV import, the category chart and the "
            "recurring payments job?",
        ),
    },
    {
        "id": "portfolio-site",
        "intro": "I'm making a portfolio site for my photography with Astro and Tailwind.",
        "things": [
            "the gallery page",
            "the contact form",
            "the image pipeline",
            "the dark theme",
            "the blog section",
            "the deploy workflow",
        ],
        "instruction": (
            "From now on, answer in British English and keep explanations short.",
            "Which spelling and answer length did I ask you to use?",
        ),
        "preference": (
            "I'd rather host everything on Netlify than run my own server.",
            "Where would I rather host the site?",
        ),
        "fact": (
            "I shoot with a Fujifilm X-T5 and most of my photos are street scenes from Lisbon.",
            "Which camera do I shoot with?",
            "Fujifilm X-T5",
        ),
        "update": (
            ("The site should launch on May 1.", "The launch date slipped to May 20."),
            "When does the site launch now?",
            "May 20",
        ),
        "later": (
            "Write the About page copy for me.",
            "How do I add a server-side contact form handler?",
        ),
        "order": (
            ["the gallery page", "the dark theme", "the blog section"],
            "Which did I do first: the gallery page, the dark theme or the blog section?",
        ),
    },
    {
        "id": "data-pipeline",
        "intro": "I'm setting up a data pipeline at work with Airflow and dbt on Postgres.",
        "things": [
            "the ingestion DAG",
            "the staging models",
            "the data quality checks",
            "the backfill script",
            "the Slack alerts",
            "the warehouse schema",
        ],
        "instruction": (
            "Never suggest paid SaaS tools unless I ask for them.",
            "What did I tell you about suggesting paid tools?",
        ),
        "preference": (
            "I prefer plain SQL models over Python ones wherever possible.",
            "Do I prefer SQL or Python models?",
        ),
        "fact": (
            "I work at Northwind Logistics and my manager Priya reviews every merge.",
            "Who reviews my merges?",
            "Priya",
        ),
        "update": (
            (
                "We run the pipeline every night at 2 am.",
                "We changed the schedule to run every six hours.",
            ),
            "How often does the pipeline run now?",
            "every six hours",
        ),
        "later": (
            "What should we use to monitor the pipeline in production?",
            "Add a transformation that deduplicates the orders feed.",
        ),
        "order": (
            ["the ingestion DAG", "the data quality checks", "the Slack alerts"],
            "In what order did I set up the ingestion DAG, the data quality checks and "
            "the Slack alerts?",
        ),
    },
]

REQUESTS = [
    "Can you help me with {thing}? It throws an error when the input is empty.",
    "How should I structure {thing} so it is easy to test?",
    "Where would you start if you were refactoring {thing}?",
    "Could you review my approach to {thing}? It feels slow with a few thousand rows.",
    "What is a clean way to add logging to {thing}?",
    "I'm stuck on {thing}: the values come out in the wrong order.",
    "Can you show me how to write tests for {thing}?",
    "Is there a simpler way to handle configuration in {thing}?",
]
PARAGRAPHS = [
    "There are a few ways to approach this, and the right one depends on how the data flows "
    "through {thing}. The simplest option is to keep the logic in one function and validate "
    "the input at the boundary, so every later step can assume it has clean values.",
    "A common source of this kind of bug is state that leaks between calls. Make sure {thing} "
    "does not keep module-level variables that change, and pass what it needs as arguments; "
    "that also makes it much easier to test in isolation.",
    "For performance, measure before you change anything: add a timer around the slow part, "
    "run it with realistic data and look at where the time goes. Often a missing index or a "
    "query inside a loop is the whole story.",
    "When you write tests, start with the behaviour a user would notice: given this input, "
    "{thing} returns that output. Cover the empty case, a typical case and one large case, "
    "and keep each test small enough that its name says what broke.",
    "Configuration is easiest to reason about when it is read once at start-up, validated, "
    "and passed down. Environment variables work well for secrets; a small settings module "
    "with defaults keeps the rest readable.",
    "Logging should say what happened and with which identifiers, not dump whole objects. Use "
    "one logger per module, log at INFO for normal milestones and at WARNING for things an "
    "operator should look at.",
    "If you expect this to grow, it is worth separating reading, transforming and writing "
    "into three functions. Each can then be replaced or tested on its own, and the overall "
    "flow stays readable.",
]
CODE = [
    "```python\ndef load_rows(path):\n    rows = []\n    with open(path) as handle:\n"
    "        for line in handle:\n            line = line.strip()\n            if line:\n"
    "                rows.append(line.split(','))\n    return rows\n```",
    "```python\nimport logging\n\nlogger = logging.getLogger(__name__)\n\n\n"
    "def run(job):\n    logger.info('starting job %s', job.id)\n    result = job.execute()\n"
    "    logger.info('finished job %s with %d rows', job.id, len(result))\n    return result\n```",
    "```sql\nCREATE INDEX IF NOT EXISTS idx_rows_created ON rows (created_at);\n"
    "SELECT date_trunc('month', created_at) AS month, sum(amount)\nFROM rows\n"
    "GROUP BY 1\nORDER BY 1;\n```",
    "```python\nimport pytest\n\n\n@pytest.mark.parametrize('value, expected', [(0, 0), "
    "(1, 1), (10, 55)])\ndef test_values(value, expected):\n    assert compute(value) == expected\n```",
]
ACKS = ["Thanks, that worked.", "Great, I'll try that tonight.", "Makes sense, thank you."]


def reply(rng: random.Random, thing: str) -> str:
    """A long assistant reply: explanation paragraphs with two code blocks between them."""
    parts = [f"Good question about {thing}. Here is how I would approach it."]
    paragraphs = rng.sample(PARAGRAPHS, len(PARAGRAPHS))
    code = rng.sample(CODE, 3)
    for index, paragraph in enumerate(paragraphs):
        parts.append(f"{index + 1}. {paragraph.format(thing=thing)}")
        if index in (1, 3, 5):
            parts.append(code.pop())
    parts.append(
        "Let me know if you want me to go deeper into any of these steps, or if you run into "
        "another error while trying it."
    )
    return "\n\n".join(parts)


def project_conversation(project: dict, index: int, rng: random.Random) -> dict:
    """One user's project: four sessions three to four weeks apart, 24 exchanges each."""
    start = datetime(2026, 1, 12, 9, 30) + timedelta(days=7 * index)
    sessions: dict[str, object] = {}
    planted: dict[str, str] = {}  # what -> dia_id of the turn that says it
    counter = 0
    things = project["things"]
    order_things = project["order"][0]
    # Which session and exchange says what (the rest are plain requests).
    plan = {
        (1, 0): ("intro", project["intro"]),
        (1, 3): ("instruction", project["instruction"][0]),
        (1, 11): ("fact", project["fact"][0]),
        (2, 7): ("preference", project["preference"][0]),
        (2, 15): ("update_old", project["update"][0][0]),
        (1, 19): ("order_0", f"I just finished {order_things[0]}."),
        (2, 21): ("order_1", f"Today I got {order_things[1]} working."),
        (3, 9): ("order_2", f"{order_things[2][0].upper()}{order_things[2][1:]} is done now."),
        (4, 12): ("update_new", project["update"][0][1]),
    }
    for number in range(1, 5):
        moment = start + timedelta(days=(number - 1) * rng.randint(21, 28))
        turns = []
        for exchange in range(24):
            thing = rng.choice(things)
            what, said = plan.get((number, exchange), ("", ""))
            request = rng.choice(REQUESTS).format(thing=thing)
            user_text = f"{said} {request}" if said else request
            if exchange % 5 == 4 and not said:
                user_text = rng.choice(ACKS) + " " + request
            counter += 1
            user_id = f"D{number}:{2 * exchange + 1}"
            turns.append({"speaker": "User", "dia_id": user_id, "text": user_text})
            turns.append(
                {
                    "speaker": "Assistant",
                    "dia_id": f"D{number}:{2 * exchange + 2}",
                    "text": reply(rng, thing),
                }
            )
            if what:
                planted[what] = user_id
        sessions[f"session_{number}"] = turns
        sessions[f"session_{number}_date_time"] = moment.strftime("%-I:%M %p on %-d %B, %Y")
    ask = (start + timedelta(days=120)).strftime("%Y/%m/%d (%a) %H:%M")
    qa = [
        {
            "question": project["instruction"][1],
            "answer": project["instruction"][0],
            "evidence": [planted["instruction"]],
            "category": 4,
            "question_type": "instruction",
        },
        {
            "question": project["preference"][1],
            "answer": project["preference"][0],
            "evidence": [planted["preference"]],
            "category": 4,
            "question_type": "preference",
        },
        {
            "question": project["fact"][1],
            "answer": project["fact"][2],
            "evidence": [planted["fact"]],
            "category": 4,
            "question_type": "user-fact",
        },
        {
            "question": project["update"][1],
            "answer": project["update"][2],
            "evidence": [planted["update_new"]],
            "category": 4,
            "question_type": "update",
        },
        {
            "question": project["order"][1],
            "answer": ", ".join(order_things),
            "evidence": [planted["order_0"], planted["order_1"], planted["order_2"]],
            "category": 2,
            "question_type": "order",
        },
        # A later request the instruction or preference must shape, sharing no words with it:
        # only a profile brings the statement back.
        {
            "question": project["later"][0],
            "answer": project["instruction"][0],
            "evidence": [planted["instruction"]],
            "category": 4,
            "question_type": "instruction-applies",
        },
        {
            "question": project["later"][1],
            "answer": project["preference"][0],
            "evidence": [planted["preference"]],
            "category": 4,
            "question_type": "preference-applies",
        },
        {
            "question": "What am I building?",
            "answer": project["intro"],
            "evidence": [planted["intro"]],
            "category": 4,
            "question_type": "user-fact",
        },
    ]
    for item in qa:
        item["question_date"] = ask
    return {
        "sample_id": project["id"],
        "conversation": {"speaker_a": "User", "speaker_b": "Assistant", **sessions},
        "qa": qa,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    samples = [project_conversation(p, i, rng) for i, p in enumerate(PROJECTS)]
    with open(args.out, "w") as handle:
        json.dump(samples, handle, indent=1)
    turns = sum(
        len(v)
        for s in samples
        for k, v in s["conversation"].items()
        if k.startswith("session_") and isinstance(v, list)
    )
    print(
        f"wrote {len(samples)} users, {turns} turns, "
        f"{sum(len(s['qa']) for s in samples)} questions to {args.out}"
    )


if __name__ == "__main__":
    main()
