// symm/detail/heap_allocator.hpp: the symmetric heap's allocator. Deterministic: every PE runs it on the same
// sequence of requests (checked by the control segment), so every PE computes the same offsets without talking.
#pragma once

#include <symm/error.hpp>

#include <cstddef>
#include <iterator>
#include <map>
#include <optional>

SYMM_BEGIN_NAMESPACE
namespace detail {

class heap_allocator {
public:
  //! `capacity` at most max_capacity (world_state checks heap sizes against it), so no offset arithmetic can wrap.
  explicit heap_allocator(std::size_t capacity) : capacity_(capacity) {
    if (capacity > 0) free_[0] = capacity;
  }

  //! First fit. Returns nullopt when no free block is large enough (the caller words the error).
  std::optional<std::size_t> allocate(std::size_t bytes, std::size_t alignment) {
    // Before any rounding, which would wrap for sizes near 2^64 (SIZE_MAX bytes rounded up is 0).
    if (bytes > capacity_ || alignment > capacity_) return std::nullopt;
    bytes = round_up(bytes == 0 ? 1 : bytes, min_alignment);
    alignment = alignment < min_alignment ? min_alignment : alignment;
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      auto [start, size] = *it;
      std::size_t aligned = round_up(start, alignment);
      if (aligned + bytes > start + size) continue;
      free_.erase(it);
      if (aligned > start) free_[start] = aligned - start;
      if (aligned + bytes < start + size) free_[aligned + bytes] = start + size - (aligned + bytes);
      used_[aligned] = bytes;
      in_use_ += bytes;
      return aligned;
    }
    return std::nullopt;
  }

  //! Returns the block at `offset` to the free list, merging neighbours. False when nothing starts there.
  bool deallocate(std::size_t offset) {
    auto it = used_.find(offset);
    if (it == used_.end()) return false;
    std::size_t start = offset, size = it->second;
    in_use_ -= size;
    used_.erase(it);
    auto next = free_.lower_bound(start);
    if (next != free_.end() && next->first == start + size) {
      size += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        prev->second += size;
        return true;
      }
    }
    free_[start] = size;
    return true;
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::size_t bytes_in_use() const noexcept { return in_use_; }
  [[nodiscard]] std::size_t largest_free_block() const noexcept {
    std::size_t largest = 0;
    for (auto [start, size] : free_)
      largest = size > largest ? size : largest;
    return largest;
  }
  [[nodiscard]] std::size_t block_size(std::size_t offset) const {
    auto it = used_.find(offset);
    return it == used_.end() ? 0 : it->second;
  }

  //! 256 bytes: every object starts on a boundary fit for 16-byte vector access and whole cache lines.
  static constexpr std::size_t min_alignment = 256;
  //! 2^46 bytes (64 TiB) per PE: more than any GPU or host maps for one PE, far from where offsets could wrap.
  static constexpr std::size_t max_capacity = std::size_t{1} << 46;

private:
  static constexpr std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

  std::size_t capacity_;
  std::size_t in_use_ = 0;
  std::map<std::size_t, std::size_t> free_; // offset -> size
  std::map<std::size_t, std::size_t> used_; // offset -> size
};

} // namespace detail
SYMM_END_NAMESPACE
