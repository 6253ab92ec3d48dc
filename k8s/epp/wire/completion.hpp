// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// The EPP's gRPC server runs on the async API, on one completion queue read by one thread
/// (docs/epp.md, "Threads"). What waits on the queue is a Tag: the thread calls proceed() when
/// the operation completes, and the owner decides there what comes next (and may delete
/// itself).

#include <grpcpp/completion_queue.h>

namespace epp {

class Tag {
public:
    /// `ok`: the operation succeeded (false: the call ended, or the server is shutting down).
    virtual void proceed(bool ok) = 0;

protected:
    ~Tag() = default;
};

/// Runs every completion of `queue` until it is shut down and drained.
inline void serve_queue(grpc::ServerCompletionQueue& queue) {
    void* tag = nullptr;
    bool ok = false;
    while (queue.Next(&tag, &ok)) static_cast<Tag*>(tag)->proceed(ok);
}

}  // namespace epp
