#pragma once
/// The tenant API: PUT /v1/tenants/{id}/hotwords with a JSON body
///   {"hotwords": ["acme premium", "sluice pro 4"]}   ("phrase" or "phrase weight", as in a start message)
/// replaces the tenant's hotwords (moe/postproc/tenant_store): streams opened afterwards use them
/// at once, live streams of the tenant from their next utterance. The change lives in memory until
/// the tenant's file next changes or the server restarts (edit the file to make it permanent).
///
/// Who may call it: a key with the admin scope (any tenant; the anonymous principal of a server
/// without keys has it), or a key of that same tenant with the stream scope (a tenant manages
/// its own hotwords; it never touches another's). Anyone else gets 403.
///
/// Replies: 200 {"tenant", "version", "hotwords": n}; 400 for a bad id, body or hotword (the
/// message names it); 403; 404 for another path under /v1/tenants/.

#include <string>
#include <string_view>

#include "moe/postproc/tenant_store.hpp"
#include "net/auth/principal.hpp"

namespace sluice::net {

struct tenant_api_reply {
  int status = 200;
  std::string body;  ///< JSON
};

/// `path` is the request path ("/v1/tenants/billing/hotwords"). Does no I/O: safe on a network
/// thread (the store's lock is held only to swap a pointer).
tenant_api_reply put_tenant_hotwords(std::string_view path, std::string_view body, const auth::principal& who,
                                     moe::postproc::tenant_store& store);

}  // namespace sluice::net
