"""Publisher scenarios as data: their alphabet, how they are generated, spelled out
systematically, shrunk, checked for shape and shown.

``rstck._internal.fuzz.publisher_side`` runs them against a publisher and judges what it did; see its
docstring for what a scenario can do and the rules the verdict rests on.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

from ...api import MAX_DEMAND
from ...settings import Settings
from .scenario import Scenario
from .scenario import demand_text
from .scenario import elements_text
from .search import drop_chunks
from .search import simpler_demand

#: The failed publisher, as the element count of a scenario.
FAILED = -1
#: Elements a probe takes under unbounded demand before it cancels by itself (endless streams).
TAKE_LIMIT = 2000
#: Elements of an endless stream compared with the reference run.
REFERENCE_PREFIX = 64
_BOUNDARY = (MAX_DEMAND - 1, MAX_DEMAND, MAX_DEMAND + 1, 2**62, 2**64)
_NON_POSITIVE = (0, -1, -MAX_DEMAND)
_SIZES = (0, 1, 2, 3, 4, 7, 16, 64)
#: A re-entrant action at this ``on_next`` index is made from every ``on_next`` (the first
#: ``EVERY_LIMIT`` of them: on an endless stream a request(1) from each would never end).
EVERY = 0
EVERY_LIMIT = 64
#: The index of a re-entrant action made from ``on_error`` (only ``("raise",)`` is made there).
ON_ERROR = -1
#: The action of a subscriber that fails: its signal method raises (rule 2.13: the publisher
#: must then consider the subscription cancelled; request() and subscribe() still return).
RAISE = ("raise",)
#: The share of long random scenarios, and their most steps. They cost most of the search's
#: time (64% at one in seven of up to 200 steps); one in ten of up to 160 pays for the
#: systematic phase, which covers the short orders.
LONG_SHARE = 0.1
LONG_STEPS = 160
#: The share of random scenarios with a subscriber that raises.
RAISE_SHARE = 0.15


# -- generating scenarios --------------------------------------------------------------------


def sizes_for(settings: Settings, *, empty: bool = True) -> list[int]:
    """The stream sizes scenarios use: ``_SIZES`` up to max_elements, without 0 unless
    factory(0) is an empty stream (``empty``: optional, as in the JVM TCK); an endless stream
    is used as it is."""
    if not settings.can_complete:
        return [settings.max_elements]
    return [k for k in _SIZES if k <= settings.max_elements and (empty or k > 0)]


def generator(settings: Settings, *, subscribers: int, failed: bool,
              empty: bool = True) -> Callable[[random.Random], Scenario]:
    """Scenarios ``(n, actions in on_subscribe, actions from on_next #i, steps)`` for a subject
    (``empty``: whether factory(0) is an empty stream; if not, no scenario uses it).

    The same function for the same sizes and subscribers, so that ``search.expand`` makes
    each seed's scenario once per process."""
    return _generator(tuple(sizes_for(settings, empty=empty)), subscribers, failed)


@functools.lru_cache(maxsize=64)
def _generator(sizes: tuple[int, ...], subscribers: int, failed: bool) -> Callable[[random.Random], Scenario]:
    # Mostly longer than what is requested, so that a miscount shows as an extra element.
    middle = [k for k in sizes if 7 <= k <= 16] or sizes

    # The weighted choices are written out (``pick``'s tables, a roll of their summed weights
    # each): the same draws in the same order as ``pick`` makes, without a table of lambdas
    # made per draw (a hundred scenarios were some 8 ms of every run).
    step_kinds = 9 if subscribers > 1 else 8  # request 6, cancel 1, run 1, subscribe 1

    def generate(rng: random.Random) -> Scenario:
        randrange, randint, choice = rng.randrange, rng.randint, rng.choice

        def demand(boundary: int = 2, illegal: int = 1) -> int:
            roll = randrange(28 + boundary + illegal)  # a few 24, more 4, boundary, illegal
            if roll < 24:
                return randint(1, 3)
            if roll < 28:
                return randint(4, 20)
            return choice(_BOUNDARY) if roll < 28 + boundary else choice(_NON_POSITIVE)

        def via(thread: int = 1) -> str:
            return "here" if randrange(2 + thread) < 2 else "thread"

        def action(cancels: int = 1, boundary: int = 2, illegal: int = 1, thread: int = 1) -> tuple[Any, ...]:
            if randrange(6 + cancels) < 6:
                amount = demand(boundary, illegal)
                return ("request", amount, via(thread))
            return ("cancel", via(thread))

        def target() -> int:
            # Mostly the first subscriber: a step aimed at one not subscribed yet does nothing.
            if subscribers == 1 or randrange(4) < 3:
                return 0
            return randint(1, subscribers - 1)

        def step() -> tuple[Any, ...]:
            roll = randrange(step_kinds)
            if roll < 6:
                aimed = target()
                amount = demand()
                return ("request", aimed, amount, via())
            if roll < 7:
                aimed = target()
                return ("cancel", aimed, via())
            if roll < 8:
                return ("run",)
            return ("subscribe", tuple(action() for _ in range(randint(0, 2))))

        def index() -> int:
            roll = randrange(5)  # on_next #1-3: 3, #4-8: 1, every on_next: 1
            return randint(1, 3) if roll < 3 else randint(4, 8) if roll < 4 else EVERY

        if failed and rng.random() < 0.25:
            n = FAILED
        else:
            n = choice(middle) if rng.random() < 0.75 else choice(sizes)
        # Inside on_subscribe nothing can be delivered yet: where demand accumulates (3.17).
        first = tuple(action(cancels=0, boundary=3) for _ in range(randint(0, 3)))
        # Re-entrant calls, dense: a drain loop is where order-dependent defects hide.
        # Handed to another thread as often as not: a call landing while a drain loop runs.
        reactions = tuple(sorted({(target(), index(), action(cancels=2, illegal=6, thread=2))
                                  for _ in range(randint(0, 6))}))
        # A failing subscriber now and then: an on_next that raises, or an on_error.
        if rng.random() < RAISE_SHARE:
            at = ON_ERROR if rng.random() < 0.25 else randint(1, 3) if randrange(4) < 3 else randint(4, 8)
            reactions = tuple(sorted({*reactions, (target(), at, RAISE)}))
        count = randint(0, 12) if rng.random() >= LONG_SHARE else randint(40, LONG_STEPS)
        return (n, first, reactions, tuple(step() for _ in range(count)))

    return generate


# -- the systematic search ---------------------------------------------------------------------

#: The amounts of the systematic alphabet: one, two, a few, the boundaries around 2**63-1
#: (sums of two cross it), and the two illegal kinds.
ALPHABET_DEMAND = (1, 2, 3, MAX_DEMAND - 1, MAX_DEMAND, 2**64, 0, -1)
#: Where a letter's call is made: a step of the test thread, inside on_subscribe, re-entrantly
#: from on_next #1 (also handed to another thread while it waits: a call landing while the
#: drain loop runs), from on_next #k, and from every on_next.
WHERE = ("test", "on_subscribe", "on_next #1", "on_next #1, another thread", "on_next #k", "every on_next")
#: Where the subscriber raises instead of calling (``RAISE``): a failing first element, a
#: failing later one, a failing on_error (after request(0)).
RAISE_WHERE = ("on_next #1", "on_next #k", "on_error")
#: The ``k`` of "on_next #k" and the stream length of systematic scenarios: a request of "a few"
#: (3) after one element reaches the end, and a miscount of one shows as an extra element.
SYSTEMATIC_K = 2
SYSTEMATIC_N = 4
#: What is still tried after a cancel or a non-positive request: every call is then a no-op
#: (3.6, 1.6), and these stand for the rest (a small and an unbounded request, another
#: non-positive one, another cancel).
AFTER_END = (("request", 1, "here"), ("request", MAX_DEMAND, "here"), ("request", 0, "here"), ("cancel", "here"))
#: Amounts a re-entrant action's demand comes from, and amounts it requests: a few and 2**64
#: stand for their classes there (2 reaches on_next #k as 3 does; 2**63-1 is unbounded as 2**64
#: is, and sums crossing 2**63-1 come from 2**63-2 and 2**63-1).
REENTRANT_SOURCE = (1, 2, MAX_DEMAND - 1, MAX_DEMAND)
REENTRANT_DEMAND = (1, 2, 3, MAX_DEMAND - 1, MAX_DEMAND, 0, -1)


def systematic(settings: Settings, steps: int) -> Iterator[Scenario]:
    """Every scenario of up to ``steps`` letters of the alphabet, shortest first, without repeats.

    A letter is one call (a request of an ``ALPHABET_DEMAND`` amount, or cancel) made from one
    of ``WHERE``. Sequences that give the same scenario (re-entrant actions are a set; calls
    inside on_subscribe come before the test thread's) are run once, and so is a sequence with
    a re-entrant action that a conforming publisher never reaches (its on_next never comes, or
    "every" on_next is only one): it is the same scenario as the one without it, and any
    publisher that does reach it has broken a rule the shorter one shows. Two classes stand
    for their members: the demand a re-entrant action needs comes from the test thread
    (on_subscribe's own demand is crossed with the test thread's and with itself), with the
    amounts of ``REENTRANT_SOURCE`` and ``REENTRANT_DEMAND``, and after a cancel or a
    non-positive request only ``AFTER_END`` is tried. A subscriber that raises (``RAISE_WHERE``)
    is one more letter.
    """
    if steps > 0:
        n = min(SYSTEMATIC_N, settings.max_elements) if settings.can_complete else settings.max_elements
        yield from _systematic(n, steps) if steps <= 2 else _spell_all(n, steps)


@functools.lru_cache(maxsize=16)
def _systematic(n: int, steps: int) -> tuple[Scenario, ...]:
    """``systematic``'s scenarios of stream size ``n``, spelled once per process (a library's
    subjects share them); the thorough level, 3 steps, is spelled as it runs (a cut search
    stops spelling too)."""
    return tuple(_spell_all(n, steps))


def _spell_all(n: int, steps: int) -> Iterator[Scenario]:
    letters = _letters()
    seen: set[Scenario] = set()
    for length in range(1, steps + 1):
        for word in _words(letters, length):
            scenario = _spelled(n, word)
            if scenario is None or scenario in seen:
                continue
            seen.add(scenario)
            if _live(scenario):
                yield scenario


def _words(letters: tuple[_Letter, ...], length: int) -> Iterator[tuple[_Letter, ...]]:
    if length == 0:
        yield ()
        return
    for shorter in _words(letters, length - 1):
        for letter in letters:
            yield (*shorter, letter)


#: The ``on_next`` index (or ``EVERY``, ``ON_ERROR``) a re-entrant letter's place stands for.
_INDEX = {"on_next #1": 1, "on_next #1, another thread": 1, "on_next #k": SYSTEMATIC_K,
          "every on_next": EVERY, "on_error": ON_ERROR}
#: A letter's place: a step of the test thread, inside on_subscribe, or re-entrant.
_TEST, _ON_SUBSCRIBE, _REENTRANT = 0, 1, 2

#: A letter with what ``_spelled`` asks of it, worked out once (a word of two letters is
#: spelled thousands of times): its place; whether it calls (a raise does not); whether its
#: amount is one of its class's (``REENTRANT_SOURCE``/``REENTRANT_DEMAND``), asked when a word
#: has a re-entrant letter; whether it ends the subscription (a cancel or a non-positive
#: request, on the test thread or in on_subscribe) and may follow such a one (``AFTER_END``);
#: and what it adds to the scenario: a step, an action in on_subscribe, or a reaction.
_Letter = tuple[int, bool, bool, bool, bool, tuple[Any, ...]]


@functools.lru_cache(maxsize=1)
def _letters() -> tuple[_Letter, ...]:
    actions: list[tuple[Any, ...]] = [("request", k, "here") for k in ALPHABET_DEMAND] + [("cancel", "here")]
    pairs = [(where, action) for action in actions for where in WHERE]
    pairs += [(where, RAISE) for where in RAISE_WHERE]
    letters = []
    for where, action in pairs:
        place = {"test": _TEST, "on_subscribe": _ON_SUBSCRIBE}.get(where, _REENTRANT)
        amounts = REENTRANT_SOURCE if where == "test" else REENTRANT_DEMAND
        usual = action[0] != "request" or action[1] in amounts
        ends = place != _REENTRANT and (action[0] == "cancel" or action[1] <= 0)
        if place == _TEST:
            made: tuple[Any, ...] = ("request", 0, action[1], "here") if action[0] == "request" else ("cancel", 0, "here")
        elif place == _ON_SUBSCRIBE:
            made = action
        else:
            made = (0, _INDEX[where], (*action[:-1], "thread") if where.endswith("another thread") else action)
        letters.append((place, action != RAISE, usual, ends, action in AFTER_END, made))
    return tuple(letters)


def _spelled(n: int, word: tuple[_Letter, ...]) -> Scenario | None:
    on_subscribe = reentrant = calls_reentrant = unusual = False
    for place, calls, usual, _ends, _after, _made in word:
        if place == _ON_SUBSCRIBE:
            on_subscribe = True
        elif place == _REENTRANT:
            reentrant = True
            calls_reentrant = calls_reentrant or calls
        unusual = unusual or not usual
    if reentrant and ((on_subscribe and calls_reentrant) or unusual):
        # Re-entrant calls take their demand from the test thread (a raise may take it from
        # on_subscribe too: a publisher may deliver what is owed then by a path of its own),
        # with an amount its class stands for.
        return None
    ended = False
    for wanted in (_ON_SUBSCRIBE, _TEST) if on_subscribe else (_TEST,):  # on_subscribe's first
        for place, _calls, _usual, ends, after, _made in word:
            if place == wanted:
                if ended and not after:
                    return None
                ended = ended or ends
    first: list[tuple[Any, ...]] = []
    steps: list[tuple[Any, ...]] = []
    reactions: set[tuple[Any, ...]] = set()
    for place, _calls, _usual, _ends, _after, made in word:
        if place == _TEST:
            steps.append(made)
        elif place == _ON_SUBSCRIBE:
            first.append(made)
        else:
            if made in reactions:
                return None  # the same action twice at one place: a shorter scenario
            reactions.add(made)
    return (n, tuple(first), tuple(sorted(reactions)), tuple(steps))


def _live(scenario: Scenario) -> bool:
    """Whether every re-entrant action fires when a conforming publisher runs ``scenario``."""
    n, first, reactions, steps = scenario
    if not reactions:
        return True
    state = {"demand": 0, "delivered": 0, "over": False}
    fired: dict[tuple[Any, ...], int] = {}

    def act(action: tuple[Any, ...]) -> None:
        if state["over"]:
            return
        if action == RAISE:
            state["over"] = True  # the subscription counts as cancelled
        elif action[0] == "cancel" or action[1] <= 0:
            state["over"] = True  # cancelled, or ended by the on_error a non-positive request is owed
            if action[0] == "request":
                for reaction in reactions:
                    if reaction[1] == ON_ERROR:
                        fired[reaction] = fired.get(reaction, 0) + 1
        else:
            state["demand"] = min(state["demand"] + action[1], MAX_DEMAND)

    def drain() -> None:
        limit = EVERY_LIMIT + SYSTEMATIC_K + 1  # enough to see every action fire, on an endless stream
        while not state["over"] and state["demand"] > 0 and state["delivered"] < min(n, limit):
            state["delivered"] += 1
            if state["demand"] < MAX_DEMAND:
                state["demand"] -= 1
            count = state["delivered"]
            for reaction in reactions:
                if reaction[1] == count or (reaction[1] == EVERY and count <= EVERY_LIMIT):
                    fired[reaction] = fired.get(reaction, 0) + 1
                    act(reaction[2])

    for action in first:
        act(action)
    drain()
    for step in steps:
        act(("request", step[2], step[3]) if step[0] == "request" else ("cancel", step[2]))
        drain()
    return all(fired.get(r, 0) >= (2 if r[1] == EVERY else 1) for r in reactions)


def candidates(scenario: Scenario, *, empty: bool = True) -> Iterator[Scenario]:
    """Simpler variants of a failing scenario, the most promising first (for the shrinker);
    none of factory(0) unless it is an empty stream (``empty``)."""
    n, first, reactions, steps = scenario
    # Steps aimed at a subscriber not subscribed yet, and reactions of one never subscribed,
    # do nothing: gone at once, before any costlier attempt.
    subscribers, live = 1, []
    for step in steps:
        subscribers += step[0] == "subscribe"
        if step[0] in ("subscribe", "run") or step[1] < subscribers:
            live.append(step)
    used = tuple(r for r in reactions if r[0] < subscribers)
    if len(live) < len(steps) or len(used) < len(reactions):
        yield (n, first, used, tuple(live))
    for shorter in drop_chunks(steps):
        yield (n, first, reactions, shorter)
    for fewer in drop_chunks(reactions):
        yield (n, first, fewer, steps)
    for fewer in drop_chunks(first):
        yield (n, fewer, reactions, steps)
    if n > 0:
        for smaller in sorted({k for k in _SIZES if k < n} | {n // 2, n - 1}):
            if empty or smaller > 0:
                yield (smaller, first, reactions, steps)
    for i, step in enumerate(steps):
        for simpler in _simpler_step(step):
            yield (n, first, reactions, (*steps[:i], simpler, *steps[i + 1:]))
    yield from _merged(scenario)
    for i, step in enumerate(steps):
        # A call of the test thread made inside on_subscribe instead: the same call, earlier,
        # and written shorter (a way out of a local minimum of the other candidates).
        if step[0] in ("request", "cancel") and step[1] == 0:
            action = ("request", step[2], step[3]) if step[0] == "request" else ("cancel", step[2])
            yield (n, (*first, action), reactions, (*steps[:i], *steps[i + 1:]))
    for i, (who, index, action) in enumerate(reactions):
        simpler_reactions = [(who, k, action) for k in range(1, index)] if index != EVERY else [(who, 1, action)]
        simpler_reactions += [(who, index, a) for a in _simpler_action(action)]
        for reaction in simpler_reactions:
            yield (n, first, tuple(sorted({*reactions[:i], reaction, *reactions[i + 1:]})), steps)
    for i, action in enumerate(first):
        for simpler in _simpler_action(action):
            yield (n, (*first[:i], simpler, *first[i + 1:]), reactions, steps)


def _merged(scenario: Scenario) -> Iterator[Scenario]:
    """Two requests made one after the other from the same place, as one request of their sum."""
    n, first, reactions, steps = scenario
    for i in range(len(first) - 1):
        a, b = first[i], first[i + 1]
        if a[0] == b[0] == "request" and a[2] == b[2] and a[1] > 0 and b[1] > 0:
            yield (n, (*first[:i], ("request", a[1] + b[1], a[2]), *first[i + 2:]), reactions, steps)
    for i in range(len(steps) - 1):
        a, b = steps[i], steps[i + 1]
        if a[0] == b[0] == "request" and a[1] == b[1] and a[3] == b[3] and a[2] > 0 and b[2] > 0:
            yield (n, first, reactions, (*steps[:i], ("request", a[1], a[2] + b[2], a[3]), *steps[i + 2:]))


def size(scenario: Scenario) -> int:
    """The steps of a scenario that do something: every call, re-entrant one and subscriber."""
    _n, first, reactions, steps = scenario
    return len(first) + len(reactions) + sum(1 + len(s[1]) if s[0] == "subscribe" else 1 for s in steps)


def _simpler_action(action: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    if action == RAISE:
        return
    if action[-1] == "thread":
        yield (*action[:-1], "here")
    if action[0] == "request":
        yield from (("request", k, action[2]) for k in simpler_demand(action[1]))


def _simpler_step(step: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    if step[0] == "request":
        for action in _simpler_action(("request", step[2], step[3])):
            yield ("request", step[1], action[1], action[2])
    elif step[0] == "cancel" and step[2] == "thread":
        yield ("cancel", step[1], "here")
    elif step[0] == "subscribe":
        for fewer in drop_chunks(step[1]):
            yield ("subscribe", fewer)


def well_formed(scenario: Any) -> bool:
    """Whether decoded data has the shape of a publisher scenario (a replay token's check)."""
    try:
        n, first, reactions, steps = scenario
        return isinstance(n, int) and isinstance(first, tuple) and all(
            isinstance(r, tuple) and len(r) == 3 for r in reactions) and all(
            isinstance(s, tuple) and s and s[0] in ("request", "cancel", "subscribe", "run")
            for s in steps)
    except (TypeError, ValueError):
        return False


# -- showing scenarios ----------------------------------------------------------------------


def _name(index: int) -> str:
    return "probe" if index == 0 else f"sub{index + 1}"


@functools.lru_cache(maxsize=1024)
def action_text(action: tuple[Any, ...]) -> str:
    """An action as the trace and the steps show it (cached: a few hundred distinct ones)."""
    if action == RAISE:
        return "raise (a failing subscriber)"
    call = f"request({demand_text(action[1])})" if action[0] == "request" else "cancel()"
    return ("from another thread (waited for): " if action[-1] == "thread" else "") + call


def render(scenario: Scenario, *, multi: bool | None = None) -> list[str]:
    """The scenario as numbered steps a person can follow by hand."""
    n, first, reactions, steps = scenario
    multi = any(s[0] == "subscribe" for s in steps) if multi is None else multi
    made = "the failed publisher" if n == FAILED else f"factory({demand_text(n)}) ({elements_text(n)})"
    head = f"subscribe probe to {made}"
    if first:
        head += "; from its on_subscribe: " + ", then ".join(action_text(a) for a in first)
    for target, index, action in reactions:
        signal = {EVERY: "every on_next", ON_ERROR: "on_error"}.get(index, f"on_next #{index}")
        head += f"; from {_name(target) + chr(39) + 's ' if multi else ''}{signal}: {action_text(action)}"
    lines = [f"1. {head}"]
    subscribers = 1
    for i, step in enumerate(steps, 2):
        kind = step[0]
        if kind == "subscribe":
            subscribers += 1
            text = f"subscribe {_name(subscribers - 1)} to the same publisher"
            if step[1]:
                text += "; from its on_subscribe: " + ", then ".join(action_text(a) for a in step[1])
        elif kind == "run":
            text = "let it run (wait until no signal arrives)"
        else:
            target = step[1]
            prefix = f"{_name(target)}: " if multi else ""
            if target >= subscribers:
                text = f"{prefix}(no such subscriber yet: nothing done)"
            elif kind == "request":
                text = prefix + action_text(("request", step[2], step[3]))
            else:
                text = prefix + action_text(("cancel", step[2]))
        lines.append(f"{i}. {text}")
    lines.append(f"{len(steps) + 2}. wait for what is owed, then check every subscriber")
    return lines
