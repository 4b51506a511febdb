#pragma once
// How stats() names the GPU: "cuda: <name of the current device>".
#include <string>

namespace fsvd::cuda {

std::string device_name();

}  // namespace fsvd::cuda
