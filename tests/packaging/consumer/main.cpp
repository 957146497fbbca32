// A consumer of an installed symm: compiled by tests/packaging/run.py with Meson (pkg-config), Meson (subproject) and
// CMake (find_package), then run.
#if __has_include(<symm/symm.hpp>)
#  include <symm/symm.hpp>
#else
#  include <symm/error.hpp>
#endif
#include <symm/version.hpp>

#include <cstdio>

int main() {
  symm::error e(symm::errc::unsupported, "hello from a consumer");
  std::printf("symm %d.%d.%d: %s\n", symm::version_major, symm::version_minor, symm::version_patch, e.what());
  return e.code() == symm::errc::unsupported ? 0 : 1;
}
