#pragma once
/// The WebSocket transport: one upgraded connection driven for one protocol adapter
/// (net/ws_protocol.hpp), which says what its messages mean. The adapters: sluice /v1/stream
/// (net/protocols/sluice_protocol.hpp), FunASR (funasr_protocol.hpp), sherpa-onnx, Vosk, ...
///
/// Close codes: 1000 done, 1001 idle (nothing received for server.idle_timeout_s; an error
/// message with code "idle" comes first), 1003 bad start message or unsupported audio, 1008
/// protocol violation (binary before start, malformed JSON, unknown message), 1009 message too
/// big, 1011 internal error, 1013 engine full (try again).
///
/// Ending a stream (RFC 6455 section 5.5.1 and 7): the client sends its end (its protocol's
/// end-of-input message: the adapter then calls input_done()) and reads until the server's last
/// reply and close frame; every final for the audio it sent comes before them. After its end the client may shut down its sending half
/// of the TCP connection (a half-close): finals still come. A close frame from the client is
/// its last word: the server answers it at once, and nothing can follow that answer, so the
/// stream's channels are aborted (no compute is spent on results nobody can receive). The same
/// holds when the connection is reset or a write fails: a departed client's audio is not
/// transcribed further. Limitation: over plain ws, a close frame (or a ping) that arrives in
/// the same read as the end message is only seen when the server closes (after the finals);
/// over TLS only when it is in the same TLS record as the end (what follows in later records
/// is read at once, however it arrived).
///
/// Over TLS (wss) the same code runs: after the client's end the session watches the TCP
/// socket under the TLS layer. A TCP half-close (FIN without a TLS close_notify) is taken as a
/// half-close and the finals still go out; a TLS close_notify is bytes on the socket, so it goes
/// to the WebSocket reader. Over TLS 1.3 a close_notify after the end is a half-close too (RFC
/// 8446 6.1): the WebSocket stream cannot write after the read that met it, so the session
/// frames the rest (finals, end, close frame) itself onto the TLS stream, then sends its own
/// close_notify. TLS 1.2 forbids writing after the peer's close_notify (RFC 5246 7.2.1): there
/// it ends the stream (the client counts as gone). Both half-closes are tested (tests/net/tls_test.cpp). An
/// earlier version of that test saw a corrupted heap at teardown about one run in five; it did
/// not recur on the current code (30 half-closing wss clients under ASan, 54 in a release build),
/// and the one defect found on that path is fixed below (sessions held off their strand).
///
/// Flow control (issue 9): a client may send audio faster than real time (FunASR's and
/// sherpa-onnx's file clients push a whole file at network speed). The session counts, per
/// channel, the audio in its hands: messages sent to the channel that it has not taken yet
/// (their duration told from their size, actors/channel_progress.hpp) plus what the channel
/// reports the recognizer has not finished with. When that reaches
/// server.ws_max_buffered_audio_ms after a message, no next read is issued: the socket's
/// buffers fill, TCP closes its window and the client's writes wait. Reads resume when every
/// channel is down to half the mark. So a stream's memory in the server stays bounded (the mark,
/// one message, and what the kernel's socket buffers hold) whatever the client's speed, and its
/// transcript is the same as at any pace. While paused:
///   - a ping or a close frame waits behind the audio before it: it is answered once that audio
///     is read (the engine keeps consuming, so within ws_max_pause_s);
///   - a reset connection (RST) is seen at once (the socket is polled every 100 ms) and ends the
///     session as a departure: channels aborted;
///   - a FIN (the client shut down its sending half) ends the pausing: nothing more can come, so
///     the rest is read at once (bounded by the kernel buffers): an end message before it gets
///     every final (a half-close), a FIN without one is a departure;
///   - a pause longer than server.ws_max_pause_s (an engine that consumes nothing) closes the
///     stream with an "overloaded" error and 1013.
/// Figures: server::ws_flow_control() (pauses, streams paused now, peak audio held per stream).
///
/// Threads: everything done to a session runs on its strand. The bridge actors (engine threads)
/// never hold a session: they post to its strand, where it is looked up, behind the server's
/// I/O gate (so nothing is posted to an I/O context that server::stop has ended), and a session
/// is therefore always destroyed on its strand or with the I/O context, never on an engine thread.

#include <cstdint>
#include <memory>

#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "net/auth/principal.hpp"
#include "net/server.hpp"
#include "net/ws_protocol.hpp"

namespace sluice::net {

/// Takes over an upgraded connection and speaks `proto` on it; `slot` keeps the connection
/// counted until it closes; `id` names it in the logs; `who` was admitted by the gate, its
/// tenant goes with the stream's channels and its call.
void run_ws_session(boost::beast::tcp_stream stream, boost::beast::http::request<boost::beast::http::string_body> req,
                    std::shared_ptr<server_state> st, std::unique_ptr<ws_protocol> proto, std::shared_ptr<void> slot,
                    uint64_t id, auth::principal who);
/// The same over TLS (wss).
void run_ws_session(boost::beast::ssl_stream<boost::beast::tcp_stream> stream,
                    boost::beast::http::request<boost::beast::http::string_body> req, std::shared_ptr<server_state> st,
                    std::unique_ptr<ws_protocol> proto, std::shared_ptr<void> slot, uint64_t id, auth::principal who);

}  // namespace sluice::net
