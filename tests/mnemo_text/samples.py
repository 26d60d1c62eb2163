"""Conversations shared by the text tests."""

from __future__ import annotations

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
