// symm/detail/collective_host.hpp: the collectives on the host backend — plain loads and stores through the mapped
// heaps, between the team's host barriers. The first barrier is the agreement step (world_state::agree), which also
// checks that every PE of the team called the same collective with the same sizes, operation and root.
#pragma once

#include <symm/detail/collective_common.hpp>

#include <algorithm>
#include <cstring>

SYMM_BEGIN_NAMESPACE
namespace detail {

//! Folds in(0)[i] op in(1)[i] op ... op in(n_in - 1)[i] for i in [0, count) and stores the result at out(j)[i] for
//! every j < n_out (in(k) and out(j) give element 0 of each range). Works through a private tile of 4 KiB, so an
//! output may be one of the inputs (a reduction in place).
template <class T, class Op, class In, class Out>
void host_reduce_range(const Op& op, const In& in, int n_in, const Out& out, int n_out, std::size_t count) {
  constexpr std::size_t tile = sizeof(T) >= 4096 ? 1 : 4096 / sizeof(T);
  alignas(alignof(T) > 64 ? alignof(T) : 64) unsigned char storage[tile * sizeof(T)];
  T* acc = reinterpret_cast<T*>(storage); // trivially copyable T: the bytes give it life (implicit object creation)
  for (std::size_t b = 0; b < count; b += tile) {
    const std::size_t m = std::min(tile, count - b);
    std::memcpy(static_cast<void*>(acc), in(0) + b, m * sizeof(T));
    for (int k = 1; k < n_in; ++k) {
      const T* x = in(k) + b;
      for (std::size_t i = 0; i < m; ++i)
        acc[i] = static_cast<T>(op(acc[i], x[i]));
    }
    for (int j = 0; j < n_out; ++j)
      std::memcpy(static_cast<void*>(out(j) + b), acc, m * sizeof(T));
  }
}

inline void host_copy(void* dst, const void* src, std::size_t bytes) {
  if (dst != src && bytes != 0) std::memcpy(dst, src, bytes);
}

//! The data movement of one collective on this PE (team PE `me` of `members`), between the barriers.
template <class T, class Op>
void host_collective_work(collective_id c, std::span<const int> members, int me, sym_buffer<T> dst,
                          sym_buffer<const T> src, const Op& op, int root) {
  const int n = static_cast<int>(members.size());
  T* mine = dst.on(members[static_cast<std::size_t>(me)]);
  auto src_of = [&](int k) { return src.on(members[static_cast<std::size_t>(k)]); };
  auto dst_of = [&](int k) { return dst.on(members[static_cast<std::size_t>(k)]); };
  const bool in_place = dst.offset == src.offset;
  const bool two_shot = use_two_shot(c, dst.bytes(), in_place);
  const index_range chunk = chunk_of(dst.size, n, me, vector_granule<T>);

  switch (c) {
    case collective_id::broadcast:
      if (!two_shot) {
        host_copy(mine, src_of(root), dst.bytes());
      } else {
        for (int k = 0; k < n; ++k)
          host_copy(dst_of(k) + chunk.begin, src_of(root) + chunk.begin, chunk.size * sizeof(T));
      }
      break;
    case collective_id::fcollect:
      for (int j = 1; j <= n; ++j) { // start after this PE, so that the PEs do not all read PE 0 first
        const int k = (me + j) % n;
        host_copy(mine + static_cast<std::size_t>(k) * src.size, src_of(k), src.bytes());
      }
      break;
    case collective_id::alltoall: {
      const std::size_t block = src.size / static_cast<std::size_t>(n);
      for (int j = 1; j <= n; ++j) {
        const int k = (me + j) % n;
        host_copy(mine + static_cast<std::size_t>(k) * block, src_of(k) + static_cast<std::size_t>(me) * block,
                  block * sizeof(T));
      }
      break;
    }
    case collective_id::reduce_scatter:
      host_reduce_range<T>(
          op, [&](int k) { return src_of(k) + static_cast<std::size_t>(me) * dst.size; }, n, [&](int) { return mine; },
          1, dst.size);
      break;
    case collective_id::reduce:
    case collective_id::allreduce: {
      const bool rooted = c == collective_id::reduce;
      if (!two_shot) {
        if (rooted && me != root) break;
        host_reduce_range<T>(
            op, src_of, n, [&](int) { return mine; }, 1, dst.size);
      } else {
        host_reduce_range<T>(
            op, [&](int k) { return src_of(k) + chunk.begin; }, n,
            [&](int j) { return dst_of(rooted ? root : j) + chunk.begin; }, rooted ? 1 : n, chunk.size);
      }
      break;
    }
  }
}

//! A whole collective on the host backend: agreement (the entry barrier), this PE's share of the work, exit barrier.
//! On return this PE's dst holds its result and every PE has finished reading this PE's src.
template <class T, class Op>
void host_collective(team_state& s, collective_id c, sym_buffer<T> dst, sym_buffer<const T> src, const Op& op,
                     int root) {
  world_state& w = s.world();
  const char* what = collective_name(c);
  if (w.kind() != symm::backend::host) {
    SYMM_THROW(errc::unsupported,
               "PE {}: {}(team, ...) was called from host code on the {} backend, where the "
               "symmetric heap is GPU memory; run it on a stream, {}(stream, team, ...), in a file compiled by nvcc, "
               "or in a kernel, {}(group, team_ref, ...)",
               w.my_pe(), what, to_string(w.kind()), what, what);
  }
  check_collective_args(s, c, dst.size, src.size, dst.offset, src.offset, sizeof(T), root);
  w.agree(collective_request{0,
                             collective_kind::team_collective,
                             {collective_call_code<T>(c, op_code_of<Op>, root), static_cast<std::int64_t>(src.size),
                              static_cast<std::int64_t>(dst.size)},
                             w.team_channels()},
          s.group(), what);
  host_collective_work(c, std::span<const int>(s.members()), s.my_index(), dst, src, op, root);
  w.wait_for_all(s.group(), what); // the work's end: its request was agreed above
}

} // namespace detail
SYMM_END_NAMESPACE
