// SPDX-License-Identifier: Apache-2.0
#include "k8s/daemon.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace k8s {

inject::Result<void> setup_logging(const std::string& name, const std::string& level) {
    const auto l = spdlog::level::from_str(level);
    if (l == spdlog::level::off && level != "off")
        return inject::fail(inject::Errc::InvalidInput,
                            "--log-level '" + level + "': want debug, info, warn or error");
    auto logger = spdlog::stderr_logger_mt(name);
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l: %v");
    logger->flush_on(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    spdlog::set_level(l);
    return inject::ok();
}

sigset_t block_stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    return set;
}

}  // namespace k8s
