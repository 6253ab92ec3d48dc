// SPDX-License-Identifier: Apache-2.0
#pragma once

// A model server's /metrics and /slots for the scheduler's tests, on a loopback port the kernel
// picks (civetweb): the test sets what they answer and reads how often each was asked.

#include <civetweb.h>

#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace epp_test {

class FakeServer {
public:
    FakeServer() {
        mg_init_library(0);
        const char* options[] = {"listening_ports",   "127.0.0.1:0", "num_threads", "4",
                                 "enable_keep_alive", "no",          nullptr};
        mg_callbacks callbacks{};
        mg_init_data init{&callbacks, this, options};
        std::array<char, 256> text{};
        unsigned code = 0;
        mg_error_data error{&code, text.data(), text.size()};
        ctx_ = mg_start2(&init, &error);
        if (!ctx_) throw std::runtime_error(std::string("civetweb: ") + text.data());
        mg_server_port port{};
        if (mg_get_server_ports(ctx_, 1, &port) != 1) throw std::runtime_error("no port");
        address_ = "127.0.0.1:" + std::to_string(port.port);
        mg_set_request_handler(ctx_, "/", &FakeServer::handle, this);
    }
    ~FakeServer() { mg_stop(ctx_); }
    FakeServer(const FakeServer&) = delete;
    FakeServer& operator=(const FakeServer&) = delete;

    /// What GET `path` answers from now on (200, text/plain); unset paths answer 404.
    void set(const std::string& path, std::string body) {
        std::lock_guard l(mu_);
        bodies_[path] = std::move(body);
    }
    [[nodiscard]] int hits(const std::string& path) {
        std::lock_guard l(mu_);
        return hits_[path];
    }
    [[nodiscard]] const std::string& address() const { return address_; }
    [[nodiscard]] std::string url(const std::string& path) const {
        return "http://" + address_ + path;
    }

private:
    static int handle(mg_connection* c, void* self) {
        auto* s = static_cast<FakeServer*>(self);
        std::string path = mg_get_request_info(c)->local_uri;
        std::string body;
        bool found = false;
        {
            std::lock_guard l(s->mu_);
            ++s->hits_[path];
            if (auto it = s->bodies_.find(path); it != s->bodies_.end()) {
                body = it->second;
                found = true;
            }
        }
        mg_printf(c,
                  "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                  "Connection: close\r\n\r\n",
                  found ? "200 OK" : "404 Not Found", body.size());
        mg_write(c, body.data(), body.size());
        return found ? 200 : 404;
    }

    mg_context* ctx_ = nullptr;
    std::string address_;
    std::mutex mu_;
    std::map<std::string, std::string> bodies_;
    std::map<std::string, int> hits_;
};

/// Stops `servers` side by side: civetweb's stop takes up to 2 s each (its poll period).
inline void stop_all(std::vector<std::unique_ptr<FakeServer>>& servers) {
    std::vector<std::thread> t;
    for (auto& s : servers) t.emplace_back([&s] { s.reset(); });
    for (auto& x : t) x.join();
    servers.clear();
}

/// vLLM's families with the given load.
inline std::string vllm_metrics(double waiting, double kv) {
    return "vllm:num_requests_waiting{model_name=\"tiny\"} " + std::to_string(waiting) +
           "\nvllm:num_requests_running{model_name=\"tiny\"} 0\n"
           "vllm:kv_cache_usage_perc{model_name=\"tiny\"} " +
           std::to_string(kv) + "\n";
}

}  // namespace epp_test
