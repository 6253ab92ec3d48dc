// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The CDI edits for a container's request, as the runtime shim (auto and cdi mode) and the
/// legacy prestart hook both build them: from the CDI spec on disk when it names the requested
/// cards and still matches the host (cdi_provenance.hpp), else from discovery in process
/// (sysfs + libefml), spawning efsmi only when libefml does not answer or DRS is asked for.
/// Logs through inject/log.hpp: which source was used and why (a stale spec is one warning).

#include <map>
#include <string>
#include <vector>

#include "inject/cdi.hpp"
#include "inject/cdi_registry.hpp"
#include "inject/request.hpp"
#include "inject/result.hpp"

namespace inject::config {
struct Config;
}

namespace inject::request {

/// Where the edits came from.
enum class EditsSource { SpecOnDisk, Discovery };

/// "the CDI spec on disk", "discovery".
[[nodiscard]] std::string_view edits_source_name(EditsSource s) noexcept;

/// How edits built from discovery look.
struct EditsOptions {
    /// enflame-ctk on the host, named as the createContainer ldcache hook of edits built from
    /// discovery (cdi::GenerateOptions::ctk_path); empty = no such hook (the legacy hook updates
    /// the ldcache itself).
    std::string ctk_path;
    /// CDI names of other kinds (another vendor's devices in the spec dirs) are resolved too.
    /// False: such a name is an InvalidInput error naming it (the legacy hook, a root process
    /// that applies whatever it resolves, injects only the configured kind's devices).
    bool other_kinds = true;
};

/// The container's request from its env and annotations, as the shim and the legacy hook both
/// read it: the env is not looked at (annotations still are) when accept-envvar-when-unprivileged
/// is false and the container is not `privileged` (oci::privileged()). A CDI name in the env
/// that is not of the configured kind is an InvalidInput error naming it (docs/security.md).
[[nodiscard]] Result<Request> request_of(const config::Config& cfg,
                                         const std::vector<std::string>& env,
                                         const std::map<std::string, std::string>& annotations,
                                         bool privileged);

/// Edits and where they came from.
struct RequestEdits {
    cdi::ContainerEdits edits;
    EditsSource source = EditsSource::Discovery;
    /// The discovery backend that answered ("libefml", "efsmi-json", ...); empty for the spec.
    std::string backend;
};

/// The env of `edits` that the container must get besides what a legacy hook applies (a hook
/// cannot set env): a DRS instance's TOPS_VISIBLE_DEVICES. The request's own variables are left
/// out: the CDI spec sets ENFLAME_VISIBLE_DEVICES=void so that nothing injects twice, and in
/// legacy mode the hook is the one injection and must still see the request.
[[nodiscard]] std::vector<std::string> env_besides_request(const cdi::ContainerEdits& edits);

/// Loads the configured spec dirs; files that do not load are debug-logged ("cdi: skipped ...").
[[nodiscard]] Result<cdi::Registry> load_registry(const config::Config& cfg);

/// cdi mode: the edits of the spec dirs for `req` (the spec-level edits of the first spec of the
/// configured kind for "none"; devices by index, UUID, DRS name or "all"; CDI names as written).
/// NotFound when no spec of the kind is there or a device is unknown.
[[nodiscard]] Result<cdi::ContainerEdits> edits_from_registry(const cdi::Registry& reg,
                                                              const config::Config& cfg,
                                                              const Request& req);

/// Discovery: libefml in process first (sysfs confirms the nodes), efsmi only when libefml does
/// not answer or `req` names a DRS instance; then the spec is generated in memory and the
/// selected cards plus the request's CDI names of the configured kind resolved (CDI names of
/// other kinds are not discovery's: they are left out). A DRS instance adds
/// TOPS_VISIBLE_DEVICES to the env. `backend` (optional) gets the backend that answered.
[[nodiscard]] Result<cdi::ContainerEdits> edits_from_discovery(const config::Config& cfg,
                                                               const Request& req,
                                                               const EditsOptions& opts,
                                                               std::string* backend = nullptr);

/// Auto mode: the spec on disk when it resolves the request and is not stale, else discovery
/// (a missing spec or device: debug line; a stale spec: one warning naming why). CDI names of
/// other kinds always come from the spec dirs (or are refused: EditsOptions::other_kinds).
/// Other errors of the spec dirs are returned.
[[nodiscard]] Result<RequestEdits> auto_edits(const config::Config& cfg, const Request& req,
                                              const EditsOptions& opts);
/// The same on spec dirs already loaded into `reg` (a long-running caller, enflame-nri-plugin,
/// keeps it while the dirs do not change).
[[nodiscard]] Result<RequestEdits> auto_edits(const config::Config& cfg, const Request& req,
                                              const EditsOptions& opts, const cdi::Registry& reg);

}  // namespace inject::request
