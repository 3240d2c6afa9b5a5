// Tenant files are small and few, so reload() simply stats every file each poll and reparses the
// changed ones under the lock; the lock is never held while a caller uses a profile (profiles are
// immutable and shared).
//
// Operators should replace a file whole (write it aside, then rename it over the old one): a file
// rewritten in place can be read while it is empty or half written, and an empty file is a valid
// tenant with no rules, which would then be kept as the last good version if the finished file
// fails to parse (README: Tenants).

#include "moe/postproc/tenant_store.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include <toml++/toml.h>

namespace sluice::moe::postproc {

namespace {

constexpr std::size_t k_max_id = 64;
constexpr const char* k_suffix = ".toml";

result<std::vector<std::string>> strings(const toml::table& t, const char* key, std::string_view source) {
  std::vector<std::string> out;
  const auto* node = t.get(key);
  if (!node) return out;
  const auto* arr = node->as_array();
  if (!arr) return fail(errc::invalid_config, std::string(source) + ": " + key + " must be an array of strings");
  for (const auto& e : *arr) {
    const auto* s = e.as_string();
    if (!s) return fail(errc::invalid_config, std::string(source) + ": " + key + " must be an array of strings");
    out.push_back(s->get());
  }
  return out;
}

}  // namespace

bool valid_tenant_id(std::string_view id) {
  if (id.empty() || id.size() > k_max_id || id.front() == '.') return false;
  for (const char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

result<tenant_profile> parse_tenant(std::string_view toml_text, const std::string& id, std::string_view source) {
  toml::table t;
  try {
    t = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << source << ":" << e.source().begin.line << ": " << e.description();
    return fail(errc::invalid_config, os.str());
  }
  for (const auto& [k, v] : t) {
    const auto key = std::string(k.str());
    if (key != "hotwords" && key != "lexicon" && key != "redaction")
      return fail(errc::invalid_config, std::string(source) + ": unknown key \"" + key +
                                            "\" (allowed: hotwords, lexicon, [redaction])");
  }
  tenant_profile p;
  p.id = id;
  auto hw = strings(t, "hotwords", source);
  if (!hw) return tl::unexpected(hw.error());
  p.hotwords = std::move(*hw);
  auto lex = strings(t, "lexicon", source);
  if (!lex) return tl::unexpected(lex.error());
  p.lexicon = std::move(*lex);
  if (const auto* r = t.get("redaction")) {
    const auto* rt = r->as_table();
    if (!rt) return fail(errc::invalid_config, std::string(source) + ": redaction must be a table");
    p.has_redaction = true;
    struct flag {
      const char* key;
      bool* field;
    };
    const flag flags[] = {{"enabled", &p.redaction.enabled}, {"cards", &p.redaction.cards},
                          {"expiry", &p.redaction.expiry},   {"cvv", &p.redaction.cvv},
                          {"ssn", &p.redaction.ssn},         {"accounts", &p.redaction.accounts},
                          {"emails", &p.redaction.emails}};
    for (const auto& [k, v] : *rt) {
      const auto key = std::string(k.str());
      if (key == "words") continue;
      bool known = false;
      for (const auto& f : flags) {
        if (key != f.key) continue;
        known = true;
        const auto* b = v.as_boolean();
        if (!b) return fail(errc::invalid_config, std::string(source) + ": redaction." + key + " must be true or false");
        *f.field = b->get();
      }
      if (!known)
        return fail(errc::invalid_config, std::string(source) + ": unknown key redaction." + key +
                                              " (allowed: enabled, cards, expiry, cvv, ssn, accounts, emails, words)");
    }
    auto words = strings(*rt, "words", source);
    if (!words) return tl::unexpected(words.error());
    p.redaction.words = std::move(*words);
  }
  return p;
}

tenant_store::tenant_store(std::string dir) : dir_(std::move(dir)) {}

tenant_reload_report tenant_store::reload() {
  tenant_reload_report rep;
  if (dir_.empty()) return rep;
  namespace fs = std::filesystem;
  std::error_code ec;
  std::map<std::string, std::pair<fs::path, file_state>> seen;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& path = it->path();
    if (path.extension() != k_suffix || !it->is_regular_file(ec)) continue;
    const auto id = path.stem().string();
    if (!valid_tenant_id(id)) {
      rep.errors.push_back({errc::invalid_config, path.string() + ": not a valid tenant id (letters, digits, - _ .)"});
      continue;
    }
    file_state st{fs::last_write_time(path, ec), fs::file_size(path, ec)};
    if (!ec) seen[id] = {path, st};
  }
  if (ec) rep.errors.push_back({errc::io, "tenants: cannot read directory " + dir_ + ": " + ec.message()});
  std::lock_guard lock(mu_);
  for (const auto& [id, entry] : seen) {
    const auto& [path, st] = entry;
    const auto old = files_.find(id);
    if (old != files_.end() && old->second.mtime == st.mtime && old->second.size == st.size) continue;
    files_[id] = st;  // a failed file is not retried until it changes again
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
      rep.errors.push_back({errc::io, "tenants: cannot read " + path.string()});
      continue;
    }
    auto p = parse_tenant(text.str(), id, path.string());
    if (!p) {
      rep.errors.push_back(p.error());
      continue;
    }
    p->version = next_version_++;
    profiles_[id] = std::make_shared<const tenant_profile>(std::move(*p));
    rep.loaded.push_back(id);
  }
  // Files that disappeared: their tenants go (a tenant made only through the API never had one).
  if (!ec) {
    for (auto it = files_.begin(); it != files_.end();) {
      if (seen.count(it->first)) {
        ++it;
        continue;
      }
      profiles_.erase(it->first);
      rep.removed.push_back(it->first);
      it = files_.erase(it);
    }
  }
  return rep;
}

std::shared_ptr<const tenant_profile> tenant_store::get(const std::string& id) const {
  std::lock_guard lock(mu_);
  const auto it = profiles_.find(id);
  return it == profiles_.end() ? nullptr : it->second;
}

result<uint64_t> tenant_store::set_hotwords(const std::string& id, std::vector<std::string> hotwords) {
  if (!valid_tenant_id(id)) return fail(errc::invalid_argument, "tenant id \"" + id + "\" is not valid");
  std::lock_guard lock(mu_);
  tenant_profile p;
  if (const auto it = profiles_.find(id); it != profiles_.end()) p = *it->second;
  p.id = id;
  p.hotwords = std::move(hotwords);
  p.version = next_version_++;
  const auto v = p.version;
  profiles_[id] = std::make_shared<const tenant_profile>(std::move(p));
  return v;
}

std::vector<std::string> tenant_store::ids() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [id, p] : profiles_) out.push_back(id);
  return out;
}

}  // namespace sluice::moe::postproc
