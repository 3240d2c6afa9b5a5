// sluice stream FILE --url ws://HOST:PORT/v1/stream: streams one channel of an audio file to a
// sluice server as PCM16 at the file's own rate in 100 ms frames, paced in real time
// (--speed X: X times real time; 0: as fast as possible), and prints partials (stderr) and
// finals (stdout). With --concurrency N it is a load generator: N sessions of the same file,
// started --stagger-ms apart, and a JSON summary of partial/final latency on stdout.
//
// Latency, as the client sees it: a result whose audio ends at end_ms arrives at time t; the
// audio ending there was sent at start + end_ms / speed; the difference is the latency.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>

#include "dsp/audio_file.hpp"
#include "tools/sluice/cli.hpp"

namespace sluice::cli {

namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using json = nlohmann::json;
using clk = std::chrono::steady_clock;

constexpr int frame_ms = 100;

struct stream_args {
  std::string file, host = "127.0.0.1", port = "8080", path = "/v1/stream";
  std::string token;  // API key, sent as Authorization: Bearer (empty: none)
  int concurrency = 1, channel = 0, stagger_ms = 100;
  double speed = 1.0;
};

struct stats {
  std::vector<double> partial_ms, final_ms;
  int finals = 0, errors = 0, sessions_ok = 0;
};

double quantile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

class session : public std::enable_shared_from_this<session> {
 public:
  session(asio::io_context& ioc, const stream_args& a, const std::vector<std::vector<uint8_t>>& frames, int rate,
          stats& s, bool print)
      : ws_(ioc), timer_(ioc), args_(a), frames_(frames), rate_(rate), stats_(s), print_(print) {}

  void start() {
    tcp::resolver r(ws_.get_executor());
    beast::error_code ec;
    auto eps = r.resolve(args_.host, args_.port, ec);
    if (!ec) asio::connect(ws_.next_layer(), eps, ec);
    if (!args_.token.empty())
      ws_.set_option(websocket::stream_base::decorator([t = args_.token](websocket::request_type& req) {
        req.set(beast::http::field::authorization, "Bearer " + t);
      }));
    websocket::response_type res;
    if (!ec) ws_.handshake(res, args_.host + ":" + args_.port, args_.path, ec);
    if (ec) {
      // A refused upgrade (401/403 without a valid --token) says why in its body.
      const std::string why = ec == websocket::error::upgrade_declined
                                  ? std::to_string(res.result_int()) + " " + res.body()
                                  : ec.message();
      std::fprintf(stderr, "sluice stream: cannot connect to %s:%s%s: %s\n", args_.host.c_str(), args_.port.c_str(),
                   args_.path.c_str(), why.c_str());
      ++stats_.errors;
      return;
    }
    out_.push_back(json{{"type", "start"}, {"sample_rate", rate_}, {"encoding", "pcm_s16le"}, {"channels", 1}}.dump());
    text_.push_back(true);
    write_next();
    t0_ = clk::now();
    send_frame();
    read();
  }

 private:
  void queue(std::string s, bool text) {
    out_.push_back(std::move(s));
    text_.push_back(text);
    if (out_.size() == 1) write_next();
  }
  void write_next() {
    ws_.text(text_.front());
    ws_.async_write(asio::buffer(out_.front()), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return;
      self->out_.pop_front();
      self->text_.pop_front();
      if (!self->out_.empty()) self->write_next();
    });
  }
  void send_frame() {
    if (next_ >= frames_.size()) {
      queue(json{{"type", "end"}}.dump(), true);
      return;
    }
    queue(std::string(frames_[next_].begin(), frames_[next_].end()), false);
    ++next_;
    if (args_.speed <= 0) {
      asio::post(ws_.get_executor(), [self = shared_from_this()] { self->send_frame(); });
      return;
    }
    timer_.expires_at(t0_ + std::chrono::microseconds(static_cast<int64_t>(next_ * frame_ms * 1000 / args_.speed)));
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->send_frame();
    });
  }
  void read() {
    ws_.async_read(buf_, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }
  void on_read(beast::error_code ec) {
    if (ec) {
      if (ec == websocket::error::closed && ws_.reason().code == websocket::close_code::normal) ++stats_.sessions_ok;
      else ++stats_.errors;
      timer_.cancel();
      return;
    }
    auto m = json::parse(beast::buffers_to_string(buf_.data()), nullptr, false);
    buf_.consume(buf_.size());
    if (!m.is_discarded()) {
      const std::string type = m.value("type", "");
      const double now_ms = std::chrono::duration<double, std::milli>(clk::now() - t0_).count();
      const double sent_ms = args_.speed > 0 ? m.value("end_ms", 0.0) / args_.speed : 0;
      if (type == "partial") {
        if (args_.speed > 0) stats_.partial_ms.push_back(std::max(0.0, now_ms - sent_ms));
        if (print_) std::fprintf(stderr, "\r\033[K%s", m["text"].get<std::string>().c_str());
      } else if (type == "final") {
        if (args_.speed > 0) stats_.final_ms.push_back(std::max(0.0, now_ms - sent_ms));
        ++stats_.finals;
        if (print_) {
          std::fprintf(stderr, "\r\033[K");
          std::printf("[%7.2f - %7.2f] %s\n", m.value("start_ms", 0) / 1000.0, m.value("end_ms", 0) / 1000.0,
                      m["text"].get<std::string>().c_str());
          std::fflush(stdout);
        }
      } else if (type == "error") {
        std::fprintf(stderr, "sluice stream: server error %s: %s\n", m.value("code", "").c_str(),
                     m.value("reason", "").c_str());
      }
    }
    read();
  }

  websocket::stream<tcp::socket> ws_;
  asio::steady_timer timer_;
  const stream_args& args_;
  const std::vector<std::vector<uint8_t>>& frames_;
  int rate_;
  stats& stats_;
  bool print_;
  beast::flat_buffer buf_;
  std::deque<std::string> out_;
  std::deque<bool> text_;
  std::size_t next_ = 0;
  clk::time_point t0_;
};

bool parse_url(const std::string& url, stream_args& a) {
  const std::string scheme = "ws://";
  if (url.rfind(scheme, 0) != 0) return false;
  const auto rest = url.substr(scheme.size());
  const auto slash = rest.find('/');
  const auto hostport = rest.substr(0, slash);
  a.path = slash == std::string::npos ? "/v1/stream" : rest.substr(slash);
  const auto colon = hostport.rfind(':');
  a.host = hostport.substr(0, colon);
  a.port = colon == std::string::npos ? "80" : hostport.substr(colon + 1);
  return !a.host.empty();
}

}  // namespace

int cmd_stream(invocation& inv) {
  stream_args a;
  for (std::size_t i = 0; i < inv.args.size(); ++i) {
    const auto& s = inv.args[i];
    auto value = [&]() -> std::string { return i + 1 < inv.args.size() ? inv.args[++i] : std::string(); };
    try {
      if (s == "--url") {
        if (!parse_url(value(), a)) {
          std::fprintf(stderr, "sluice stream: --url must look like ws://host:port/v1/stream\n");
          return exit_usage;
        }
      } else if (s == "--concurrency") a.concurrency = std::stoi(value());
      else if (s == "--speed") a.speed = std::stod(value());
      else if (s == "--channel") a.channel = std::stoi(value());
      else if (s == "--stagger-ms") a.stagger_ms = std::stoi(value());
      else if (s == "--token") a.token = value();
      else if (s.rfind("--", 0) == 0) {
        std::fprintf(stderr, "sluice stream: unknown option %s\n", s.c_str());
        return exit_usage;
      } else a.file = s;
    } catch (const std::exception&) {
      std::fprintf(stderr, "sluice stream: %s needs a number\n", s.c_str());
      return exit_usage;
    }
  }
  if (a.file.empty() || a.concurrency < 1) {
    std::fprintf(stderr, "usage: sluice stream FILE [--url ws://host:port/v1/stream] [--concurrency N] [--speed X]\n"
                         "       [--token KEY]\n");
    return exit_usage;
  }
  auto audio = dsp::decode_audio_file(a.file);
  if (!audio) {
    std::fprintf(stderr, "sluice stream: %s: %s\n", a.file.c_str(), audio.error().message.c_str());
    return exit_failure;
  }
  if (a.channel < 0 || a.channel >= static_cast<int>(audio->num_channels())) {
    std::fprintf(stderr, "sluice stream: %s has %zu channel(s)\n", a.file.c_str(), audio->num_channels());
    return exit_usage;
  }
  const auto& x = audio->channels[static_cast<std::size_t>(a.channel)];
  const auto per_frame = static_cast<std::size_t>(audio->sample_rate * frame_ms / 1000);
  std::vector<std::vector<uint8_t>> frames;
  for (std::size_t i = 0; i < x.size(); i += per_frame) {
    std::vector<uint8_t> f;
    for (std::size_t j = i; j < std::min(x.size(), i + per_frame); ++j) {
      const auto v = static_cast<int16_t>(std::lround(std::clamp(x[j], -1.0f, 1.0f) * 32767.0f));
      f.push_back(static_cast<uint8_t>(v & 0xFF));
      f.push_back(static_cast<uint8_t>((v >> 8) & 0xFF));
    }
    frames.push_back(std::move(f));
  }
  asio::io_context ioc;
  stats st;
  std::vector<std::shared_ptr<session>> sessions;
  std::vector<std::unique_ptr<asio::steady_timer>> starts;
  for (int c = 0; c < a.concurrency; ++c) {
    sessions.push_back(std::make_shared<session>(ioc, a, frames, audio->sample_rate, st, a.concurrency == 1));
    starts.push_back(std::make_unique<asio::steady_timer>(ioc, std::chrono::milliseconds(c * a.stagger_ms)));
    starts.back()->async_wait([s = sessions.back()](beast::error_code ec) {
      if (!ec) s->start();
    });
  }
  ioc.run();
  if (a.concurrency > 1 || st.errors > 0) {
    json j{{"sessions", a.concurrency},
           {"sessions_ok", st.sessions_ok},
           {"errors", st.errors},
           {"finals", st.finals},
           {"partial_p50_ms", quantile(st.partial_ms, 0.5)},
           {"partial_p99_ms", quantile(st.partial_ms, 0.99)},
           {"final_p50_ms", quantile(st.final_ms, 0.5)},
           {"final_p99_ms", quantile(st.final_ms, 0.99)}};
    std::printf("%s\n", j.dump().c_str());
  }
  return st.errors == 0 ? exit_ok : exit_failure;
}

}  // namespace sluice::cli
