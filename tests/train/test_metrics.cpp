// Metrics: accuracy, weighted F1, per-class precision, recall and F1.
#include <gtest/gtest.h>

#include "hpdl/train/metrics.hpp"

using namespace hpdl;

TEST(Metrics, AccuracyAndWeightedF1) {
  // y_true = [0,0,0,1,1,2], y_pred = [0,0,1,1,2,2]; scikit-learn: f1_score(average="weighted")
  // = (3*0.8 + 2*0.5 + 1*(2/3)) / 6 = 0.6777...
  ConfusionMatrix m(3);
  const int t[6] = {0, 0, 0, 1, 1, 2}, p[6] = {0, 0, 1, 1, 2, 2};
  for (int i = 0; i < 6; ++i) m.add(t[i], p[i]);
  EXPECT_NEAR(m.accuracy(), 4.0 / 6, 1e-12);
  EXPECT_NEAR(m.weighted_f1(), (3 * 0.8 + 2 * 0.5 + 2.0 / 3) / 6, 1e-12);
  EXPECT_NE(m.table({"a", "b", "c"}).find("c 2"), std::string::npos);
  EXPECT_EQ(m.csv({}).substr(0, 20), "true\\predicted,0,1,2");
}

TEST(Metrics, PerClassPrecisionRecallF1) {
  // The example above: class 0 p=1 r=2/3; class 1 p=r=1/2; class 2 p=1/2 r=1.
  ConfusionMatrix m(3);
  const int t[6] = {0, 0, 0, 1, 1, 2}, p[6] = {0, 0, 1, 1, 2, 2};
  for (int i = 0; i < 6; ++i) m.add(t[i], p[i]);
  const auto s = m.per_class();
  EXPECT_DOUBLE_EQ(s[0].precision, 1.0);
  EXPECT_DOUBLE_EQ(s[0].recall, 2.0 / 3);
  EXPECT_DOUBLE_EQ(s[0].f1, 0.8);
  EXPECT_EQ(s[0].support, 3);
  EXPECT_DOUBLE_EQ(s[1].f1, 0.5);
  EXPECT_DOUBLE_EQ(s[2].precision, 0.5);
  EXPECT_DOUBLE_EQ(s[2].recall, 1.0);
  EXPECT_EQ(m.scores_csv({"a", "b", "c"}).substr(0, 44),
            "class,precision,recall,f1,support\na,1.000000");
  EXPECT_NE(m.scores_table({}).find("weighted avg"), std::string::npos);
}
