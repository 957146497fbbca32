// symm/world_ref.hpp: symm::world_ref, the trivially copyable view of a world that kernels take (device barriers,
// my_pe / n_pes in device code).
#pragma once

#include <symm/detail/peer_table.hpp>
#include <symm/world.hpp>

#include <cstdint>
#include <type_traits>

SYMM_BEGIN_NAMESPACE

//! What device code needs of a world: the PE numbers and where the barrier flags live on each PE.
//! Made from a world (`symm::world_ref(world)`, or implicitly at a kernel launch); valid while the world lives.
class world_ref {
public:
  world_ref() = default;
  world_ref(const world& w) noexcept // NOLINT: implicit on purpose, as at a kernel launch
      : host_peers_(w.state()->peer_bases()), device_peers_(w.state()->device_peer_bases()),
        system_offset_(w.state()->system_offset()), my_pe_(w.my_pe()), n_pes_(w.n_pes()) {}

  [[nodiscard]] SYMM_HOST_DEVICE constexpr int my_pe() const noexcept { return my_pe_; }
  [[nodiscard]] SYMM_HOST_DEVICE constexpr int n_pes() const noexcept { return n_pes_; }

  //! This PE's heap base as device code maps it: where its waits find the world's failure word
  //! (detail/device_wait.hpp).
  [[nodiscard]] SYMM_HOST_DEVICE const std::byte* local_heap() const noexcept {
    return detail::peer_base(host_peers_, device_peers_, my_pe_);
  }

  //! Channel `channel`'s flags on PE `pe`: n_pes() arrival words, then that PE's epoch counter.
  [[nodiscard]] SYMM_HOST_DEVICE std::uint64_t* barrier_flags(int pe, int channel) const noexcept {
    return reinterpret_cast<std::uint64_t*>(detail::peer_base(host_peers_, device_peers_, pe) + system_offset_) +
           static_cast<std::size_t>(channel) * (static_cast<std::size_t>(n_pes_) + 1);
  }

private:
  std::byte* const* host_peers_ = nullptr;
  std::byte* const* device_peers_ = nullptr;
  std::size_t system_offset_ = 0;
  int my_pe_ = 0;
  int n_pes_ = 0;
};

static_assert(std::is_trivially_copyable_v<world_ref>, "world_ref travels to kernels by value");

SYMM_END_NAMESPACE
