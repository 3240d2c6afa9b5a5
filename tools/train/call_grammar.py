"""A random template grammar for English call-center speech (agent and customer turns).

expand(rng) returns tts text: lowercase words with , . ? ! for prosody; numbers, amounts, dates,
times, phone / account / reference numbers and addresses are already spoken forms (digit words,
'oh' or 'double' sometimes, 'a m' / 'p m' as letters). text_norm.to_transcript() gives the label.

Syntax of the rules below: {name} expands rule or generator `name`; [text] is optional (kept half
the time); alternatives of a rule are equally likely (repeat one to weight it).
"""
from __future__ import annotations

import random
import re

from text_norm import cardinal, digit_words, ordinal, year

MONTHS = ("january february march april may june july august september october november "
          "december").split()
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
FIRST_NAMES = (
    "james mary john patricia robert jennifer michael linda william elizabeth david barbara "
    "richard susan joseph jessica thomas sarah charles karen chris nancy daniel lisa matthew "
    "betty anthony margaret mark sandra donald ashley steven kimberly paul emily andrew donna "
    "joshua michelle kenneth dorothy kevin carol brian amanda george melissa edward deborah "
    "ronald stephanie timothy rebecca jason sharon jeffrey laura ryan cynthia jacob kathleen "
    "gary amy nicholas shirley eric angela jonathan helen stephen anna larry brenda justin "
    "pamela scott nicole brandon emma benjamin samantha samuel katherine gregory christine "
    "frank debra alexander rachel raymond carolyn patrick janet jack maria dennis heather "
    "jerry diane tyler julie aaron joyce jose victoria henry kelly adam christina douglas "
    "lauren nathan joan peter evelyn zachary olivia kyle judith walter megan harold cheryl "
    "jeremy martha ethan andrea carl frances keith hannah roger jacqueline gerald ann "
    "christian gloria terry jean sean kathryn austin alice arthur teresa lawrence sara jesse "
    "janice dylan doris bryan madison joe julia jordan grace billy judy bruce abigail albert "
    "marie willie denise gabriel beverly logan amber alan theresa juan sophia wayne marilyn "
    "roy danielle ralph diana randy brittany eugene natalie vincent isabella russell "
    "charlotte elijah rose louis alexis bobby kayla philip lori johnny priya raj wei mohammed "
    "fatima carlos sofia ahmed mei omar aisha luis rosa miguel elena hiroshi yuki ivan olga").split()
LAST_NAMES = (
    "smith johnson williams brown jones garcia miller davis rodriguez martinez hernandez "
    "lopez gonzalez wilson anderson thomas taylor moore jackson martin lee perez thompson "
    "white harris sanchez clark ramirez lewis robinson walker young allen king wright scott "
    "torres nguyen hill flores green adams nelson baker hall rivera campbell mitchell carter "
    "roberts gomez phillips evans turner diaz parker cruz edwards collins reyes stewart "
    "morris morales murphy cook rogers gutierrez ortiz morgan cooper peterson bailey reed "
    "kelly howard ramos kim cox ward richardson watson brooks chavez wood james bennett gray "
    "mendoza ruiz hughes price alvarez castillo sanders patel myers long ross foster jimenez "
    "powell jenkins perry russell sullivan bell coleman butler henderson barnes fisher "
    "vasquez simmons graham marshall owens harrison gibson wallace wells cole west jordan "
    "hamilton ford murray chen wang singh shah khan o'brien o'connor mcdonald fitzgerald").split()
CITIES = (
    "springfield,portland,denver,austin,columbus,phoenix,seattle,boston,atlanta,dallas,houston,"
    "chicago,miami,orlando,tampa,nashville,memphis,louisville,detroit,cleveland,pittsburgh,"
    "baltimore,richmond,charlotte,raleigh,omaha,tulsa,wichita,albuquerque,tucson,sacramento,"
    "fresno,oakland,san diego,los angeles,san jose,salt lake city,las vegas,boise,spokane,"
    "milwaukee,madison,minneapolis,saint paul,kansas city,saint louis,indianapolis,cincinnati,"
    "buffalo,rochester,albany,hartford,providence,newark,jersey city,philadelphia,anchorage,"
    "honolulu,jacksonville,savannah,birmingham,little rock,new orleans,el paso").split(",")
STATES = ("alabama alaska arizona arkansas california colorado connecticut delaware florida "
          "georgia hawaii idaho illinois indiana iowa kansas kentucky louisiana maine maryland "
          "massachusetts michigan minnesota mississippi missouri montana nebraska nevada ohio "
          "oklahoma oregon pennsylvania tennessee texas utah vermont virginia washington "
          "wisconsin wyoming").split() + ["new york", "new jersey", "new mexico", "north carolina",
                                          "south carolina", "west virginia", "rhode island"]
STREETS = ("main oak maple park washington lake hill cedar elm pine river sunset highland "
           "lincoln jackson church spring center north south west east walnut cherry willow "
           "chestnut meadow forest franklin madison adams jefferson ridge valley orchard mill "
           "bridge harbor lakeview broadway market union liberty grove birch poplar aspen "
           "magnolia sycamore dogwood hickory laurel summit canyon prairie").split()
STREET_KINDS = "street avenue road lane drive boulevard court way place circle parkway terrace".split()
LETTERS_NO_A = list("bcdefghjklmnpqrstuvwxyz")
CO_PREFIX = ("northwind bluewave summit harbor evergreen silverline redrock pioneer liberty "
             "keystone apex horizon clearview riverbend oakridge brightpath northstar "
             "greenfield lakeshore meridian cascade sterling granite crestview bayside "
             "frontier heritage skyline trueline coastal midland").split()
CO_KIND = ("bank,mobile,telecom,insurance,energy,wireless,airlines,logistics,health,cable,"
           "internet,shipping,financial,electric,utilities,credit union,home services,"
           "auto insurance,mortgage,pharmacy,outfitters,appliances").split(",")
PRODUCT_NOUNS = ("router,modem,phone,tablet,laptop,smart watch,headset,thermostat,doorbell,"
                 "camera,vacuum,blender,coffee maker,air fryer,washing machine,dryer,"
                 "dishwasher,refrigerator,television,sound bar,speaker,printer,monitor,"
                 "keyboard,charger,mattress,treadmill,space heater,microwave").split(",")


def _digits_spoken(rng: random.Random, digits: str, groups: list[int] | None = None) -> str:
    """Digits read one by one; zero as 'zero' or 'oh', repeated digits sometimes 'double';
    comma-separated groups give the pauses people make."""
    zero = rng.choice(["zero", "zero", "oh"])
    use_double = rng.random() < 0.3
    groups = groups or [len(digits)]
    out, pos = [], 0
    for g in groups:
        chunk = digits[pos:pos + g]
        pos += g
        words = digit_words(chunk, zero)
        spoken, i = [], 0
        while i < len(words):
            if use_double and i + 1 < len(words) and words[i] == words[i + 1] and \
                    (i + 2 >= len(words) or words[i + 2] != words[i]):
                spoken.append("double " + words[i])
                i += 2
            else:
                spoken.append(words[i])
                i += 1
        out.append(" ".join(spoken))
    return ", ".join(out)


def _rand_digits(rng: random.Random, n: int, lead_nonzero: bool = True) -> str:
    first = str(rng.randint(1 if lead_nonzero else 0, 9))
    return first + "".join(str(rng.randint(0, 9)) for _ in range(n - 1))


def _groups(n: int, rng: random.Random) -> list[int]:
    """Split n digits into spoken groups of 2-4 (mostly 3 or 4)."""
    sizes, left = [], n
    while left > 4:
        g = rng.choice([3, 4, 4])
        if left - g < 2:
            g = left - 2
        sizes.append(g)
        left -= g
    return sizes + [left]


def gen_account_number(rng):
    n = rng.randint(6, 12)
    return _digits_spoken(rng, _rand_digits(rng, n), _groups(n, rng))


def gen_phone(rng):
    if rng.random() < 0.15:
        head = rng.choice(["one eight hundred", "one eight eight eight", "one eight seven seven"])
        return head + ", " + _digits_spoken(rng, _rand_digits(rng, 7), [3, 4])
    return _digits_spoken(rng, _rand_digits(rng, 10), [3, 3, 4])


def gen_digits4(rng):
    return _digits_spoken(rng, _rand_digits(rng, 4, False))


def gen_digits2(rng):
    return " ".join(digit_words(_rand_digits(rng, 2, False)))


def gen_zip(rng):
    return _digits_spoken(rng, _rand_digits(rng, 5, False))


def gen_order_number(rng):
    n = rng.randint(7, 10)
    return _digits_spoken(rng, _rand_digits(rng, n), _groups(n, rng))


def gen_refcode(rng):
    """Reference / confirmation codes: letters (never 'a', which engines read as the article)
    and digits, e.g. 'k seven x, four nine b'."""
    n = rng.randint(5, 8)
    syms = [rng.choice(LETTERS_NO_A) if rng.random() < 0.4 else str(rng.randint(0, 9))
            for _ in range(n)]
    words = [s if s.isalpha() else digit_words(s, rng.choice(["zero", "oh"]))[0] for s in syms]
    cut = n // 2 if n > 5 else n
    return " ".join(words[:cut]) + (", " + " ".join(words[cut:]) if cut < n else "")


def gen_tracking(rng):
    prefix = rng.choice(["", "", "one z, ", "t b, ", "nine four, "])
    n = rng.randint(10, 14)
    return prefix + _digits_spoken(rng, _rand_digits(rng, n), _groups(n, rng))


def gen_money(rng):
    style = rng.random()
    dollars = rng.choice([rng.randint(1, 99), rng.randint(100, 999), rng.randint(1000, 9999),
                          rng.choice([5, 10, 15, 20, 25, 50, 75, 100, 150, 200, 250, 500, 1000])])
    cents = rng.choice([0, 0, 99, 95, 50, 49, 25, rng.randint(1, 99)])
    currency = rng.choice(["dollar"] * 8 + ["euro", "pound"])
    unit = currency + ("" if dollars == 1 else "s")
    if style < 0.45:
        s = cardinal(dollars, rng.random() < 0.5) + " " + unit
        if cents:
            s += " and " + cardinal(cents) + (" cent" if cents == 1 else " cents")
        return s
    if style < 0.7 and cents >= 10 and dollars < 100:
        return cardinal(dollars) + " " + cardinal(cents)
    if style < 0.8 and dollars % 100 == 0 and dollars < 1000:
        return "a hundred " + unit if dollars == 100 else cardinal(dollars) + " " + unit
    if style < 0.9 and 1000 < dollars < 10000 and dollars % 100:
        hi, lo = divmod(dollars, 100)
        return cardinal(hi) + " " + (cardinal(lo) if lo >= 10 else "oh " + cardinal(lo)) + " " + unit
    return cardinal(dollars) + " " + unit


def gen_date(rng):
    mi = rng.randrange(12)
    m, d = MONTHS[mi], rng.randint(1, _MONTH_DAYS[mi])
    style = rng.random()
    if style < 0.35:
        return m + " " + ordinal(d)
    if style < 0.55:
        return "the " + ordinal(d) + " of " + m
    if style < 0.7:
        return m + " " + ordinal(d) + ", " + year(rng.randint(2019, 2026))
    if style < 0.85:
        return rng.choice(WEEKDAYS) + ", " + m + " " + ordinal(d)
    return rng.choice(["yesterday", "today", "last week", "last " + rng.choice(WEEKDAYS),
                       "two days ago", "this morning", "last month", "the day before yesterday",
                       "on the " + ordinal(d), cardinal(rng.randint(2, 10)) + " days ago"])


def gen_dob(rng):
    m, d = rng.choice(MONTHS), rng.randint(1, 28)
    y = year(rng.randint(1940, 2005))
    return rng.choice([m + " " + ordinal(d) + ", " + y, "the " + ordinal(d) + " of " + m + ", " + y,
                       " ".join(digit_words(f"{MONTHS.index(m) + 1:02d}", "oh")) + ", "
                       + " ".join(digit_words(f"{d:02d}", "oh")) + ", " + y])


def gen_time(rng):
    h, m = rng.randint(1, 12), rng.choice([0, 0, 15, 30, 45, rng.randint(1, 59)])
    ampm = rng.choice(["a m", "p m", "in the morning", "in the afternoon", "in the evening", ""])
    if m == 0:
        oclock = ampm not in ("a m", "p m") and rng.random() < 0.5
        base = cardinal(h) + (" o'clock" if oclock else "")
    elif m < 10:
        base = cardinal(h) + " oh " + cardinal(m)
    else:
        base = cardinal(h) + " " + cardinal(m)
    r = rng.random()
    if r < 0.08:
        return rng.choice(["noon", "midnight", "half past " + cardinal(h), "quarter to " + cardinal(h),
                           "quarter past " + cardinal(h)])
    return (base + " " + ampm).strip()


def gen_address(rng):
    n = rng.choice([rng.randint(1, 99), rng.randint(100, 999), rng.randint(1000, 9999),
                    rng.randint(10000, 99999)])
    r = rng.random()
    if n >= 1000 and r < 0.5 and n < 10000:
        hi, lo = divmod(n, 100)
        num = cardinal(hi) + " " + (cardinal(lo) if lo >= 10 else ("hundred" if lo == 0 else "oh " + cardinal(lo)))
    elif 100 <= n < 1000 and r < 0.5:
        hi, lo = divmod(n, 100)
        num = cardinal(hi) + " " + (cardinal(lo) if lo >= 10 else ("hundred" if lo == 0 else "oh " + cardinal(lo)))
    elif n >= 100 and r < 0.8:
        num = " ".join(digit_words(str(n), rng.choice(["zero", "oh"])))
    else:
        num = cardinal(n)
    street = rng.choice(STREETS) if rng.random() < 0.85 else ordinal(rng.randint(1, 60))
    s = num + " " + street + " " + rng.choice(STREET_KINDS)
    if rng.random() < 0.3:
        s += ", " + rng.choice(["apartment", "unit", "suite"]) + " " + cardinal(rng.randint(1, 40)) + \
            (" " + rng.choice(LETTERS_NO_A) if rng.random() < 0.3 else "")
    if rng.random() < 0.5:
        s += ", " + rng.choice(CITIES) + (", " + rng.choice(STATES) if rng.random() < 0.6 else "")
    return s


def gen_email(rng):
    user = rng.choice([rng.choice(FIRST_NAMES) + " dot " + rng.choice(LAST_NAMES),
                       rng.choice(FIRST_NAMES) + " " + rng.choice(LAST_NAMES) + " " + gen_digits2(rng),
                       rng.choice(FIRST_NAMES) + " underscore " + rng.choice(LAST_NAMES)])
    host = rng.choice(["g mail", "yahoo", "outlook", "hotmail", "icloud", "comcast",
                       rng.choice(CO_PREFIX)])
    return user.replace("'", "") + " at " + host + " dot " + rng.choice(["com", "com", "net", "org"])


_SPELLABLE = [n for n in LAST_NAMES if "a" not in n and "'" not in n]


def gen_spelled_name(rng):
    return " ".join(rng.choice(_SPELLABLE))


def gen_spelled_last(rng):
    name = rng.choice(_SPELLABLE)
    return name + ", " + " ".join(name)


def gen_gb(rng):
    return cardinal(rng.choice([1, 2, 3, 5, 10, 15, 20, 25, 30, 40, 50, 75, 100]))


def gen_small_number(rng):
    return cardinal(rng.randint(2, 12))


def gen_days(rng):
    return rng.choice(["three to five", "five to seven", "seven to ten", "two", "three", "five",
                       "seven", "ten", "fourteen", "thirty"])


def gen_company(rng):
    return rng.choice(CO_PREFIX) + " " + rng.choice(CO_KIND)


def gen_agent_name(rng):
    return rng.choice(FIRST_NAMES)


def gen_customer_name(rng):
    return rng.choice(FIRST_NAMES) + " " + rng.choice(LAST_NAMES)


def gen_product(rng):
    brand = rng.choice(CO_PREFIX)
    model = rng.choice(["", "", " pro", " max", " mini", " plus", " two", " three",
                        " x " + cardinal(rng.choice([1, 2, 5, 7, 9, 10, 20, 100, 200, 500])),
                        " series " + cardinal(rng.randint(2, 9))])
    return rng.choice(["the ", "my ", "your ", "a "]) + brand + " " + rng.choice(PRODUCT_NOUNS) + model


def gen_percent(rng):
    return rng.choice([cardinal(rng.randint(1, 30)), cardinal(rng.randint(1, 9)) + " point "
                       + cardinal(rng.randint(1, 9))]) + " percent"


GENERATORS = {
    "account_number": gen_account_number, "phone": gen_phone, "digits4": gen_digits4,
    "zip": gen_zip, "order_number": gen_order_number, "refcode": gen_refcode,
    "tracking": gen_tracking, "money": gen_money, "date": gen_date, "dob": gen_dob,
    "time": gen_time, "address": gen_address, "email": gen_email, "spelled_name": gen_spelled_name,
    "spelled_last": gen_spelled_last,
    "gb": gen_gb, "small_number": gen_small_number, "days": gen_days, "company": gen_company,
    "agent_name": gen_agent_name, "customer": gen_customer_name, "product": gen_product,
    "percent": gen_percent, "month": lambda r: r.choice(MONTHS),
    "weekday": lambda r: r.choice(WEEKDAYS), "city": lambda r: r.choice(CITIES),
    "state": lambda r: r.choice(STATES), "first_name": lambda r: r.choice(FIRST_NAMES),
    "last_name": lambda r: r.choice(LAST_NAMES),
    "ordinal_small": lambda r: ordinal(r.randint(2, 6)),
    "digits2": gen_digits2,
}

from call_rules import RULES  # noqa: E402  (the phrase lists are long: kept in their own file)

_SLOT = re.compile(r"\{([a-z_0-9]+)\}")
_OPT = re.compile(r"\[([^\[\]]*)\]")


def _expand(rng: random.Random, symbol: str, depth: int = 0) -> str:
    if depth > 12:
        raise RecursionError(symbol)
    if symbol in GENERATORS:
        return GENERATORS[symbol](rng)
    alt = rng.choice(RULES[symbol])
    alt = _OPT.sub(lambda m: m.group(1) if rng.random() < 0.5 else "", alt)
    return _SLOT.sub(lambda m: _expand(rng, m.group(1), depth + 1), alt)


def _tidy(s: str) -> str:
    """One space between words; a run of marks becomes its strongest (? ! > . > ,);
    the sentence ends with . ? or !."""
    def strongest(m: re.Match) -> str:
        run = m.group(0)
        for mark in "?!.":
            if mark in run:
                return mark + " "
        return ", "
    s = re.sub(r"\s*[,.?!](?:\s*[,.?!])*\s*", strongest, " " + s + " ")
    s = re.sub(r"\s+", " ", s).strip()
    s = s.lstrip(",.?! ").rstrip(", ")
    if s and s[-1] not in ".?!":
        s += "."
    return s


MAX_WORDS = 36


def expand(rng: random.Random, symbol: str = "utterance") -> str:
    """One call-center sentence (tts text), sometimes two turns of the same speaker;
    at most MAX_WORDS words."""
    while True:
        s = _tidy(_expand(rng, symbol))
        if symbol == "utterance" and rng.random() < 0.2:
            s = _tidy(s + " " + _expand(rng, symbol))
        if len(s.split()) <= MAX_WORDS:
            return s


def check_rules() -> list[str]:
    """Names used in rules that are neither rules nor generators (empty when consistent)."""
    missing = []
    for alts in RULES.values():
        for a in alts:
            for name in _SLOT.findall(a):
                if name not in RULES and name not in GENERATORS:
                    missing.append(name)
    return sorted(set(missing))
