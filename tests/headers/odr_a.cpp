// ODR test, first TU: everything symm.hpp defines in a header must be inline (or a template), so that two TUs that
// both include it link together. odr_b.cpp is the second TU.
#include <symm/symm.hpp>

#include <string>

std::string symm_odr_a() {
  symm::error e(symm::errc::invalid_argument, "from TU a");
  return std::string(e.what()) + " " + std::to_string(symm::version_major);
}
