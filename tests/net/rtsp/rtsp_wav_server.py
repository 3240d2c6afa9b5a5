#!/usr/bin/python3
"""Test fixture (a peer, not sluice code): GStreamer's gst-rtsp-server serving one WAV file as
PCMU at rtsp://127.0.0.1:PORT/call, for the RTSP pull tests.

    rtsp_wav_server.py PORT WAV [--udp-only] [--quit-after-play] [--digest USER:PASSWORD] [--print-rr]

--udp-only refuses RTP over TCP (the client must fall back to UDP); --quit-after-play exits once
the first client has played the whole file (plus a second), so the client sees the server go
away; --digest lets only USER with PASSWORD in, by Digest authentication (gst-rtsp-server's
RTSPAuth, as IP cameras do); --print-rr prints, before quitting, what the server's own RTP
session (GStreamer's rtpsession) learned from the client's RTCP receiver reports, one line
"rr {json}" per stream: have-rb, rb-fractionlost, rb-packetslost, rb-exthighestseq, rb-jitter,
rb-lsr, rb-dlsr, rb-round-trip (1/65536 s), and the payloader's sequence number at the end (seq-at-end). Prints "ready" once listening."""
import json
import subprocess
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtsp, GstRtspServer  # noqa: E402

# After the file has played, the fixture lingers this long before quitting (ms).
LINGER_MS = 1000


def receiver_reports(stream):
    """What the stream's RTP session learned from the client's receiver reports: GStreamer keeps
    the last report block of each remote source (the client) on that source, with the round
    trip it computed from the block's LSR/DLSR; and the payloader's sequence number at the end (its last packet's or the next one's)."""
    out = {"have-rb": False}
    ok, _rtptime, seq, _rate, _running = stream.get_rtpinfo()
    if ok:
        out["seq-at-end"] = seq
    stats = stream.get_rtpsession().get_property("stats")
    for src in stats.get_value("source-stats"):
        if src.get_value("internal") or not src.get_value("have-rb"):
            continue
        out["have-rb"] = True
        for key in ("rb-ssrc", "rb-fractionlost", "rb-packetslost", "rb-exthighestseq", "rb-jitter", "rb-lsr",
                    "rb-dlsr", "rb-round-trip", "rtcp-from"):
            out[key] = src.get_value(key)
    return out


def main():
    port, path = sys.argv[1], sys.argv[2]
    udp_only = "--udp-only" in sys.argv
    quit_after = "--quit-after-play" in sys.argv
    digest = sys.argv[sys.argv.index("--digest") + 1] if "--digest" in sys.argv else None
    print_rr = "--print-rr" in sys.argv
    Gst.init(None)
    # sox gives the length (the wave module reads no mu-law).
    seconds = float(subprocess.check_output(["soxi", "-D", path]).decode().strip())
    loop = GLib.MainLoop()
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(
        "( filesrc location=%s ! wavparse ! audioconvert ! audioresample ! audio/x-raw,rate=8000,channels=1 "
        "! mulawenc ! rtppcmupay name=pay0 )" % path)
    if udp_only:
        factory.set_protocols(GstRtsp.RTSPLowerTrans.UDP)
    started = []

    def report_and_quit(media):
        if print_rr:
            for i in range(media.n_streams()):
                print("rr " + json.dumps(receiver_reports(media.get_stream(i))), flush=True)
        loop.quit()
        return False

    def on_configure(_factory, media):
        def on_prepared(_media):
            if quit_after and not started:
                started.append(True)
                GLib.timeout_add(int(seconds * 1000) + LINGER_MS, report_and_quit, media)
        media.connect("prepared", on_prepared)

    factory.connect("media-configure", on_configure)
    if digest:
        user, password = digest.split(":", 1)
        auth = GstRtspServer.RTSPAuth()
        token = GstRtspServer.RTSPToken()
        token.set_string("media.factory.role", "viewer")
        auth.add_digest(user, password, token)
        auth.set_supported_methods(GstRtsp.RTSPAuthMethod.DIGEST)
        server.set_auth(auth)
        permissions = GstRtspServer.RTSPPermissions()
        permissions.add_permission_for_role("viewer", "media.factory.access", True)
        permissions.add_permission_for_role("viewer", "media.factory.construct", True)
        factory.set_permissions(permissions)
    server.get_mount_points().add_factory("/call", factory)
    if server.attach(None) == 0:
        print("cannot listen", flush=True)
        sys.exit(1)
    print("ready", flush=True)
    loop.run()


if __name__ == "__main__":
    main()
