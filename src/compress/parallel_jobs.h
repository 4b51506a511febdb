#pragma once
// Coarse parallelism for the compressor's LAPACK work: independent jobs (one
// matrix's SVD, one input's Cholesky) one per thread. OpenBLAS runs single-
// threaded inside an OpenMP parallel region, so no job waits at the fine-
// grained barriers of a threaded SVD, which stall when other processes share
// the cores.
#include <exception>
#include <mutex>

namespace fsvd {

// Runs job(i) for i in [0, n) on `threads` threads; rethrows the first
// exception a job threw (after every job has run or been skipped).
template <typename Job>
void parallel_jobs(int n, int threads, Job job) {
  std::exception_ptr error;
  std::mutex lock;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (int i = 0; i < n; ++i) {
    {
      std::lock_guard<std::mutex> guard(lock);
      if (error) continue;
    }
    try {
      job(i);
    } catch (...) {
      std::lock_guard<std::mutex> guard(lock);
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace fsvd
