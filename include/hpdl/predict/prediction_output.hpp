// What `hpdl predict` writes: the table, a CSV, an SVG plot and a predicted Chrome trace.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hpdl/predict/predictor.hpp"

namespace hpdl {

// The table, a CSV, an SVG plot and a predicted Chrome trace of one step at `trace_ranks`.
std::string prediction_table(const StepProfile& p, const std::vector<Prediction>& rows);
std::string prediction_csv(const std::vector<Prediction>& rows);
std::string prediction_svg(const std::vector<Prediction>& rows);
nlohmann::json predicted_trace(const StepProfile& p, const Prediction& at);

}  // namespace hpdl
