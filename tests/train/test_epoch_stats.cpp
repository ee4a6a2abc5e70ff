// EpochStats' field table: metrics.csv and the checkpoint's history.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "hpdl/data/h5_util.hpp"
#include "hpdl/train/checkpoint.hpp"
#include "hpdl/train/epoch_stats.hpp"

using namespace hpdl;

// EpochStats has one field table: metrics.csv's header and row, and the checkpoint's
// history, written with its column names and read back by name (a format-2 checkpoint's
// positional history is still read).
TEST(EpochStatsTable, CsvAndCheckpointHistoryFollowTheFieldTable) {
  EpochStats s;
  s.epoch = 3, s.steps = 40, s.train_loss = 0.5, s.lr = 0.01, s.validated = true;
  s.val_loss = 0.25, s.val_accuracy = 0.75, s.val_f1 = 0.5, s.samples_per_s = 100;
  EXPECT_EQ(epoch_csv_header(),
            "epoch,steps,train_loss,test_loss,test_accuracy,test_f1,samples_per_s,epoch_s,"
            "train_s,elapsed_s,lr,val_loss,val_accuracy,val_f1");
  EXPECT_EQ(epoch_csv_row(s), "3,40,0.5,,,,100,0,0,0,0.01,0.25,0.75,0.5");

  // One file per process: ctest runs the unit tests in several configurations at once.
  const std::string path =
      ::testing::TempDir() + "/hpdl_history_checkpoint_" + std::to_string(getpid()) + ".h5";
  Checkpoint c;
  c.model = "w:1", c.mode = "sync", c.optimizer = "sgd", c.params = {1.0f};
  c.history = {s, s};
  c.history[1].epoch = 4, c.history[1].tested = true, c.history[1].test_f1 = 0.125;
  write_checkpoint(path, c);
  const Checkpoint back = read_checkpoint(path);
  ASSERT_EQ(back.history.size(), 2u);
  EXPECT_EQ(epoch_values(back.history), epoch_values(c.history));
  {  // the same history as a format-2 file: 16 positional columns
    H5Id f = h5_create_file(path);
    h5_write_attr(f.get(), "format", std::string("hpdl-checkpoint-2"));
    h5_write_attr(f.get(), "header",
                  std::string(R"({"model":"w:1","mode":"sync","optimizer":"sgd",)"
                              R"("ranks":1,"servers":0,"batch":1,"seed":1,"epoch":5,)"
                              R"("epoch_step":0,"global_step":80,"epoch_loss_sum":0,)"
                              R"("epoch_s":0,"elapsed_s":0})"));
    const std::vector<double> row = {3, 40, 0.5,  0, 0, 0,    0,    100,
                                     0, 0,  0.01, 0, 1, 0.25, 0.75, 0.5};
    h5_write(f.get(), "history", row.data(), {1, 16});
    const float p = 1.0f;
    h5_write(f.get(), "params", &p, {1});
    h5_create_group(f.get(), "buffers");
    h5_create_group(f.get(), "counters");
  }
  const Checkpoint v2 = read_checkpoint(path);
  ASSERT_EQ(v2.history.size(), 1u);
  EXPECT_EQ(epoch_values(v2.history), epoch_values({s}));
  std::remove(path.c_str());
}
