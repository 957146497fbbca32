// expect-error: static assertion failed: symm atomics .*take int, unsigned, long, unsigned long, long long, unsigned
// long long .*float or double 1-byte integers have no remote atomics (not every GPU path has them at system scope): the
// message lists what works.
#include <symm/pe_ref.hpp>

#include <cstdint>

std::int8_t bump(const symm::pe_ref<std::int8_t>& r) {
  return r.fetch_add(1);
}
