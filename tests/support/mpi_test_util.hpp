// Helpers for the GoogleTest programs that run under mpirun: per-job test data written
// once by rank 0, and a main() that reports once per job and fails if any rank failed.
#pragma once
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/core/rng.hpp"
#include "hpdl/data/h5_util.hpp"

namespace hpdl {

inline std::string mpi_test_dir(const Comm& world) {
  return (std::filesystem::temp_directory_path() /
          ("hpdl_mpi_test_" + world.allgather(std::to_string(getpid()))[0]))
      .string();
}

// Rank 0 writes NAME.h5 (40 samples of `sample` shape) and NAME.toml once per job into a
// directory named after its process id (so concurrent jobs never share files); everyone
// reads them. Returns the config path.
inline std::string prepare(const Comm& world, const std::string& name, const std::string& config,
                           const std::vector<hsize_t>& sample) {
  const std::string dir = mpi_test_dir(world);
  const std::string data = dir + "/" + name + ".h5", cfg = dir + "/" + name + ".toml";
  static std::set<std::string> written;
  if (world.rank() == 0 && written.insert(name).second) {
    std::filesystem::create_directories(dir);
    const int64_t n = 40;
    int64_t per = 1;
    for (auto d : sample) per *= static_cast<int64_t>(d);
    std::vector<float> x(n * per);
    std::vector<int32_t> y(n);
    Rng rng(1, 1);
    for (auto& v : x) v = rng.uniform();
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int32_t>(i % 4);
    std::vector<hsize_t> dims = {hsize_t(n)};
    dims.insert(dims.end(), sample.begin(), sample.end());
    h5_write_atomically(data, [&](hid_t f) {
      h5_write(f, "x", x.data(), dims);
      h5_write(f, "y", y.data(), {hsize_t(n)});
    });
    std::string text = config;
    text.replace(text.find("%DATA%"), 6, data);
    std::ofstream(cfg) << text;
  }
  world.barrier();
  return cfg;
}

// On ranks other than 0: only failed assertions, each prefixed with the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "rank %d: %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
  }

 private:
  int rank_;
};

inline int mpi_test_main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {  // one report per job; failures on other ranks still fail the exit code
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  int failed = RUN_ALL_TESTS() != 0;
  MPI_Barrier(MPI_COMM_WORLD);  // the last test may still read the files on other ranks
  if (rank == 0) std::filesystem::remove_all(mpi_test_dir(Comm(MPI_COMM_SELF)));
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed;
}

}  // namespace hpdl
