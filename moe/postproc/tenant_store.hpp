#pragma once
/// Tenants (departments, customers) and their rules: hotwords, lexicon additions, redaction.
///
/// Files: one per tenant in a directory, `<tenant id>.toml` (id: letters, digits, '-', '_', '.'):
///
///     # hotwords: "phrase" or "phrase weight" (weight 0 .. 100, default 3), as in a start message
///     hotwords = ["sluice pro", "acme premium 5"]
///     # extra words for the lexicon decoder (one word each)
///     lexicon = ["acmecorp"]
///     [redaction]            # absent: the engine default (postproc.redact) with every kind on
///     enabled = true
///     cards = true           # also: expiry, cvv, ssn, accounts, emails (all default true)
///     words = ["project falcon"]   # phrases masked wherever said
///
/// reload() rereads files whose modification time or size changed, adds new ones, and drops
/// tenants whose file is gone. A file that fails to parse keeps the tenant's previous version (or
/// no tenant, for a new file) and is reported. set_hotwords() replaces a tenant's hotwords in
/// memory (the HTTP API): it lasts until the tenant's file next changes or the process restarts.
///
/// Every change gives the tenant a new profile with a higher version; readers hold a
/// shared_ptr<const tenant_profile>, so a swap never changes a profile someone is using.
/// Thread-safe: any thread may call any member.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "moe/postproc/redaction.hpp"

namespace sluice::moe::postproc {

struct tenant_profile {
  std::string id;
  std::vector<std::string> hotwords;  ///< "phrase" or "phrase weight"
  std::vector<std::string> lexicon;   ///< extra decoder words
  bool has_redaction = false;         ///< the file has a [redaction] table
  redaction_rules redaction;
  uint64_t version = 0;  ///< increases with every change of this tenant (store-wide counter)
};

/// What one reload did.
struct tenant_reload_report {
  std::vector<std::string> loaded;   ///< new or changed tenants now in use
  std::vector<std::string> removed;  ///< tenants whose file disappeared
  std::vector<error> errors;         ///< files that failed (their tenant kept its old version)
};

/// Parses one tenant file's text; `id` becomes the profile's id.
result<tenant_profile> parse_tenant(std::string_view toml_text, const std::string& id, std::string_view source);

/// Whether `id` is a valid tenant id (letters, digits, '-', '_', '.'; 1 .. 64 characters; not
/// starting with '.').
bool valid_tenant_id(std::string_view id);

class tenant_store {
 public:
  /// `dir` empty: no files (tenants only through set_hotwords).
  explicit tenant_store(std::string dir = {});

  tenant_reload_report reload();
  /// The tenant's current profile, or null when there is no such tenant.
  std::shared_ptr<const tenant_profile> get(const std::string& id) const;
  /// Replaces the tenant's hotwords (creating the tenant when it has no file); returns the new
  /// version. errc::invalid_argument for a bad id.
  result<uint64_t> set_hotwords(const std::string& id, std::vector<std::string> hotwords);
  std::vector<std::string> ids() const;
  const std::string& dir() const { return dir_; }

 private:
  struct file_state {
    std::filesystem::file_time_type mtime{};
    uintmax_t size = 0;
  };
  std::string dir_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const tenant_profile>> profiles_;
  std::map<std::string, file_state> files_;  // by tenant id: what was last read (or failed)
  uint64_t next_version_ = 1;
};

}  // namespace sluice::moe::postproc
