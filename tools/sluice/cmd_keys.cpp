// sluice keys: API keys for `sluice serve` ([auth] keys_file, net/auth/key_store.hpp).
//   keys add --tenant T --scopes stream,read [--file F]   make a key: printed once, its hash stored
//   keys list [--file F]                                 ids, tenants and scopes (no secrets exist)
//   keys revoke ID [--file F]                            drop a key; a running server refuses it
//                                                        once it reloads the file (new requests)
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/stat.h>

#include "net/auth/key_store.hpp"
#include "tools/sluice/cli.hpp"

namespace sluice::cli {

namespace {

constexpr const char* keys_usage =
    "usage: sluice keys add --tenant NAME --scopes stream,read,metrics,admin [--file KEYS_FILE]\n"
    "       sluice keys list [--file KEYS_FILE]\n"
    "       sluice keys revoke ID [--file KEYS_FILE]\n"
    "KEYS_FILE defaults to auth.keys_file (--auth.keys_file=PATH or [auth] in --config).\n";

// "--name VALUE" taken out of args; empty when absent, nullopt when the value is missing.
std::optional<std::string> take_option(std::vector<std::string>& args, const std::string& name) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] != name) continue;
    if (i + 1 >= args.size()) return std::nullopt;
    std::string v = args[i + 1];
    args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
    return v;
  }
  return std::string();
}

int keys_add(std::vector<std::string>& args, const std::string& file) {
  const auto tenant = take_option(args, "--tenant");
  const auto scopes_text = take_option(args, "--scopes");
  if (!tenant || !scopes_text || tenant->empty() || scopes_text->empty() || !args.empty()) {
    std::fputs(keys_usage, stderr);
    return exit_usage;
  }
  auto scopes = net::auth::scope_set::parse(*scopes_text);
  if (!scopes) {
    std::fprintf(stderr, "sluice keys add: %s\n", scopes.error().message.c_str());
    return exit_usage;
  }
  // A malformed file would make the server refuse to start: check it before adding to it.
  if (struct stat sb{}; ::stat(file.c_str(), &sb) == 0) {
    if (auto existing = net::auth::key_store::load(file); !existing) {
      std::fprintf(stderr, "sluice keys add: %s\n", existing.error().message.c_str());
      return exit_failure;
    }
  }
  auto k = net::auth::make_key(*tenant, *scopes);
  if (!k) {
    std::fprintf(stderr, "sluice keys add: %s\n", k.error().message.c_str());
    return k.error().code == errc::invalid_argument ? exit_usage : exit_failure;
  }
  if (auto r = net::auth::append_record(file, k->record); !r) {
    std::fprintf(stderr, "sluice keys add: %s\n", r.error().message.c_str());
    return exit_failure;
  }
  std::fprintf(stderr, "key %s for tenant %s (scopes %s) stored in %s as a salted SHA-256 hash.\n"
                       "The key is shown once, below; a running sluice serve takes it at its next keys check\n"
                       "(auth.keys_reload_check_s) or on SIGHUP.\n",
               k->record.id.c_str(), k->record.tenant.c_str(), k->record.scopes.to_string().c_str(), file.c_str());
  std::printf("%s\n", k->key.c_str());
  return exit_ok;
}

int keys_list(std::vector<std::string>& args, const std::string& file) {
  if (!args.empty()) {
    std::fputs(keys_usage, stderr);
    return exit_usage;
  }
  auto store = net::auth::key_store::load(file);
  if (!store) {
    std::fprintf(stderr, "sluice keys list: %s\n", store.error().message.c_str());
    return exit_failure;
  }
  for (const auto& [id, r] : store->records())
    std::printf("%s %s %s\n", id.c_str(), r.tenant.c_str(), r.scopes.to_string().c_str());
  return exit_ok;
}

int keys_revoke(std::vector<std::string>& args, const std::string& file) {
  if (args.size() != 1) {
    std::fputs(keys_usage, stderr);
    return exit_usage;
  }
  const std::string id = args[0];
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "sluice keys revoke: cannot open keys file %s\n", file.c_str());
    return exit_failure;
  }
  std::string kept, line;
  bool found = false;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (first == id) {
      found = true;
      continue;
    }
    kept += line + "\n";
  }
  if (!found) {
    std::fprintf(stderr, "sluice keys revoke: no key %s in %s\n", id.c_str(), file.c_str());
    return exit_failure;
  }
  // Written beside the file and renamed over it, so a crash leaves the old file or the new one.
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kept;
    if (!out) {
      std::fprintf(stderr, "sluice keys revoke: cannot write %s\n", tmp.c_str());
      return exit_failure;
    }
  }
  ::chmod(tmp.c_str(), S_IRUSR | S_IWUSR);
  if (std::rename(tmp.c_str(), file.c_str()) != 0) {
    std::fprintf(stderr, "sluice keys revoke: cannot replace %s\n", file.c_str());
    return exit_failure;
  }
  std::fprintf(stderr, "key %s revoked; a running sluice serve refuses it in new requests from its next keys check\n"
                       "(auth.keys_reload_check_s) or SIGHUP; streams already open with it go on to their end\n", id.c_str());
  return exit_ok;
}

}  // namespace

int cmd_keys(invocation& inv) {
  auto& args = inv.args;
  if (args.empty()) {
    std::fputs(keys_usage, stderr);
    return exit_usage;
  }
  const std::string sub = args[0];
  args.erase(args.begin());
  auto file = take_option(args, "--file");
  if (!file) {
    std::fputs(keys_usage, stderr);
    return exit_usage;
  }
  if (file->empty()) file = inv.cfg.auth.keys_file;
  if (file->empty()) {
    std::fprintf(stderr, "sluice keys: no keys file: pass --file PATH or set auth.keys_file\n");
    return exit_usage;
  }
  if (sub == "add") return keys_add(args, *file);
  if (sub == "list") return keys_list(args, *file);
  if (sub == "revoke") return keys_revoke(args, *file);
  std::fputs(keys_usage, stderr);
  return exit_usage;
}

}  // namespace sluice::cli
