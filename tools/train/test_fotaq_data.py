"""Tests of fotaq_data.py: the queen.1c resource table, the dialogue (.DOG), cutaway (.CUT) and
game-text (JAS) parsers, clip naming, the text filter and the speaker hold-out, on byte strings
built here from the documented layouts (no Debian package needed). test_fotaq_real.py checks the
real game data.

  /usr/bin/python3 -m unittest discover -s tools/train -p 'test_fotaq_data.py'
"""
from __future__ import annotations

import os
import struct
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fotaq_data  # noqa: E402

HEADER = b"AmBk" + bytes(16)  # the 20 bytes the engine skips


def pstring(buf: bytearray, text: str, align: int) -> None:
    """Appends a length-prefixed string padded to `align` (offsets counted from buf's start)."""
    buf.append(len(text))
    buf += text.encode("latin-1")
    if text:
        while len(buf) % align:
            buf.append(0)


def words(*values: int) -> bytes:
    return struct.pack(">%dh" % len(values), *values)


def build_1c(resources: dict[str, bytes]) -> bytes:
    """queen.1c: QTBL, version, 2 bytes, compression, count, 21-byte entries, then the data."""
    names = sorted(resources)
    head_len = 15 + 21 * len(names)
    table, data = bytearray(), bytearray()
    for n in names:
        table += struct.pack(">12sBII", n.encode(), 1, head_len + len(data), len(resources[n]))
        data += resources[n]
    return b"QTBL" + b"CEM10\0" + b"\0\0" + b"\1" + struct.pack(">H", len(names)) + table + data


def build_dog(talk_key: int, joe: list[tuple[int, str]], person: list[tuple[int, str]],
              greetings: tuple[str, str], levels: int = 1) -> bytes:
    body = bytearray(32 + levels * 96)
    for ident, text in joe:
        body += words(0, ident)
        pstring(body, text, 4)
    person_at = len(body)
    for ident, text in person:
        body += words(0, ident)
        pstring(body, text, 4)
    cut_at = len(body)
    body += words(0, 0)
    pstring(body, "", 2)
    while len(body) % 2:
        body.append(0)
    greet_at = len(body)
    pstring(body, greetings[0], 2)
    pstring(body, greetings[1], 2)
    struct.pack_into(">5h", body, 0, levels, 1, talk_key, len(joe), len(person))
    struct.pack_into(">3H", body, 22, person_at, cut_at, greet_at)
    return HEADER + bytes(body)


def cut_object(number: int, anim_list: int = 0, execute: int = 0, from_object: int = 0) -> bytes:
    fields = [0] * 17
    fields[0], fields[4], fields[5], fields[12] = number, anim_list, execute, from_object
    return words(*fields) + words(0)  # no persons turned on


def build_cut(objects: list[bytes], sentences: list[str], talk: tuple[str, int] = ("", 0)) -> bytes:
    body = bytearray(12)
    for o in objects:
        body += o
    body += words(0)          # the int16 after the last object
    state_at = len(body)
    body += words(0)          # no game states
    sentence_at = len(body)
    for s in sentences:
        pstring(body, s, 2)
    while len(body) % 2:
        body.append(0)
    banks_at = len(body)
    body += words(0)          # no banks
    pstring(body, talk[0], 2)
    while len(body) % 2:
        body.append(0)
    body += words(talk[1])
    struct.pack_into(">hhhHHH", body, 0, 0, len(objects), 0, state_at, sentence_at, banks_at)
    return HEADER + bytes(body)


# A one-room game: object 1 is a person (bob 1, actor BUD2), object 2 a rock. Description 2
# names a dialogue that command 1 (talk to object 1) starts.
DESCRIPTIONS = ["It's a rock*03", "TALK1.DOG"]
RESPONSES = ["It doesn't seem to open*03"] + [f"Response {n}" for n in range(2, 41)]


def build_jas() -> tuple[bytes, bytes]:
    j = bytearray(words(1, 2, 2, len(DESCRIPTIONS)))          # rooms, names, objects, descriptions
    j += words(1, 0, 0, 1, 0, 1, 0, -4) + words(2, 0, 0, 1, 0, 1, 0, 5)
    j += words(0, 2) + words(0)                               # room data, room sfx
    j += words(0) + words(0)                                  # no items, no graphics
    j += words(2, 0) + words(*[0] * 8)                        # room 1: 0 areas; object boxes
    j += words(0) + words(0)                                  # no walk-offs, no descriptions
    j += words(1) + words(8, 1, 0, 0, 0, 0, 0, 1, 0, 0)       # command 1: talk to object 1
    for _ in range(3):
        j += words(0) + words(0, 0, 0)                        # empty, padded tables
    j += words(1) + words(1, 0, 0, 2)                         # command 1 speaks description 2
    j += words(0) + words(0)                                  # entry object, no furniture
    j += words(1, 0, 1, 0) + words(1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)  # actor: room 1, bob 1
    j += words(0) + words(0, 0, 0) + b"CEM10\0"
    text = DESCRIPTIONS + ["Bud", "rock", "ROOM1"] + [f"verb{n}" for n in range(12)] + RESPONSES + ["BUD2"]
    return HEADER + bytes(j), "\r\n".join(text).encode("latin-1")


class ContainerTest(unittest.TestCase):
    def test_table_lists_names_offsets_and_sizes(self):
        blob = build_1c({"A.SB": b"abc", "QUEEN2.JAS": b"hello"})
        table = fotaq_data.read_table(blob)
        self.assertEqual(set(table), {"A.SB", "QUEEN2.JAS"})
        off, size = table["QUEEN2.JAS"]
        self.assertEqual((blob[off:off + size], size), (b"hello", 5))
        with self.assertRaises(ValueError):
            fotaq_data.read_table(b"RIFF" + blob[4:])

    def test_strings_pad_to_their_alignment(self):
        buf = bytes([3]) + b"abc" + bytes([4]) + b"wxyz" + bytes([0]) + bytes([0])
        self.assertEqual(fotaq_data.read_string(buf, 0, 2), ("abc", 4))
        self.assertEqual(fotaq_data.read_string(buf, 4, 2), ("wxyz", 10))  # 4+1+4=9 -> 10
        self.assertEqual(fotaq_data.read_string(buf, 4, 4), ("wxyz", 12))
        self.assertEqual(fotaq_data.read_string(buf, 9, 4), ("", 10))      # empty: one byte


class NamingTest(unittest.TestCase):
    def test_segments_are_numbered_by_every_direction(self):
        self.assertEqual(fotaq_data.segments("Hello there*02How are you"),
                         [(1, "Hello there"), (2, "How are you")])
        self.assertEqual(fotaq_data.segments("*FLYou couldn't*02"), [(1, ""), (2, "You couldn't")])
        # "*XY00(237,112)" is one direction (13 characters); a grab plays nothing but counts.
        self.assertEqual(fotaq_data.segments("*XY00(237,112)Walk on*GDgrab"), [(1, ""), (3, "grab")])
        self.assertEqual(fotaq_data.segments("Plain"), [(1, "Plain")])

    def test_clip_names_as_the_game_files_them(self):
        # Real resource names in queen.1c: 02001FP2.SB, C1A__051.SB, JOE00461.SB.
        self.assertEqual(fotaq_data.clip_name("%2d%4xP" % (2, 0x1F), 2), "02001FP2")
        self.assertEqual(fotaq_data.clip_name("C1A".ljust(5, "_") + "05", 1), "C1A__051")
        self.assertEqual(fotaq_data.clip_name("JOE0046", 1), "JOE00461")
        self.assertEqual(fotaq_data.clip_name("%2dXXXXP" % 7, 11), "07XXXXPB")


class ParserTest(unittest.TestCase):
    def test_dialogue_lines_and_their_prefixes(self):
        dog = build_dog(7, joe=[(0, "Hi Bud.*03"), (5, "Bye*02")], person=[(1, "What?"), (5, "Later.")],
                        greetings=("Back again?", "Yep."), levels=2)
        got = fotaq_data.dialogue_sentences(dog[20:])
        self.assertEqual(got, [(" 7SSSSJ", "Hi Bud.*03", "J"), (" 7   5J", "Bye*02", "J"),
                               (" 7   1P", "What?", "P"), (" 7   5P", "Later.", "P"),
                               (" 7XXXXP", "Back again?", "P"), (" 7XXXXJ", "Yep.", "J")])

    def test_cutaway_objects_speak_in_order_past_animations(self):
        frames = words(0, 1, 1, 0, 0, 0, 0, 0, 100, 0) + words(-2)  # one frame, then the end
        cut = build_cut([cut_object(0), cut_object(2, anim_list=1, execute=1) + frames,
                         cut_object(-2), cut_object(-4), cut_object(1, from_object=3)],
                        ["*FL", "Hi*03", "*", "Boom", "Shown only", "Copied"], talk=("TALK1.DOG", 1))
        got = fotaq_data.cutaway_sentences("C9Z", cut[20:], {1: -4, 2: 5})
        self.assertTrue(got.parsed)
        self.assertEqual(got.spoken, [("C9Z__01", "Hi*03", 0), ("C9Z__03", "Boom", None)])
        self.assertEqual(got.talk, ("TALK1.DOG", 1))

    def test_object_kinds(self):
        images = {5: -3, 6: 12}
        kind = fotaq_data.object_kind
        self.assertEqual(kind(0, 0, 0, 0, images), "person")
        self.assertEqual(kind(5, 0, 0, 0, images), "person")
        self.assertEqual(kind(5, 3, 1, 0, images), "animation")
        self.assertEqual(kind(6, 0, 0, 0, images), "none")       # not a person, nothing executed
        self.assertEqual(kind(6, 0, 1, 0, images), "animation")
        self.assertEqual(kind(5, 0, 0, 7, images), "none")       # copied from another object
        self.assertEqual(kind(-3, 0, 1, 0, images), "caption")
        self.assertEqual(kind(-4, 0, 0, 0, images), "none")

    def test_game_text_and_actors(self):
        jas, jas2 = build_jas()
        game = fotaq_data.read_game(jas[20:], jas2)
        self.assertEqual(game.descriptions, DESCRIPTIONS)
        self.assertEqual(game.responses, RESPONSES)
        self.assertEqual(game.objects, {1: (1, -4), 2: (1, 5)})
        self.assertEqual(game.actors, [(1, 1, "BUD2")])
        self.assertEqual(game.dialogue_people, {"TALK1.DOG": {1}})
        self.assertEqual(fotaq_data.person_speaker(game, 1), "bud")
        self.assertIsNone(fotaq_data.person_speaker(game, 2))  # a rock is nobody
        with self.assertRaises(ValueError):
            fotaq_data.read_game(jas[20:-6], jas2)

    def test_actor_names_become_characters(self):
        for raw, want in [("FAYE-H", "faye"), ("X3_RITA", "rita"), ("APE2", "ape"),
                          ("LOLA_SHOWER", "lola"), ("ANDSON-E", "anderson"), ("CHIEF", "chief")]:
            self.assertEqual(fotaq_data.canonical_actor(raw), want)


class TextTest(unittest.TestCase):
    def test_only_spoken_words_are_kept(self):
        t = fotaq_data.transcript
        for not_speech in ["", "   ", "0", "*", "C41B.CUT", "faye2.dog", "#CREDIT1.CRD"]:
            self.assertEqual(t(not_speech), "", not_speech)
        self.assertEqual(t("Hi there, big boy!"), "hi there big boy")
        self.assertEqual(t('the "Commander Rocket Decoder Ring^_" coupon?'),
                         "the commander rocket decoder ring coupon")
        self.assertEqual(t("Go away St. Fwiffo"), "")  # no safe reading of "St."
        # Stage directions, symbols and digits the actor did not say as written (lines of the game).
        for unsaid in ["(sigh)", "<gulp>", "@@ I think I'm in love @@", "&#($!!, he got away!",
                       "Do you want to RESTART (Y/N)?", "19:00 Hours"]:
            self.assertEqual(t(unsaid), "", unsaid)

    def test_non_words_are_told_from_words(self):
        words = {"could", "be", "better", "joe", "gorilla", "sparky"}
        self.assertTrue(fotaq_data.mostly_words("could be better joe", words))
        self.assertTrue(fotaq_data.mostly_words("sparky's gorilla", words))     # possessive
        self.assertTrue(fotaq_data.mostly_words("chunga gorilla", words))       # half is enough
        self.assertFalse(fotaq_data.mostly_words("chunga whoonie unga gorilla", words))
        self.assertFalse(fotaq_data.mostly_words("c", words))


class LinesTest(unittest.TestCase):
    def test_pairs_only_clips_that_exist_with_one_claim(self):
        jas, jas2 = build_jas()
        dog = build_dog(7, joe=[(0, "Hi Bud.*03"), (5, "Bye*02")],
                        person=[(1, "What?*00Who's there?"), (5, "Later.")], greetings=("0", "0"))
        cut = build_cut([cut_object(0), cut_object(1)], ["*FR", "*FLHey Bud!", "Hello Joe.*15"])
        mp3 = b"\xff\xe3" + bytes(30)
        clips = ["07SSSSJ1", "070005J1", "070001P1", "070001P2", "C9Z__012", "C9Z__021",
                 "JOE00011", "JOE00411", "JOE00421", "88SSSSSS"]
        blob = build_1c({"QUEEN.JAS": jas, "QUEEN2.JAS": jas2, "TALK1.DOG": dog, "C9Z.CUT": cut,
                         **{c + ".SB": mp3 for c in clips}})
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "queen.1c")
            with open(path, "wb") as f:
                f.write(blob)
            lines, stats = fotaq_data.lines_of(fotaq_data.Archive(path))
        got = {(ln.clip, ln.text, ln.speaker) for ln in lines}
        self.assertEqual(got, {
            ("07SSSSJ1", "hi bud", "joe"), ("070005J1", "bye", "joe"),
            ("070001P1", "what", "bud"), ("070001P2", "who's there", "bud"),  # Bud via command 1
            ("C9Z__012", "hey bud", "joe"), ("C9Z__021", "hello joe", "bud"),
            ("JOE00011", "it doesn't seem to open", "joe"),   # response 1
            ("JOE00411", "it's a rock", "joe")})               # description 1 = JOE 40 + 1
        # "Later." has no clip; the "0" greetings and "TALK1.DOG" are not speech; 88SSSSSS is a
        # sound effect nothing claims.
        self.assertGreaterEqual(stats["no_clip"], 1)
        self.assertGreaterEqual(stats["not_spoken"], 1)      # JOE00421 = "TALK1.DOG"
        self.assertEqual(stats["unclaimed_clips"], 1)
        self.assertEqual(stats["cutaways_misparsed"], [])


class HoldoutTest(unittest.TestCase):
    def lines(self):
        sizes = {"joe": 400, "bob": 40, "faye": 35, "sparky": 30, "witch": 25, "tammy": 20,
                 "frank": 15, "klunk": 12, "henry": 10, "unknown": 30}
        return [fotaq_data.Line(f"{s[:3].upper()}{i:05d}", "some words", s, "dialogue")
                for s, n in sizes.items() for i in range(n)]

    def test_whole_speakers_held_out_never_joe_or_unknown(self):
        lines = self.lines()
        held = fotaq_data.test_speakers(lines)
        self.assertTrue(held)
        self.assertNotIn("joe", held)          # larger than the test budget on his own
        self.assertNotIn("unknown", held)
        n_held = sum(ln.speaker in held for ln in lines)
        self.assertGreaterEqual(n_held, fotaq_data.TEST_FRACTION * len(lines))
        wavs = {ln.clip: ("/nonexistent.wav", 1.0) for ln in lines}
        plans = fotaq_data.plans(lines, wavs, held, copies=2, seed=1, shard_size=50)
        train = {u["voice"] for shard in plans["train_fotaq"] for u in shard}
        test = {u["voice"] for shard in plans["test_fotaq"] for u in shard}
        self.assertTrue(train and test)
        self.assertFalse(train & test)
        self.assertEqual(sum(len(s) for s in plans["train_fotaq"]),
                         2 * sum(ln.speaker not in held for ln in lines))
        self.assertEqual({u["condition"] for s in plans["test_fotaq_phone"] for u in s}, {"phone_noise"})


if __name__ == "__main__":
    unittest.main()
