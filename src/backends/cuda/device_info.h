#pragma once
// What the current device is: its name (as stats() shows it), how many SMs
// it has (the launch planners size their grids by it) and whether it is a
// Hopper GPU that runs the wgmma kernels.
#include <string>

namespace fsvd::cuda {

std::string device_name();  // "cuda: <name of the current device>"
int sm_count();
// Compute capability 9.0 and a build with sm_90a code (FLASHSVD_SM90A, which
// CMake defines for this file when 90a is among the CUDA architectures):
// without that code the wgmma kernels would trap.
bool runs_wgmma();

}  // namespace fsvd::cuda
