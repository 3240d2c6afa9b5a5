"""Tests of bass_data.py: the sky.dnr directory, RNC unpacking, the Huffman-coded text sections,
the script scan for who speaks, sky.cpt names, speech file numbering, WAV writing and the speaker
hold-out, on byte strings built here from the documented layouts (no Debian package needed).
test_bass_real.py checks the real game data.

  /usr/bin/python3 -m unittest discover -s tools/train -p 'test_bass_data.py'
"""
from __future__ import annotations

import os
import struct
import sys
import tempfile
import unittest
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bass_data  # noqa: E402


class BitWriter:
    """RNC's stream as a writer: bits fill 16-bit LE words from the low bit; a word is reserved
    when its first bit is written; literal bytes go after the word being filled."""

    def __init__(self):
        self.out, self.word_at, self.used = bytearray(), None, 16

    def bits(self, value: int, n: int) -> None:
        for k in range(n):
            if self.used == 16:
                self.word_at, self.used = len(self.out), 0
                self.out += b"\0\0"
            if value >> k & 1:
                w = struct.unpack_from("<H", self.out, self.word_at)[0] | 1 << self.used
                struct.pack_into("<H", self.out, self.word_at, w)
            self.used += 1

    def code(self, symbol: int) -> None:
        """Every table here has 4 symbols of length 2: symbol s is code s, first bit = high bit."""
        self.bits(symbol >> 1, 1)
        self.bits(symbol & 1, 1)

    def value(self, v: int) -> None:
        symbol = v if v < 2 else v.bit_length()
        self.code(symbol)
        if symbol >= 2:
            self.bits(v - (1 << (symbol - 1)), symbol - 1)


def rnc_pack(steps: list[tuple[bytes, tuple[int, int] | None]], expect: bytes) -> bytes:
    """One chunk of (literal bytes, (distance, length) or None for the last step)."""
    w = BitWriter()
    w.bits(0, 2)
    for _ in range(3):
        w.bits(4, 5)
        for _ in range(4):
            w.bits(2, 4)
    w.bits(len(steps), 16)
    for literal, match in steps:
        w.value(len(literal))
        w.out += literal
        if match:
            w.value(match[0] - 1)
            w.value(match[1] - 2)
    body = bytes(w.out)
    return (b"RNC\x01" + struct.pack(">IIHH", len(expect), len(body), bass_data.crc16(expect),
                                     bass_data.crc16(body)) + b"\0\x01" + body)


def huffman_codes() -> dict[int, str]:
    """character -> bit string, walking HUFF_TREE's preorder (0-branch first)."""
    codes, pos = {}, [0]

    def walk(prefix: str) -> None:
        v = bass_data.HUFF_TREE[pos[0]]
        pos[0] += 1
        if v == bass_data.INNER:
            walk(prefix + "0")
            walk(prefix + "1")
        else:
            codes.setdefault(v, prefix)
    walk("")
    return codes


def build_section(lines: list[str]) -> bytes:
    """A text section file: skip-table offset, text offset, block sizes, skip bytes, bits."""
    codes = huffman_codes()
    bits, skips, starts = "", [], []
    for line in lines:
        starts.append(len(bits) // 2)
        code = "".join(codes[c] for c in line.encode("latin-1") + b"\0")
        while len(code) % 2:
            code += "0"
        units = len(code) // 2
        if units > 127:                        # a long skip counts 8 units
            while units % 8:
                code += "00"
                units += 1
            skips.append(0x80 | units >> 3)
        else:
            skips.append(units)
        bits += code
    while len(bits) % 8:
        bits += "0"
    full = (len(lines) - 1) // 32
    sizes = [starts[(b + 1) * 32] - starts[b * 32] for b in range(full)]
    skip_at = 4 + 2 * full
    text_at = skip_at + 32 * full + (len(lines) - 32 * full)
    head = struct.pack("<HH", skip_at, text_at) + struct.pack("<%dH" % full, *sizes)
    return head + bytes(skips) + bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))


def words(*values: int) -> bytes:
    return struct.pack("<%dH" % len(values), *values)


def build_cpt(names: dict[int, str]) -> bytes:
    """sky.cpt with one list; every named compact holds one word."""
    n = max(names) + 1
    source, ascii_ = bytearray(), bytearray()
    for k in range(n):
        if k in names:
            source += words(1, 0, 0xAAAA)
            ascii_ += names[k].encode() + b"\0"
        else:
            source += words(0)
    return (words(0, 1, n) + struct.pack("<II", len(names), len(source) // 2) + bytes(source)
            + struct.pack("<I", len(ascii_)) + bytes(ascii_))


GALLAGHER, FOSTER_CPT = 5, 3


def build_module() -> bytes:
    code = [2, FOSTER_CPT, 2, 0x1005, 2, 0, 11, 3, 35 * 4,      # fnSpeakMe(3, 0x1005): foster cpt
            0, 48, 2, 0x1006, 2, 1, 11, 3, 36 * 4,              # fnSpeakMeDir(CUR_ID, 0x1006)
            0, 480, 2, 0x2007, 2, 0, 11, 3, 37 * 4,             # fnSpeakWait(var, 0x2007)
            0, 4, 14, 2, 1, 4, 2, 6, 8,                         # switch on a variable, 2 cases
            0, 48, 2, 0x1008, 2, 0, 11, 3, 35 * 4,              # fnSpeakMe(CUR_ID): unknown
            2, GALLAGHER, 2, 0x1009, 2, 0, 11, 3, 38 * 4,       # gallagher says 0x1009 ...
            2, FOSTER_CPT, 2, 0x1009, 2, 0, 11, 3, 38 * 4,      # ... and so does foster: conflict
            0, 480, 0, 4, 2, 0, 11, 3, 37 * 4,                  # text from a variable: ignored
            19]
    return words(1, 2, *code)


class DiskTest(unittest.TestCase):
    def test_directory_offsets_sizes_and_flags(self):
        entries = [(60600, 100, 0x800000 | 40), (50007, (1 << 23) | 3, 1000)]
        dnr = struct.pack("<I", len(entries))
        for num, where, flags in entries:
            dnr += struct.pack("<H", num) + where.to_bytes(3, "little") + flags.to_bytes(3, "little")
        got = bass_data.read_directory(dnr)
        self.assertEqual(got[60600], (100, 40, 0x800000 | 40))
        self.assertEqual(got[50007], (48, 1000, 1000))   # offset 3 in 16-byte units
        with self.assertRaises(ValueError):
            bass_data.read_directory(dnr[:-1])

    def test_crc16_check_value(self):
        # CRC-16 (poly 0xA001 reflected, start 0: "CRC-16/ARC"): its catalogue check value.
        self.assertEqual(bass_data.crc16(b"123456789"), 0xBB3D)

    def test_rnc_literals_and_an_overlapping_copy(self):
        want = b"abcabcabcX"
        packed = rnc_pack([(b"abc", (3, 6)), (b"X", None)], want)
        self.assertEqual(bass_data.rnc_unpack(packed), want)
        bad = bytearray(packed)
        bad[-1] ^= 0x40
        with self.assertRaises(ValueError):
            bass_data.rnc_unpack(bytes(bad))

    def test_packed_file_keeps_its_header(self):
        header = words(0x81, *range(1, 11))
        packed = rnc_pack([(b"\x80\x81\x7f", None)], b"\x80\x81\x7f")
        self.assertEqual(bass_data.unpack_file(header + packed, 0), header + b"\x80\x81\x7f")
        self.assertEqual(bass_data.unpack_file(header + packed, bass_data.FLAG_NO_HEADER), b"\x80\x81\x7f")
        self.assertEqual(bass_data.unpack_file(header + packed, bass_data.FLAG_STORED), header + packed)

    def test_speech_file_numbers(self):
        self.assertEqual(bass_data.speech_file(7), 50007)
        self.assertEqual(bass_data.speech_file(2 << 12 | 5), 50000 + 600 + 500 + 5)
        self.assertEqual(bass_data.speech_file(6 << 12 | 0x20), 50000 + 5080 + 32)


class TextTest(unittest.TestCase):
    def test_section_lines_across_blocks(self):
        lines = [f"Line {k}: what's THAT?" for k in range(40)]
        lines[3] = "A long one. " * 12          # needs a long skip (more than 127 units)
        lines[33] = ""
        self.assertEqual(bass_data.section_lines(build_section(lines)), lines)

    def test_transcripts(self):
        t = bass_data.transcript
        self.assertEqual(t("What YOU want?"), "what you want")
        self.assertEqual(t("...but I'm TOO BUSY to bother with that."), "but i'm too busy to bother with that")
        self.assertEqual(t("   "), "")

    def test_non_words_are_told_from_words(self):
        words_ = {"forget", "it", "joey"}
        self.assertTrue(bass_data.mostly_words("forget it", words_))
        self.assertFalse(bass_data.mostly_words("mmf", words_))


class SpeakerTest(unittest.TestCase):
    def test_names_calls_and_speakers(self):
        names = bass_data.compact_names(build_cpt({FOSTER_CPT: "foster", GALLAGHER: "sc36_gallagher"}))
        self.assertEqual(names, {FOSTER_CPT: "foster", GALLAGHER: "sc36_gallagher"})
        calls = bass_data.speak_calls(build_module())
        self.assertEqual(len(calls), 7)
        self.assertEqual(calls[0], (35, (2, FOSTER_CPT), (2, 0x1005)))
        who = bass_data.speakers(calls, names)
        self.assertEqual(who, {0x1005: "foster", 0x1006: "foster", 0x2007: "npc-s2"})

    def test_unknown_opcode_is_an_error(self):
        with self.assertRaises(ValueError):
            bass_data.speak_calls(words(1, 2, 99))


class AudioTest(unittest.TestCase):
    def test_unsigned_bytes_become_16_bit(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "a", "x.wav")
            bass_data.write_wav(bytes([0, 128, 255]), path)
            with wave.open(path) as w:
                self.assertEqual((w.getnchannels(), w.getsampwidth(), w.getframerate()), (1, 2, 11025))
                self.assertEqual(struct.unpack("<3h", w.readframes(3)), (-32768, 0, 32512))


class LinesTest(unittest.TestCase):
    def test_lines_pair_text_with_existing_speech(self):
        sections = {s: [f"Section {s} line {k}" for k in range(3)] for s in range(8)}
        sections[1][2] = "Get out!"
        sections[2][1] = "Mmf!"
        files = {60600 + s: (build_section(v), 0x800000) for s, v in sections.items()}
        files[60400] = (build_module(), 0x800000)
        for m in range(1, 7):
            files[60400 + m] = (words(1, 2, 19), 0x800000)
        pcm = bytes([128] * 11025)
        header = words(0x81, 0, 0, 0, 0, 0, 22 + len(pcm) & 0xFFFF, 0, 0, 0, 0)
        short = b"\x80\x81\x82" * 3 + b"\x7f"
        files[bass_data.speech_file(1 << 12 | 2)] = (header + rnc_pack([(short[:3], (3, 6)), (short[-1:], None)], short), 0)
        files[bass_data.speech_file(2 << 12 | 1)] = (header + pcm, 0x800000)
        files[bass_data.speech_file(0 << 12 | 0)] = (header + pcm, 0x800000)
        files[59500] = (header + pcm, 0x800000)      # intro speech: no text number
        dnr, dsk = bytearray(struct.pack("<I", len(files))), bytearray()
        for num, (data, flags) in files.items():
            dnr += struct.pack("<H", num) + len(dsk).to_bytes(3, "little") + (flags | len(data)).to_bytes(3, "little")
            dsk += data
        with tempfile.TemporaryDirectory() as d:
            for name, blob in (("sky.dnr", dnr), ("sky.dsk", dsk)):
                with open(os.path.join(d, name), "wb") as f:
                    f.write(blob)
            disk = bass_data.Disk(os.path.join(d, "sky.dnr"), os.path.join(d, "sky.dsk"))
            lines, stats = bass_data.lines_of(disk, build_cpt({FOSTER_CPT: "foster"}))
            self.assertEqual(bass_data.speech_samples(disk.load(bass_data.speech_file(1 << 12 | 2))), short)
        got = {(ln.clip, ln.text, ln.speaker) for ln in lines}
        self.assertEqual(got, {(50000, "section zero line zero", "unknown"),
                               (50602, "get out", "unknown"),
                               (51101, "mmf", "unknown")})
        self.assertEqual(stats["unpaired_clips"], 1)
        self.assertEqual(stats["no_clip"], 24 - 3)


class HoldoutTest(unittest.TestCase):
    def lines(self):
        sizes = {"foster": 400, "joey": 60, "npc-s2": 50, "npc-s3": 40, "gallagher": 30,
                 "danielle": 25, "npc-s0": 20, "ken": 15, "unknown": 80}
        return [bass_data.Line(50000 + 1000 * n + i, "some words", s, i)
                for n, (s, k) in enumerate(sizes.items()) for i in range(k)]

    def test_groups_held_out_never_foster_joey_or_unknown(self):
        lines = self.lines()
        held = bass_data.test_speakers(lines)
        self.assertTrue(held)
        self.assertFalse(held & {"foster", "joey", "unknown"})
        self.assertGreaterEqual(sum(ln.speaker in held for ln in lines), bass_data.TEST_FRACTION * len(lines))
        wavs = {ln.clip: ("/nonexistent.wav", 1.0) for ln in lines}
        plans = bass_data.plans(lines, wavs, held, copies=2, seed=1, shard_size=50)
        train = {u["voice"] for shard in plans["train_bass"] for u in shard}
        test = {u["voice"] for shard in plans["test_bass"] for u in shard}
        self.assertTrue(train and test)
        self.assertFalse(train & test)
        self.assertEqual(sum(len(s) for s in plans["train_bass"]), 2 * sum(ln.speaker not in held for ln in lines))
        self.assertEqual({u["condition"] for s in plans["test_bass_phone"] for u in s}, {"phone_noise"})


if __name__ == "__main__":
    unittest.main()
