"""Sentences for the synthetic generator's text mode (``synthetic:PROFILE,text=1``).

A synthetic fact is (topic, fact index, category, subject); its value changes by version.
Here each fact becomes something a person says: the topic names a domain ("yoga"), the fact
index a thing of it ("teacher"), so the fact is "my yoga teacher"; the category picks a
relation with its own value words ("fact": where it is; "relationship": who runs it; "event":
when it is ...). Each relation has several paraphrase templates for a statement, a few
natural questions ("Where is my yoga teacher?") and a value-aware follow-up that names a
value ("Is my yoga teacher still in Denver?").

Value words: version ``v`` of a fact says ``values[(offset + v) % len(values)]`` with an
offset per fact, so consecutive versions always differ; a fact changed more often than its
relation has words comes back to an earlier word (as people move back to a city). The
claim's value stays ``value{v}``: only the sentence names the word.
"""

from __future__ import annotations

from dataclasses import dataclass

# one domain per topic (facts of one topic share this word, as related facts share vocabulary)
DOMAINS = (
    "yoga",
    "garden",
    "office",
    "chess",
    "kitchen",
    "soccer",
    "piano",
    "book club",
    "dentist",
    "camping",
    "painting",
    "bakery",
    "swimming",
    "language",
    "cycling",
    "pottery",
    "choir",
    "climbing",
    "film",
    "running",
)
# one thing per fact index (within a topic)
THINGS = (
    "teacher",
    "class",
    "group",
    "meetup",
    "project",
    "workshop",
    "coach",
    "lesson",
    "trip",
    "club",
    "course",
    "session",
    "team",
    "studio",
    "partner",
    "event",
    "retreat",
    "practice",
    "tutor",
    "festival",
)


@dataclass(frozen=True)
class Relation:
    """How statements and questions about one kind of fact are worded. Placeholders: ``{P}``
    the possessive ("my", "Sam's"), ``{S}`` the subject ("I", "Sam"), ``{thing}`` the fact
    ("yoga teacher"), ``{value}`` the value word; verbs in braces take the subject's form
    (:data:`VERBS`)."""

    name: str
    values: tuple[str, ...]
    statements: tuple[str, ...]
    questions: tuple[str, ...]
    followups: tuple[str, ...]


# verb -> (form after "I", form after a name)
VERBS = {
    "prefer": ("prefer", "prefers"),
    "feel": ("feel", "feels"),
    "need": ("need", "needs"),
    "have": ("have", "has"),
    "am": ("am", "is"),
    "do": ("do", "does"),
}

CITIES = (
    "Denver Lisbon Osaka Nairobi Toronto Oslo Austin Lima Prague Dublin Seoul Perth Boston "
    "Madrid Quito Vienna Cairo Miami Zurich Hanoi"
).split()
PEOPLE_NAMES = (
    "Jordan Priya Mateo Hannah Kofi Elena Dmitri Grace Omar Lucia Felix Amara Theo Ines "
    "Yusuf Clara Rohan Greta Malik Sofia"
).split()
FLAVOURS = (
    "green tea|black coffee|lemonade|hot chocolate|sparkling water|mint tea|orange juice|"
    "espresso|iced tea|ginger beer|chai|cold brew|apple cider|smoothies|oat milk|"
    "herbal tea|cola|matcha|kombucha|hot water"
).split("|")
COLOURS = (
    "red blue green yellow purple orange black white grey pink teal navy maroon beige "
    "silver gold olive coral ivory violet"
).split()
TIMES = tuple(
    f"{day} {part}"
    for part in ("morning", "evening")
    for day in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
) + ("weekend mornings", "weekend afternoons", "the first of the month", "lunchtime")
FEELINGS = (
    "excited nervous bored hopeful frustrated proud anxious relaxed curious tired "
    "grateful annoyed confident worried cheerful restless content uneasy thrilled calm"
).split()
TASKS = (
    "pay the fee|book a room|bring snacks|call the organiser|renew the membership|"
    "buy new shoes|send the forms|print the tickets|charge the camera|pack a towel|"
    "order the books|email the group|water the plants|check the schedule|return the keys|"
    "update the calendar|wash the gear|pick up the badge|fill the bottle|sign the waiver"
).split("|")

# one relation per synthetic category (scenarios.synthetic.CATEGORIES, in that order)
RELATIONS: dict[str, Relation] = {
    "fact": Relation(
        "place",
        tuple(CITIES),
        (
            "{P} {thing} is in {value}.",
            "These days {P} {thing} is based in {value}.",
            "{P} {thing} takes place in {value} now.",
            "Just so you know, {P} {thing} is located in {value}.",
        ),
        ("Where is {P} {thing}?", "In which city is {P} {thing}?"),
        ("Is {P} {thing} still in {value}?", "{P} {thing} is in {value}, right?"),
    ),
    "preference": Relation(
        "preference",
        tuple(FLAVOURS),
        (
            "At {P} {thing}, {S} {prefer} {value}.",
            "{S} always {have} {value} at {P} {thing}.",
            "For {P} {thing}, {value} is the favourite.",
            "When it comes to {P} {thing}, {S} {prefer} {value}.",
        ),
        (
            "What {do} {S} like to drink at {P} {thing}?",
            "What is the favourite drink at {P} {thing}?",
        ),
        ("Is {value} still the pick at {P} {thing}?", "Do we still go for {value} at {P} {thing}?"),
    ),
    "relationship": Relation(
        "person",
        tuple(PEOPLE_NAMES),
        (
            "{P} {thing} is run by {value}.",
            "{value} is in charge of {P} {thing}.",
            "{P} {thing} is led by {value} now.",
            "The person behind {P} {thing} is {value}.",
        ),
        ("Who runs {P} {thing}?", "Who is in charge of {P} {thing}?"),
        ("Is {value} still running {P} {thing}?", "Does {value} still lead {P} {thing}?"),
    ),
    "decision": Relation(
        "choice",
        tuple(COLOURS),
        (
            "The decision is made: {P} {thing} will be {value}.",
            "{P} {thing} is going with {value} as its colour.",
            "We settled on {value} for {P} {thing}.",
            "The colour chosen for {P} {thing} is {value}.",
        ),
        ("What colour was picked for {P} {thing}?", "Which colour is {P} {thing} going with?"),
        ("Is {P} {thing} still going with {value}?", "Did {P} {thing} keep {value} as its colour?"),
    ),
    "event": Relation(
        "time",
        TIMES,
        (
            "{P} {thing} is on {value}.",
            "{P} {thing} happens on {value} now.",
            "{P} {thing} was moved to {value}.",
            "The slot for {P} {thing} is {value}.",
        ),
        ("When is {P} {thing}?", "What day is {P} {thing}?"),
        ("Is {P} {thing} still on {value}?", "Does {P} {thing} still happen on {value}?"),
    ),
    "sentiment": Relation(
        "feeling",
        tuple(FEELINGS),
        (
            "{S} {feel} {value} about {P} {thing}.",
            "Honestly, {P} {thing} makes {O} feel {value}.",
            "Lately {S} {am} {value} about {P} {thing}.",
            "{P} {thing} leaves {O} {value}.",
        ),
        ("How {do} {S} feel about {P} {thing}?", "What is the mood about {P} {thing}?"),
        ("Still {value} about {P} {thing}?", "Is {P} {thing} still making {O} feel {value}?"),
    ),
    "reminder": Relation(
        "task",
        tuple(TASKS),
        (
            "Remind {O} to {value} for {P} {thing}.",
            "Before {P} {thing}, {S} {need} to {value}.",
            "Don't let {O} forget to {value} for {P} {thing}.",
            "For {P} {thing}, the task is to {value}.",
        ),
        (
            "What {do} {S} need to get done for {P} {thing}?",
            "What was the reminder about {P} {thing}?",
        ),
        (
            "{do} {S} still need to {value} for {P} {thing}?",
            "Is it still to {value} for {P} {thing}?",
        ),
    ),
}


@dataclass(frozen=True)
class Fact:
    """What the sentences of one synthetic fact need: its topic and index, its category
    and whose it is (``owner`` or a person's name)."""

    topic: int
    index: int
    category: str
    subject: str

    @property
    def relation(self) -> Relation:
        return RELATIONS[self.category]

    @property
    def thing(self) -> str:
        return f"{DOMAINS[self.topic % len(DOMAINS)]} {THINGS[self.index % len(THINGS)]}"

    def value_word(self, version: int) -> str:
        """The word version ``version`` of this fact names (consecutive versions differ)."""
        words = self.relation.values
        offset = (self.index * 7 + self.topic * 3) % len(words)
        return words[(offset + version) % len(words)]


def _fill(template: str, fact: Fact, value: str) -> str:
    owner = fact.subject == "owner"
    name = fact.subject.capitalize()
    slots = {
        "P": "my" if owner else f"{name}'s",
        "S": "I" if owner else name,
        "O": "me" if owner else name,
        "thing": fact.thing,
        "value": value,
        **{verb: forms[0 if owner else 1] for verb, forms in VERBS.items()},
    }
    text = template.format(**slots)
    return text[:1].upper() + text[1:]


def statement(fact: Fact, version: int, template: int) -> str:
    """Statement template ``template`` (modulo their number) of ``fact`` at ``version``."""
    rel = fact.relation
    return _fill(rel.statements[template % len(rel.statements)], fact, fact.value_word(version))


def question(fact: Fact, template: int) -> str:
    """A value-blind question about ``fact`` (question template ``template``)."""
    rel = fact.relation
    return _fill(rel.questions[template % len(rel.questions)], fact, "")


def followup(fact: Fact, version: int, template: int) -> str:
    """A value-aware follow-up question naming the value of ``version``."""
    rel = fact.relation
    return _fill(rel.followups[template % len(rel.followups)], fact, fact.value_word(version))


def chatter(topic: int, number: int) -> str:
    """One-off small talk (chatter topic ``topic``), worded like the rest of the stream."""
    lines = (
        "Ugh, the traffic this morning was unreal.",
        "Did you see that funny video about the {d} cat?",
        "I might grab a sandwich later, not sure.",
        "The weather keeps changing today.",
        "Random thought: {d} would make a good podcast topic.",
        "My neighbour's dog barked all night again.",
        "I should probably drink more water.",
        "That new song is stuck in my head.",
    )
    domain = DOMAINS[topic % len(DOMAINS)]
    return lines[(topic + number) % len(lines)].format(d=domain)
