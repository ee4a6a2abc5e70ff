// The report as one self-contained HTML file: the data as JSON in the page, Chart.js (Debian's
// libjs-chart.js, built into hpdl) and the page's own script and style inlined, and a
// Content-Security-Policy that forbids every fetch, so it opens the same from a file:// URL,
// a web server or an e-mail attachment, with no network.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace hpdl {

// `data`: run_data, compare_data or study_data (report_data.hpp).
std::string report_page(const nlohmann::json& data, const std::string& title);

// Writes the page to `path` atomically (a reader never sees half a page).
void write_report(const nlohmann::json& data, const std::string& title, const std::string& path);

}  // namespace hpdl
