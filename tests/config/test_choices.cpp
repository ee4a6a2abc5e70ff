// Typed choices (config/choices.hpp): every setting that picks a behaviour is read once into
// its enum; its word names it in messages and in JSON, and a word it lacks is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "hpdl/config/config.hpp"
#include "hpdl/core/error.hpp"

using namespace hpdl;

namespace {

// Every value of E survives word() and from_word(), and JSON writes the word.
template <class E>
void round_trips() {
  const auto& words = ChoiceWords<E>::words;
  for (size_t i = 0; i < words.size(); ++i) {
    const E value = static_cast<E>(i);
    EXPECT_STREQ(word(value), words[i]);
    EXPECT_EQ(from_word<E>(words[i]), value);
    EXPECT_EQ(nlohmann::json(value), words[i]);
  }
  EXPECT_FALSE(from_word<E>("no such word").has_value());
}

}  // namespace

TEST(Choices, EveryChoiceRoundTripsAndIsWrittenAsItsWord) {
  round_trips<Backend>(), round_trips<WaitChoice>(), round_trips<Precision>();
  round_trips<OptimizerKind>(), round_trips<Schedule>(), round_trips<NonFinite>();
  round_trips<Keep>(), round_trips<KeepMetric>(), round_trips<DistMode>();
  round_trips<Compression>(), round_trips<OuterStep>(), round_trips<GemmChoice>();
  round_trips<ConvLayoutChoice>(), round_trips<ConvIsaChoice>(), round_trips<PoolChoice>();
}

TEST(Choices, AConfigIsReadIntoEnums) {
  const Config c = config_from_text(
      "[model]\ninput = [4]\nclasses = 2\n[[model.layers]]\ntype = \"dense\"\nunits = 2\n"
      "[run]\ndevice = \"gpu\"\nwait = \"sleep\"\n"
      "[optimizer]\nschedule = \"cosine\"\n"
      "[train]\nnonfinite = \"skip\"\nkeep_metric = \"val_f1\"\n"
      "[distributed]\nmode = \"downpour\"\n",
      "test");
  EXPECT_EQ(c.run.backend, Backend::kCuda);  // run.device = "gpu" sets it
  EXPECT_EQ(c.run.wait, WaitChoice::kSleep);
  EXPECT_EQ(c.optimizer.schedule, Schedule::kCosine);
  EXPECT_EQ(c.train.nonfinite, NonFinite::kSkip);
  EXPECT_EQ(c.train.keep_metric, KeepMetric::kValF1);
  EXPECT_EQ(c.distributed.mode, DistMode::kDownpour);
  EXPECT_TRUE(c.distributed.async());
}

TEST(Choices, AWordNotAmongTheChoicesIsRefusedNamingThem) {
  try {
    config_from_text(
        "[model]\ninput = [4]\nclasses = 2\n[[model.layers]]\ntype = \"dense\"\nunits = 2\n"
        "[distributed]\nmode = \"allreduce\"\n",
        "test");
    FAIL() << "distributed.mode = \"allreduce\" accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not one of: sync, downpour, dcasgd"), std::string::npos)
        << e.what();
  }
  try {
    parse_word<Backend>("gpu", "run.backend");
    FAIL() << "run.backend = \"gpu\" accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "run.backend = \"gpu\" is not one of: onednn, reference, cuda");
  }
}
