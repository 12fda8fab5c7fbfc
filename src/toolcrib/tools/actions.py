"""What a tool does, read from its name: the verb and what it acts on, in any naming convention.

``send_money``, ``sendMoney``, ``SendMoney`` and ``VenmoSendMoney`` all read as the verb "send" and the
object "money" (a vendor or product before the verb, "Venmo", is context). People ask for the same
action in other words ("pay Sam back", "wire 40 to Sam"), and content others wrote asks in yet others,
so the verb comes with its synonyms from a small shipped lexicon of groups of actions, with any verb
the tool's description starts with ("Give someone access to a folder" for ``share_folder``).

Words that are nouns as often as verbs ("email", "order", "post", "text") ask for an action only where
a verb stands: at the start of a clause, after "please", "to", "you" and the like ("email Bob the
notes", "could you post it"), never as "my latest email".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from toolcrib.text import stem

# Groups of verbs that ask for the same kind of action, each with the nouns that say which kind a verb
# in several groups means ("send" a message or money). A word may sit in more than one group. Only
# actions that change something: reading verbs (get, read, find, check, show) never ask for a write.
_GROUPS: tuple[str, ...] = (
    "send email mail message text sms reply respond answer forward tell notify inform contact dm ping post"
    " | email mail message messages text sms dm chat note letter inbox",
    "pay transfer wire remit send settle | money funds payment transaction amount cash bill invoice",
    "refund reimburse repay | refund money payment",
    "delete remove erase trash discard purge wipe destroy kick uninstall drop clear",
    "create add make generate register insert append attach include put save submit compose draft new",
    "update change modify edit set adjust correct fix rename replace reset configure switch turn toggle"
    " enable disable rotate upgrade reschedule move manage",
    "schedule book reserve reschedule plan arrange postpone | event meeting appointment booking reservation",
    "cancel stop abort terminate revoke void unsubscribe end pause suspend halt freeze",
    "grant give share allow invite authorize permit add assign hand | access permission role admin guest user",
    "buy purchase order rent subscribe | item product order",
    "sell trade exchange liquidate",
    "post publish share tweet upload comment announce | post tweet comment page webpage status",
    "move relocate rename copy archive | file folder item document",
    "run execute launch trigger start deploy invoke restart perform | command script job pipeline",
    "unlock open admit | door lock",
    "lock close secure | door lock",
    "merge close resolve approve accept confirm | request ticket issue",
    "reject decline deny dismiss",
    "follow join connect subscribe",
    "download export import sync backup install",
    "go navigate drive visit bring deliver ship dispatch",
)
_PARSED = tuple((frozenset(verbs.split()), frozenset(nouns.split()))
                for verbs, _, nouns in (g.partition("|") for g in _GROUPS))
VERBS: frozenset[str] = frozenset().union(*(verbs for verbs, _ in _PARSED))
"""Every verb of the lexicon: the words that can ask for a change."""

# Verbs that are nouns as often ("email", "order"): they ask for an action only where a verb stands.
_NOUNS_TOO = frozenset({"email", "mail", "message", "text", "sms", "dm", "ping", "alert", "order", "post", "tweet",
                        "comment", "book", "plan", "charge", "tip", "deposit", "transfer", "wire", "end", "set",
                        "switch", "turn", "reset", "fix", "change", "update", "draft", "new", "start", "run",
                        "like", "answer", "reply", "contact", "record", "file", "backup", "sync", "copy", "share",
                        "drop", "clear", "open", "close", "lock", "drive", "visit", "exchange", "trade", "rent",
                        "note", "refund", "invite", "schedule", "return", "purchase", "upload", "download",
                        "export", "import", "release", "freeze"})
# Verbs the lexicon does not hold that take a derived noun for what is done ("place an order", "issue a refund").
_LIGHT_UNKNOWN = frozenset({"place", "issue", "process", "initiate", "complete", "do", "request", "arrange"})
_DETERMINERS = frozenset({"a", "an", "the", "my", "our", "this", "that", "its", "their", "his", "her", "your", "new"})
_KEEP_S = frozenset({"access", "address", "business", "status"})
# Verbs that say little by themselves: what follows says what is done ("post a reply", "make a payment").
_LIGHT = frozenset({"post", "make", "create", "add", "submit", "send", "give", "set", "put", "perform", "new"})
# What may stand before a verb at the start of a clause ("please", "to", "can you", "and then").
_BEFORE_VERB = frozenset({"please", "kindly", "to", "you", "and", "then", "also", "just", "now", "so", "or",
                          "lets", "let's", "i", "we", "me", "us", "pls", "plz", "ok", "okay", "quickly"})
# Derived nouns that ask for their verb ("make a reservation", "a booking", "the payment"): verb stem + ending.
_NOMINAL = ("ation", "ment", "ing", "al", "ion")

# Phrasal verbs: a head and its particle, with up to three words between ("let my cousin in", "hand the
# keys over", "get rid of"), and the lexicon verb each asks for.
_PHRASES = (
    ("let in", "admit"), ("buzz in", "admit"), ("open up", "unlock"), ("let know", "tell"),
    ("get rid of", "delete"), ("throw away", "delete"), ("throw out", "delete"), ("wipe out", "delete"),
    ("clean up", "delete"), ("clear out", "delete"), ("cross off", "delete"), ("take down", "remove"),
    ("take off", "remove"), ("take out", "remove"), ("kick out", "remove"), ("strike off", "remove"),
    ("hand over", "give"), ("give away", "give"), ("pass on", "forward"), ("pass along", "forward"),
    ("send over", "send"), ("send along", "send"), ("send off", "send"), ("write back", "reply"),
    ("get back to", "reply"), ("reach out", "contact"), ("loop in", "add"), ("sign up", "register"),
    ("sign on", "register"), ("set up", "create"), ("put in", "add"), ("put together", "create"),
    ("write up", "create"), ("fill in", "update"), ("fill out", "update"), ("bump up", "change"),
    ("bump down", "change"), ("top up", "pay"), ("pay back", "pay"), ("pay off", "pay"), ("pay out", "pay"),
    ("shut down", "stop"), ("shut off", "stop"), ("turn off", "switch"), ("turn on", "switch"),
    ("turn up", "switch"), ("turn down", "switch"), ("switch off", "switch"), ("switch on", "switch"),
    ("power off", "switch"), ("power on", "switch"), ("power down", "switch"), ("call off", "cancel"),
    ("back out", "cancel"), ("drop off", "deliver"), ("move up", "reschedule"), ("push back", "postpone"),
    ("bring forward", "reschedule"), ("pencil in", "schedule"), ("book in", "book"), ("sign off", "approve"),
    ("hook up", "connect"), ("cut off", "revoke"), ("lock out", "revoke"), ("put on hold", "pause"),
    ("turn away", "reject"), ("give back", "refund"))


def _phrasal_table() -> dict[str, tuple[tuple[tuple[str, ...], str], ...]]:
    """``_PHRASES`` by head: ``{"let": ((("in",), "admit"), (("know",), "tell"))}``."""
    table: dict[str, tuple[tuple[tuple[str, ...], str], ...]] = {}
    for phrase, verb in _PHRASES:
        head, *particle = phrase.split()
        table[head] = (*table.get(head, ()), (tuple(particle), verb))
    return table


_PHRASAL = _phrasal_table()
# Forms a suffix does not undo: of the lexicon's verbs and of the phrasal verbs' heads.
_FORMS = {"paid": "pay", "sent": "send", "gave": "give", "given": "give", "made": "make", "ran": "run",
          "went": "go", "brought": "bring", "told": "tell", "bought": "buy", "sold": "sell", "drove": "drive",
          "driven": "drive", "withdrew": "withdraw", "got": "get", "gets": "get", "getting": "get", "took": "take",
          "taken": "take", "taking": "take", "threw": "throw", "thrown": "throw", "letting": "let", "lets": "let",
          "handed": "hand", "passed": "pass", "wrote": "write", "written": "write", "signed": "sign",
          "putting": "put", "filled": "fill", "bumped": "bump", "turned": "turn", "switched": "switch",
          "called": "call", "dropped": "drop", "moved": "move", "pushed": "push", "booked": "book",
          "kicked": "kick", "wiped": "wipe", "cleaned": "clean", "cleared": "clear", "reached": "reach",
          "topped": "top"}


def phrasal_verb(words: list[str], i: int) -> str:
    """The lexicon verb the phrasal verb headed by ``words[i]`` asks for ("let my cousin in": admit), or
    "": the nearest particle after the head, at most three words away, decides ("let me know": tell)."""
    head = _FORMS.get(words[i], words[i])
    best = ("", 99)
    for particle, verb in _PHRASAL.get(head, ()):
        for j in range(i + 1, min(i + 5, len(words))):
            if tuple(words[j:j + len(particle)]) == particle and j - i < best[1]:
                best = (verb, j - i)
                break
    return best[0]


# Words of tool names that say nothing about what is acted on.
GENERIC = frozenset({"most", "recent", "latest", "list", "all", "info", "data", "details", "items", "with", "from"})
"""Words in tool names that say nothing about what the tool reads."""
_FILLER = GENERIC | {"for", "the", "and", "manager", "system", "tool", "api", "service", "app", "by", "new"}

_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_CLAUSE = re.compile(r"[.!?;:,\n()\"]|\s-\s")


@lru_cache(maxsize=4096)
def split_name(name: str) -> tuple[str, ...]:
    """A tool name's words in lower case, in any convention: ``get_most_recent`` -> get, most, recent;
    ``getIssue`` -> get, issue; ``AugustSmartLockGrantGuestAccess`` -> august, smart, lock, grant, guest,
    access; ``HTTPGetURL`` -> http, get, url."""
    return tuple(w.lower() for part in re.split(r"[\W_]+", name) for w in _CAMEL.findall(part))


@dataclass(frozen=True)
class Action:
    """What a tool's name says it does: its verb (empty when no word of the name is a known verb), the
    words after it (what it acts on) and before it (a vendor or product)."""

    verb: str
    objects: tuple[str, ...]
    context: tuple[str, ...]

    @property
    def verbs(self) -> frozenset[str]:
        """The verb and its synonyms, and those of a word after it that is a verb as well ("shipping" in
        update_shipping_address); one that is a noun as often ("reply", "order") only after a light verb
        or one the lexicon does not know (post_reply, place_order, issue_refund), never after a full one
        (delete_email does not send, cancel_order does not buy)."""
        light = self.verb in _LIGHT or self.verb not in VERBS
        words = [self.verb, *(verb for w in self.objects
                              if (verb := base_verb(w)) in VERBS and (light or verb not in _NOUNS_TOO))]
        nouns = frozenset(w.rstrip("s") if w.endswith("s") and w not in _KEEP_S else w for w in self.objects) | \
            frozenset(self.objects)
        return frozenset().union(*(synonyms(w, nouns) for w in words if w))

    @property
    def nouns(self) -> tuple[str, ...]:
        """The words of the name that say what it acts on, or where (not its verb, not a filler word)."""
        return tuple(w for w in (*self.context, *self.objects) if len(w) > 2 and w not in _FILLER)


@lru_cache(maxsize=4096)
def action_of(name: str) -> Action:
    """The action a tool's name describes. The verb is the name's first word when that is a verb
    (``cancel_order``); past a vendor or product it is the first known verb not followed by another
    (``AugustSmartLockUnlockDoor``: "unlock", not "lock"). A name with no known verb keeps its first word
    as the verb (``escalate_ticket``: "escalate")."""
    words = split_name(name)
    if not words:
        return Action("", (), ())
    index = 0
    if not _is_verb(words[0]):
        index = next((i for i, word in enumerate(words)
                      if _is_verb(word) and not (i + 1 < len(words) and _is_verb(words[i + 1]))), 0)
    return Action(base_verb(words[index]), tuple(words[index + 1:]), tuple(words[:index]))


@lru_cache(maxsize=4096)
def description_verb(description: str) -> str:
    """The verb a description starts with, when the lexicon knows it ("Gives someone access" -> give)."""
    first = _WORD.findall(description.lower()[:40])[:1]
    return base_verb(first[0]) if first and _is_verb(first[0]) else ""


@lru_cache(maxsize=1024)
def synonyms(verb: str, nouns: frozenset[str] = frozenset()) -> frozenset[str]:
    """``verb`` and the verbs of the lexicon groups that hold it: of those whose nouns ``nouns`` names,
    when it sits in several and ``nouns`` (what the tool acts on) names some ("send" + "money": pay)."""
    groups = [(verbs, kinds) for verbs, kinds in _PARSED if verb in verbs]
    if len(groups) > 1 and (named := [verbs for verbs, kinds in groups if kinds & nouns]):
        return frozenset({verb}.union(*named))
    return frozenset({verb}.union(*(verbs for verbs, _ in groups)))


@lru_cache(maxsize=1024)
def kinds(verb: str) -> frozenset[str]:
    """What the lexicon's groups holding ``verb`` act on ("pay": money, funds, bill, invoice, ...)."""
    return frozenset().union(*(nouns for verbs, nouns in _PARSED if verb in verbs))


def asks_for(text: str, verbs: frozenset[str]) -> bool:
    """Whether ``text`` asks for one of ``verbs``: as a verb (a noun-like verb only where a verb stands),
    or as its derived noun ("a reservation" asks to reserve, "the payment" to pay)."""
    return bool(verbs & verbs_in(text))


@lru_cache(maxsize=1024)  # a write's check asks it of the same request once per tool of the registry
def verbs_in(text: str) -> frozenset[str]:
    """The lexicon's verbs ``text`` uses as verbs, in base form (see ``asks_for``): a noun-like verb only
    where a verb stands or as a light verb's object ("issue a refund"), a derived noun only as a verb's
    object ("make a payment", not "my rent payment")."""
    found: set[str] = set()
    for clause in _CLAUSE.split(text.lower()):
        words = _WORD.findall(clause)
        verb_at = -9  # where the last verb of this clause stood
        for i, word in enumerate(words):
            previous = words[i - 1] if i else ""
            base = base_verb(word)
            verb = phrasal_verb(words, i) or (base if base in VERBS else "")
            after_a_verb = i == verb_at + 1 or (i == verb_at + 2 and previous in _DETERMINERS)
            if verb:
                where_a_verb_stands = base not in _NOUNS_TOO or not previous or previous in _BEFORE_VERB
                if where_a_verb_stands and not (base == "make" and words[i + 1:i + 2] == ["sure"]):
                    found.add(verb)
                    verb_at = i
                elif after_a_verb and words[verb_at] in _LIGHT_UNKNOWN | _LIGHT:
                    found.add(verb)  # what a light verb does: "issue a refund", "post a reply"
            elif word in _LIGHT_UNKNOWN:
                verb_at = i
            elif after_a_verb:
                found.add(_nominal(word))
        found.discard("")
    return frozenset(found)


def _is_verb(word: str) -> bool:
    return base_verb(word) in VERBS


@lru_cache(maxsize=8192)
def base_verb(word: str) -> str:
    """``word`` in the lexicon's form where one of its inflections is ("sends", "paid", "booking" -> send,
    pay, book), else unchanged."""
    if word in VERBS:
        return word
    for candidate in (_FORMS.get(word, ""), word[:-1] if word.endswith("s") else "",
                      word[:-2] if word.endswith(("es", "ed")) else "", word[:-1] if word.endswith("ed") else "",
                      word[:-3] if word.endswith("ing") else "", word[:-3] + "e" if word.endswith("ing") else "",
                      word[:-4] if word.endswith(("ping", "ting", "ning", "ging")) else "",
                      word[:-3] if word.endswith(("ped", "ted", "ned", "ged")) else "",
                      word[:-3] + "y" if word.endswith("ied") else "", word[:-3] + "y" if word.endswith("ies") else ""):
        if candidate in VERBS:
            return candidate
    return word


@lru_cache(maxsize=8192)
def _nominal(word: str) -> str:
    """The verb a derived noun comes from ("reservation" -> reserve, "payment" -> pay), or ""."""
    for ending in _NOMINAL:
        if word.endswith(ending) and len(word) > len(ending) + 2:
            root = word[: -len(ending)]
            for candidate in (root, root + "e", stem(root)):
                if candidate in VERBS and candidate not in ("end", "set", "put"):
                    return candidate
    return ""

