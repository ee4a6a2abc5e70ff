// The reader of a config's sections into its typed settings (read_sections.cpp), for
// config.cpp. Private to config/.
#pragma once
#include <string>

#include "hpdl/config/config.hpp"

namespace hpdl {

// Reads every section of c.resolved into c's typed settings through strict TableReaders,
// then refuses settings of different sections that contradict each other; `where` prefixes
// errors, `path` gives run.name its default (the config's stem).
void read_sections(Config& c, const std::string& where, const std::string& path);

}  // namespace hpdl
