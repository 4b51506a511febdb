// libFuzzer target: one line of `flashsvd batch` input. Any bytes must either
// parse to a request that the engine would accept (or refuse with an Error)
// or throw fsvd::Error; a parsed result must serialise.
#include <cstddef>
#include <cstdint>
#include <string>

#include "apps/batch_requests.h"
#include "core/error.h"
#include "testing/byte_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fsvd::testing::ByteTokenizer tokenizer;
  try {
    const fsvd::BatchRequest r = fsvd::parse_batch_request(
        std::string_view(reinterpret_cast<const char*>(data), size), tokenizer, fsvd::GenerateOptions{});
    fsvd::RequestResult result;
    result.prompt_tokens = static_cast<int>(r.prompt.size());
    (void)fsvd::batch_result(0, r.id, "", r.prompt, result).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (r.prompt.empty()) __builtin_trap();
  } catch (const fsvd::Error&) {
  }
  return 0;
}
