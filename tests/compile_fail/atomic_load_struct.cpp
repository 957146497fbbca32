// expect-error: static assertion failed: symm atomics .*take int, unsigned, .*float or double; not bool, 1- or 2-byte
// integers or other types A user type is transportable (it can be put and got) but not atomic, not even for a load.
#include <symm/pe_ref.hpp>

struct pair {
  int a, b;
};

pair read(const symm::pe_ref<pair>& r) {
  return r.load();
}
