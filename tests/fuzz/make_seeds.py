#!/usr/bin/python3
"""Writes the committed seed corpora of tests/fuzz/corpus/ (run once; the files are committed).

Real files come from sox and opusenc, tiny (10 to 60 ms); edge cases are built byte by byte here
(RF64, streaming-size WAV, pad bytes, foreign magics, ...). Opus packets are cut out of opusenc's
pages. Usage: tests/fuzz/make_seeds.py   (from the repository root; needs sox and opus-tools)
"""
import os
import struct
import subprocess
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data)


def sox(tmp, name, args):
    path = os.path.join(tmp, name)
    fmt, effect = args.split(" synth ")
    subprocess.run(["sox", "-D", "-n"] + fmt.split() + [path, "synth"] + effect.split(), check=True)
    return open(path, "rb").read()


def opusenc(tmp, wav_name, out_name, extra=()):
    src, dst = os.path.join(tmp, wav_name), os.path.join(tmp, out_name)
    subprocess.run(["opusenc", "--quiet", "--discard-comments", *extra, src, dst], check=True)
    return open(dst, "rb").read()


def chunk(tag, body):
    pad = b"\0" if len(body) % 2 else b""
    return tag + struct.pack("<I", len(body)) + body + pad


def fmt_chunk(tag, channels, rate, bits, extensible_sub=None):
    align = channels * bits // 8
    body = struct.pack("<HHIIHH", tag, channels, rate, rate * align, align, bits)
    if extensible_sub is not None:
        guid_tail = b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"
        body += struct.pack("<HHI", 22, bits, 0) + struct.pack("<H", extensible_sub) + guid_tail
    return chunk(b"fmt ", body)


def riff(*chunks, magic=b"RIFF", size=None):
    body = b"WAVE" + b"".join(chunks)
    return magic + struct.pack("<I", len(body) if size is None else size) + body


def ogg_packets(data):
    """The packets of the first logical stream of an Ogg file, headers skipped."""
    packets, cur, at = [], b"", 0
    while at + 27 <= len(data) and data[at:at + 4] == b"OggS":
        nseg = data[at + 26]
        lacing = data[at + 27:at + 27 + nseg]
        at += 27 + nseg
        for lace in lacing:
            cur += data[at:at + lace]
            at += lace
            if lace < 255:
                packets.append(cur)
                cur = b""
    return packets[2:]  # OpusHead, OpusTags


def wav_seeds(tmp):
    put("wav", "s16_mono_8k.wav", sox(tmp, "a.wav", "-r 8000 -c 1 -b 16 synth 0.01 sine 440"))
    put("wav", "u8_stereo.wav", sox(tmp, "b.wav", "-r 8000 -c 2 -b 8 -e unsigned synth 0.01 sine 440"))
    put("wav", "s24_3ch_ext.wav", sox(tmp, "c.wav", "-r 8000 -c 3 -b 24 synth 0.005 sine 440"))
    put("wav", "s32.wav", sox(tmp, "d.wav", "-r 8000 -c 1 -b 32 synth 0.01 sine 440"))
    put("wav", "f32.wav", sox(tmp, "e.wav", "-r 8000 -c 1 -e float -b 32 synth 0.01 sine 440"))
    put("wav", "f64.wav", sox(tmp, "f.wav", "-r 8000 -c 1 -e float -b 64 synth 0.01 sine 440"))
    put("wav", "mulaw.wav", sox(tmp, "g.wav", "-r 8000 -c 2 -e mu-law synth 0.01 sine 440"))
    put("wav", "alaw.wav", sox(tmp, "h.wav", "-r 8000 -c 1 -e a-law synth 0.01 sine 440"))
    pcm = bytes(range(0, 64))
    fmt16 = fmt_chunk(1, 1, 16000, 16)
    put("wav", "list_odd_pad.wav", riff(fmt16, chunk(b"LIST", b"INFOabc"), chunk(b"data", pcm)))
    put("wav", "streaming_size.wav",
        riff(fmt16, b"data" + struct.pack("<I", 0xFFFFFFFF) + pcm + b"\x01", size=0xFFFFFFFF))
    ds64 = chunk(b"ds64", struct.pack("<QQQI", 0, len(pcm), len(pcm) // 2, 0))
    put("wav", "rf64.wav",
        riff(ds64, fmt16, b"data" + struct.pack("<I", 0xFFFFFFFF) + pcm, magic=b"RF64", size=0xFFFFFFFF))
    put("wav", "ext_float.wav", riff(fmt_chunk(0xFFFE, 2, 8000, 32, extensible_sub=3), chunk(b"data", pcm)))
    put("wav", "data_past_end.wav", riff(fmt16, b"data" + struct.pack("<I", 4096) + pcm))
    put("wav", "no_fmt.wav", riff(chunk(b"data", pcm)))
    put("wav", "chunk_header_cut.wav", riff(fmt16)[:-3] + b"dat")


def ogg_seeds(tmp):
    sox(tmp, "m16.wav", "-r 16000 -c 1 -b 16 synth 0.06 sine 440")
    sox(tmp, "s48.wav", "-r 48000 -c 2 -b 16 synth 0.04 sine 440 sine 880")
    mono = opusenc(tmp, "m16.wav", "m.opus", ["--bitrate", "6"])
    stereo = opusenc(tmp, "s48.wav", "s.opus", ["--bitrate", "12"])
    put("ogg_opus", "mono_16k.opus", mono)
    put("ogg_opus", "stereo_48k.opus", stereo)
    put("ogg_opus", "chained.opus", mono + mono)
    put("ogg_opus", "cut_mid_page.opus", mono[: len(mono) - 7])
    return mono, stereo


def audio_file_seeds(mono_opus):
    wav = open(os.path.join(ROOT, "wav", "s16_mono_8k.wav"), "rb").read()
    put("audio_file", "s16.wav", wav)
    put("audio_file", "mono.opus", mono_opus)
    put("audio_file", "rf64.wav", open(os.path.join(ROOT, "wav", "rf64.wav"), "rb").read())
    for name, data in [("id3.mp3", b"ID3\x04\0\0\0\0\0\0"), ("flac.flac", b"fLaC\0\0\0\x22"),
                       ("webm.webm", b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81"),
                       ("mp4.m4a", b"\0\0\0\x20ftypM4A "), ("amr.amr", b"#!AMR\n"),
                       ("au.au", b".snd\0\0\0\x18"), ("aiff.aiff", b"FORM\0\0\0\x04AIFF"),
                       ("mpeg_sync.mp3", b"\xff\xfb\x90\x00"), ("short.bin", b"RI"),
                       ("text.txt", b"hello, this is not audio\n")]:
        put("audio_file", name, data)


def opus_packet_seeds(mono, stereo):
    def stream(head, packets):
        out = bytes([head])
        for p in packets:
            assert len(p) < 255, len(p)
            out += bytes([len(p)]) + p
        return out
    rate48, mono_flag, stereo_flag = 4, 1 << 3, 2 << 3
    mp, sp = ogg_packets(mono), ogg_packets(stereo)
    put("opus_packet", "mono_48k.bin", stream(rate48 | mono_flag, mp))
    put("opus_packet", "mono_to_8k.bin", stream(0 | mono_flag, mp))
    put("opus_packet", "stereo_48k.bin", stream(rate48 | stereo_flag, sp))
    put("opus_packet", "stereo_to_mono_16k.bin", stream(2 | mono_flag, sp))
    put("opus_packet", "loss_and_reset.bin",
        stream(rate48 | mono_flag, mp[:1]) + b"\x00" + b"\xff" + bytes([len(mp[1])]) + mp[1])
    put("opus_packet", "conceal_first.bin", bytes([3 | stereo_flag, 0, 0]))


def raw_pcm_seeds():
    def raw(enc, ch, rate, data):
        return bytes([enc, ch]) + struct.pack("<I", rate)[:3] + data
    ramp = bytes(range(256))
    names = ["u8", "s16le", "s24le", "s32le", "f32le", "f64le", "mulaw", "alaw"]
    for enc, name in enumerate(names):
        put("raw_pcm", f"{name}_8k_mono.bin", raw(enc, 1, 8000, ramp[:48]))
    put("raw_pcm", "f32_nan_inf.bin", raw(4, 2, 16000, struct.pack("<4f", float("nan"), float("inf"),
                                                                     -float("inf"), 2.5)))
    put("raw_pcm", "partial_frame.bin", raw(1, 2, 8000, ramp[:7]))
    put("raw_pcm", "rate_too_high.bin", raw(1, 1, 1_000_000, ramp[:4]))
    put("raw_pcm", "zero_channels.bin", raw(1, 0, 8000, ramp[:4]))


def config_seeds():
    here = os.path.dirname(os.path.abspath(__file__))
    put("config_toml", "sluice.toml", open(os.path.join(here, "..", "..", "config", "sluice.toml"), "rb").read())
    for name, text in [
        ("small.toml", '[log]\nlevel = "debug"\n[vad]\nthreshold_db = 6.5\n'),
        ("escapes.toml", '[model]\ndir = "a\\"b\\\\c\\n\\u00e9"\n'),
        ("literal.toml", "[model]\ndir = 'C:\\\\models'\n"),
        ("wrong_type.toml", '[vad]\nthreshold_db = "loud"\n'),
        ("unknown.toml", "[nope]\nx = 1\n[log]\nfoo = 2\n"),
        ("int_range.toml", "[audio]\ndenoise_suppress_db = 99999999999999999999\n"),
        ("inline_table.toml", "log = { level = 'warn' }\n"),
        ("overrides.txt", "vad.threshold_db=6\nlog.level=debug\nmodel.dir=x=y\nnodot=1\naudio.denoise=maybe\n"),
    ]:
        put("config_toml", name, text.encode())


def main():
    # Overwrites the seeds it makes; inputs fuzzing found (crash_*) are kept.
    with tempfile.TemporaryDirectory() as tmp:
        wav_seeds(tmp)
        mono, stereo = ogg_seeds(tmp)
    audio_file_seeds(mono)
    opus_packet_seeds(mono, stereo)
    raw_pcm_seeds()
    config_seeds()


if __name__ == "__main__":
    main()
