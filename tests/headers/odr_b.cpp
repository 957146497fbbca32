// ODR test, second TU: see odr_a.cpp.
#include <symm/symm.hpp>

#include <string>

std::string symm_odr_b() {
  symm::error e(symm::errc::invalid_argument, "from TU b");
  return std::string(e.what()) + " " + std::to_string(symm::version_major);
}
