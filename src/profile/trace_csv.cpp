#include "hpdl/profile/trace_csv.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, ',');) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

}  // namespace

std::vector<std::string> step_columns() {
  std::vector<std::string> c = {"rank", "step", "wall_us", "attributed_us", "unattributed_us"};
  for (const auto& p : kStepParts) c.push_back(p + "_us");
  return c;
}

CsvTable::CsvTable(const std::string& path, const std::string& missing_hint) : path_(path) {
  std::ifstream in(path);
  if (!in) throw Error(path + " not found" + (missing_hint.empty() ? "" : " " + missing_hint));
  std::string line;
  if (std::getline(in, line)) header_ = split(line);
  while (std::getline(in, line)) {
    auto cells = split(line);
    if (cells.size() != header_.size())
      throw Error(path + ": row " + std::to_string(rows_.size() + 1) + " has " +
                  std::to_string(cells.size()) + " cells, the header " +
                  std::to_string(header_.size()));
    rows_.push_back(std::move(cells));
  }
}

bool CsvTable::has(const std::string& column) const {
  return std::find(header_.begin(), header_.end(), column) != header_.end();
}

size_t CsvTable::index(const std::string& column) const {
  const auto it = std::find(header_.begin(), header_.end(), column);
  if (it == header_.end()) throw Error(path_ + ": no column " + column);
  return static_cast<size_t>(it - header_.begin());
}

const std::string& CsvTable::text(size_t row, const std::string& column) const {
  return rows_.at(row)[index(column)];
}

double CsvTable::number(size_t row, const std::string& column) const {
  const std::string& cell = text(row, column);
  try {
    size_t used = 0;
    const double v = std::stod(cell, &used);
    if (used == cell.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error(path_ + ": row " + std::to_string(row + 1) + ": " + column + " = '" + cell +
              "' is not a number");
}

}  // namespace hpdl
