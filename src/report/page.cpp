#include "hpdl/report/page.hpp"

#include "hpdl/core/atomic_file.hpp"

namespace hpdl {

// Embedded by cmake/embed_assets.cmake from src/report/assets/ and Debian's Chart.js.
extern const char kReportChartJs[];
extern const char kReportBase[];  // the page's script, in three parts: the building blocks,
extern const char kReportRun[];   // one run's page,
extern const char kReportMany[];  // two runs, a sweep, and which page to draw
extern const char kReportStyle[];

namespace {

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// JSON inside <script>: "</" would end the element; "<\/" is the same JSON string.
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (size_t k = 0; k < json.size(); ++k) {
    out += json[k];
    if (json[k] == '<' && k + 1 < json.size() && json[k + 1] == '/') out += '\\';
  }
  return out;
}

}  // namespace

std::string report_page(const nlohmann::json& data, const std::string& title) {
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  page += escape_html(title) + "</title>\n<style>" + kReportStyle + "</style>\n</head><body>\n";
  page += "<main id=\"report\"></main>\n<script type=\"application/json\" id=\"report-data\">";
  page += script_safe(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  page += "</script>\n<script>" + std::string(kReportChartJs) + "</script>\n<script>";
  // One function holds the three parts: their names stay out of the page's globals.
  page += std::string("(function () {\n") + kReportBase + kReportRun + kReportMany +
          "})();</script>\n</body></html>\n";
  return page;
}

void write_report(const nlohmann::json& data, const std::string& title, const std::string& path) {
  write_file_atomically(path, report_page(data, title));
}

}  // namespace hpdl
