#!/usr/bin/python3
"""Real human speech of many speakers: the voice acting of Flight of the Amazon Queen (talkie
version), each clip paired with the line the game shows for it, in make_data.py's shard format,
with whole speakers held out.

  /usr/bin/python3 tools/train/fotaq_data.py --out data [--copies 2] [--workers 2] [--src DIR]

Source: Debian's flight-of-the-amazon-queen (main; the game data under the
Flight-of-the-Amazon-Queen-License: free to give away and to modify with a notice, no fee for
the game itself). One file, queen.1c, holds everything: a table of named resources, 6,745 speech
clips (.SB, MP3 at 11,025 Hz), the dialogues (.DOG), the cutaways (.CUT) and the game text
(QUEEN.JAS, QUEEN2.JAS). The package is only unpacked (`apt-get download` + `dpkg -x`, done here
when --src has no copy); ScummVM is not needed.

How a line finds its clip (file layouts and naming as ScummVM's queen engine reads them):
  queen.1c     "QTBL", version "CEM10\\0", 2 bytes, compression byte, uint16 BE entry count, then
               21-byte entries: 12-byte NUL-padded name, bundle byte, uint32 BE offset, size.
  strings      a length byte, the text, then padding to a 2-byte (cutaways, greetings) or 4-byte
               (dialogue lists) boundary counted from the resource's start; length 0 takes 1 byte.
  sentences    '*' plus two letters or digits is a stage direction ("*XY" takes 11 more: a walk
               target); it cuts the sentence into segments, numbered from 1 with every '*'
               counted, and segment k plays clip PREFIX + hex(k). "*GD" and "*GM" (grab) play
               nothing. Spaces in the first 8 characters of a clip name become '0'; ".SB" follows.
  .DOG         (after a 20-byte header) int16 BE: levels (sign = can quit), unique key, talk key,
               Joe's line count, the person's line count, 2 x (state, value, item), then uint16
               offsets of the person's lines, the cutaway, the greetings. The dialogue tree (levels
               x 6 nodes x 16 bytes) starts at 32, Joe's lines right after it. A line list entry
               is 2 bytes, an int16 id, a 4-aligned string. Clips: person line id N ->
               "%2d%4xP" % (talk key, N); Joe's -> "...J"; Joe's first entry (id 0) is his
               opening line "%2dSSSSJ"; the greetings pair (person, Joe) -> "%2dXXXXP", "%2dXXXXJ".
  .CUT         (after 20 bytes) uint16: panel, int16 object count, flags, state offset, sentence
               offset, bank-name offset; objects from byte 12: 17 int16 (number, move x/y, bank,
               animation list, execute, 4 x limit, special move, animation type, from object,
               start x/y, room, scale), a person count and that many int16, then, for an animated
               object, frames (an int16 header and 9 int16) up to a -2 header; 2 (3 cutaways: 4)
               bytes later the state data starts. The sentences are read in order from the
               sentence offset, the first being a facing direction; object i (from 1) says
               sentence i with clip prefix NAME padded with '_' to 5 characters + "%02d" % i.
               Object 0 or -1 is Joe, N > 0 a person (image -3/-4 in QUEEN.JAS, no animation
               list, not copied from another object); -2 and -3 are spoken captions (suffix 1).
               After the bank names come the dialogue the cutaway starts and its person.
  JAS          QUEEN.JAS (after 20 bytes): uint16 rooms, names, objects, descriptions; 16-byte
               objects (name, x, y, description, entry, room, state, image); the rooms' first
               objects; ... commands (verb, object 1, ...) and command states (id, slot, value,
               description to speak); ... 24-byte actors (room, bob number, actor name, ...);
               closed by the version string. QUEEN2.JAS is text, one string a line:
               descriptions, names, rooms, 12 verbs, 40 of Joe's responses, actor animations,
               actor names. Joe says response N as JOENNNN and description N as JOE(N+40).
A clip whose name two different lines claim is dropped; lines with no clip, segments that are
empty, directions, file names (.CUT/.DOG), '#' credits, lines that do not normalise to the
model's alphabet and lines less than half made of dictionary words (wamerican: gorilla talk,
growls, spelt-out letters) are skipped; clips nothing claims (sound effects) are not used.

Speakers are characters as the engine finds them: a person object is the actor of its room with
its bob number (the count of person objects in the room up to it), the actor's name folded over
its variants (FAYE-H talking head, X3_RITA intro, APE1/APE2 -> faye, rita, ape). A dialogue's
person is found through the command whose state speaks "NAME.DOG" (its first object) or the
cutaway that starts it; failing that, the person of a numbered sibling (PRIN1 -> PRIN2's) or
the file's own name. Joe says the 'J' lines, his responses and descriptions. Cutaway persons
with no single actor, and spoken captions (comic, intro), are "unknown": they train, never
test. The game data names characters, not voice actors: if one actor voices two characters,
that voice can be heard in training and in the test; the data cannot tell.
Whole speakers are held out in an order fixed by a hash of their names, until TEST_FRACTION of
the lines are, skipping any speaker larger than that on its own (Joe, about 40% of the lines).

Splits written:
  train_fotaq       lines of the training speakers, --copies times (once as recorded, the others
                    through make_data's training augmentation)
  test_fotaq        lines of the held-out speakers, as recorded (11,025 Hz resampled to 16 kHz)
  test_fotaq_phone  the same lines through make_data's phone_noise condition (noise + a codec)
"""
from __future__ import annotations

import argparse
import concurrent.futures
import glob
import os
import re
import struct
import subprocess
import sys
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import game_speech  # noqa: E402
import text_norm  # noqa: E402

DATA_FILE = "usr/share/scummvm/flight-of-the-amazon-queen/queen.1c"
PACKAGE = "flight-of-the-amazon-queen"
LICENCE = "Flight-of-the-Amazon-Queen-License (freeware, Debian main)"
TEST_FRACTION = 0.15
MIN_SECONDS, MAX_SECONDS = 0.6, 20.0
UNKNOWN = "unknown"
DICTIONARY = game_speech.DICTIONARY
JOE = "joe"

TABLE_MAGIC = b"QTBL"
TABLE_COUNT_AT = 13
TABLE_ENTRY = struct.Struct(">12sBII")
RESOURCE_HEADER = 20  # bytes the engine skips at the start of .DOG, .CUT and QUEEN.JAS
DOG_TREE_AT, DOG_LEVEL_BYTES = 32, 6 * 16
CUT_OBJECTS_AT = 12
CUT_OBJECT = struct.Struct(">17h")
CUT_FRAME_BYTES = 9 * 2  # after the int16 header: frame, speed, bank, mx, my, cx, cy, scale, song
CUT_FRAMES_END = -2
CUT_TRAILER = (2, 4)  # bytes between the last object record and the state data
CUT_PREFIX_WIDTH = 5
JAS_OBJECT = struct.Struct(">hHHHhHHh")
JAS_VERBS = 12
JAS_VERSION_CHARS = 5  # QUEEN.JAS ends with the version, e.g. "CEM10"
JOE_RESPONSES = 40
PERSON_IMAGES = (-3, -4)
JOE_OBJECT, ROOM_FADE = 0, -1  # cutaway object numbers: Joe; fade the room in, then Joe
CAPTIONS, DISPLAY_ONLY = (-2, -3), -4  # spoken captions; a caption only shown
SILENT_DIRECTIONS = {"GD", "GM"}  # grab down / grab middle: the engine plays no clip
WALK_DIRECTION, WALK_ARGUMENT_CHARS = "XY", 11
CLIP_NAME_CHARS = 8
# Names that are one character under two spellings (Anderson's ending actor and his dialogue
# AND1.DOG, Princess Azura's talking head).
ACTOR_ALIASES = {"ANDSON": "ANDERSON", "AND": "ANDERSON", "AZURA": "PRINCESS"}


class Line(NamedTuple):
    clip: str       # resource name without ".SB", e.g. "020001P2"
    text: str       # transcript (text_norm alphabet)
    speaker: str
    kind: str       # "dialogue", "cutaway" or "joe"


# ---------------------------------------------------------------- containers and strings

def read_table(head: bytes) -> dict[str, tuple[int, int]]:
    """The resource table at the start of queen.1c: name -> (offset, size)."""
    if head[:4] != TABLE_MAGIC:
        raise ValueError("not a rebuilt queen.1c (no QTBL header)")
    (count,) = struct.unpack_from(">H", head, TABLE_COUNT_AT)
    out, at = {}, TABLE_COUNT_AT + 2
    for _ in range(count):
        raw, _bundle, offset, size = TABLE_ENTRY.unpack_from(head, at)
        out[raw.split(b"\0", 1)[0].decode("ascii")] = (offset, size)
        at += TABLE_ENTRY.size
    return out


class Archive:
    """queen.1c opened for reading its named resources."""

    def __init__(self, path: str):
        self.path = path
        with open(path, "rb") as f:
            head = f.read(TABLE_COUNT_AT + 2)
            (count,) = struct.unpack_from(">H", head, TABLE_COUNT_AT)
            head += f.read(count * TABLE_ENTRY.size)
        self.entries = read_table(head)

    def read(self, name: str, skip: int = 0) -> bytes:
        offset, size = self.entries[name]
        with open(self.path, "rb") as f:
            f.seek(offset + skip)
            return f.read(size - skip)

    def names(self, ext: str) -> list[str]:
        return sorted(n for n in self.entries if n.endswith(ext))


def read_string(data: bytes, at: int, align: int = 2) -> tuple[str, int]:
    """A length-prefixed string at `at` and the offset after it (and its padding)."""
    n = data[at]
    at += 1
    if n == 0:
        return "", at
    text = data[at:at + n].decode("latin-1")
    return text, (at + n + align - 1) & ~(align - 1)


def segments(sentence: str) -> list[tuple[int, str]]:
    """(clip number, text) of each segment the engine plays for a sentence."""
    out, start, i, index = [], 0, 0, 0
    while i < len(sentence):
        if sentence[i] != "*":
            i += 1
            continue
        code = sentence[i + 1:i + 3]
        text = sentence[start:i]
        i += 3 + (WALK_ARGUMENT_CHARS if code == WALK_DIRECTION else 0)
        index += 1
        if code not in SILENT_DIRECTIONS:
            out.append((index, text))
        start = i
    if start < len(sentence):
        out.append((index + 1, sentence[start:]))
    return out


def clip_name(prefix: str, number: int) -> str:
    name = prefix + format(number, "x")
    return (name[:CLIP_NAME_CHARS].replace(" ", "0") + name[CLIP_NAME_CHARS:]).upper()


# ---------------------------------------------------------------- the three kinds of speech

def _i16(data: bytes, at: int) -> int:
    return struct.unpack_from(">h", data, at)[0]


def _u16(data: bytes, at: int) -> int:
    return struct.unpack_from(">H", data, at)[0]


def _line_list(data: bytes, at: int, count: int):
    for _ in range(count):
        ident = _i16(data, at + 2)
        text, at = read_string(data, at + 4, align=4)
        yield ident, text


def dialogue_sentences(data: bytes) -> list[tuple[str, str, str]]:
    """(clip prefix, sentence, "J" or "P") of a .DOG resource (its 20-byte header removed)."""
    levels, talk_key = abs(_i16(data, 0)), _i16(data, 4)
    joe_count, person_count = _i16(data, 6), _i16(data, 8)
    person_at, greeting_at = _u16(data, 22), _u16(data, 26)
    out = []
    joe_at = DOG_TREE_AT + levels * DOG_LEVEL_BYTES
    for k, (ident, text) in enumerate(_line_list(data, joe_at, joe_count)):
        if k == 0 and ident == 0:
            out.append((f"{talk_key:2d}SSSSJ", text, "J"))
        elif ident > 0:
            out.append((f"{talk_key:2d}{ident:4x}J", text, "J"))
    for ident, text in _line_list(data, person_at, person_count):
        if ident > 0:
            out.append((f"{talk_key:2d}{ident:4x}P", text, "P"))
    again, at = read_string(data, greeting_at)
    joe_again, _ = read_string(data, at)
    out += [(f"{talk_key:2d}XXXXP", again, "P"), (f"{talk_key:2d}XXXXJ", joe_again, "J")]
    return out


def object_kind(number: int, anim_list: int, execute: int, from_object: int,
                images: dict[int, int]) -> str:
    """What a cutaway object record does: "person" (speaks its sentence), "caption" (a spoken
    caption), "animation" (has frames to skip) or "none"."""
    kind = "animation"
    if number >= 0 and anim_list == 0 and (number == 0 or images.get(number) in PERSON_IMAGES):
        kind = "person"
    if from_object > 0:
        kind = "none"
    if number in CAPTIONS:
        kind = "caption"
    elif number == DISPLAY_ONLY:
        kind = "none"
    if kind == "animation" and not execute:
        kind = "none"
    return kind


class Cutaway(NamedTuple):
    spoken: list[tuple[str, str, int | None]]  # (clip prefix, sentence, object or None: caption)
    talk: tuple[str, int]                      # the dialogue it starts and with whom (object)
    parsed: bool                               # object records end just before the state data


def cutaway_sentences(base: str, data: bytes, images: dict[int, int]) -> Cutaway:
    """The sentences a .CUT resource (header removed) speaks, with their clip prefixes; parsed
    says the object records (whose sizes depend on their kinds) ended where they should."""
    count, state_at = abs(_i16(data, 2)), _u16(data, 6)
    sentence_at, banks_at = _u16(data, 8), _u16(data, 10)
    _facing, sentence_at = read_string(data, sentence_at)
    at, out = CUT_OBJECTS_AT, []
    for i in range(1, count + 1):
        fields = CUT_OBJECT.unpack_from(data, at)
        at += CUT_OBJECT.size
        number, anim_list, execute, from_object = fields[0], fields[4], fields[5], fields[12]
        at += 2 + 2 * _i16(data, at)  # persons turned on
        sentence, sentence_at = read_string(data, sentence_at)
        number = JOE_OBJECT if number == ROOM_FADE else number
        kind = object_kind(number, anim_list, execute, from_object, images)
        prefix = base.ljust(CUT_PREFIX_WIDTH, "_") + f"{i:02d}"[:2]
        if kind in ("person", "caption"):
            out.append((prefix, sentence, number if kind == "person" else None))
        elif kind == "animation":
            while _i16(data, at) != CUT_FRAMES_END:
                at += 2 + CUT_FRAME_BYTES
            at += 2
    at_banks = banks_at + 2
    for _ in range(_u16(data, banks_at)):
        _bank, at_banks = read_string(data, at_banks)
    talk_file, at_banks = read_string(data, at_banks)
    return Cutaway(out, (talk_file.upper(), _i16(data, at_banks)), state_at - at in CUT_TRAILER)


class Game(NamedTuple):
    """What QUEEN.JAS and QUEEN2.JAS say about objects, actors and Joe's lines."""
    objects: dict[int, tuple[int, int]]       # object -> (room, image)
    room_first: list[int]                     # room -> its first object number - 1
    actors: list[tuple[int, int, str]]        # (room, bob number, actor name)
    descriptions: list[str]                   # description N at [N - 1]
    responses: list[str]                      # Joe's response N at [N - 1]
    dialogue_people: dict[str, set[int]]      # "NAME.DOG" -> objects whose command starts it


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def words(self, n: int, signed: bool = False) -> tuple[int, ...]:
        out = struct.unpack_from((">%dh" if signed else ">%dH") % n, self.data, self.at)
        self.at += 2 * n
        return out

    def table(self, record_words: int, padded: bool = False) -> list[tuple[int, ...]]:
        """A count and its records; in a padded table a count of 0 still has one record."""
        (n,) = self.words(1)
        rows = [self.words(record_words, signed=True) for _ in range(max(n, int(padded)))]
        return rows[:n]


def read_game(queen_jas: bytes, queen2_jas: bytes) -> Game:
    """Parses QUEEN.JAS (its 20-byte header removed) through to its closing version string."""
    r = _Reader(queen_jas)
    rooms, names, objects, descriptions = r.words(4)
    obj = {k: r.words(8, signed=True) for k in range(1, objects + 1)}
    room_first = [0, *r.words(rooms + 1)]            # room N: objects after room_first[N]
    r.words(rooms)                                   # room sound effects
    r.table(5)                                       # items
    r.table(5)                                       # graphics
    for _ in range(rooms):                           # walk areas
        _objs, areas = r.words(2, signed=True)
        r.words(8 * areas)
    r.words(4 * objects)                             # object boxes
    r.table(3)                                       # walk-off points
    r.table(4)                                       # object descriptions
    commands = r.table(10, padded=True)              # verb, object 1, object 2, ...
    for _ in range(3):
        r.table(3, padded=True)                      # areas, objects, items changed
    states = r.table(4, padded=True)                 # id, slot, value, description to speak
    r.words(1)                                       # entry object
    r.table(2)                                       # furniture
    n_actors, n_anims, n_names, _files = r.words(4)
    actor_rows = [r.words(12, signed=True) for _ in range(n_actors)]
    r.table(3, padded=True)                          # graphic animations
    if not queen_jas[r.at:r.at + JAS_VERSION_CHARS].isalnum():
        raise ValueError("QUEEN.JAS did not parse to its version string")
    strings = [s.rstrip("\r") for s in queen2_jas.decode("latin-1").split("\n")]
    responses_at = descriptions + names + rooms + JAS_VERBS
    actor_names = strings[responses_at + JOE_RESPONSES + n_anims:][:n_names]
    desc = strings[:descriptions]
    people: dict[str, set[int]] = {}
    for cmd_id, _slot, _value, speak in states:
        if 0 < speak <= len(desc) and desc[speak - 1].upper().endswith(".DOG") \
                and 0 < cmd_id <= len(commands) and commands[cmd_id - 1][1] > 0:
            people.setdefault(desc[speak - 1].upper(), set()).add(commands[cmd_id - 1][1])
    return Game({k: (v[5], v[7]) for k, v in obj.items()}, room_first,
                [(a[0], a[1], actor_names[a[2] - 1]) for a in actor_rows if 0 < a[2] <= len(actor_names)],
                desc, strings[responses_at:responses_at + JOE_RESPONSES], people)


# ---------------------------------------------------------------- lines

def speaker_name(name: str) -> str:
    return re.sub(r"[^a-z]+", "-", name.lower()).strip("-") or UNKNOWN


def transcript(segment: str) -> str:
    """The words of a segment, or "" when it is not something spoken."""
    s = segment.strip()
    # Resource names (".cut", ".dog" files), stage directions and symbols (text_norm.UNSAID_MARKS:
    # also the "*" and "#..." entries of the text tables) and digits, whose reading normalize() can
    # only guess for recorded speech ("19:00 Hours" is not "nineteen oh oh hours"; also the "0"
    # entries): skipped.
    if (not s or re.search(r"\.(cut|dog)\b", s, re.I) or text_norm.has_unsaid_marks(s)
            or re.search(r"[0-9]", s)):
        return ""
    try:
        t = text_norm.normalize(s, keep_punct=False)
    except text_norm.Rejected:
        return ""
    return t if text_norm.in_vocabulary(t) else ""


def _claims(prefix: str, sentence: str, speaker: str, kind: str, whole: bool):
    if whole:
        return [(clip_name(prefix, 1), sentence, speaker, kind)]
    return [(clip_name(prefix, n), seg, speaker, kind) for n, seg in segments(sentence)]


def canonical_actor(name: str) -> str:
    """CHIEF, FAYE-H (talking head), X3_RITA (intro), APE2, LOLA_SHOWER -> one character."""
    n = re.sub(r"^X\d+_", "", name.upper())
    n = re.sub(r"(-[A-Z]|_STAND|_SHOWER|\d+)$", "", n)
    return speaker_name(ACTOR_ALIASES.get(n, n))


def person_speaker(game: Game, obj: int) -> str | None:
    """The character a person object is, by the actors of its room with its bob number."""
    room, image = game.objects.get(obj, (0, 0))
    if image not in PERSON_IMAGES or not 0 < room < len(game.room_first):
        return None
    bob = sum(game.objects[k][1] in PERSON_IMAGES for k in range(game.room_first[room] + 1, obj + 1))
    names = {canonical_actor(n) for r, b, n in game.actors if r == room and b == bob}
    return names.pop() if len(names) == 1 else None


def lines_of(archive: Archive) -> tuple[list[Line], dict]:
    """Every usable (clip, transcript, speaker) line and counts of what was skipped."""
    game = read_game(archive.read("QUEEN.JAS", RESOURCE_HEADER), archive.read("QUEEN2.JAS"))
    images = {k: image for k, (_room, image) in game.objects.items()}
    cuts = {c: cutaway_sentences(c[:-4], archive.read(c, RESOURCE_HEADER), images)
            for c in archive.names(".CUT")}
    people = {dog: set(objs) for dog, objs in game.dialogue_people.items()}
    for cut in cuts.values():
        if cut.talk[0].endswith(".DOG") and cut.talk[1] > 0:
            people.setdefault(cut.talk[0], set()).add(cut.talk[1])
    dog_speaker = {}
    for dog in archive.names(".DOG"):
        who = {person_speaker(game, o) for o in people.get(dog, ())} - {None}
        if len(who) == 1:
            dog_speaker[dog] = who.pop()
    # A dialogue nothing links to a person takes the character of its numbered siblings
    # (PRIN1 -> PRIN2's), else its own name.
    family = {re.sub(r"\d+$", "", d[:-4]): s for d, s in sorted(dog_speaker.items())}
    claims = []
    for dog in archive.names(".DOG"):
        base = re.sub(r"\d+$", "", dog[:-4])
        person = dog_speaker.get(dog) or family.get(base) or canonical_actor(base)
        for prefix, sentence, role in dialogue_sentences(archive.read(dog, RESOURCE_HEADER)):
            claims += _claims(prefix, sentence, JOE if role == "J" else person, "dialogue", False)
    for cut in cuts.values():
        for prefix, sentence, number in cut.spoken:
            who = UNKNOWN if number is None else (
                JOE if number == JOE_OBJECT else person_speaker(game, number) or UNKNOWN)
            claims += _claims(prefix, sentence, who, "cutaway", number is None)
    for n, text in enumerate(game.responses, 1):
        claims += _claims(f"JOE{n:04d}", text, JOE, "joe", False)
    for n, text in enumerate(game.descriptions, 1):
        claims += _claims(f"JOE{n + JOE_RESPONSES:04d}", text, JOE, "joe", False)
    by_clip: dict[str, set] = {}
    for clip, seg, who, kind in claims:
        by_clip.setdefault(clip, set()).add((transcript(seg), who, kind))
    stats = {"claims": len(claims), "ambiguous": 0, "no_clip": 0, "not_spoken": 0,
             "cutaways_misparsed": sorted(c for c, cut in cuts.items() if not cut.parsed)}
    lines = []
    for clip, options in sorted(by_clip.items()):
        if clip + ".SB" not in archive.entries:
            stats["no_clip"] += 1
        elif len(options) > 1:
            stats["ambiguous"] += 1
        elif not next(iter(options))[0]:
            stats["not_spoken"] += 1
        else:
            text, who, kind = next(iter(options))
            lines.append(Line(clip, text, who, kind))
    stats["unclaimed_clips"] = len(set(archive.names(".SB")) - {c + ".SB" for c in by_clip})
    return lines, stats


mostly_words = game_speech.mostly_words


# ---------------------------------------------------------------- audio, hold-out, shards

def setup_cache_file() -> str:
    """Where tools/setup.sh unpacks queen.1c (without installing the package)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "sluice", PACKAGE, "queen.1c")


def find_data_file(src: str) -> str | None:
    for path in (os.path.join("/", DATA_FILE), os.path.join(src, DATA_FILE), setup_cache_file()):
        if os.path.exists(path):
            return path
    return None


def fetch(src: str) -> str:
    """queen.1c: installed, already unpacked under src or by tools/setup.sh, or downloaded and
    unpacked under src now."""
    found = find_data_file(src)
    if found:
        return found
    os.makedirs(src, exist_ok=True)
    subprocess.run(["apt-get", "download", PACKAGE], cwd=src, check=True)
    for deb in glob.glob(os.path.join(src, "*.deb")):
        subprocess.run(["dpkg", "-x", deb, src], check=True)
    found = find_data_file(src)
    if not found:
        sys.exit(f"fotaq_data: {DATA_FILE} not found after unpacking {PACKAGE} into {src}")
    return found


def decode(mp3: bytes, path: str) -> None:
    """An MP3 clip as mono 16-bit WAV at its own rate (ffmpeg, Debian main)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "mp3", "-i", "pipe:0", "-ac", "1",
                    "-c:a", "pcm_s16le", path + ".part.wav"], input=mp3, check=True)
    os.replace(path + ".part.wav", path)


def cut_lines(archive: Archive, lines: list[Line], wav_dir: str,
              workers: int) -> dict[str, tuple[str, float]]:
    """Decodes every line's clip once: clip -> (wav path, seconds) for clips of a usable length."""
    import soundfile as sf
    paths = {ln.clip: os.path.join(wav_dir, ln.speaker, ln.clip + ".wav") for ln in lines}
    todo = [c for c, p in paths.items() if not os.path.exists(p)]
    with concurrent.futures.ThreadPoolExecutor(max(1, workers)) as pool:
        list(pool.map(lambda c: decode(archive.read(c + ".SB"), paths[c]), todo))
    out = {}
    for clip, path in paths.items():
        seconds = sf.info(path).duration
        if MIN_SECONDS <= seconds <= MAX_SECONDS:
            out[clip] = (path, seconds)
    return out


def test_speakers(lines: list[Line]) -> set[str]:
    return game_speech.hold_out(lines, "fotaq", {UNKNOWN}, TEST_FRACTION)


def plans(lines: list[Line], wavs: dict, held: set[str], copies: int, seed: int,
          shard_size: int) -> dict[str, list[list[dict]]]:
    return game_speech.plans("fotaq", lines, wavs, held, copies, seed, shard_size)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="data")
    ap.add_argument("--src", default="", help="where the package is (or will be) unpacked "
                    "(default: OUT/fotaq_src)")
    ap.add_argument("--copies", type=int, default=2, help="copies of each training line")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-size", type=int, default=200)
    ap.add_argument("--list", action="store_true", help="print the speakers and split, write nothing")
    ap.add_argument("--manifest", default="", help="also write the paired lines here as TSV "
                    "(clip, speaker, kind, seconds, wav, transcript, train|test): evaluate.py "
                    "--manifest reads it")
    ap.add_argument("--no-shards", action="store_true", help="cut the clips (and write --manifest) "
                    "only: no make_data shards, so no torch needed")
    args = ap.parse_args(argv)
    archive = Archive(fetch(args.src or os.path.join(args.out, "fotaq_src")))
    lines, stats = lines_of(archive)
    lines = game_speech.keep_words(lines, stats, "fotaq")
    held = test_speakers(lines)
    print(f"{len(lines)} lines from {stats['claims']} claimed segments; no clip {stats['no_clip']}, "
          f"not speech {stats['not_spoken']}, ambiguous {stats['ambiguous']}, clips unclaimed "
          f"{stats['unclaimed_clips']}, not words {stats.get('not_words', '?')}, cutaways misparsed "
          f"{stats['cutaways_misparsed']}", flush=True)
    game_speech.print_speakers(lines, held, 12)
    if args.list:
        return 0
    wavs = cut_lines(archive, lines, os.path.join(args.out, "fotaq_lines"), args.workers)
    return game_speech.write_outputs(args, "fotaq", lines, wavs, held, lambda ln: ln.kind, LICENCE)


if __name__ == "__main__":
    sys.exit(main())
