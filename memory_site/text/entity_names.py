"""Word lists the offline entity extractor (``memory_site.text.entities``) types names with.

Small, general lists (well-known companies, products, places, holidays, relation nouns), not a
knowledge base: context patterns decide most types, these settle names that have no context.
Every entry is lower case; multi-word entries are matched on the whole normalized name.
"""

from __future__ import annotations


def _words(block: str) -> frozenset[str]:
    return frozenset(line.strip() for line in block.strip().splitlines() if line.strip())


def _split(block: str) -> frozenset[str]:
    return frozenset(block.split())


# Relation nouns after a possessive ("my sister Ines", "our cat, Luna") and the type they give.
RELATION_TYPES: dict[str, str] = {}
for _noun in _split(
    """
    sister brother mom mother dad father wife husband partner friend boss coworker co-worker
    colleague son daughter aunt uncle cousin grandma grandmother grandpa grandfather granddad
    nan nana neighbor neighbour roommate flatmate housemate girlfriend boyfriend fiance fiancé
    fiancee fiancée teacher coach therapist doctor dentist manager mentor niece nephew stepdad
    stepmom stepmother stepfather stepson stepdaughter sister-in-law brother-in-law
    mother-in-law father-in-law son-in-law daughter-in-law kid kids child baby twin twins
    accountant lawyer landlord landlady tutor professor supervisor classmate teammate
    bestie buddy pal ex spouse parents grandson granddaughter godfather godmother
    assistant intern mate counselor counsellor trainer nurse vet physio cofounder co-founder
    """
):
    RELATION_TYPES[_noun] = "person"
# Whom "she"/"he" may stand for: "my brother Tom ... She has a cat" is not Tom's cat.
RELATION_GENDERS: dict[str, str] = {}
for _noun in _split(
    """
    sister mom mother wife girlfriend fiancee fiancée aunt grandma grandmother nan nana niece
    stepmom stepmother stepdaughter sister-in-law mother-in-law daughter-in-law daughter
    granddaughter godmother landlady
    """
):
    RELATION_GENDERS[_noun] = "female"
for _noun in _split(
    """
    brother dad father husband boyfriend fiance fiancé uncle grandpa grandfather granddad nephew
    stepdad stepfather stepson brother-in-law father-in-law son-in-law son grandson godfather
    landlord
    """
):
    RELATION_GENDERS[_noun] = "male"
for _noun in _split(
    """
    dog puppy pup cat kitten kitty hamster parrot horse pony rabbit bunny fish goldfish turtle
    tortoise gecko lizard snake bird budgie canary ferret chinchilla pig guinea hedgehog rat mouse
    greyhound labrador lab retriever terrier poodle beagle spaniel collie husky pug corgi
    dachshund shepherd bulldog chihuahua pet cockatiel iguana axolotl alpaca goat chicken hen
    """
):
    RELATION_TYPES[_noun] = "pet"
for _noun in _split("company startup employer firm business agency band team club charity"):
    RELATION_TYPES[_noun] = "organization"
for _noun in _split(
    """
    project app game newsletter podcast blog bot website site channel repo library plugin
    extension novel book album series tool product prototype
    """
):
    RELATION_TYPES[_noun] = "project"
for _noun in _split("car laptop phone bike guitar camera truck van motorcycle"):
    RELATION_TYPES[_noun] = "product"
# "book" and "album" after "my" are usually the user's own work; after "called" when someone
# else made them they are products, which the extractor cannot tell apart: project wins.

# Abbreviations written with a period that ends neither a sentence nor a name: "Dr. Okafor",
# "St. Louis" (the extractor's tokens and memory_site.text.sentences' splitting).
ABBREVIATIONS = ("Dr", "Mr", "Mrs", "Ms", "Prof", "St", "Jr", "Sr")
# Lower-case words inside a name: "Bank of England", "Quinta da Aveleda".
NAME_CONNECTORS = frozenset({"of", "for", "de", "da", "del", "van", "von", "la", "le", "du", "y"})

# A person's title kept in the name: "Dr. Alvarez", "Mrs. Patel".
TITLES = _split("dr dr. mr mr. mrs mrs. ms ms. prof prof. professor sir dame aunt uncle auntie")

# Words after which a span is a place (prepositions and travel verbs).
PLACE_CUES = _split(
    """
    in to from near through across around into visit visited visiting visits
    toward towards outside inside via
    """
)
# Words before "at"/"for" that make the next name an employer or school, not a place.
WORK_CUES = _split(
    """
    work works worked working job jobs interview interviewing intern interning internship team
    shift shifts office career position role hired employed contract contractor manager
    engineer developer designer nurse teacher volunteer volunteering volunteers study studying
    studied student professor researcher lecturer promoted promotion boss colleague colleagues
    coworker coworkers
    co-worker co-workers start started starting
    """
)
# Words before "with" that make the next name an organization ("volunteering with X").
WITH_ORGANIZATION_CUES = _split(
    "volunteer volunteers volunteering volunteered intern interns interning interned internship"
)
# Verbs whose object is an organization (school, employer): "got into Stanford".
ORGANIZATION_VERBS = _split("joined joining join accepted graduated attends attending")
# Verbs whose object is a product or a work (book, film, game, device).
PRODUCT_VERBS = _split(
    """
    reading read reread watching watched watch playing played bought buy buying ordered order
    using use used upgrading upgraded upgrade installed install downloaded download
    """
)
# Lower-case nouns right after a name that make the name a project ("the Apollo migration").
PROJECT_NOUNS = _split(
    """
    project app roadmap migration launch release rollout repo codebase sprint redesign prototype
    mvp backend frontend website api beta milestone deadline
    """
)
# Lower-case nouns right after a name that make it an event ("the Harbor Lights festival").
EVENT_NOUNS = _split("festival conference concert parade fair summit marathon tournament gala")
# Lower-case nouns right after a name that make it a place ("the Mission district").
PLACE_NOUNS = _split("district neighborhood neighbourhood area quarter suburb borough region")

# Last word of a name and the type it gives.
SUFFIX_TYPES: dict[str, str] = {}
for _word in _split(
    """
    hospital university college school elementary academy bank inc inc. corp corp. llc ltd ltd.
    foundation trust institute labs lab group company co co. clinic society association
    agency council ministry department church museum library gym studios studio
    airlines airways motors partners ventures capital systems technologies
    """
):
    SUFFIX_TYPES[_word] = "organization"
for _word in _split(
    """
    park lake river street st road avenue ave tower bridge island islands beach bay valley
    mountains mountain hills hill city county province canyon falls forest square station
    airport harbor harbour peninsula coast desert heights village cafe café restaurant bistro
    pub diner bakery tavern brasserie trattoria pizzeria hotel inn mall zoo stadium arena
    theater theatre cinema
    """
):
    SUFFIX_TYPES[_word] = "place"
for _word in _split(
    """
    marathon festival conference summit cup olympics revolution war expo fair championship
    championships tournament open games week weekend day eve gala con
    """
):
    SUFFIX_TYPES[_word] = "event"
SUFFIX_TYPES["project"] = "project"

# First word of a name and the type it gives ("Mount Rainier", "Project Atlas").
PREFIX_TYPES = {
    "mount": "place",
    "lake": "place",
    "lago": "place",
    "cape": "place",
    "fort": "place",
    "port": "place",
    "saint": "place",
    "st.": "place",
    "project": "project",
    "operation": "project",
    "university": "organization",
    "bank": "organization",
}

# First words of many multi-word place names ("New York", "Los Angeles", "North Carolina",
# "Hong Kong"): such a name is a place, and one opening a sentence keeps its first word, which
# alone would be a common word ("New") or no name at all ("Los").
PLACE_NAME_PREFIXES = _split(
    """
    new los las san santa sao são rio hong buenos north south east west puerto costa sri tel abu
    kuala
    """
)
# Words shortly before "to" that make the next name a person, not a destination ("talked to
# Paul", "gave the book to Maria", "thanks to Ines"); after other words "to" stays a place cue.
TO_PERSON_WORDS = _split(
    """
    talk talks talking talked speak speaks speaking spoke say says saying said tell write
    writes writing wrote send sends sending sent give gives giving gave thanks thank listen
    listens listening listened married engaged introduced introduce explain explained
    explaining reply replied lend lent show showed shown text texted texting email emailed
    emailing mention mentioned apologize apologized apologise apologised belongs belonged
    according due close next similar compared related report reports reported reporting
    letter message note gift present card congrats congratulations kudos props shoutout
    """
)
# Words shortly before "from" that make the next name a person: "a text from Mike", "heard
# from Ana" (after other words "from" stays a place cue: "back from Lisbon").
FROM_PERSON_WORDS = _split(
    """
    text texts call calls email emails message messages letter letters note gift card present
    news heard hear hearing update reply call voicemail dm invite invitation
    """
)
# Verbs before "into" whose object is a person: "ran into Oliver".
INTO_PERSON_WORDS = _split("ran run running runs bumped bump bumping")
# Titles that are a relation too: "Aunt Rosa" is the user's aunt, named Rosa.
RELATION_TITLES = {
    "aunt": "aunt",
    "auntie": "aunt",
    "aunty": "aunt",
    "uncle": "uncle",
    "grandma": "grandma",
    "granny": "grandma",
    "nana": "grandma",
    "grandpa": "grandpa",
    "granddad": "grandpa",
    "cousin": "cousin",
}
# Nouns that make "a <noun> called X" a place: "a ramen place called Afuri".
NAMED_PLACE_NOUNS = _split(
    """
    place shop bookshop bookstore store spot venue gallery salon boutique market brewery winery
    cabin cottage chalet villa lodge farm ranch resort campsite hostel retreat estate vineyard
    quinta trail town neighborhood neighbourhood
    """
)
# What "my favourite <noun>" names, by noun: "My favourite movie is Inception" is a product,
# not the user's own project; "Radiohead is my favourite band" is not the user's band.
FAVOURITE_WORDS = _split("favorite favourite fave fav favourites favorites")
FAVOURITE_TYPES: dict[str, str] = {}
for _noun in _split(
    """
    movie film show series song album book novel game podcast app record track musical
    play painting brand car phone
    """
):
    FAVOURITE_TYPES[_noun] = "product"
for _noun in _split("city country place restaurant cafe café bar park beach spot town island"):
    FAVOURITE_TYPES[_noun] = "place"
for _noun in _split("band team club company label"):
    FAVOURITE_TYPES[_noun] = "organization"
for _noun in _split("artist singer author writer actor actress player director musician"):
    FAVOURITE_TYPES[_noun] = "person"
for _noun in _split("holiday festival event"):
    FAVOURITE_TYPES[_noun] = "event"
for _noun in _split(
    "food dish meal snack drink dessert cuisine language sport hobby subject genre colour color"
):
    FAVOURITE_TYPES[_noun] = "concept"
# Legal forms written after a comma ("Acme Holdings, Inc."): the name before is a company.
LEGAL_SUFFIXES = _split("inc inc. llc ltd ltd. corp corp. plc gmbh co co. incorporated")
# Given names that are also common words (NOT_NAMES): a name only right after a relation
# ("my son Will", "my aunt May", "my grandmother June").
NAME_WORDS_AFTER_RELATION = _split("will may june april august")
# Places a pet is taken to: "took Max to the vet".
PET_PLACES = _split("vet vets veterinarian groomer groomers kennel kennels")

HOLIDAYS = _words(
    """
    christmas
    christmas eve
    new year
    new year's
    new year's eve
    new year's day
    thanksgiving
    easter
    hanukkah
    diwali
    ramadan
    eid
    passover
    halloween
    valentine's day
    mother's day
    father's day
    independence day
    lunar new year
    chinese new year
    holi
    kwanzaa
    oktoberfest
    carnival
    mardi gras
    """
)
EVENTS = _words(
    """
    world cup
    super bowl
    olympics
    wimbledon
    tour de france
    glastonbury
    coachella
    burning man
    comic-con
    sxsw
    pycon
    ces
    wwdc
    eurovision
    the oscars
    oscars
    the grammys
    grammys
    champions league
    world series
    """
)

ORGANIZATIONS = _split(
    """
    google alphabet microsoft apple amazon meta facebook instagram whatsapp netflix spotify
    tesla openai anthropic nvidia intel amd ibm oracle salesforce adobe uber lyft airbnb
    stripe paypal shopify twitter linkedin reddit youtube tiktok bytedance samsung sony
    nintendo toyota honda bmw volkswagen ford mercedes audi volvo ikea walmart target costco
    starbucks mcdonald's nike adidas h&m deloitte pwc kpmg accenture mckinsey bain
    goldman jpmorgan chase citibank barclays hsbc santander revolut monzo wells verizon
    at&t t-mobile vodafone comcast disney hbo pixar nasa unicef unesco who nhs fbi cia
    harvard stanford mit oxford cambridge yale princeton berkeley coursera udemy edx
    red cross greenpeace ups fedex dhl boeing airbus siemens bosch philips unilever nestle
    """
)
PRODUCTS = _split(
    """
    iphone ipad macbook imac airpods kindle android windows linux ubuntu chrome firefox
    safari playstation xbox switch fitbit alexa siri chatgpt gpt-4 claude gemini excel word
    powerpoint outlook gmail notion slack jira confluence trello asana figma canva zoom teams
    discord telegram signal duolingo headspace calm strava peloton garmin roomba thinkpad
    surface pixel galaxy aws azure gcp docker kubernetes terraform postgres postgresql mysql
    mongodb redis django flask fastapi react vue angular svelte nextjs next.js node.js nodejs
    rails laravel spring tensorflow pytorch github gitlab bitbucket vscode vim emacs photoshop
    lightroom blender unity unreal minecraft fortnite zelda netflix spotify tinder bumble
    hinge uber venmo whatsapp instagram tiktok youtube wordpress shopify webflow obsidian
    """
)
# Brands whose next capitalized word names a model: "Toyota Corolla", "Kindle Paperwhite".
PRODUCT_BRANDS = _split(
    """
    toyota honda ford tesla bmw audi volkswagen vw mercedes kia hyundai nissan subaru mazda
    volvo jeep apple samsung google sony microsoft kindle macbook iphone ipad galaxy pixel
    surface dell hp lenovo asus acer nintendo canon nikon fujifilm dyson bose
    """
)
CONCEPTS = _split(
    """
    python javascript typescript rust golang java kotlin swift haskell scala ruby php perl
    elixir clojure sql html css c++ c# buddhism christianity islam judaism hinduism
    stoicism existentialism marxism keto yoga pilates crossfit
    """
)
# Nationality and language words: adjectives before a noun ("Thai place"), languages when learnt.
NATIONALITIES = _split(
    """
    english french spanish german italian portuguese dutch greek turkish russian polish czech
    swedish norwegian danish finnish icelandic irish scottish welsh british american canadian
    mexican brazilian argentinian chilean peruvian colombian cuban japanese chinese korean
    thai vietnamese indian pakistani bangladeshi nepali indonesian filipino malaysian
    australian african nigerian kenyan ethiopian egyptian moroccan arabic arab persian
    hebrew israeli lebanese ukrainian hungarian romanian croatian serbian mandarin cantonese
    hindi urdu swahili tagalog latin european asian latino latina victorian
    """
)
LANGUAGE_VERBS = _split(
    "learn learning learned learnt speak speaks speaking study studying studied practice "
    "practicing practising fluent teach teaching translate translating"
)
PLACES = _split(
    """
    usa us uk america england scotland wales ireland canada mexico brazil argentina chile peru
    colombia france spain portugal germany italy netherlands belgium switzerland austria
    sweden norway denmark finland iceland poland greece turkey russia ukraine japan china korea
    india thailand vietnam indonesia philippines australia zealand egypt morocco kenya nigeria
    london paris berlin madrid rome lisbon porto amsterdam barcelona vienna prague budapest
    dublin edinburgh glasgow manchester munich hamburg zurich geneva stockholm oslo copenhagen
    helsinki warsaw krakow athens istanbul moscow tokyo kyoto osaka seoul beijing shanghai
    singapore bangkok bali sydney melbourne toronto vancouver montreal chicago boston seattle
    austin denver portland miami atlanta dallas houston nashville brooklyn manhattan
    california texas florida ohio oregon arizona utah colorado vermont hawaii alaska europe
    asia africa cairo nairobi dubai delhi mumbai bangalore tuscany provence patagonia
    """
)

# Nouns, interjections and chat shorthand that open a chat sentence ("Dinner with Hiroshi",
# "Work was long", "Tbh Anna is right"): not a name there, but kept inside one ("Labour Party").
SENTENCE_OPENERS = _split(
    """
    work school life dinner lunch breakfast brunch coffee drinks tea supper gym traffic weather
    funny weird crazy meh damn dang ugh goodnight hugs xoxo plus tbh imo imho ngl idk speaking
    overall congrats cheers awesome oops aw aww awww woah whoa yay yikes ooh ohh ahh phew
    super anytime talk bummer gosh geez jeez hooray woohoo
    eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty
    forty fifty sixty seventy eighty ninety hundred thousand million
    """
)
# Verbs a chat sentence opens with, its "I" left out ("Called Sarah about the lease", "Met
# Rachel for lunch"): not part of the name after them. Past forms ending in -ed are caught by
# their ending (is_sentence_opener); these are the others and the short ones.
OPENING_VERBS = _split(
    """
    met saw took told gave got went ran had made sent left found heard caught bought brought
    drove rode flew wrote read spoke knew thought felt paid lent kept sold won lost hit ate
    called asked hugged helped loved missed
    """
)
# Given names ending in -ed, which the past-tense rule must not drop ("Alfred called").
NAMES_ENDING_ED = _split(
    """alfred manfred winifred wilfred mildred mohammed muhammed mohamed muhamed mehmed
    siegfried winfried wilfried"""
)
# Common nouns a chat sentence opens with ("Swimming helps", "Dogs are loyal", "Chess club starts"):
# hobbies, sports, arts, family and daily life, feelings, animals, events. A lone capitalized
# opener found here (or its singular: "Dogs", "Parties") is not a name. Words that are also
# common first names (grace, hope, summer, autumn, rose, art, will) are left out on purpose.
COMMON_NOUNS = _split(
    """
    music dance dancing ballet nature family life book books movie movies film films cinema
    theater theatre chess soccer football basketball baseball tennis golf hockey volleyball
    rugby cricket softball badminton bowling boxing karate judo wrestling swimming running
    jogging walking hiking biking cycling climbing skiing snowboarding surfing sailing rowing
    kayaking fishing hunting camping gardening cooking baking reading writing knitting sewing
    crocheting quilting drawing painting pottery sculpture sculpting poetry photography
    singing acting gaming crafts craft travel traveling travelling exercise fitness workout
    workouts health sleep stress anxiety depression therapy meditation love friendship
    friends friend kids kid children child parents people dog dogs cat cats pet pets animal
    animals horse horses bird birds fish puppies puppy kittens kitten plants plant flowers
    garden gardens school college university class classes homework exams exam job jobs career
    business money rent bills shopping food pizza sushi pasta tacos burgers wine beer coffee
    chocolate cake cakes dessert desserts cookies breakfast holidays holiday vacation vacations
    wedding weddings birthday birthdays party parties concert concerts festival festivals
    church beach beaches park parks mountains city home house apartment education retirement
    adoption parenting marriage divorce kindness patience happiness success failure courage
    creativity science math history physics chemistry biology art-class coding programming
    technology politics news weather winter spring traffic volunteering charity community
    meetings meeting interviews deadlines projects teamwork homeschooling daycare babysitting
    nursing medicine surgery recovery rehab physio physiotherapy diet dieting nutrition
    yoga pilates crossfit gym sports sport games videogames cars car trains train flights
    """
)
# Endings of common nouns and gerunds, long enough that a first name is not taken for one
# ("Meditation", "Friendship", "Parenting", "Creativity"; not "Irving", "Felicity").
COMMON_NOUN_ENDINGS = (
    "ing",
    "tion",
    "sion",
    "ment",
    "ness",
    "ship",
    "ism",
    "ology",
    "graphy",
    "ture",
    "apy",
    "ivity",
    "ality",
    "osity",
    "hood",
    "ics",
)
# Names with such an ending: still names when they open a sentence.
NAMES_WITH_NOUN_ENDINGS = _split("irving sterling channing manning browning fielding harding")
# Verbs that agree with a plural subject only ("Dogs are", "Kids grow", "Plants need"): a word
# ending in s followed by one of them is a plural noun, not "James" or "Lucas".
PLURAL_VERBS = _split(
    """
    are were have haven't aren't weren't don't do make need grow scare seem look bring help
    keep take give mean tend get go come love hate like say feel want cost require deserve
    """
)
# Nouns a common noun modifies at the start of a sentence ("Astronomy club meets", "Marker
# pens help", "Archery lessons start"): the capitalized word before one is not a name, since
# a name is followed by its verb ("Tom has"). Nouns that are also common verbs (books, notes,
# runs) are left out.
COMPOUND_HEADS = _split(
    """
    club clubs class classes lesson lessons team teams group groups pen pens app apps cards
    league leagues tickets course courses workshop workshops session sessions training shop
    shops store stores gear equipment supplies kit kits homework tournament tournaments
    practice season meetup meetups studio studios
    """
)
# Adverbs that may stand between a plural subject and its verb ("Dogs truly bring").
OPENER_ADVERBS = _split("always truly really never often usually just also still sometimes all")

# What a person has that one is "at" or "in" ("at Kate's party", "in Tom's apartment"): the
# name before it is the owner, not a place (unlike "dinner at Nando's").
OWNED_PLACE_NOUNS = _split(
    """
    party house place wedding birthday apartment flat home funeral graduation cabin farm office
    shower barbecue bbq reception room car garden studio
    """
)

# Capitalized words that start sentences or name times, not things: never an entity alone.
NOT_NAMES = _split(
    """
    i i'm i've i'd i'll im ive my me mine we our us you your yours he she it they them their
    his her its this that these those there here what when where why how who whom which
    whose the a an and or but so if then than because although though while after before
    since until unless also just still even only yes no not ok okay oh hey hi hello thanks
    thank sorry please well anyway actually honestly basically really maybe perhaps today
    tonight tomorrow yesterday now later soon recently lately currently finally also
    first second third next last every each some any all both many much most more few
    can could would should will shall may might must do does did don't doesn't didn't is are
    was were am be been being have has had having let let's lets write explain tell give
    show help make find list describe summarize summarise translate suggest recommend create
    compare plan draft rewrite check remind what's how's where's who's there's here's that's
    it's he's she's we're they're you're we've they've you've we'll they'll you'll
    monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december mon tue wed thu fri sat sun jan feb
    mondays tuesdays wednesdays thursdays fridays saturdays sundays weekends
    mar apr jun jul aug sep sept oct nov dec morning afternoon evening night weekend
    mom mum dad mother father grandma grandpa sis bro babe honey dear lol omg wow great good
    nice cool sure right agreed exactly true sounds love happy merry dear hmm haha yeah yep
    nope wait look listen imagine remember note btw fyi re fw fwd ps edit update
    ai tv pc pdf usb gps dna phd ceo cto cfo hr it qa ui ux api faq diy asap eta fyi rsvp
    id usd eur gbp am pm utc gmt est pst covid mri bmi ok ps rip
    our their someone everyone anyone nobody somebody everybody
    user assistant human system bot
    """
)
