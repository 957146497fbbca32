// symm/detail/copy_2d.hpp: one strided copy as the runtime passes it around: `rows` rows of `width` bytes, row r from
// src + r * src_pitch to dst + r * dst_pitch (cudaMemcpy2D's arguments). A multi-dimensional put or get
// (symm/md_rma.hpp) is a list of them; the host backend makes them with memmove.
#pragma once

#include <symm/detail/config.hpp>

#include <cstddef>
#include <cstring>

SYMM_BEGIN_NAMESPACE
namespace detail {

struct copy_2d_spec {
  void* dst;
  std::size_t dst_pitch;
  const void* src;
  std::size_t src_pitch;
  std::size_t width;
  std::size_t rows;

  [[nodiscard]] constexpr std::size_t bytes() const noexcept { return width * rows; }
};

//! Makes the copy in host memory, a row at a time (memmove: rows of a put may overlap the source's).
inline void copy_rows(const copy_2d_spec& c) noexcept {
  for (std::size_t r = 0; r < c.rows; ++r)
    std::memmove(static_cast<std::byte*>(c.dst) + r * c.dst_pitch,
                 static_cast<const std::byte*>(c.src) + r * c.src_pitch, c.width);
}

} // namespace detail
SYMM_END_NAMESPACE
