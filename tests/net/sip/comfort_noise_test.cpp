// Comfort noise (RFC 3389) from a caller using silence suppression: SIPp offers CN/8000, checks
// that the answer takes it, and plays the recording with each pause sent as one CN packet and
// then nothing until speech resumes (make_rtp_pcap.py --cn). The pauses are filled as low-level
// noise, which the recogniser must not take for speech: the text stays within the phone WER
// target of the other SIP tests, and every CN packet the pcap holds (counted here, from the file)
// was taken as comfort noise.
#include <fstream>

#include "tests/common/phone_recording.hpp"
#include "tests/net/sip/sip_test_util.hpp"

using namespace sluice;
using namespace sluice::test;

namespace {
constexpr int whole_call_ms = 7800;
// Frames more than 40 dB below full scale are pauses.
constexpr const char* pause_below_dbov = "-40";
constexpr uint8_t pt_cn = 13;

// RTP packets of payload type `pt` in a pcap of Ethernet/IPv4/UDP/RTP frames (as
// make_rtp_pcap.py writes them).
int packets_of_type(const std::string& pcap, uint8_t pt) {
  const auto bytes = read_bytes(pcap);
  constexpr std::size_t file_header = 24, record_header = 16, rtp_offset = 14 + 20 + 8;
  int n = 0;
  for (std::size_t off = file_header; off + record_header <= bytes.size();) {
    const std::size_t len = bytes[off + 8] | bytes[off + 9] << 8 | bytes[off + 10] << 16 |
                            static_cast<std::size_t>(bytes[off + 11]) << 24;
    const std::size_t frame = off + record_header;
    if (frame + len > bytes.size()) break;
    if (len > rtp_offset + 12 && (bytes[frame + rtp_offset + 1] & 0x7f) == pt) ++n;
    off = frame + len;
  }
  return n;
}
}  // namespace

TEST_SUITE("sip comfort noise") {
  TEST_CASE("pauses sent as CN packets are filled as noise, not speech: the text stays within the phone WER target") {
    temp_dir tmp;
    sip_served s;
    const auto pcap = tmp.file("cn.pcap");
    REQUIRE(run("/usr/bin/python3 " SLUICE_SOURCE_DIR "/tests/net/sip/make_rtp_pcap.py " + phone_recording + " " + pcap +
                " --cn " + pause_below_dbov) == 0);
    const int cn_sent = packets_of_type(pcap, pt_cn);
    REQUIRE(cn_sent > 0);  // the recording has pauses
    auto r = run_sipp(s, tmp, "uac_pcap_cn.xml", {{"@PCAP@", pcap}, {"@PAUSE_MS@", std::to_string(whole_call_ms)}},
                      "-m 1");
    INFO(r.output);
    REQUIRE(r.status == 0);  // the answer took CN/8000
    const auto c = s.ended_call();
    CHECK(c.start.metadata["streams"][0]["comfort_noise"] == true);
    const auto& rtp = c.start.metadata["rtp"][0];
    MESSAGE("rtp: " << rtp.dump() << ", CN packets in the pcap: " << cn_sent);
    CHECK(rtp["comfort_noise"].get<int>() == cn_sent);
    CHECK(rtp["comfort_noise_ms"].get<int>() > 0);
    CHECK(rtp["not_rtp"].get<int>() == 0);
    const auto text = finals_text(c);
    const double wer = word_error_rate(phone_recording_text(), text);
    MESSAGE("with comfort noise in the pauses: \"" << text << "\", word error rate " << wer);
    CHECK(wer <= phone_wer_target);
  }
}
