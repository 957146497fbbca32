// symm/detail/collective_release.hpp: how a symmetric object's destructor makes its collective release (a heap free,
// a team's destruction), including while an exception propagates.
//
// The rule (docs/api.md, "Exceptions and symmetric objects"): the release is made in either case, in destruction
// order, as on a normal scope exit, over shared memory and over the network mesh alike. A PE that throws, catches and
// goes on therefore stays in step with PEs that did not throw, as long as those reach the same release next; where
// they do something else, the agreement check names both calls, and where every PE that has not come waits for data
// (wait_until and the like: it would wait for ever) the release is abandoned (world_state::agree). A release that fails
// while unwinding cannot throw: it prints why (flushed), marks this PE failed, so that no other PE waits for it, and
// lets the original exception go on, which the PE then sees first.
#pragma once

#include <symm/detail/world_state.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! The hint in a move-only symmetric object's deleted copy constructor, which takes one as a defaulted second
//! parameter (it stays the copy constructor): copying the object, or passing it by value to a kernel (as an NVSHMEM
//! kernel takes its pointer), then fails with a diagnostic that names the view to use, e.g. nvcc's "function
//! symm::array<T, Extent>::array(const symm::array<T, Extent> &, symm::detail::kernels_and_copies_take_the_view<
//! symm::array_ref<T, Extent>>) ... cannot be referenced -- it is a deleted function".
template <class View>
struct kernels_and_copies_take_the_view {};

//! What a failed release outside of unwinding does: a destructor cannot throw.
enum class on_release_failure {
  abort,      //!< print and end the PE (a mismatched free is a broken program)
  mark_failed //!< print and mark the PE failed, so that every PE's next wait raises errc::peer_failed
};

//! Runs `release` (a collective) for the object `what` from its destructor. `unwinding`: an exception propagates.
template <class Release>
void release_collectively(world_state& world, std::string_view what, bool unwinding, on_release_failure otherwise,
                          Release&& release) noexcept {
  if (!world.alive()) return;
  try {
    if (unwinding) {
      auto marked = world.releasing_while_unwinding();
      release();
    } else {
      release();
    }
  } catch (const std::exception& e) {
    // Another PE's failure is not this PE's broken program: the job is ending, and this PE's next wait says why.
    const auto* failure = dynamic_cast<const error*>(&e);
    const bool peer_failed = failure != nullptr && failure->code() == errc::peer_failed;
    const bool fatal = !unwinding && !peer_failed && otherwise == on_release_failure::abort;
    // While unwinding, a failed peer (or a release abandoned for PEs that wait for data) is expected: the PE's own
    // exception is the news. Anything else is said, and flushed with whatever the PE printed before.
    if (!(unwinding && peer_failed)) {
      std::fprintf(stderr, "symm: %s: PE %d: %.*s%s: %s\n", fatal ? "fatal" : "error", world.my_pe(),
                   static_cast<int>(what.size()), what.data(),
                   unwinding ? " (destroyed while an exception propagated)" : "", e.what());
    }
    std::fflush(nullptr);
    if (!fatal) {
      world.mark_failed(
          unwinding ? fmt::format("PE {} left its scope by an exception (its own error, which PE {} "
                                  "reports); releasing {} on the way failed: {}",
                                  world.my_pe(), world.my_pe(), what, e.what())
                    : fmt::format("PE {} could not release {}: {}", world.my_pe(), what, e.what()));
      return;
    }
    std::abort();
  }
}

} // namespace detail
SYMM_END_NAMESPACE
