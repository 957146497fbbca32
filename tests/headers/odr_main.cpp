// ODR test: links odr_a and odr_b (both include symm.hpp) and uses both.
#include <cstdio>
#include <string>

std::string symm_odr_a();
std::string symm_odr_b();

int main() {
  std::string a = symm_odr_a(), b = symm_odr_b();
  std::printf("%s\n%s\n", a.c_str(), b.c_str());
  return a.find("from TU a") != std::string::npos && b.find("from TU b") != std::string::npos ? 0 : 1;
}
