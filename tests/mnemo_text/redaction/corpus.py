"""Labelled corpus for ``mnemo_text.redaction``, written by hand for Mnemo.

Each case is a chat-like text and the spans a careful human would redact, as ``(kind, exact
substring)`` pairs in text order.  Hard negatives carry no spans.  Every key, card and account
number below is fake: test card numbers published by the card networks, IBAN examples from the
national registries, fictional phone ranges (555-01xx, Ofcom's 020 7946 0xxx / 07700 900xxx)
and random strings shaped like provider tokens.

``known_limit`` marks cases the detector is known to get wrong (the label is still the truth);
the tests run them as strict expected failures and the benchmark counts them, so the figures it
prints include the misses.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    text: str
    spans: tuple[tuple[str, str], ...] = ()
    known_limit: str = ""


def expected_offsets(case: Case) -> list[tuple[str, int, int]]:
    """Resolve the labelled substrings to ``(kind, start, end)``, searching in text order."""
    resolved = []
    position = 0
    for kind, substring in case.spans:
        start = case.text.find(substring, position)
        if start == -1:
            raise ValueError(f"{substring!r} not found after offset {position} in {case.text!r}")
        resolved.append((kind, start, start + len(substring)))
        position = start + len(substring)
    return resolved


def C(text: str, *spans: tuple[str, str], limit: str = "") -> Case:  # noqa: N802 - table syntax
    return Case(text, tuple(spans), limit)


def EMAIL(value: str) -> tuple[str, str]:  # noqa: N802
    return ("EMAIL", value)


def PHONE(value: str) -> tuple[str, str]:  # noqa: N802
    return ("PHONE", value)


def CARD(value: str) -> tuple[str, str]:  # noqa: N802
    return ("CARD", value)


def IBAN(value: str) -> tuple[str, str]:  # noqa: N802
    return ("IBAN", value)


def SSN(value: str) -> tuple[str, str]:  # noqa: N802
    return ("SSN", value)


def IP(value: str) -> tuple[str, str]:  # noqa: N802
    return ("IP", value)


def SECRET(value: str) -> tuple[str, str]:  # noqa: N802
    return ("SECRET", value)


def PRIVATE_KEY(value: str) -> tuple[str, str]:  # noqa: N802
    return ("PRIVATE_KEY", value)


def PASSWORD(value: str) -> tuple[str, str]:  # noqa: N802
    return ("PASSWORD", value)


EMAIL_CASES = (
    C(
        "Can you send the invoice to maria.gonzalez@example.com by Friday?",
        EMAIL("maria.gonzalez@example.com"),
    ),
    C(
        "my work address is j.doe+newsletter@mail.example.co.uk, personal one is "
        "jdoe1984@gmail.com",
        EMAIL("j.doe+newsletter@mail.example.co.uk"),
        EMAIL("jdoe1984@gmail.com"),
    ),
    C("Contact: support@acme-corp.io", EMAIL("support@acme-corp.io")),
    C("E-Mail bitte an jörg.müller@beispiel.de schicken.", EMAIL("jörg.müller@beispiel.de")),
    C("Écris-moi à élodie.martin@exemple.fr quand tu peux.", EMAIL("élodie.martin@exemple.fr")),
    C("メールはtanaka.hiroshi@example.jpまでお願いします。", EMAIL("tanaka.hiroshi@example.jp")),
    C("我的邮箱是 wang.lei@example.cn，谢谢", EMAIL("wang.lei@example.cn")),
    C("Пишите на ivan.petrov@example.ru, отвечу вечером.", EMAIL("ivan.petrov@example.ru")),
    C(
        '<a href="mailto:sales@shop.example.com">Email us</a>',
        EMAIL("sales@shop.example.com"),
    ),
    C(
        'From: "Alice Smith" <alice.smith@corp.example.org>',
        EMAIL("alice.smith@corp.example.org"),
    ),
    C(
        "cc: first_last@sub.domain.example.museum on the thread",
        EMAIL("first_last@sub.domain.example.museum"),
    ),
    C("email me (bob@example.net).", EMAIL("bob@example.net")),
    C("UPPER.CASE@EXAMPLE.COM is also an address", EMAIL("UPPER.CASE@EXAMPLE.COM")),
    C(
        "the mail to o'connor@example.ie bounced twice",
        EMAIL("o'connor@example.ie"),
    ),
    C(
        "Reply-To: noreply@notifications.example.com",
        EMAIL("noreply@notifications.example.com"),
    ),
    C(
        "Send the CV to hr@example.com; cc recruiting@example.com",
        EMAIL("hr@example.com"),
        EMAIL("recruiting@example.com"),
    ),
    C("It goes to user@example.com.", EMAIL("user@example.com")),
    C("راسلني على ahmed.ali@example.ae من فضلك", EMAIL("ahmed.ali@example.ae")),
    C("मेरा ईमेल priya.sharma@example.in है", EMAIL("priya.sharma@example.in")),
    C(
        '{"email": "kim.lee@example.kr", "name": "Kim"}',
        EMAIL("kim.lee@example.kr"),
    ),
    C("Email: a@b.co", EMAIL("a@b.co")),
    C("write to jane_doe-99@example-mail.com", EMAIL("jane_doe-99@example-mail.com")),
    C("id,name,email\n17,Lena,lena.k@example.se\n", EMAIL("lena.k@example.se")),
    C(
        "@john please forward this to maria@example.org",
        EMAIL("maria@example.org"),
    ),
    C(
        "Mi correo es 'sofia.ruiz@example.es' y el de mi jefe es l.ortega@example.es.",
        EMAIL("sofia.ruiz@example.es"),
        EMAIL("l.ortega@example.es"),
    ),
    C(
        "ssh-keygen -C 'dev.ops@example.com' generated the key",
        EMAIL("dev.ops@example.com"),
    ),
    C(
        "the customer, Paul (paul.meyer@example.at), asked for a refund",
        EMAIL("paul.meyer@example.at"),
    ),
    C(
        "Obfuscated: bob at example dot com",
        EMAIL("bob at example dot com"),
    ),
    C("write to jane.doe [at] example [dot] org", EMAIL("jane.doe [at] example [dot] org")),
    C("Kontakt: info(at)firma-beispiel.de", EMAIL("info(at)firma-beispiel.de")),
)

EMAIL_NEGATIVES = (
    C("Use the @property decorator together with @staticmethod."),
    C("git clone git@github.com:mnemo/mnemo.git && cd mnemo"),
    C("Use logo@2x.png and icon@3x.png for retina screens."),
    C("npm install react@18.2.0 vue@3.4.21 --save"),
    C("Ping @channel and @here before the 5pm release."),
    C("That is 5 @ $3.99 each, 19.95 in total."),
    C("docker pull python@sha256:9c3f2a8b0d7e1f4c5a6b7d8e9f0a1b2c3d4e5f60"),
    C("In the formula a@b means matrix product, see numpy.matmul."),
    C("Look at numpy dot product versus the cross product."),
    C("We met at the station, dot on time."),
)

PHONE_CASES = (
    C("Call me at +44 20 7946 0958 after lunch.", PHONE("+44 20 7946 0958")),
    C("My number is +1-415-555-0132.", PHONE("+1-415-555-0132")),
    C("Office: (415) 555-0132, ask for Dana.", PHONE("(415) 555-0132")),
    C("text 415-555-0132 when you land", PHONE("415-555-0132")),
    C("Ring the London office on 020 7946 0958.", PHONE("020 7946 0958")),
    C("Unsere Nummer: +49 30 12345678", PHONE("+49 30 12345678")),
    C("Appelle-moi au +33 1 23 45 67 89 demain.", PHONE("+33 1 23 45 67 89")),
    C("Mon portable : +33 6 12 34 56 78", PHONE("+33 6 12 34 56 78")),
    C("UK desk: +44 (0)20 7946 0958", PHONE("+44 (0)20 7946 0958")),
    C("NYC: +1 (212) 555-0198 ext. 12", PHONE("+1 (212) 555-0198")),
    C("fax 415.555.0132", PHONE("415.555.0132")),
    C("Toll free 1-800-555-0199 (24/7).", PHONE("1-800-555-0199")),
    C("WhatsApp me on +91 98765 43210 pls", PHONE("+91 98765 43210")),
    C("東京オフィス: +81 3-1234-5678", PHONE("+81 3-1234-5678")),
    C("我的手机号 +86 138 0013 8000", PHONE("+86 138 0013 8000")),
    C(
        "Sydney office +61 2 5550 1234, mobile +61 412 345 678",
        PHONE("+61 2 5550 1234"),
        PHONE("+61 412 345 678"),
    ),
    C("Llámame al +34 612 34 56 78 esta tarde.", PHONE("+34 612 34 56 78")),
    C("Roma: +39 06 1234 5678", PHONE("+39 06 1234 5678")),
    C("Bel me op +31 20 123 4567.", PHONE("+31 20 123 4567")),
    C("Meu celular é +55 11 91234-5678", PHONE("+55 11 91234-5678")),
    C("Звоните: +7 495 123-45-67", PHONE("+7 495 123-45-67")),
    C("Dublin +353 1 234 5678", PHONE("+353 1 234 5678")),
    C("Dubai mobile +971 50 123 4567", PHONE("+971 50 123 4567")),
    C("SG hotline +65 6123 4567", PHONE("+65 6123 4567")),
    C("Hong Kong +852 2123 4567", PHONE("+852 2123 4567")),
    C("my mobile is 07700 900123", PHONE("07700 900123")),
    C("Leeds branch 01632 960123", PHONE("01632 960123")),
    C("Festnetz 030 12345678, Handy 0171 1234567", PHONE("030 12345678"), PHONE("0171 1234567")),
    C("München: 089/12345678", PHONE("089/12345678")),
    C("Mon fixe est le 01 23 45 67 89.", PHONE("01 23 45 67 89")),
    C("Portable 06.12.34.56.78", PHONE("06.12.34.56.78")),
    C("電話は03-1234-5678です", PHONE("03-1234-5678")),
    C("携帯 090-1234-5678 に連絡してください", PHONE("090-1234-5678")),
    C("Sydney landline 02 9876 5432", PHONE("02 9876 5432")),
    C("Aussie mobile 0412 345 678", PHONE("0412 345 678")),
    C("saved as +4915112345678 in my contacts", PHONE("+4915112345678")),
    C("E.164: +14155550132", PHONE("+14155550132")),
    C("from abroad dial 0044 20 7946 0958", PHONE("0044 20 7946 0958")),
    C("Teléfono: 612 34 56 78", PHONE("612 34 56 78")),
    C("call me on 4155550132 tonight", PHONE("4155550132")),
    C(
        "Phone (work) 020 7946 0321 / (home) 020 7946 0777",
        PHONE("020 7946 0321"),
        PHONE("020 7946 0777"),
    ),
    C("Amsterdam 020-123 4567", PHONE("020-123 4567")),
    C(
        "my number is 612 34 56 78",
        PHONE("612 34 56 78"),
        limit="trunk-less national numbers need a phone word right before them",
    ),
)

PHONE_NEGATIVES = (
    C("The order number is 4155550132, it shipped yesterday."),
    C("Meeting on 2024-05-01 at 10:30 in room 4."),
    C("Deadline 05/06/2024, budget 1,250,000 EUR."),
    C("Population of the city: 8 336 817 (2023 census)."),
    C("Read pages 120-135 and 201-215 for Tuesday."),
    C("ISBN 978-3-16-148410-0 and ISBN 0-306-40615-2"),
    C("Invoice INV-2024-00123 is overdue by 14 days."),
    C("The final score was 3-2 after extra time."),
    C("Coordinates 51.5074, -0.1278 point to London."),
    C("Windows build 10.0.19045.3803 fixed it."),
    C("Call me at 5pm, not at 4."),
    C("+1 for this idea, it's +3.5% better than last year"),
    C("Room 101 on floor 3, desk 17."),
    C("Sales grew between 1990 and 2020 by 240%."),
    C("My phone is an iPhone 15 Pro with 256 GB."),
    C("The call stack depth hit 1000 frames."),
    C("Temperature dropped to -12 °C overnight."),
    C("zip code 02139, Cambridge MA"),
    C("It costs 1 299,00 € or 1.299,00 € depending on the locale."),
    C("Timestamp 1714567890 in seconds since epoch."),
    C("Serial: 2024 0517 0099"),
    C("Train 9 from 10:15 to 12:40, platform 7."),
    C(
        "The cell count was 4 500 000 per ml",
        limit="a phone word followed by a 7-digit number is taken as a phone",
    ),
)

CARD_CASES = (
    C("My card is 4111 1111 1111 1111, exp 12/27", CARD("4111 1111 1111 1111")),
    C("charge 5555-5555-5555-4444 please", CARD("5555-5555-5555-4444")),
    C("Amex 3782 822463 10005 on file", CARD("3782 822463 10005")),
    C("card number: 4012888888881881", CARD("4012888888881881")),
    C("old 13-digit Visa 4222222222222 still works?", CARD("4222222222222")),
    C("Discover 6011 1111 1111 1117", CARD("6011 1111 1111 1117")),
    C("JCB 3530 1113 3330 0000", CARD("3530 1113 3330 0000")),
    C("Diners Club 3056 930902 5904", CARD("3056 930902 5904")),
    C("new Mastercard 2223 0031 2200 3222", CARD("2223 0031 2200 3222")),
    C("UnionPay 6200 0000 0000 0005", CARD("6200 0000 0000 0005")),
    C("Meine Kreditkarte: 5105 1051 0510 5100", CARD("5105 1051 0510 5100")),
    C("Tarjeta 4000 0566 5566 5556 caduca 09/26", CARD("4000 0566 5566 5556")),
    C("カード番号は4242424242424242です", CARD("4242424242424242")),
    C('{"card": "4111111111111111", "cvc": "123"}', CARD("4111111111111111")),
    C("19-digit Visa 4111 1111 1111 1111 003", CARD("4111 1111 1111 1111 003")),
    C("Maestro 6759 6498 2643 8453", CARD("6759 6498 2643 8453")),
    C("Mir 2200 0000 0000 0004", CARD("2200 0000 0000 0004")),
    C("Amex 371449635398431.", CARD("371449635398431")),
    C("pay with 6011-0009-9013-9424 instead", CARD("6011-0009-9013-9424")),
    C(
        "JCB 3566002020360505; Diners 38520000023237",
        CARD("3566002020360505"),
        CARD("38520000023237"),
    ),
    C("Ma carte bancaire : 4000 0566 5566 5556", CARD("4000 0566 5566 5556")),
    C("Номер карты 5200 8282 8282 8210", CARD("5200 8282 8282 8210")),
    C("card (6555 9000 0060 4105) declined", CARD("6555 9000 0060 4105")),
    C(
        "two cards: 4111111111111111 and 5555555555554444",
        CARD("4111111111111111"),
        CARD("5555555555554444"),
    ),
)

CARD_NEGATIVES = (
    C("4111 1111 1111 1112 fails the Luhn check"),
    C("Order #1234567890123456 was delivered."),
    C("USPS tracking 9400 1000 0000 0000 0000 00"),
    C("IMEI 490154203237518 of the lost phone"),
    C("Epoch millis 1714567890123"),
    C("ISBN-13 9780306406157"),
    C("5105 1051 0510 5106 is a typo of my card"),
    C("Account balance 12,345,678.90"),
    C("Luhn-valid but no issuer: 8888 8888 8888 8888"),
    C("the big number 31415926535897932384626"),
    C("Ref 4666-1760-3137 2159"),
)

IBAN_CASES = (
    C("Bitte überweise an DE89 3704 0044 0532 0130 00.", IBAN("DE89 3704 0044 0532 0130 00")),
    C("Pay to GB82 WEST 1234 5698 7654 32 by Monday.", IBAN("GB82 WEST 1234 5698 7654 32")),
    C("IBAN: FR1420041010050500013M02606", IBAN("FR1420041010050500013M02606")),
    C("NL91ABNA0417164300 is my Dutch account", IBAN("NL91ABNA0417164300")),
    C("Mi IBAN es ES91 2100 0418 4502 0005 1332", IBAN("ES91 2100 0418 4502 0005 1332")),
    C("IT60X0542811101000000123456 (conto corrente)", IBAN("IT60X0542811101000000123456")),
    C("BE68 5390 0754 7034", IBAN("BE68 5390 0754 7034")),
    C("Konto CH93 0076 2011 6238 5295 7", IBAN("CH93 0076 2011 6238 5295 7")),
    C("AT611904300234573201", IBAN("AT611904300234573201")),
    C("PL61 1090 1014 0000 0712 1981 2874 — przelew", IBAN("PL61 1090 1014 0000 0712 1981 2874")),
    C("SE4550000000058398257466", IBAN("SE4550000000058398257466")),
    C("Norsk konto NO93 8601 1117 947", IBAN("NO93 8601 1117 947")),
    C("DK5000400440116243 er min konto", IBAN("DK5000400440116243")),
    C("FI21 1234 5600 0007 85", IBAN("FI21 1234 5600 0007 85")),
    C("IBAN PT50000201231234567890154", IBAN("PT50000201231234567890154")),
    C("Irish account IE29 AIBK 9311 5212 3456 78", IBAN("IE29 AIBK 9311 5212 3456 78")),
    C("LU28 0019 4006 4475 0000", IBAN("LU28 0019 4006 4475 0000")),
    C("CZ65 0800 0000 1920 0014 5399", IBAN("CZ65 0800 0000 1920 0014 5399")),
    C("حسابي SA03 8000 0000 6080 1016 7519", IBAN("SA03 8000 0000 6080 1016 7519")),
    C("TR33 0006 1005 1978 6457 8413 26", IBAN("TR33 0006 1005 1978 6457 8413 26")),
    C("RO49 AAAA 1B31 0075 9384 0000", IBAN("RO49 AAAA 1B31 0075 9384 0000")),
    C("Malta: MT84MALT011000012345MTLCAST001S", IBAN("MT84MALT011000012345MTLCAST001S")),
    C("BR1800360305000010009795493C1", IBAN("BR1800360305000010009795493C1")),
    C("Ref AB12 then DE89370400440532013000", IBAN("DE89370400440532013000")),
    C(
        "lower case de89370400440532013000",
        IBAN("de89370400440532013000"),
        limit="lower-case IBANs are not detected",
    ),
)

IBAN_NEGATIVES = (
    C("DE89370400440532013001 has a wrong checksum"),
    C("GB82 WEST 1234 5698 7654 33"),
    C("Reference AB12 3456 7890 1234"),
    C("short DE12 3456 7890"),
    C("BIC DEUTDEFF500 for Deutsche Bank"),
    C("Flight LH2024 departs at 07:45"),
    C("Part number XK20 0000 1111 22"),
)

SSN_CASES = (
    C("SSN: 536-22-1234", SSN("536-22-1234")),
    C("my social is 078-05-1120, don't share it", SSN("078-05-1120")),
    C("SSN 536 22 1234 (spaces)", SSN("536 22 1234")),
    C("Social security number is 536221234", SSN("536221234")),
    C("my SS# 401-23-4567", SSN("401-23-4567")),
    C("Form W-9, TIN 401-23-4567", SSN("401-23-4567")),
    C("ITIN 912-70-1234 for the non-resident", SSN("912-70-1234")),
    C("Número de seguro social: 219-45-6789", SSN("219-45-6789")),
    C(
        '{"name": "Tom", "ssn": "123-45-6789"}',
        SSN("123-45-6789"),
    ),
    C(
        "ssn=536221234",
        SSN("536221234"),
    ),
)

SSN_NEGATIVES = (
    C("000-12-3456 is not a valid SSN"),
    C("666-12-3456 is never issued"),
    C("123-45-67890 has too many digits"),
    C("Part 123-456-789 is out of stock"),
    C("9-digit number 536221234 without context"),
    C("Case 2024-15-0042 was closed"),
)

IP_CASES = (
    C("The server is at 192.168.1.20, port 22.", IP("192.168.1.20")),
    C("ping 10.0.0.5 and 8.8.8.8", IP("10.0.0.5"), IP("8.8.8.8")),
    C("Blocked 203.0.113.42 after 5 failed logins", IP("203.0.113.42")),
    C("ssh deploy@198.51.100.7", IP("198.51.100.7")),
    C("API listens on 172.16.254.1:8080", IP("172.16.254.1")),
    C("subnet 10.1.2.3/24 is internal", IP("10.1.2.3")),
    C("IPv6 2001:db8::8a2e:370:7334 is documentation space", IP("2001:db8::8a2e:370:7334")),
    C(
        "full form 2001:0db8:85a3:0000:0000:8a2e:0370:7334",
        IP("2001:0db8:85a3:0000:0000:8a2e:0370:7334"),
    ),
    C("link-local fe80::1ff:fe23:4567:890a%eth0", IP("fe80::1ff:fe23:4567:890a%eth0")),
    C("mapped ::ffff:192.0.2.128 in the log", IP("::ffff:192.0.2.128")),
    C("curl https://[2001:db8::1]:443/health", IP("2001:db8::1")),
    C("DNS 2606:4700:4700::1111 is fast", IP("2606:4700:4700::1111")),
    C("Meine IP ist 84.132.10.7, geht das?", IP("84.132.10.7")),
    C("IP地址是 101.6.15.130。", IP("101.6.15.130")),
    C('"remote_addr": "93.184.216.34"', IP("93.184.216.34")),
    C("Visitor IP:45.33.32.156", IP("45.33.32.156")),
    C("from 192.0.2.1 to 192.0.2.254", IP("192.0.2.1"), IP("192.0.2.254")),
)

IP_NEGATIVES = (
    C("Upgrade to version 1.2.3.4 before Friday."),
    C("v1.2.3 fixed the bug, 2.0.1 is next."),
    C("Bind to 0.0.0.0 for all interfaces."),
    C("localhost is 127.0.0.1 and ::1"),
    C("netmask 255.255.255.0"),
    C("std::vector<int> and std::io::Result are types"),
    C("Timestamps 12:30:45 and 23:59:59"),
    C("MAC 00:1A:2B:3C:4D:5E on eth0"),
    C("Semver 1.2.3.4.5 is not a thing"),
    C("Chrome 120.0.6099.109 on macOS"),
    C("999.1.1.1 is out of range"),
    C("Section 3.2.1 and figure 4.1"),
    C("pi is 3.14159, e is 2.71828"),
    C("build 10.0.22631.2861"),
    C("release 2.4.1.0 changelog"),
)

SECRET_CASES = (
    C(
        "my key is sk-ElULtm4UAWTWqIpO0VFwAHUN9ntITvHeUX3nSWUD7T13PjIn, keep it",
        SECRET("sk-ElULtm4UAWTWqIpO0VFwAHUN9ntITvHeUX3nSWUD7T13PjIn"),
    ),
    C(
        "OPENAI_API_KEY=sk-proj-0hS17prPXQSzP21OB0DAfCcHO1oQDE7UrzV-sHXRQ7vqQAimwat4ESDkzKE7H931"
        "zjMMJrGm-B5mYylG2ouwWS5ZcL57RI",
        SECRET(
            "sk-proj-0hS17prPXQSzP21OB0DAfCcHO1oQDE7UrzV-sHXRQ7vqQAimwat4ESDkzKE7H931zjMMJrGm-"
            "B5mYylG2ouwWS5ZcL57RI"
        ),
    ),
    C(
        "service account: sk-svcacct-WjpDhqAlwE_vulqndnxOapJdxhnAAy7x8OI64BZ51rAuNYzwT6bpQaC1eB7-A",
        SECRET("sk-svcacct-WjpDhqAlwE_vulqndnxOapJdxhnAAy7x8OI64BZ51rAuNYzwT6bpQaC1eB7-A"),
    ),
    C(
        "export ANTHROPIC_API_KEY='sk-ant-api03-g3QbRGuCn3irwdRNG-uU73_PueppU2xmg3dIDpOrBn3nI3uDapz"
        "W05wFLJT5oZYKODETD17NKy7gGWAH0rOKrlC7JLFXKAA'",
        SECRET(
            "sk-ant-api03-g3QbRGuCn3irwdRNG-uU73_PueppU2xmg3dIDpOrBn3nI3uDapzW05wFLJT5oZYKODETD17N"
            "Ky7gGWAH0rOKrlC7JLFXKAA"
        ),
    ),
    C("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", SECRET("AKIAIOSFODNN7EXAMPLE")),
    C(
        "creds AKIAL4XBYEIG1UMEQCQ7 / ASIAM1KM4RE3HGRIYGOP rotated",
        SECRET("AKIAL4XBYEIG1UMEQCQ7"),
        SECRET("ASIAM1KM4RE3HGRIYGOP"),
    ),
    C(
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        SECRET("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ),
    C(
        "aws_secret_access_key: vLrXnqR0QQEcJWrIvGBq2yqqDGdo21e8tJU7SL95",
        SECRET("vLrXnqR0QQEcJWrIvGBq2yqqDGdo21e8tJU7SL95"),
    ),
    C(
        "git push with ghp_6JPcR6slyP5FOxGFx8keGVJrmlCDuNajVhBd failed",
        SECRET("ghp_6JPcR6slyP5FOxGFx8keGVJrmlCDuNajVhBd"),
    ),
    C(
        "oauth token gho_sWQVfT4fQED8nHGRV2oQOQuPGOtFsLdRnRUI and app token "
        "ghs_ETptPuqvciNIYIqwwjdwaNuWuml7sZDHdkgY",
        SECRET("gho_sWQVfT4fQED8nHGRV2oQOQuPGOtFsLdRnRUI"),
        SECRET("ghs_ETptPuqvciNIYIqwwjdwaNuWuml7sZDHdkgY"),
    ),
    C(
        "fine-grained: github_pat_114QZD0MIIXA2X0PHV2UA7_ATOXCmi1hGR79AFzFCUo7c2SC1QOH0e9r5ZWhxO3I2"
        "xeu4YEMLE3VXY8Z6r",
        SECRET(
            "github_pat_114QZD0MIIXA2X0PHV2UA7_ATOXCmi1hGR79AFzFCUo7c2SC1QOH0e9r5ZWhxO3I2xeu4YEMLE"
            "3VXY8Z6r"
        ),
    ),
    C(
        "SLACK_BOT_TOKEN=xoxb-668410386223-0040152338412-911cq650wfHxJkgxqYaZZKGW",
        SECRET("xoxb-668410386223-0040152338412-911cq650wfHxJkgxqYaZZKGW"),
    ),
    C(
        "user token xoxp-867930254807-357023519171-1301273337699-2dc847b64f048d7dc5cce3884a3b2bf3",
        SECRET("xoxp-867930254807-357023519171-1301273337699-2dc847b64f048d7dc5cce3884a3b2bf3"),
    ),
    C(
        "Stripe live key sk_live_LmiHiZDgMMzDUXKKAVC95Fu7 and restricted rk_live_Ku1NHp1loNY87AbGDVGxctVk",
        SECRET("sk_live_LmiHiZDgMMzDUXKKAVC95Fu7"),
        SECRET("rk_live_Ku1NHp1loNY87AbGDVGxctVk"),
    ),
    C(
        "test mode: sk_test_S65KrooKPRKB8O8YYDwH6SfD, webhook whsec_QH4tv8b9NmVE9nPsCBG9fjEPJAtrGUvY",
        SECRET("sk_test_S65KrooKPRKB8O8YYDwH6SfD"),
        SECRET("whsec_QH4tv8b9NmVE9nPsCBG9fjEPJAtrGUvY"),
    ),
    C(
        "maps key AIzaltyke-BuukGZtPNPR_x4EX5kfe1KvAfnrAk in the frontend",
        SECRET("AIzaltyke-BuukGZtPNPR_x4EX5kfe1KvAfnrAk"),
    ),
    C(
        "access token ya29.xpnRcnD6y9zbNTXJdj5VO0z6tlKpuCUFYvTBqXjxFdMoF-R1BghJBO5BbDkE expired",
        SECRET("ya29.xpnRcnD6y9zbNTXJdj5VO0z6tlKpuCUFYvTBqXjxFdMoF-R1BghJBO5BbDkE"),
    ),
    C(
        "jwt: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
        "IiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        SECRET(
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9l"
            "IiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
        ),
    ),
    C(
        "Authorization: Bearer eyJhbGciOiAiUlMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAidXNlcl84ODEyIi"
        "wgImV4cCI6IDE3NjcyMjU2MDAsICJzY29wZSI6ICJtZW1vcnk6cmVhZCJ9.LYjoN6fZWPsoMmE5fQR53sU3XW5Tp2"
        "BTyDRVBtx8DTVtb7BbSzF2OQe5_6YctFb-UxNgSLJvxOUAu8dknlmUQ6",
        SECRET(
            "eyJhbGciOiAiUlMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAidXNlcl84ODEyIiwgImV4cCI6IDE3Njcy"
            "MjU2MDAsICJzY29wZSI6ICJtZW1vcnk6cmVhZCJ9.LYjoN6fZWPsoMmE5fQR53sU3XW5Tp2BTyDRVBtx8DTVtb7"
            "BbSzF2OQe5_6YctFb-UxNgSLJvxOUAu8dknlmUQ6"
        ),
    ),
    C(
        "curl -H 'Authorization: Bearer 4cvxxwykTfDWan4dYhSU1HVB.0tbrMIV70GFukXd' https://api.example.com",
        SECRET("4cvxxwykTfDWan4dYhSU1HVB.0tbrMIV70GFukXd"),
    ),
    C(
        "headers = {'Authorization': 'Basic YWxpY2U6V29uZGVybGFuZC00Mg=='}",
        SECRET("YWxpY2U6V29uZGVybGFuZC00Mg=="),
    ),
    C(
        "HF_TOKEN=hf_FqWEH3lOHxdJZcCPAuBzefluZ0QTKqW4i0 huggingface-cli login",
        SECRET("hf_FqWEH3lOHxdJZcCPAuBzefluZ0QTKqW4i0"),
    ),
    C("GitLab PAT glpat-mV-DcWxWVrhXxUkCEJrN", SECRET("glpat-mV-DcWxWVrhXxUkCEJrN")),
    C(
        "//registry.npmjs.org/:_authToken=npm_UaExBAwNdarcF61d3mHmNpGElL3G5aV2egbh",
        SECRET("npm_UaExBAwNdarcF61d3mHmNpGElL3G5aV2egbh"),
    ),
    C(
        "SendGrid 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 works",
        SECRET("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"),
    ),
    C(
        "password = pypi-AgEIcHlwaS5vcmceanYha3ExG2_3Gg5fv7Tn-3zxeYOjPQ2LZnN8iS2_lL7SZhle5V9BbikleSQ",
        SECRET("pypi-AgEIcHlwaS5vcmceanYha3ExG2_3Gg5fv7Tn-3zxeYOjPQ2LZnN8iS2_lL7SZhle5V9BbikleSQ"),
    ),
    C(
        "webhook: https://hooks.slack.com/services/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",
        SECRET("https://hooks.slack.com/services/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"),
    ),
    C(
        "SECRET_KEY = 'django-insecure-k3#v9x!q2m@7z^w5p(r8t)1b&n4c%e6f0h*j=s-y+u_l'",
        SECRET("django-insecure-k3#v9x!q2m@7z^w5p(r8t)1b&n4c%e6f0h*j=s-y+u_l"),
    ),
    C(
        '{"client_id": "mnemo-web", "client_secret": "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"}',
        SECRET("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"),
    ),
    C(
        "api_key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        SECRET("9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ),
    C(
        "Reset link https://example.com/reset?token=d5f93d936fe58a3ec357dd3415bca962&lang=en",
        SECRET("d5f93d936fe58a3ec357dd3415bca962"),
    ),
    C(
        "Mein API-Schlüssel lautet sk-ElULtm4UAWTWqIpO0VFwAHUN9ntITvHeUX3nSWUD7T13PjIn.",
        SECRET("sk-ElULtm4UAWTWqIpO0VFwAHUN9ntITvHeUX3nSWUD7T13PjIn"),
    ),
    C(
        "APIキーは ghp_6JPcR6slyP5FOxGFx8keGVJrmlCDuNajVhBd です",
        SECRET("ghp_6JPcR6slyP5FOxGFx8keGVJrmlCDuNajVhBd"),
    ),
    C(
        "the key is 7Hq2LmZ9xW4pR8vT1nB6cY3kD5fG0sJa, no prefix",
        SECRET("7Hq2LmZ9xW4pR8vT1nB6cY3kD5fG0sJa"),
        limit="secrets with no provider prefix and no secret-named key are not detected",
    ),
)

PRIVATE_KEY_CASES = (
    C(
        "here is the deploy key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "KjekofLlqh/9ymUbEtNinMJWGkcRAjLn7j8LsfYf7HZyS3exNc/q2969soRHfAoy\n"
        "1VYabpYIS9tFMyXd3snDgxDWuNm8OJiRBE81AzVHhjl7j2GvnoZnsy0KEQOnPyR8\n"
        "-----END OPENSSH PRIVATE KEY-----\nthanks!",
        PRIVATE_KEY(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n"
            "KjekofLlqh/9ymUbEtNinMJWGkcRAjLn7j8LsfYf7HZyS3exNc/q2969soRHfAoy\n"
            "1VYabpYIS9tFMyXd3snDgxDWuNm8OJiRBE81AzVHhjl7j2GvnoZnsy0KEQOnPyR8\n"
            "-----END OPENSSH PRIVATE KEY-----"
        ),
    ),
    C(
        "-----BEGIN RSA PRIVATE KEY-----\nsqWdRDGGe/IDMgg5Afmwucbu0mwKaITUjlJp3/o0Uo6x974amBsFcg\n"
        "-----END RSA PRIVATE KEY-----",
        PRIVATE_KEY(
            "-----BEGIN RSA PRIVATE KEY-----\nsqWdRDGGe/IDMgg5Afmwucbu0mwKaITUjlJp3/o0Uo6x974amBsFcg\n"
            "-----END RSA PRIVATE KEY-----"
        ),
    ),
    C(
        '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nxtvpBthb86IXNkW5'
        'mCSrWmKdAg5onmydFuIK3sKTCbjm0xbY1Bvjh2oq7MyLphRd\\n-----END PRIVATE KEY-----\\n", '
        '"client_email": "bot@proj.iam.gserviceaccount.com"}',
        PRIVATE_KEY(
            "-----BEGIN PRIVATE KEY-----\\nxtvpBthb86IXNkW5mCSrWmKdAg5onmydFuIK3sKTCbjm0xbY1Bvjh2o"
            "q7MyLphRd\\n-----END PRIVATE KEY-----"
        ),
        EMAIL("bot@proj.iam.gserviceaccount.com"),
    ),
    C(
        "EC key:\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oGiRk3a\n"
        "-----END EC PRIVATE KEY-----\n",
        PRIVATE_KEY(
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oGiRk3a\n"
            "-----END EC PRIVATE KEY-----"
        ),
    ),
    C(
        "encrypted one\n-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkq\n"
        "-----END ENCRYPTED PRIVATE KEY-----",
        PRIVATE_KEY(
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkq\n"
            "-----END ENCRYPTED PRIVATE KEY-----"
        ),
    ),
    C(
        "my gpg key\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXx1FIBCADBn0yJzCk3\n=Xy2Q\n"
        "-----END PGP PRIVATE KEY BLOCK-----",
        PRIVATE_KEY(
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXx1FIBCADBn0yJzCk3\n=Xy2Q\n"
            "-----END PGP PRIVATE KEY BLOCK-----"
        ),
    ),
    C(
        "I pasted only half:\n-----BEGIN RSA PRIVATE KEY-----\n"
        "KjekofLlqh/9ymUbEtNinMJWGkcRAjLn7j8LsfYf7HZyS3exNc/q2969soRHfAoy\n"
        "1VYabpYIS9tFMyXd3snDgxDWuNm8OJiRBE81AzVHhjl7j2GvnoZnsy0KEQOnPyR8\n\nis that enough?",
        PRIVATE_KEY(
            "-----BEGIN RSA PRIVATE KEY-----\n"
            "KjekofLlqh/9ymUbEtNinMJWGkcRAjLn7j8LsfYf7HZyS3exNc/q2969soRHfAoy\n"
            "1VYabpYIS9tFMyXd3snDgxDWuNm8OJiRBE81AzVHhjl7j2GvnoZnsy0KEQOnPyR8"
        ),
    ),
)

SECRET_NEGATIVES = (
    C("scikit-learn and sk-learn are the same library, right?"),
    C("We follow a task-management-system-design doc with risk-free-rollout-plans."),
    C("The API key is stored in the vault, never in the repo."),
    C("Set OPENAI_API_KEY in your .env file."),
    C("api_key = os.environ['OPENAI_API_KEY']"),
    C("client = OpenAI(api_key=settings.OPENAI_API_KEY)"),
    C("max_tokens=4096, temperature=0.2, top_p=0.9"),
    C("token count: 123456789012 over the month"),
    C("Bearer tokens expire after 1 hour."),
    C("The ghp_ prefix means a personal access token."),
    C("The Authorization header carries a Bearer token; Basic auth is disabled."),
    C("secret santa on 2024-12-20, budget 25 EUR"),
    C("git SHA 3f786850e387550fdab836ed7e6dc881de23001b fixed it"),
    C("commit a1b2c3d was reverted in 9fceb02"),
    C("UUID 550e8400-e29b-41d4-a716-446655440000 is the session id"),
    C("sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    C("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----"),
    C("-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkq\n-----END CERTIFICATE-----"),
    C("ASIA is the largest continent; AKIA is the prefix of AWS access key ids."),
    C('{"access_token_type": "Bearer", "expires_in": 3600}'),
    C("cache_key = 'user:1234:profile:v2'"),
    C("tokenizer = 'bert-base-multilingual-cased-v2' works fine"),
    C("The primary key = 12345abcdef67890 in that table"),
    C("Use secret_key_path=/etc/mnemo/keys/signing-2024.pem"),
    C("token_id=884422117733 refers to the row"),
    C("the keyboard shortcut is Ctrl+Shift+K"),
    C("eyJ is how base64 JSON usually starts"),
    C("Credentials: see the 1Password vault entry 'Mnemo prod'"),
)

PASSWORD_CASES = (
    C("password=hunter2", PASSWORD("hunter2")),
    C("DB_PASSWORD=Sup3r$ecret! in the .env", PASSWORD("Sup3r$ecret!")),
    C(
        '{"username": "admin", "password": "P@ssw0rd!"}',
        PASSWORD("P@ssw0rd!"),
    ),
    C("passwd: Tr0ub4dor&3", PASSWORD("Tr0ub4dor&3")),
    C("pwd = correcthorse42", PASSWORD("correcthorse42")),
    C("PGPASSWORD='pg-pass-2024' psql -h db -U app", PASSWORD("pg-pass-2024")),
    C("mysql -u root --password=RootPw99 mydb", PASSWORD("RootPw99")),
    C("mysql -u root --password RootPw99 mydb", PASSWORD("RootPw99")),
    C("database:\n  user: app\n  password: hunter2\n", PASSWORD("hunter2")),
    C('smtp:\n  password: "s3cret with spaces"\n', PASSWORD("s3cret with spaces")),
    C(
        "redis://:Red1sPass@cache.example.com:6379/0",
        PASSWORD("Red1sPass"),
    ),
    C(
        "DATABASE_URL=postgres://app:Pg_s3cret@db.internal:5432/app",
        PASSWORD("Pg_s3cret"),
    ),
    C("my password is Hunter2! don't tell anyone", PASSWORD("Hunter2!")),
    C("the wifi password is 'sunflower'", PASSWORD("sunflower")),
    C("Passwort: Sommer2024!", PASSWORD("Sommer2024!")),
    C("mein Passwort ist Sommer2024!", PASSWORD("Sommer2024!")),
    C("mot de passe : Soleil#2024", PASSWORD("Soleil#2024")),
    C("mi contraseña es Perro#2023", PASSWORD("Perro#2023")),
    C("contraseña: Perro#2023", PASSWORD("Perro#2023")),
    C("minha senha é Brasil@123", PASSWORD("Brasil@123")),
    C("пароль: Qwerty123", PASSWORD("Qwerty123")),
    C("パスワードは abc123XYZ です", PASSWORD("abc123XYZ")),
    C("密码是abc123456", PASSWORD("abc123456")),
    C("wachtwoord=Tulp2024!", PASSWORD("Tulp2024!")),
    C("hasło: Polska#2024", PASSWORD("Polska#2024")),
    C("GET /login?user=admin&pass=letmein99&redirect=/home", PASSWORD("letmein99")),
    C("password: correcthorsebatterystaple\nusername: bob", PASSWORD("correcthorsebatterystaple")),
    C("Password := 'xyz789'", PASSWORD("xyz789")),
    C("ADMIN_PASSWORD: changeme", PASSWORD("changeme")),
    C(
        "Server=db;Database=app;User Id=sa;Password=Str0ng!Pass;",
        PASSWORD("Str0ng!Pass"),
    ),
    C(
        '<input type="password" value="Hidden42">',
        PASSWORD("Hidden42"),
        limit="HTML attribute pairs are not parsed",
    ),
    C(
        "login root / password toor",
        PASSWORD("toor"),
        limit="prose without an operator or connector is not parsed",
    ),
    C(
        "the password is tuesday",
        PASSWORD("tuesday"),
        limit="a plain word after 'is' is not taken as a password",
    ),
)

PASSWORD_NEGATIVES = (
    C("I forgot my password again."),
    C("Reset your password at https://example.com/reset"),
    C("password: reset it tomorrow, I'm locked out"),
    C("The password policy requires 12 characters."),
    C("The password field is required."),
    C("password = os.environ['DB_PASSWORD']"),
    C("password = getpass.getpass()"),
    C("def login(username: str, password: str) -> bool:"),
    C("password=None"),
    C("password: ${DB_PASSWORD}"),
    C("password: {{ vault_db_password }}"),
    C("PASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']"),
    C("AUTH_PASSWORD_VALIDATORS = []"),
    C("password_min_length=12"),
    C("We passed the exam, the compass points north."),
    C("Passwords must match."),
    C("password: ********"),
    C("run `pwd` to print the working directory"),
    C("mot de passe oublié ?"),
    C("login(user, password=password)"),
    C("cursor.execute('SELECT id FROM users WHERE password = %s', (digest,))"),
    C("the password is at least 8 characters long"),
    C("password_reset_timeout = 3600"),
    C("Your passcode expires in 10 minutes."),
)

MIXED_CASES = (
    C(
        "Hi, I'm Dana (dana.k@example.com, +1-415-555-0132). Card 4111 1111 1111 1111.",
        EMAIL("dana.k@example.com"),
        PHONE("+1-415-555-0132"),
        CARD("4111 1111 1111 1111"),
    ),
    C(
        "Überweisung an DE89 3704 0044 0532 0130 00, Rückfragen an jörg@beispiel.de "
        "oder 030 12345678.",
        IBAN("DE89 3704 0044 0532 0130 00"),
        EMAIL("jörg@beispiel.de"),
        PHONE("030 12345678"),
    ),
    C(
        "Config dump: host=10.20.30.40 user=admin password=S3cure!pw api_key=AKIAIOSFODNN7EXAMPLE",
        IP("10.20.30.40"),
        PASSWORD("S3cure!pw"),
        SECRET("AKIAIOSFODNN7EXAMPLE"),
    ),
    C(
        "名前: 山田太郎\nメール: yamada@example.jp\n電話: 090-1234-5678\nIBAN: "
        "GB82WEST12345698765432",
        EMAIL("yamada@example.jp"),
        PHONE("090-1234-5678"),
        IBAN("GB82WEST12345698765432"),
    ),
    C(
        "SSN 536-22-1234, phone (212) 555-0198, email tom@example.com, IP 8.8.4.4",
        SSN("536-22-1234"),
        PHONE("(212) 555-0198"),
        EMAIL("tom@example.com"),
        IP("8.8.4.4"),
    ),
    C(
        "Hola, soy Lucía. Mi teléfono es +34 612 34 56 78 y mi correo lucia@example.es.",
        PHONE("+34 612 34 56 78"),
        EMAIL("lucia@example.es"),
    ),
    C(
        "Je m'appelle Éric, tél. 06 12 34 56 78, IBAN FR14 2004 1010 0505 0001 3M02 606.",
        PHONE("06 12 34 56 78"),
        IBAN("FR14 2004 1010 0505 0001 3M02 606"),
    ),
    C(
        "export GITHUB_TOKEN=ghp_6JPcR6slyP5FOxGFx8keGVJrmlCDuNajVhBd\n"
        "export DB_URL=postgres://svc:Pa55word@10.0.3.7:5432/mnemo",
        SECRET("ghp_6JPcR6slyP5FOxGFx8keGVJrmlCDuNajVhBd"),
        PASSWORD("Pa55word"),
        IP("10.0.3.7"),
    ),
    C(
        "Привет! Мой номер +7 495 123-45-67, почта olga@example.ru, карта 5555 5555 5555 4444.",
        PHONE("+7 495 123-45-67"),
        EMAIL("olga@example.ru"),
        CARD("5555 5555 5555 4444"),
    ),
    C(
        "The 3 tickets cost $1,250.00 total, booking ref ABX-22918, call +44 20 7946 0011 "
        "if the 14:05 train from platform 9 is late.",
        PHONE("+44 20 7946 0011"),
    ),
    C(
        "用户 li.na@example.cn 的手机是 +86 139 1234 5678，卡号 6200 0000 0000 0005。",
        EMAIL("li.na@example.cn"),
        PHONE("+86 139 1234 5678"),
        CARD("6200 0000 0000 0005"),
    ),
    C(
        "ssh ubuntu@203.0.113.9 -i key.pem; password: Ubuntu#2024",
        IP("203.0.113.9"),
        PASSWORD("Ubuntu#2024"),
    ),
    C(
        "Placeholders stay as they are: [EMAIL], [PHONE], [CARD], [IBAN], [SSN], [IP], "
        "[SECRET], [PRIVATE_KEY], password=[PASSWORD]"
    ),
)

GENERAL_NEGATIVES = (
    C("On 2024-05-01 we shipped version 3.2.1 to 45 customers."),
    C("The price went from $19.99 to $24.99 (+25%)."),
    C("See you at 10:30, or 14:45 at the latest."),
    C("Order #A-100234 contains 3 items and ships in 2-3 days."),
    C("Our Q3 revenue was 4,512,330 USD, up 12.5% YoY."),
    C("Python 3.12.1 and Django 5.2.19 are pinned."),
    C("The meeting is on 12/05/2024 from 9 to 11."),
    C("Temperature 21.5°C, humidity 63%, pressure 1013 hPa."),
    C("I ran 10 km in 52:30, pace 5:15/km."),
    C("Flight BA 2490 leaves gate B12 at 07:55."),
    C("The answer is 42; the question is still unknown."),
    C("Use UTF-8 and set max_length=255 on the CharField."),
    C("HTTP 404 vs 500: the handler returns 500 on timeouts."),
    C("Chapter 7, verse 14 to 21."),
    C("FedEx tracking 7712 3456 7890 is in transit."),
    C("UPS 1Z999AA10123456784 out for delivery."),
    C("Lottery numbers 4 8 15 16 23 42."),
    C("Matrix shape (1024, 768, 3) in float32."),
    C("The file is 1.5 GB, 1536 MB or 1610612736 bytes."),
    C("Kubernetes v1.29.2 with containerd 1.7.13."),
    C("Latitude 48.8566, longitude 2.3522."),
    C("Docker image sha256:4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b"),
    C("UUIDs like 123e4567-e89b-12d3-a456-426614174000 identify rows."),
    C("Run `git log --oneline -n 5` and paste the output."),
    C("Invoice 2024-0042 for 3 × 1 500,00 € = 4 500,00 €."),
    C("Der Termin ist am 03.06.2024 um 15 Uhr."),
    C("価格は1,980円です。"),
    C("会议在2024年5月1日下午3点。"),
    C("Встреча 15.05.2024 в 18:00, кабинет 305."),
    C("ISO week 2024-W18, day 2024-123."),
    C("The ratio is 16:9 and the resolution 1920x1080."),
    C("Add 0.1 + 0.2 and you get 0.30000000000000004."),
    C("Bitcoin block 840000 was the halving."),
    C("E = mc^2, c = 299 792 458 m/s"),
    C("Please rate us 5/5!"),
    C("Ticket JIRA-4521 blocks MNEMO-77."),
    C("Port 5432 for Postgres, 6379 for Redis, 8000 for Django."),
    C("Interest 3.75% p.a. on 250000 over 25 years."),
    C("We had 1,234 sign-ups on 2024/05/01 and 987 on 2024/05/02."),
    C("ULID 01ARZ3NDEKTSV4RRFFQ69G5FAV is sortable."),
    C("Hex color #ff8800 and rgba(255, 136, 0, 0.5)."),
    C("SemVer ranges: ^1.2.3, ~2.0.0, >=3.1.4 <4.0.0"),
    C("Item SKU 8801234567890 is the barcode on the box."),
)

# Written after the detector existed, as a check against tuning the rules to the cases above.
# The first run disagreed with 15 of 122 labels; one label was wrong (a GCP private_key_id is an
# identifier, not a secret) and was corrected.  Rules were changed only where the fix
# generalises (prose connectors "for ...:" / "to" / "pw", "token is ...", hyphenated IBANs,
# numbers inside number lists or after codes, domain labels in any script, obfuscated e-mail).
# The six misses left are labelled as known limits.
HELD_OUT_CASES = (
    C(
        "Forward it to support+billing@help.example.com.au!",
        EMAIL("support+billing@help.example.com.au"),
    ),
    C("<john.smith@example.com>", EMAIL("john.smith@example.com")),
    C("email=foo.bar@example.io&next=/", EMAIL("foo.bar@example.io")),
    C("contact us at info@example.travel", EMAIL("info@example.travel")),
    C(
        "user.name@subdomain.example.co.jp wrote",
        EMAIL("user.name@subdomain.example.co.jp"),
    ),
    C(
        "Email me: first.last@例え.jp",
        EMAIL("first.last@例え.jp"),
    ),
    C("Call +1 415 555 0132 now", PHONE("+1 415 555 0132")),
    C("UK mobile +44 7700 900123", PHONE("+44 7700 900123")),
    C("Office (020) 7946 0958", PHONE("(020) 7946 0958")),
    C("Berlin +49 (0)30 12345678", PHONE("+49 (0)30 12345678")),
    C("dots +1.415.555.0132", PHONE("+1.415.555.0132")),
    C('<a href="tel:+14155550132">call</a>', PHONE("+14155550132")),
    C(
        "My number: 555-0132",
        PHONE("555-0132"),
        limit="7-digit local numbers are not detected",
    ),
    C("Call 0800 123 4567 for free", PHONE("0800 123 4567")),
    C("Téléphone : 01.23.45.67.89", PHONE("01.23.45.67.89")),
    C("Praha +420 601 123 456", PHONE("+420 601 123 456")),
    C("Warszawa +48 512 345 678", PHONE("+48 512 345 678")),
    C("Numéro: +32 470 12 34 56", PHONE("+32 470 12 34 56")),
    C("Ring +46 70 123 45 67", PHONE("+46 70 123 45 67")),
    C("Call me at (415)555-0132", PHONE("(415)555-0132")),
    C("it's 415 555 0132", PHONE("415 555 0132")),
    C("Version 2.0.0-rc.1 released"),
    C("Build #20240501.3 is green"),
    C("the years 2019-2023 were busy"),
    C("ratio 1:1000 on the map"),
    C("PO Box 12345, Springfield"),
    C("between 555 and 600 people"),
    C("steps 1-2-3-4-5"),
    C("10 000 000 rows loaded"),
    C("shape 128 256 512 1024"),
    C("order 000123456789"),
    C("Reference: 2024/000123"),
    C("DOI 10.1000/182 and arXiv:2301.07041"),
    C("PMID 12345678"),
    C("ISO 27001 and ISO 9001:2015"),
    C("nums 0 1 2 3 4 5 6 7 8 9"),
    C("RFC 7231 section 6.5.1"),
    C("The CVE-2024-3094 backdoor"),
    C("AWS region us-east-1 and account 123456789012"),
    C("Tweet 1790123456789012345 went viral"),
    C("Discord id 175928847299117063"),
    C("Gift card code 6035 7100 0123 4567"),
    C("1.1.1.1 is Cloudflare's resolver", IP("1.1.1.1")),
    C(
        'OPENAI_API_KEY="sk-ElULtm4UAWTWqIpO0VFwAHUN9ntITvHeUX3nSWUD7T13PjIn"',
        SECRET("sk-ElULtm4UAWTWqIpO0VFwAHUN9ntITvHeUX3nSWUD7T13PjIn"),
    ),
    C(
        "X-API-Key: 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
        SECRET("3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"),
    ),
    C("apiKey: 'AbC123dEf456GhI789'", SECRET("AbC123dEf456GhI789")),
    C(
        "STRIPE_SECRET=sk_live_LmiHiZDgMMzDUXKKAVC95Fu7",
        SECRET("sk_live_LmiHiZDgMMzDUXKKAVC95Fu7"),
    ),
    C("bcrypt hash $2b$12$KIXxPfnK8Wq9mY1Y5r7cVe0HhJ3bW4l6ZzUuQ1aB2cD3eF4gH5iJ6"),
    C("the token is abc123def456ghi789jkl", SECRET("abc123def456ghi789jkl")),
    C(
        "Login: admin / Passw0rd!",
        PASSWORD("Passw0rd!"),
        limit="prose without an operator or connector is not parsed",
    ),
    C(
        "pass: hunter2",
        PASSWORD("hunter2"),
        limit='a bare "pass:" key is too ambiguous ("boarding pass: 12A")',
    ),
    C('PASSWORD = "abc123"', PASSWORD("abc123")),
    C("the new pw is Abc12345", PASSWORD("Abc12345")),
    C(
        "Credentials — username: bob, password: B0b$ecure",
        PASSWORD("B0b$ecure"),
    ),
    C(
        "Mi clave es Perro2023",
        PASSWORD("Perro2023"),
        limit='"clave" (also "key", "palabra clave") is not a password word',
    ),
    C("Password for the VPN: Vpn!2024x", PASSWORD("Vpn!2024x")),
    C(
        "passwords: alice=Wonder1, bob=Builder2",
        PASSWORD("Wonder1"),
        PASSWORD("Builder2"),
        limit="values listed under a plural key are not parsed",
    ),
    C("set the root password to Toor#99", PASSWORD("Toor#99")),
    C("I changed my password yesterday to something stronger"),
    C("password123 is the most common password"),
    C("The 'password' column is hashed with argon2"),
    C("Forgot password? Click here."),
    C("sudo passwd alice"),
    C("my SSN is 078 05 1120", SSN("078 05 1120")),
    C(
        "server 192.168.0.1, gateway 192.168.0.254",
        IP("192.168.0.1"),
        IP("192.168.0.254"),
    ),
    C("IPv6: 2001:db8:0:0:1:0:0:1", IP("2001:db8:0:0:1:0:0:1")),
    C("card 4111-1111-1111-1111 expiring", CARD("4111-1111-1111-1111")),
    C("Visa ending 1111 only"),
    C("Price: 4,111.11 USD"),
    C("IBAN DE89-3704-0044-0532-0130-00", IBAN("DE89-3704-0044-0532-0130-00")),
    C("Kontonummer GB82WEST12345698765432.", IBAN("GB82WEST12345698765432")),
    C("Call me maybe: +1 (555) 013-2222", PHONE("+1 (555) 013-2222")),
    C("Sent from my iPhone\n+1 646 555 0147", PHONE("+1 646 555 0147")),
    C(
        "2024-05-01T12:30:45.123Z INFO request_id=7f3a9c2e latency_ms=123 status=200 "
        "path=/api/v1/sessions"
    ),
    C(
        'Traceback (most recent call last):\n  File "/app/main.py", line 42, in <module>\n'
        "    main()\nValueError: invalid literal for int() with base 10: 'abc'"
    ),
    C("SELECT * FROM orders WHERE id = 1234567 AND created_at > '2024-01-01 00:00:00';"),
    C("for i in range(1000000): total += i * 0.5"),
    C(
        "docker run -p 8080:80 -e POSTGRES_PASSWORD=example -v /data:/var/lib/postgresql/data "
        "postgres:16",
        PASSWORD("example"),
    ),
    C("kubectl get pods -n prod | grep api-7d9f8b6c5-x2k4p"),
    C("npm ERR! code E404 npm ERR! 404 Not Found - GET https://registry.npmjs.org/@scope%2fpkg"),
    C("The invoice total is €1.234,56 (VAT 19%) due 30.06.2024."),
    C("Meeting ID: 845 2931 0476, Passcode: 918273", PASSWORD("918273")),
    C("Zoom meeting ID 845 2931 0476"),
    C("My flight is LH 400 on 12 Jun, seat 34K, booking ref QX7P2L."),
    C("Tracking: 1Z 999 AA1 01 2345 6784"),
    C("The answer: 3.14159265358979323846"),
    C("Call stack: at Object.<anonymous> (/app/index.js:10:15)"),
    C("git diff HEAD~3..HEAD -- src/ | wc -l  # 1287"),
    C("Ubuntu 22.04.3 LTS, kernel 6.5.0-28-generic"),
    C(
        "CUDA 12.1, driver 535.104.05, cuDNN 8.9.2.26",
        limit="a four-part version after a product name reads as an IPv4 address",
    ),
    C("pip install torch==2.2.1+cu121 -f https://download.pytorch.org/whl/torch_stable.html"),
    C(
        "reach me at +1 (415) 555-0132 or marta.b@example.com anytime",
        PHONE("+1 (415) 555-0132"),
        EMAIL("marta.b@example.com"),
    ),
    C("Ich bin unter 0151 23456789 erreichbar.", PHONE("0151 23456789")),
    C("Numéro de téléphone : 07 81 23 45 67", PHONE("07 81 23 45 67")),
    C("Mi número es +52 55 1234 5678", PHONE("+52 55 1234 5678")),
    C("WhatsApp: +62 812-3456-7890", PHONE("+62 812-3456-7890")),
    C("Contact Raj at +91-98765-43210", PHONE("+91-98765-43210")),
    C(
        "connect to 10.0.0.1 via 10.0.0.254 gateway",
        IP("10.0.0.1"),
        IP("10.0.0.254"),
    ),
    C(
        "The host 2001:db8:85a3::8a2e:370:7334 answered",
        IP("2001:db8:85a3::8a2e:370:7334"),
    ),
    C("errors at 03:15:42 and 03:16:01, see line 1024"),
    C("a = [1, 2, 3]; b = {'x': 10, 'y': 20}"),
    C("The password manager generated 4 passwords for me"),
    C("I use a passphrase now"),
    C("my api key stopped working after the 2024-06-01 rotation"),
    C("tokens_used=15234 prompt_tokens=12000 completion_tokens=3234"),
    C("sk-1234 is too short to be a key"),
    C("AKIA1234 is not a full key"),
    C("The regex ^[A-Z]{2}[0-9]{2} matches IBAN prefixes"),
    C("card ending in 4242, expires 04/28"),
    C("Routing number 021000021, account 123456789"),
    C("Total: $4,111,111,111,111.11"),
    C("We hired 4111 engineers in 1111 days"),
    C("SSN format is AAA-GG-SSSS"),
    C("dial 911 or 112 in an emergency"),
    C("Our office hours are 9-5, Mon-Fri"),
    C("Matrix: [[1, 0, 0], [0, 1, 0], [0, 0, 1]]"),
    C("'password': 'Welcome1!'", PASSWORD("Welcome1!")),
    C("password => 'Laravel#2024'", PASSWORD("Laravel#2024")),
    C("set PASSWORD=Sup3r;echo done", PASSWORD("Sup3r")),
    C(
        "Authorization: token ghp_6JPcR6slyP5FOxGFx8keGVJrmlCDuNajVhBd",
        SECRET("ghp_6JPcR6slyP5FOxGFx8keGVJrmlCDuNajVhBd"),
    ),
    C("private_key_id: 4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f"),
)

CASES: tuple[Case, ...] = (
    EMAIL_CASES
    + EMAIL_NEGATIVES
    + PHONE_CASES
    + PHONE_NEGATIVES
    + CARD_CASES
    + CARD_NEGATIVES
    + IBAN_CASES
    + IBAN_NEGATIVES
    + SSN_CASES
    + SSN_NEGATIVES
    + IP_CASES
    + IP_NEGATIVES
    + SECRET_CASES
    + PRIVATE_KEY_CASES
    + SECRET_NEGATIVES
    + PASSWORD_CASES
    + PASSWORD_NEGATIVES
    + MIXED_CASES
    + GENERAL_NEGATIVES
    + HELD_OUT_CASES
)
