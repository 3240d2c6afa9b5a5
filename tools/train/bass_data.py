#!/usr/bin/python3
"""Real human speech of many speakers: the voice acting of Beneath a Steel Sky (CD talkie
version), each clip paired with the line the game shows for it, in make_data.py's shard format,
with groups of speakers held out.

  /usr/bin/python3 tools/train/bass_data.py --out data [--copies 2] [--workers 2] [--src DIR]

Source: Debian's beneath-a-steel-sky (main; the CD version 0.0372, freeware: Revolution Software
allows it to be copied and given away). Three files: sky.dnr (the directory), sky.dsk (every game
file, many RNC-packed: 3,491 speech clips of 8-bit unsigned PCM at 11,025 Hz, the game text, the
script modules) and sky.cpt (ScummVM's table of the game's objects, "compacts", with their names).
The package is only unpacked (`apt-get download` + `dpkg -x`, done here when --src has no copy);
ScummVM is not needed.

Layouts (as ScummVM's sky engine reads them; the code here is written from these facts):
  sky.dnr      uint32 LE entry count, then 8-byte entries: uint16 file number, 3 bytes offset
               (bit 23: offset in 16-byte units; low 23 bits the offset), 3 bytes flags (low 22
               bits: stored size; bit 22: unpacked data has no file header; bit 23: stored as is).
  file header  11 uint16 LE (22 bytes); word 0 bit 7 = RNC-packed (when flags bit 23 is clear),
               word 6 = total size. A packed file is the header then "RNC\\x01" data; it unpacks to
               the header followed by the unpacked bytes.
  RNC method 1 "RNC\\x01", unpacked and packed size (uint32 BE), CRC-16 (poly 0xA001) of the
               unpacked and of the packed bytes (uint16 BE), leeway, chunk count; then a bit
               stream of 16-bit LE words read from the low bit, 2 bits skipped, and per chunk three
               canonical Huffman tables (5-bit count, 4-bit lengths: literal run, distance, match
               length), a 16-bit count of steps; a step is a literal run whose bytes sit in the
               stream at the next unread word, then (not in the last step) distance + 1 and
               length + 2 of a copy. Symbol s >= 2 stands for 2^(s-1) plus s-1 more bits.
  speech       text number T (section T >> 12, line T & 0xFFF) plays file 50000 +
               SPEECH_BASE[section] + line; after its 22-byte header the clip is unsigned 8-bit
               mono at 11,025 Hz.
  text         English text section s is file 60600 + s: uint16 LE offset of the skip table,
               uint16 LE offset of the bit stream, then the sizes of each full 32-line block; the
               skip table has a byte per line (bit 7: the rest times 8), the last block's one byte
               per line; offsets count 2-bit units. Characters are Huffman-coded (the engine's
               fixed tree for version 0.0372, HUFF_TREE), most significant bit first, ending at 0.
  scripts      modules 60400-60406: uint16 LE words, word N = start of script N; opcodes with
               their operand counts (SCRIPT_OPERANDS; 14 = switch has 2n + 2). call_mcode is
               11, argument count, function * 4: fnSpeakMe 35, fnSpeakMeDir 36, fnSpeakWait 37,
               fnSpeakWaitDir 38, each (speaker id, text number, animation).
  sky.cpt      uint16 version 0, list count, list lengths, raw and source sizes (uint32, words),
               the source (per compact: size, and if non-zero a type and size words), the names
               (NUL-terminated, one per non-empty compact, list-major). Compact id = list << 12 |
               index.
A line is used when its speech file exists; lines that do not normalise to the model's alphabet
and lines less than half made of dictionary words (wamerican) are skipped. The intro's 159 speech
files (59494 and up) have no text number and are not used.

Speakers, as far as the scripts tell: a speak call whose speaker is a number names the character
(the compact's name without its room prefix: sc36_gallagher -> gallagher); fnSpeakMeDir with the
current id is the player, Foster ("must be the player", as the engine says of it); fnSpeakWait and
fnSpeakWaitDir with the speaker in a variable are the person Foster talks to, whose name the
scripts do not give: such lines are grouped as "npc-s<section>" (the non-player characters of one
part of the game). A line that different calls give to different speakers, or that no call with a
numeric text speaks (e.g. Foster's dialogue choices, lines of the script's own character), is
"unknown": it trains, never tests. The game data names characters, not voice actors, and a named
character's other lines may sit in an npc-s group: the hold-out is by these groups, not
guaranteed voice-disjoint. Groups are held out in an order fixed by a hash of their names until
TEST_FRACTION of the lines are, skipping Foster, Joey (the robot, a processed voice heard
throughout) and any group larger than the budget alone.

Splits written:
  train_bass       lines of the training groups, --copies times (once as recorded, the others
                   through make_data's training augmentation)
  test_bass        lines of the held-out groups, as recorded (11,025 Hz resampled to 16 kHz)
  test_bass_phone  the same lines through make_data's phone_noise condition (noise + a codec)
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
import wave
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import game_speech  # noqa: E402
import text_norm  # noqa: E402

DATA_DIR = "usr/share/scummvm/beneath-a-steel-sky"
DATA_FILES = ("sky.dnr", "sky.dsk", "sky.cpt")
PACKAGE = "beneath-a-steel-sky"
LICENCE = ("Beneath-a-Steel-Sky-License (Revolution Software; Debian main): may be given away, "
           "modified and redistributed marked as modified, with attribution; not sold on its own")
TEST_FRACTION = 0.15
MIN_SECONDS, MAX_SECONDS = 0.6, 20.0
UNKNOWN = "unknown"
PLAYER, ROBOT = "foster", "joey"
DICTIONARY = game_speech.DICTIONARY
SAMPLE_RATE = 11025

DNR_ENTRY = 8
OFFSET_IN_PARAGRAPHS, PARAGRAPH_SHIFT = 1 << 23, 4
OFFSET_MASK, SIZE_MASK = 0x7FFFFF, 0x3FFFFF
FLAG_NO_HEADER, FLAG_STORED = 1 << 22, 1 << 23
HEADER = 22                      # bytes of the file header (11 uint16)
HEADER_PACKED_BIT = 0x80
RNC_MAGIC, RNC_HEADER = b"RNC\x01", 18
RNC_POLY = 0xA001
RNC_MIN_MATCH = 2
SPEECH_FILE_0, SPEECH_FILE_END = 50000, 60000
SPEECH_BASE = (0, 600, 1100, 2430, 3380, 4530, 5080, 5230)  # first speech file of each section
TEXT_FILE_0 = 60600              # English text sections 60600 + 0..7
TEXT_SECTIONS = 8
TEXT_BLOCK = 32                  # lines per block of the text index
LONG_SKIP, LONG_SKIP_SHIFT = 0x80, 3
MODULE_FILE_0, MODULES = 60400, 7
CALL_MCODE, SWITCH, MCODE_SCALE = 11, 14, 4
PUSH_VARIABLE, PUSH_NUMBER = 0, 2
SPEAK_ME, SPEAK_ME_DIR, SPEAK_WAIT, SPEAK_WAIT_DIR = 35, 36, 37, 38
CUR_ID_VARIABLE = 12 * 4         # script variable CUR_ID, as scripts address it (index * 4)
# Operands of each script opcode (14, switch, has 2 per case + count + default: see _walk).
SCRIPT_OPERANDS = {0: 1, 1: 0, 2: 1, 3: 0, 4: 0, 5: 1, 6: 1, 7: 0, 8: 0, 9: 1, 10: 0, 11: 2,
                   12: 0, 13: 0, 15: 1, 16: 1, 17: 0, 18: 1, 19: 0, 20: 0}

# The engine's Huffman tree for the text of version 0.0372, in preorder: INNER is a node with two
# children (the 0-branch first), any other value a leaf with that character (0 ends a line).
INNER = -1
_I, _c = INNER, ord
HUFF_TREE = (
    _I, _I, _I, 32, _I, _c("e"), _c("a"), _I, _I, _I, _c("o"), _c("s"), _I, _c("t"), _c("n"), _I, _I,
    _c("."), _c("i"), _c("r"), _I, _I, _I, _I, _I, 0, _c("E"), _c("u"), _I, _c("m"), _c("A"), _I, _I,
    _I, _c("l"), _c("I"), _I, _c("d"), _c("R"), _I, _I, _c("N"), _c("S"), _c("T"), _I, _I, _I, _I, _I,
    _c("O"), _c("h"), _c("c"), _I, _c("D"), _c("g"), _I, _I, _I, _c("L"), _c("C"), _I, _c("p"),
    _c("U"), _I, _I, _c("!"), _c("y"), _c("M"), _I, _I, _I, _I, _I, _c("P"), _c("v"), _c("H"), _I,
    _c("?"), _c("b"), _I, _I, _I, 39, _c("f"), _c(","), _I, _c("G"), _c("B"), _I, _I, _I, _I, _I,
    _c("V"), _c("k"), _c("F"), _I, _c("q"), _c("w"), _I, _I, _I, _c("K"), _c("-"), _c("W"), _I,
    _c("J"), _c("*"), _I, _I, _I, _I, _c("z"), _c("Y"), _I, _c("j"), _c("+"), _I, _I, _I, _c("Q"),
    133, _c(")"), _I, _I, _c("Z"), 139, _c("<"), _I, _I, _I, _I, _I, 149, 126, 138, _I, 135, _c(":"),
    _I, _I, _I, 127, _c("]"), _c("#"), _I, _I, _c("x"), _c("X"), 145, _I, _I, _I, _I, _I, 136,
    _c("`"), _c("2"), _I, _I, _c("0"), 131, _c("1"), _I, _I, _I, _c("/"), _c("("), _c("="), _I, 134,
    _c("^"), _I, _I, _I, _I, _c("3"), _c("9"), _I, 152, _c("4"), _I, _I, _I, _c("}"), _c("8"),
    _c("\\"), _I, _c('"'), 144, _I, _I, _I, _I, _c("&"), 141, _I, _c("5"), _c("6"), _I, _I, 146, 143,
    _I, 142, 147, _I, _I, _I, _I, 140, _c("7"), 128, _I, _I, 129, 153, _I, _c("$"), _c("@"), _I, _I,
    _I, _I, _c("["), 154, _c("_"), _I, _c(">"), 150, _I, _I, _I, 130, _c("%"), 9, _I, _I, 156, 151,
    _I, _c("{"), _I, 148, _c("!"))


class Line(NamedTuple):
    clip: int       # speech file number
    text: str       # transcript (text_norm alphabet)
    speaker: str
    text_no: int    # the game's text number


# ---------------------------------------------------------------- directory, disk, RNC

def read_directory(dnr: bytes) -> dict[int, tuple[int, int, int]]:
    """sky.dnr: file number -> (byte offset in sky.dsk, stored size, flags)."""
    (count,) = struct.unpack_from("<I", dnr, 0)
    if len(dnr) < 4 + count * DNR_ENTRY:
        raise ValueError(f"sky.dnr: {count} entries need {4 + count * DNR_ENTRY} bytes, has {len(dnr)}")
    out = {}
    for k in range(count):
        at = 4 + k * DNR_ENTRY
        (number,) = struct.unpack_from("<H", dnr, at)
        where = int.from_bytes(dnr[at + 2:at + 5], "little")
        flags = int.from_bytes(dnr[at + 5:at + 8], "little")
        offset = where & OFFSET_MASK
        if where & OFFSET_IN_PARAGRAPHS:
            offset <<= PARAGRAPH_SHIFT
        out[number] = (offset, flags & SIZE_MASK, flags)
    return out


def _crc_table() -> list[int]:
    table = []
    for n in range(256):
        for _ in range(8):
            n = (n >> 1) ^ RNC_POLY if n & 1 else n >> 1
        table.append(n)
    return table


_CRC = _crc_table()


def crc16(data: bytes) -> int:
    """CRC-16 with the reflected polynomial 0xA001 and start 0 (RNC's checksum)."""
    crc = 0
    for b in data:
        crc = _CRC[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


class _BitStream:
    """RNC's bit stream: 16-bit little-endian words, each read from its low bit; pos is the byte
    after the word being read, where a literal run's bytes start."""

    def __init__(self, data: bytes, pos: int):
        self.data, self.pos, self.word, self.left = data, pos, 0, 0

    def bits(self, n: int) -> int:
        out = got = 0
        while got < n:
            if self.left == 0:
                self.word = self.data[self.pos] | self.data[self.pos + 1] << 8
                self.pos += 2
                self.left = 16
            take = min(n - got, self.left)
            out |= (self.word & ((1 << take) - 1)) << got
            self.word >>= take
            self.left -= take
            got += take
        return out

    def table(self) -> dict[tuple[int, int], int]:
        """A canonical Huffman table: (code length, code read first bit first) -> symbol."""
        lengths = [self.bits(4) for _ in range(self.bits(5))]
        codes, code = {}, 0
        for length in range(1, 17):
            for symbol, n in enumerate(lengths):
                if n == length:
                    codes[(length, code >> (16 - length))] = symbol
                    code += 1 << (16 - length)
        return codes

    def value(self, codes: dict[tuple[int, int], int]) -> int:
        code = length = 0
        while (length, code) not in codes:
            code = code << 1 | self.bits(1)
            length += 1
            if length > 16:
                raise ValueError("RNC: no Huffman code matches")
        symbol = codes[(length, code)]
        return symbol if symbol < 2 else (1 << (symbol - 1)) | self.bits(symbol - 1)


def rnc_unpack(packed: bytes) -> bytes:
    """RNC method 1 data (starting at "RNC\\x01") unpacked, both checksums verified."""
    if packed[:4] != RNC_MAGIC:
        raise ValueError("not RNC method 1 data")
    size, packed_size, crc, packed_crc = struct.unpack_from(">IIHH", packed, 4)
    chunks = packed[RNC_HEADER - 1]
    if crc16(packed[RNC_HEADER:RNC_HEADER + packed_size]) != packed_crc:
        raise ValueError("RNC: packed data checksum mismatch")
    s = _BitStream(packed[:RNC_HEADER + packed_size] + bytes(4), RNC_HEADER)
    s.bits(2)
    out = bytearray()
    for _ in range(chunks):
        literal, distance, length = s.table(), s.table(), s.table()
        steps = s.bits(16)
        for step in range(steps):
            n = s.value(literal)
            out += s.data[s.pos:s.pos + n]
            s.pos += n
            if step < steps - 1:
                back = s.value(distance) + 1
                for _ in range(s.value(length) + RNC_MIN_MATCH):
                    out.append(out[-back])
    if len(out) != size or crc16(out) != crc:
        raise ValueError("RNC: unpacked data size or checksum mismatch")
    return bytes(out)


class Disk:
    """sky.dnr + sky.dsk opened for reading game files by number."""

    def __init__(self, dnr_path: str, dsk_path: str):
        with open(dnr_path, "rb") as f:
            self.entries = read_directory(f.read())
        self.dsk_path = dsk_path

    def stored(self, number: int) -> tuple[bytes, int]:
        offset, size, flags = self.entries[number]
        with open(self.dsk_path, "rb") as f:
            f.seek(offset)
            return f.read(size), flags

    def load(self, number: int) -> bytes:
        """A file as the engine holds it in memory: unpacked, with its header unless flagged."""
        return unpack_file(*self.stored(number))


def unpack_file(data: bytes, flags: int) -> bytes:
    if flags & FLAG_STORED or len(data) < HEADER or not data[0] & HEADER_PACKED_BIT \
            or data[HEADER:HEADER + 4] != RNC_MAGIC:
        return data
    body = rnc_unpack(data[HEADER:])
    return body if flags & FLAG_NO_HEADER else data[:HEADER] + body


def speech_file(text_no: int) -> int:
    return SPEECH_FILE_0 + SPEECH_BASE[text_no >> 12] + (text_no & 0xFFF)


def speech_samples(loaded: bytes) -> bytes:
    """The unsigned 8-bit samples of a loaded speech file (everything after its header)."""
    return loaded[HEADER:]


# ---------------------------------------------------------------- text

def _tree_children() -> dict[int, tuple[int, int]]:
    children: dict[int, tuple[int, int]] = {}
    stack, node = [], 0
    # Preorder: an inner node's 0-child follows it; its 1-child follows the 0-child's subtree.
    while node < len(HUFF_TREE):
        if HUFF_TREE[node] == INNER:
            stack.append(node)
            node += 1
            continue
        node += 1
        while stack and stack[-1] in children:
            stack.pop()
        if stack:
            parent = stack[-1]
            children[parent] = (parent + 1, node)
    return children


_CHILDREN = _tree_children()


def decode_line(data: bytes, unit: int) -> str:
    """The NUL-terminated line whose code starts at `unit` (2-bit units from data's start)."""
    at, bit = unit >> 2, 8 - 2 * (unit & 3)   # bit: how many bits of data[at] remain
    out = bytearray()
    while True:
        node = 0
        while node in _CHILDREN:
            if bit == 0:
                at, bit = at + 1, 8
            bit -= 1
            node = _CHILDREN[node][data[at] >> bit & 1]
        if HUFF_TREE[node] == 0:
            return out.decode("latin-1")
        out.append(HUFF_TREE[node])


def section_lines(data: bytes) -> list[str]:
    """Every line of one text section file, by line number."""
    skip_at, text_at = struct.unpack_from("<HH", data, 0)
    full = (skip_at - 4) // 2
    count = full * TEXT_BLOCK + (text_at - skip_at - TEXT_BLOCK * full)
    block_sizes = struct.unpack_from("<%dH" % full, data, 4)
    out, block_start = [], 0
    for block in range(full + 1):
        unit = block_start
        for k in range(min(TEXT_BLOCK, count - block * TEXT_BLOCK)):
            out.append(decode_line(data, (text_at << 2) + unit))
            skip = data[skip_at + block * TEXT_BLOCK + k]
            unit += (skip & ~LONG_SKIP) << LONG_SKIP_SHIFT if skip & LONG_SKIP else skip
        if block < full:
            block_start += block_sizes[block]
    return out


def game_text(disk: Disk) -> dict[int, str]:
    """text number -> line, for every English section."""
    out = {}
    for section in range(TEXT_SECTIONS):
        for k, line in enumerate(section_lines(disk.load(TEXT_FILE_0 + section))):
            out[section << 12 | k] = line
    return out


# ---------------------------------------------------------------- who speaks

def compact_names(cpt: bytes) -> dict[int, str]:
    """sky.cpt: compact id -> name."""
    version, lists = struct.unpack_from("<HH", cpt, 0)
    if version != 0:
        raise ValueError(f"sky.cpt: unknown version {version}")
    lengths = struct.unpack_from("<%dH" % lists, cpt, 4)
    at = 4 + 2 * lists
    _raw_words, source_words = struct.unpack_from("<II", cpt, at)
    source = cpt[at + 8:at + 8 + 2 * source_words]
    at += 8 + 2 * source_words
    (ascii_size,) = struct.unpack_from("<I", cpt, at)
    names = cpt[at + 4:at + 4 + ascii_size].split(b"\0")
    out, pos, k = {}, 0, 0
    for lst in range(lists):
        for index in range(lengths[lst]):
            (size,) = struct.unpack_from("<H", source, pos)
            pos += 2
            if size:
                pos += 2 + 2 * size
                out[lst << 12 | index] = names[k].decode("latin-1")
                k += 1
    return out


def _operand(ins: tuple[int, ...]) -> tuple[int, int]:
    """(opcode, value) of a push; (opcode, -1) for anything else."""
    return (ins[0], ins[1]) if ins[0] in (PUSH_NUMBER, PUSH_VARIABLE) else (ins[0], -1)


def speak_calls(module: bytes) -> list[tuple[int, tuple[int, int], tuple[int, int]]]:
    """(function, speaker operand, text operand) of each speak call in a script module, an
    operand being (push opcode, value); walks the code from the first script to the end."""
    words = struct.unpack_from("<%dH" % (len(module) // 2), module, 0)
    at, recent, out = words[1], [], []
    while at < len(words):
        op = words[at]
        if op == SWITCH:
            size = 3 + 2 * words[at + 1]
        elif op in SCRIPT_OPERANDS:
            size = 1 + SCRIPT_OPERANDS[op]
        else:
            raise ValueError(f"script module: unknown opcode {op} at word {at}")
        ins = words[at:at + size]
        at += size
        if op == CALL_MCODE and ins[2] // MCODE_SCALE in (SPEAK_ME, SPEAK_ME_DIR, SPEAK_WAIT,
                                                          SPEAK_WAIT_DIR) and ins[1] == 3 \
                and len(recent) >= 3:
            out.append((ins[2] // MCODE_SCALE, _operand(recent[-3]), _operand(recent[-2])))
        recent = (recent + [ins])[-3:]
    return out


def character(name: str) -> str:
    """A compact's name as a character: sc36_gallagher -> gallagher, hologram_b -> hologram-b."""
    n = re.sub(r"^sc\d+_", "", name.lower())
    return re.sub(r"[^a-z0-9]+", "-", n).strip("-") or UNKNOWN


def speakers(calls, names: dict[int, str]) -> dict[int, str]:
    """text number -> speaker, for lines every numeric-text call gives to one speaker."""
    seen: dict[int, set[str]] = {}
    for function, (who_op, who), (text_op, text_no) in calls:
        if text_op != PUSH_NUMBER:
            continue
        if who_op == PUSH_NUMBER:
            label = character(names.get(who, UNKNOWN))
        elif function == SPEAK_ME_DIR and (who_op, who) == (PUSH_VARIABLE, CUR_ID_VARIABLE):
            label = PLAYER
        elif function in (SPEAK_WAIT, SPEAK_WAIT_DIR) and who_op == PUSH_VARIABLE:
            label = f"npc-s{text_no >> 12}"
        else:
            label = UNKNOWN
        seen.setdefault(text_no, set()).add(label)
    return {t: s.pop() for t, s in seen.items() if len(s) == 1 and UNKNOWN not in s}


# ---------------------------------------------------------------- lines

def transcript(line: str) -> str:
    """The words of a line, or "" when it is not something to train on."""
    s = line.strip()
    if not s:
        return ""
    if text_norm.has_unsaid_marks(s):  # stage directions, symbols (none in BASS's lines today)
        return ""
    try:
        t = text_norm.normalize(s, keep_punct=False)
    except text_norm.Rejected:
        return ""
    return t if text_norm.in_vocabulary(t) else ""


def lines_of(disk: Disk, cpt: bytes) -> tuple[list[Line], dict]:
    """Every usable (clip, transcript, speaker) line and counts of what was skipped."""
    text = game_text(disk)
    calls = [c for m in range(MODULES) for c in speak_calls(disk.load(MODULE_FILE_0 + m))]
    who = speakers(calls, compact_names(cpt))
    speech = {n for n in disk.entries if SPEECH_FILE_0 <= n < SPEECH_FILE_END}
    stats = {"text_lines": len(text), "speech_files": len(speech), "speak_calls": len(calls),
             "no_clip": 0, "not_spoken": 0}
    lines, paired = [], set()
    for text_no, raw in sorted(text.items()):
        clip = speech_file(text_no)
        if clip not in speech:
            stats["no_clip"] += 1
            continue
        paired.add(clip)
        words = transcript(raw)
        if not words:
            stats["not_spoken"] += 1
            continue
        lines.append(Line(clip, words, who.get(text_no, UNKNOWN), text_no))
    stats["unpaired_clips"] = len(speech - paired)
    return lines, stats


mostly_words = game_speech.mostly_words


# ---------------------------------------------------------------- audio, hold-out, shards

def setup_cache_dir() -> str:
    """Where tools/setup.sh unpacks the three data files (without installing the package)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "sluice", PACKAGE)


def find_data_dir(src: str) -> str | None:
    for root in ("/", src):
        d = os.path.join(root, DATA_DIR)
        if all(os.path.exists(os.path.join(d, f)) for f in DATA_FILES):
            return d
    for d in (src, setup_cache_dir()):
        if d and all(os.path.exists(os.path.join(d, f)) for f in DATA_FILES):
            return d
    return None


def fetch(src: str) -> str:
    """The folder with sky.dnr/.dsk/.cpt: installed, unpacked under src, or downloaded now."""
    found = find_data_dir(src)
    if found:
        return found
    os.makedirs(src, exist_ok=True)
    subprocess.run(["apt-get", "download", PACKAGE], cwd=src, check=True)
    for deb in glob.glob(os.path.join(src, "*.deb")):
        subprocess.run(["dpkg", "-x", deb, src], check=True)
    found = find_data_dir(src)
    if not found:
        sys.exit(f"bass_data: {DATA_DIR}/sky.* not found after unpacking {PACKAGE} into {src}")
    return found


def write_wav(samples_u8: bytes, path: str) -> None:
    """Unsigned 8-bit samples as mono 16-bit WAV at the game's rate."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pcm = bytearray(2 * len(samples_u8))
    for i, b in enumerate(samples_u8):
        struct.pack_into("<h", pcm, 2 * i, (b - 128) << 8)
    with wave.open(path + ".part.wav", "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(bytes(pcm))
    os.replace(path + ".part.wav", path)


def _cut_one(disk_paths: tuple[str, str], clips: list[tuple[int, str]]) -> None:
    disk = Disk(*disk_paths)
    for clip, path in clips:
        write_wav(speech_samples(disk.load(clip)), path)


def cut_lines(data_dir: str, lines: list[Line], wav_dir: str,
              workers: int) -> dict[int, tuple[str, float]]:
    """Unpacks every line's clip once: clip -> (wav path, seconds) for clips of a usable length."""
    paths = {ln.clip: os.path.join(wav_dir, ln.speaker, f"{ln.clip}.wav") for ln in lines}
    todo = sorted((c, p) for c, p in paths.items() if not os.path.exists(p))
    disk_paths = (os.path.join(data_dir, "sky.dnr"), os.path.join(data_dir, "sky.dsk"))
    n = max(1, workers)
    with concurrent.futures.ProcessPoolExecutor(n) as pool:
        list(pool.map(_cut_one, [disk_paths] * n, [todo[k::n] for k in range(n)]))
    out = {}
    for clip, path in paths.items():
        with wave.open(path) as w:
            seconds = w.getnframes() / w.getframerate()
        if MIN_SECONDS <= seconds <= MAX_SECONDS:
            out[clip] = (path, seconds)
    return out


def test_speakers(lines: list[Line]) -> set[str]:
    return game_speech.hold_out(lines, "bass", {UNKNOWN, PLAYER, ROBOT}, TEST_FRACTION)


def plans(lines: list[Line], wavs: dict, held: set[str], copies: int, seed: int,
          shard_size: int) -> dict[str, list[list[dict]]]:
    return game_speech.plans("bass", lines, wavs, held, copies, seed, shard_size)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="data")
    ap.add_argument("--src", default="", help="where the package is (or will be) unpacked, or a "
                    "folder holding sky.dnr, sky.dsk and sky.cpt (default: OUT/bass_src)")
    ap.add_argument("--copies", type=int, default=2, help="copies of each training line")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--shard-size", type=int, default=200)
    ap.add_argument("--list", action="store_true", help="print the speakers and split, write nothing")
    ap.add_argument("--manifest", default="", help="also write the paired lines here as TSV "
                    "(clip, speaker, text number, seconds, wav, transcript, train|test): "
                    "evaluate.py --manifest reads it")
    ap.add_argument("--no-shards", action="store_true", help="cut the clips (and write --manifest) "
                    "only: no make_data shards, so no torch needed")
    args = ap.parse_args(argv)
    data_dir = fetch(args.src or os.path.join(args.out, "bass_src"))
    disk = Disk(os.path.join(data_dir, "sky.dnr"), os.path.join(data_dir, "sky.dsk"))
    with open(os.path.join(data_dir, "sky.cpt"), "rb") as f:
        lines, stats = lines_of(disk, f.read())
    lines = game_speech.keep_words(lines, stats, "bass")
    held = test_speakers(lines)
    print(f"{len(lines)} lines of {stats['text_lines']} text lines; no clip {stats['no_clip']}, "
          f"not speech {stats['not_spoken']}, clips unpaired {stats['unpaired_clips']}, not words "
          f"{stats.get('not_words', '?')}, speak calls {stats['speak_calls']}", flush=True)
    game_speech.print_speakers(lines, held, 16)
    if args.list:
        return 0
    wavs = cut_lines(data_dir, lines, os.path.join(args.out, "bass_lines"), args.workers)
    return game_speech.write_outputs(args, "bass", lines, wavs, held, lambda ln: ln.text_no, LICENCE)


if __name__ == "__main__":
    sys.exit(main())
