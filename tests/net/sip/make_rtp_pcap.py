#!/usr/bin/env python3
"""Writes the RTP stream of a G.711 recording as a pcap that SIPp plays into a call
(play_pcap_audio): Ethernet/IPv4/UDP/RTP, one packet per 20 ms, pcap times spaced 20 ms.

    make_rtp_pcap.py IN.wav OUT.pcap [--loss P] [--reorder P] [--seed N] [--dtmf DIGITS] [--cn DBOV]

IN.wav: a mono 8 kHz mu-law (format 7) or A-law (format 6) WAV, sent as PCMU (PT 0) or PCMA
(PT 8) unchanged. --loss drops that share of packets (0-1) and --reorder swaps that share with
their successor, both from a seeded random generator, to test the receiver's jitter buffer.
--dtmf appends RFC 4733 events (PT 101) for the digits after the audio. --cn sends the pauses
as a discontinuous transmission does (RFC 3389): each run of 20 ms frames whose level is below
DBOV (dB below a full-scale sine... here: below full-scale RMS, e.g. -45) becomes one comfort
noise packet (PT 13, its level byte the run's first frame level) and then nothing until speech
resumes, with the marker bit on the first speech packet. Standard library only.
"""
import argparse
import math
import random
import struct
import sys

FRAME = 160  # samples (and bytes) per 20 ms packet at 8 kHz
PT_EVENT = 101
PT_CN = 13
MAX_CN_LEVEL = 127  # RFC 3389 3.1: the level byte is -dBov, 0-127
DTMF_CODES = {c: i for i, c in enumerate("0123456789*#ABCD")}


def read_g711(path):
    data = open(path, "rb").read()
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        sys.exit(f"{path}: not a RIFF/WAVE file")
    pos, fmt, payload = 12, None, None
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], struct.unpack("<I", data[pos + 4:pos + 8])[0]
        body = data[pos + 8:pos + 8 + size]
        if cid == b"fmt ":
            fmt = struct.unpack("<HHIIHH", body[:16])
        elif cid == b"data":
            payload = body
        pos += 8 + size + (size & 1)
    if not fmt or payload is None:
        sys.exit(f"{path}: no fmt or data chunk")
    tag, channels, rate = fmt[0], fmt[1], fmt[2]
    if tag not in (6, 7) or channels != 1 or rate != 8000:
        sys.exit(f"{path}: need mono 8 kHz mu-law or A-law (format {tag}, {channels} ch, {rate} Hz)")
    return (0 if tag == 7 else 8), payload


def mulaw_to_linear(b):
    # ITU-T G.711 mu-law expansion.
    b = ~b & 0xFF
    t = ((b & 0x0F) << 3) + 0x84
    t <<= (b & 0x70) >> 4
    return (0x84 - t) if (b & 0x80) else (t - 0x84)


def level_dbov(frame, pt):
    if pt != 0:
        sys.exit("--cn needs a mu-law recording")
    samples = [mulaw_to_linear(b) for b in frame]
    rms = math.sqrt(sum(x * x for x in samples) / len(samples))
    return -MAX_CN_LEVEL if rms <= 0 else 20 * math.log10(rms / 32768)


def rtp(pt, seq, ts, ssrc, payload, marker=False):
    return struct.pack("!BBHII", 0x80, (0x80 if marker else 0) | pt, seq & 0xFFFF, ts & 0xFFFFFFFF, ssrc) + payload


def frame_ip_udp(payload, sport=6000, dport=6000):
    udp_len = 8 + len(payload)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0, 0, 64, 17, 0,
                     bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1]))
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0)
    eth = b"\x00" * 12 + b"\x08\x00"
    return eth + ip + udp + payload


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wav")
    ap.add_argument("pcap")
    ap.add_argument("--loss", type=float, default=0.0)
    ap.add_argument("--reorder", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dtmf", default="")
    ap.add_argument("--cn", type=float, default=None)
    a = ap.parse_args()
    pt, audio = read_g711(a.wav)
    rng = random.Random(a.seed)
    ssrc = 0x5A1CE001
    packets = []  # (send time in 20 ms slots, rtp bytes)
    seq, ts = 1000, 0
    in_pause, slot, cn_packets = False, 0, 0
    for i in range(0, len(audio) - FRAME + 1, FRAME):
        frame = audio[i:i + FRAME]
        if a.cn is not None and (level := level_dbov(frame, pt)) < a.cn:
            if not in_pause:
                packets.append((slot, rtp(PT_CN, seq, ts, ssrc, bytes([min(MAX_CN_LEVEL, round(-level))]))))
                seq += 1
                cn_packets += 1
            in_pause = True
        else:
            packets.append((slot, rtp(pt, seq, ts, ssrc, frame, marker=(i == 0 or in_pause))))
            seq += 1
            in_pause = False
        slot += 1
        ts += FRAME
    # RFC 4733: per digit, 5 packets of a growing duration with one timestamp, the last three
    # with the end bit, then 100 ms of nothing before the next digit.
    for d in a.dtmf:
        code = DTMF_CODES[d]
        for k in range(1, 6):
            end = k >= 3
            duration = min(k, 3) * FRAME
            packets.append((slot, rtp(PT_EVENT, seq, ts, ssrc, struct.pack("!BBH", code, (0x80 if end else 0) | 10, duration),
                                      marker=(k == 1))))
            seq += 1
            slot += 1
        ts += 3 * FRAME + 5 * FRAME
        slot += 5
    kept = [p for p in packets if rng.random() >= a.loss]
    i = 0
    while i + 1 < len(kept):
        if rng.random() < a.reorder:
            # Swap the payloads' send order, keeping the send times: packet i+1 goes first.
            (t0, p0), (t1, p1) = kept[i], kept[i + 1]
            kept[i], kept[i + 1] = (t0, p1), (t1, p0)
            i += 2
        else:
            i += 1
    with open(a.pcap, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))  # Ethernet link type
        for slot_no, p in kept:
            usec = slot_no * 20000
            fr = frame_ip_udp(p)
            f.write(struct.pack("<IIII", usec // 1000000, usec % 1000000, len(fr), len(fr)))
            f.write(fr)
    print(f"{len(kept)} of {len(packets)} packets written, {cn_packets} comfort noise", file=sys.stderr)


if __name__ == "__main__":
    main()
