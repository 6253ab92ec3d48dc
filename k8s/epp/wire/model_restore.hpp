// SPDX-License-Identifier: Apache-2.0
#pragma once

/// \file
/// After a model rewrite the model server answers with the target model's name; upstream's EPP
/// puts the client's back into the response body, and so does the stream (stream.cpp) with
/// this: every `"model":"<target>"` becomes `"model":"<client's>"`, wherever it stands (each
/// SSE event, nested objects). JSON white space around the colon is allowed (Python's json
/// writes `"model": "x"`); the rest of the body is left as it is, byte for byte.

#include <string>
#include <string_view>

namespace epp {

class ModelRestorer {
public:
    /// `target`: the model the request went upstream with; `client`: the one it asked for.
    ModelRestorer(const std::string& target, const std::string& client);

    /// What to pass on for the next `chunk` of the body. A chunk's tail that may begin an
    /// occurrence (`..."mod`) is held back until the next chunk shows whether it does; `last`
    /// (nothing follows) passes on everything.
    [[nodiscard]] std::string feed(std::string_view chunk, bool last);

private:
    std::string from_, to_;  ///< the names as JSON strings, quotes included
    std::string held_;
};

}  // namespace epp
