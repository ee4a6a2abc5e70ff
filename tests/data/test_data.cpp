// Data tests: the MNIST and UCI HAR converters (on files written here in the original
// formats, and on the real UCI HAR subset when it is present), the HDF5 reader and the
// batch plan's rank split.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "hpdl/core/error.hpp"
#include "hpdl/data/convert.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "kernel_env.hpp"

using namespace hpdl;
namespace fs = std::filesystem;

namespace {

// A fresh directory for one test, removed when the test ends.
struct TempDir {
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("hpdl_test_" + name + "_" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

void write_be32(gzFile f, uint32_t v) {
  const unsigned char b[4] = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
  gzwrite(f, b, 4);
}

TEST(ConvertMnist, GzippedIdxToHdf5) {
  const TempDir tmp("mnist");
  const fs::path& d = tmp.path;
  const std::string img = (d / "img.gz").string(), lab = (d / "lab.gz").string();
  gzFile fi = gzopen(img.c_str(), "wb");
  write_be32(fi, 0x803), write_be32(fi, 3), write_be32(fi, 2), write_be32(fi, 2);
  const unsigned char pix[12] = {0, 255, 51, 102, 1, 2, 3, 4, 5, 6, 7, 8};
  gzwrite(fi, pix, 12);
  gzclose(fi);
  gzFile fl = gzopen(lab.c_str(), "wb");
  write_be32(fl, 0x801), write_be32(fl, 3);
  const unsigned char labels[3] = {7, 0, 9};
  gzwrite(fl, labels, 3);
  gzclose(fl);

  const std::string out = (d / "out.h5").string();
  EXPECT_EQ(convert_mnist(img, lab, out, {"a", "b"}), 3);
  H5Split s(out, "/");
  EXPECT_EQ(s.size(), 3);
  EXPECT_EQ(s.sample_shape(), (std::vector<int64_t>{1, 2, 2}));
  std::vector<float> x(12);
  std::vector<int32_t> y(3);
  s.read_range(0, 3, x.data(), y.data());
  EXPECT_FLOAT_EQ(x[1], 1.0f);
  EXPECT_FLOAT_EQ(x[2], 0.2f);
  EXPECT_EQ(y, (std::vector<int32_t>{7, 0, 9}));
  EXPECT_EQ(s.class_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(fs::exists(out + ".tmp"));
}

TEST(ConvertMnist, RejectsWrongMagic) {
  const TempDir tmp("mnist_bad");
  const fs::path& d = tmp.path;
  std::ofstream(d / "img") << "not an idx file at all";
  EXPECT_THROW(convert_mnist((d / "img").string(), (d / "img").string(), (d / "o.h5").string(), {}),
               Error);
  EXPECT_FALSE(fs::exists(d / "o.h5"));
}

// Writes a UCI HAR folder: N windows of T steps; value(i, t, c) = i + t/100 + c/1000.
void write_har(const fs::path& root, const std::string& split, int N, int T) {
  const fs::path sig = root / split / "Inertial Signals";
  fs::create_directories(sig);
  const auto& ch = uci_har_channels();
  for (size_t c = 0; c < ch.size(); ++c) {
    std::ofstream f(sig / (ch[c] + "_" + split + ".txt"));
    for (int i = 0; i < N; ++i) {
      for (int t = 0; t < T; ++t) {
        const double v = i + t / 100.0 + c / 1000.0;
        // mix the original "2.5717778e-001" notation with plain decimals
        if (t % 2)
          f << "  " << std::scientific << v;
        else
          f << " " << std::fixed << v;
      }
      f << "\n";
    }
  }
  std::ofstream y(root / split / ("y_" + split + ".txt"));
  for (int i = 0; i < N; ++i) y << (i % 6) + 1 << "\n";
}

TEST(ConvertUciHar, OriginalLayoutToHdf5) {
  const TempDir tmp("har");
  const fs::path& d = tmp.path;
  write_har(d, "train", 7, 5);
  write_har(d, "test", 3, 5);
  std::ofstream(d / "activity_labels.txt") << "1 WALKING\n2 UP\n3 DOWN\n4 SIT\n5 STAND\n6 LAY\n";
  const std::string out = (d / "har.h5").string();
  const UciHarCounts c = convert_uci_har(d.string(), out);
  EXPECT_EQ(c.train, 7);
  EXPECT_EQ(c.test, 3);
  H5Split train(out, "/train");
  EXPECT_EQ(train.sample_shape(), (std::vector<int64_t>{5, 9}));
  std::vector<float> x(7 * 45);
  std::vector<int32_t> y(7);
  train.read_range(0, 7, x.data(), y.data());
  EXPECT_NEAR(x[(3 * 5 + 2) * 9 + 4], 3 + 0.02 + 0.004, 1e-5);  // window 3, step 2, channel 4
  EXPECT_EQ(y[0], 0);
  EXPECT_EQ(y[5], 5);
  EXPECT_EQ(train.class_names()[1], "UP");
  H5Split test(out, "/test");
  EXPECT_EQ(test.size(), 3);

  // data.normalize: channels standardised with the training statistics stored by the
  // converter; the training split then has mean 0 and std 1 per channel.
  train.normalize_channels();
  train.read_range(0, 7, x.data(), y.data());
  for (int c = 0; c < 9; ++c) {
    double sum = 0, sq = 0;
    for (int i = 0; i < 7 * 5; ++i) sum += x[i * 9 + c], sq += double(x[i * 9 + c]) * x[i * 9 + c];
    EXPECT_NEAR(sum / 35, 0.0, 1e-5);
    EXPECT_NEAR(sq / 35, 1.0, 1e-4);
  }
}

TEST(Reader, NormalizeNeedsStatistics) {
  const TempDir tmp("nostats");
  const std::string out = (tmp.path / "n.h5").string();
  std::vector<float> x(4 * 3, 1.0f);
  std::vector<int32_t> y(4, 0);
  h5_write_atomically(out, [&](hid_t f) {
    h5_write(f, "x", x.data(), {4, 3});
    h5_write(f, "y", y.data(), {4});
  });
  H5Split s(out, "/");
  try {
    s.normalize_channels();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data.normalize needs attributes mean and std"),
              std::string::npos);
  }
}

TEST(ConvertUciHar, BadFilesNameFileAndLine) {
  const TempDir tmp("har_bad");
  const fs::path& d = tmp.path;
  write_har(d, "train", 4, 5);
  write_har(d, "test", 2, 5);
  std::ofstream(d / "train" / "Inertial Signals" / "body_gyro_y_train.txt", std::ios::app)
      << "1 2 3\n";
  try {
    convert_uci_har(d.string(), (d / "o.h5").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("body_gyro_y_train.txt:5: 3 values, expected 5"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(d / "train" / "Inertial Signals" / "body_gyro_y_train.txt") << "1 2 x 4 5\n";
  try {
    convert_uci_har(d.string(), (d / "o.h5").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a number"), std::string::npos) << e.what();
  }
  // A finite double beyond a float's range would become an infinity: refused, named.
  std::ofstream(d / "train" / "Inertial Signals" / "body_gyro_y_train.txt") << "1 2 1e39 4 5\n";
  try {
    convert_uci_har(d.string(), (d / "o.h5").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "body_gyro_y_train.txt:1: 1e39 is beyond the range of a 32-bit float"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(d / "o.h5"));
}

// Normalisation statistics that would turn every value into NaN, Inf or 0 are refused,
// naming the statistic and the channel.
TEST(Reader, NormalizeRefusesStatisticsThatAreNotUsable) {
  const TempDir tmp("badstats");
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<std::vector<float>, std::vector<float>>> cases = {
      {{0, nan, 0}, {1, 1, 1}},
      {{0, 0, 0}, {1, inf, 1}},
      {{0, 0, 0}, {1, 1, -2}},
      {{0, 0, 0}, {1e-40f, 1, 1}}};
  const std::vector<std::string> want = {
      "x.mean[1] = nan is not finite", "x.std[1] = inf is not finite",
      "x.std[2] = -2 is not positive", "x.std[0] = 9.99995e-41 is so small that 1/std overflows"};
  auto refuses_each = [&](const std::string& when) {
    SCOPED_TRACE(when);
    for (size_t k = 0; k < cases.size(); ++k) {
      const std::string out = (tmp.path / ("s" + std::to_string(k) + ".h5")).string();
      std::vector<float> x(4 * 3, 1.0f);
      std::vector<int32_t> y(4, 0);
      h5_write_atomically(out, [&](hid_t f) {
        h5_write(f, "x", x.data(), {4, 3});
        h5_write(f, "y", y.data(), {4});
        H5Id xd(H5Dopen2(f, "x", H5P_DEFAULT), H5Dclose);
        h5_write_attr(xd.get(), "mean", cases[k].first);
        h5_write_attr(xd.get(), "std", cases[k].second);
      });
      H5Split s(out, "/");
      try {
        s.normalize_channels();
        FAIL() << want[k];
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(want[k]), std::string::npos) << e.what();
      }
    }
  };
  refuses_each("denormals as the process found them");
  // A CPU backend flushes denormals on this thread (src/kernels/cpu/denormals.hpp): the tiny std
  // must still be found, and printed with its value, not as 0.
  auto kernels = test_kernels("reference");
  refuses_each("denormals flushed to zero");
}

TEST(ConvertUciHar, RealSubsetWhenPresent) {
  const std::string archive = HPDL_UCI_HAR_ARCHIVE;
  if (!fs::exists(archive)) {
    // CI always has ../shared: there a missing archive is a failure, not a skip.
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true")
      FAIL() << "CI=true but no UCI HAR subset at " << archive;
    GTEST_SKIP() << "no real UCI HAR subset at " << archive;
  }
  const TempDir tmp("har_real");
  const fs::path& d = tmp.path;
  ASSERT_EQ(std::system(("tar -xJf '" + archive + "' -C '" + d.string() + "'").c_str()), 0);
  const std::string dir = (d / "UCI HAR Dataset").string();
  const std::string out = (d / "har.h5").string();
  const UciHarCounts c = convert_uci_har(dir, out);
  EXPECT_EQ(c.train, 2400);
  EXPECT_EQ(c.test, 950);
  EXPECT_EQ(c.steps, 128);
  H5Split train(out, "/train");
  std::vector<float> x(2400 * 128 * 9);
  std::vector<int32_t> y(2400);
  train.read_range(0, 2400, x.data(), y.data());
  std::vector<int> counts(6, 0);
  for (int32_t v : y) ++counts[v];
  EXPECT_EQ(counts, (std::vector<int>{400, 350, 322, 420, 449, 459}));
  EXPECT_EQ(train.class_names()[5], "LAYING");
  EXPECT_EQ(train.validate(0, 2400, 6), "");
}

TEST(Reader, RowsAndValidation) {
  const TempDir tmp("reader");
  const fs::path& d = tmp.path;
  const std::string out = (d / "r.h5").string();
  std::vector<float> x(10 * 3);
  std::vector<int32_t> y(10);
  for (int i = 0; i < 30; ++i) x[i] = float(i);
  for (int i = 0; i < 10; ++i) y[i] = i % 4;
  x[3 * 7 + 1] = std::nanf("");
  y[8] = 9;
  h5_write_atomically(out, [&](hid_t f) {
    h5_write(f, "x", x.data(), {10, 3});
    h5_write(f, "y", y.data(), {10});
  });
  H5Split s(out, "/");
  const std::vector<int64_t> rows = {1, 2, 5, 9};
  std::vector<float> bx(12);
  std::vector<int32_t> by(4);
  s.read_rows(rows, bx.data(), by.data());
  EXPECT_EQ(bx[3 * 2], 15.0f);
  EXPECT_EQ(by[3], 1);
  EXPECT_EQ(s.validate(0, 7, 4), "");
  EXPECT_NE(s.validate(0, 10, 4).find("x[7] holds NaN"), std::string::npos);
  EXPECT_NE(s.validate(8, 10, 4).find("y[8] = 9 is outside the class range 0..3"),
            std::string::npos);
  EXPECT_THROW(H5Split(out, "/train"), Error);
  EXPECT_THROW(H5Split((d / "missing.h5").string(), "/"), Error);
}

// A float64 x (or a chunked layout) cannot be read directly: H5Dread converts it.
TEST(Reader, ConvertingPathMatchesDirectPath) {
  const TempDir tmp("reader64");
  const fs::path& d = tmp.path;
  const std::string f32 = (d / "f32.h5").string(), f64 = (d / "f64.h5").string();
  std::vector<float> x(20 * 4);
  std::vector<double> x64(x.size());
  std::vector<int32_t> y(20);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * float(i), x64[i] = x[i];
  for (int i = 0; i < 20; ++i) y[i] = i % 3;
  h5_write_atomically(f32, [&](hid_t f) {
    h5_write(f, "x", x.data(), {20, 4});
    h5_write(f, "y", y.data(), {20});
  });
  h5_write_atomically(f64, [&](hid_t f) {
    const hsize_t dims[2] = {20, 4};
    H5Id space(H5Screate_simple(2, dims, nullptr), H5Sclose);
    H5Id ds(H5Dcreate2(f, "x", H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
            H5Dclose);
    ASSERT_GE(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x64.data()), 0);
    h5_write(f, "y", y.data(), {20});
  });
  H5Split a(f32, "/"), b(f64, "/");
  EXPECT_TRUE(a.direct());
  EXPECT_FALSE(b.direct());
  const std::vector<int64_t> rows = {0, 3, 4, 5, 17, 19};
  std::vector<float> xa(24), xb(24);
  std::vector<int32_t> ya(6), yb(6);
  a.read_rows(rows, xa.data(), ya.data());
  b.read_rows(rows, xb.data(), yb.data());
  EXPECT_EQ(xa, xb);
  EXPECT_EQ(ya, yb);
  EXPECT_EQ(xa[4], x[3 * 4]);
  EXPECT_EQ(ya[4], y[17]);
  // The direct path copies from a mapping of the file, or reads with pread(): the same rows.
  EXPECT_TRUE(a.mapped());
  a.unmap();
  EXPECT_FALSE(a.mapped());
  std::vector<float> xc(24);
  std::vector<int32_t> yc(6);
  a.read_rows(rows, xc.data(), yc.data());
  EXPECT_EQ(xc, xa);
  EXPECT_EQ(yc, ya);
}

TEST(BatchPlan, RankSlicesPartitionTheGlobalBatch) {
  for (int ranks : {1, 2, 3, 4}) {
    const int64_t rows = 103, batch = 10;
    BatchPlan one(rows, batch, 0, 1);
    one.begin_epoch(5, 2);
    std::vector<BatchPlan> plans;
    for (int r = 0; r < ranks; ++r)
      plans.emplace_back(rows, batch, r, ranks), plans.back().begin_epoch(5, 2);
    for (int64_t s = 0; s < one.steps_per_epoch(); ++s) {
      auto all = one.local_rows(s);
      std::multiset<int64_t> want(all.begin(), all.end()), got;
      int64_t sizes = 0;
      for (auto& p : plans) {
        auto mine = p.local_rows(s);
        EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
        got.insert(mine.begin(), mine.end());
        sizes += p.local_batch();
        EXPECT_LE(std::abs(p.local_batch() - batch / ranks), 1);
      }
      EXPECT_EQ(sizes, batch);
      EXPECT_EQ(got, want);
    }
  }
}

// The rows the trainer reads ahead for the next step are that step's rows (in any order),
// asking for them leaves the current step's rows alone, and past the epoch there are none.
TEST(BatchPlan, UpcomingRowsAreTheNextStepsRows) {
  for (int ranks : {1, 3}) {
    BatchPlan p(103, 10, ranks - 1, ranks);
    p.begin_epoch(7, 1);
    for (int64_t s = 0; s + 1 < p.steps_per_epoch(); ++s) {
      const auto now = p.local_rows(s);
      const std::vector<int64_t> current(now.begin(), now.end());
      const auto ahead = p.upcoming_rows(s + 1);
      std::vector<int64_t> next(ahead.begin(), ahead.end());
      EXPECT_EQ(std::vector<int64_t>(now.begin(), now.end()), current);
      std::sort(next.begin(), next.end());
      const auto want = p.local_rows(s + 1);
      EXPECT_EQ(next, std::vector<int64_t>(want.begin(), want.end()));
    }
    EXPECT_TRUE(p.upcoming_rows(p.steps_per_epoch()).empty());
  }
}

TEST(BatchPlan, ShuffleDependsOnSeedAndEpochOnly) {
  BatchPlan a(50, 5, 0, 1), b(50, 5, 0, 1);
  a.begin_epoch(1, 1);
  b.begin_epoch(1, 1);
  const auto ra = std::vector<int64_t>(a.local_rows(3).begin(), a.local_rows(3).end());
  EXPECT_EQ(ra, std::vector<int64_t>(b.local_rows(3).begin(), b.local_rows(3).end()));
  b.begin_epoch(1, 2);
  EXPECT_NE(ra, std::vector<int64_t>(b.local_rows(3).begin(), b.local_rows(3).end()));
}

TEST(BatchPlan, RejectsTooFewSamplesOrRanks) {
  EXPECT_THROW(BatchPlan(100, 3, 0, 4), Error);
  EXPECT_THROW(BatchPlan(5, 8, 0, 1), Error);
}

}  // namespace
