// expect-compile: ok
// Options structs take designated initializers naming any subset of their fields, warning-free under -Wall -Wextra
// -Werror (-Wmissing-field-initializers): every field has a default member initializer, as NVSHMEM's examples
// ported to `symm::world world({.heap_size = N});` need (issue 41).
#include <symm/launch.hpp>
#include <symm/world.hpp>

#include <chrono>

symm::world_options heap_only() {
  return {.heap_size = 1 << 20};
}

symm::world_options device_only() {
  return {.device = 0};
}

symm::world_options timeout_only() {
  return {.bootstrap_timeout = std::chrono::seconds(5)};
}

symm::world_options backend_only() {
  return {.backend = symm::backend::host};
}

symm::launch_options launch_heap_only() {
  return {.world = {.heap_size = 1 << 20}};
}

symm::launch_options launch_threads() {
  return {.mode = symm::launch_mode::threads};
}

void start_world() {
  symm::world world({.heap_size = 1 << 20});
}
