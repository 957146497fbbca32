// expect-first-error: static assertion failed.*symm::remote\(obj, pe\): obj must be a symmetric object
// remote() of an ordinary container: the first error is remote()'s own message, not "invalid types 'void[int]'" from
// the subscript of its result.
#include <symm/remote.hpp>

#include <vector>

void store_into(std::vector<float>& v) {
  symm::remote(v, 1)[0] = 1.0f;
}
