// Soak: mixed operations on 4 PEs (host backend, processes and threads), every one's effect checked, nothing lost.
//
// Each PE runs epochs of random operations (put, p, put_nbi, get, g, get_nbi, atomics on words it owns and on shared
// counters, put_signal / put_signal_nbi messages, fence, quiet), then a checkpoint (quiet, barriers, an allreduce and
// a full verification). What makes every effect checkable:
//  - data: PE w owns slots [w*S, (w+1)*S) of `data` on every PE and keeps a model of them. Within an epoch each put,
//    p and put_nbi writes slots not written since the last checkpoint, so the checkpoint's read-back of every slot
//    checks every write; each value also encodes writer, target, slot and a sequence number, which the owner checks
//    on its copy (a torn or misdirected write shows). get and g compare with the model at once; get_nbi after its
//    future's wait() or quiet().
//  - owned atomics: PE w alone updates its words of `owned` on every PE, so each fetching atomic's old value, each
//    load and each compare_exchange outcome is known exactly; the final values are read back at the checkpoint.
//  - shared counters: every PE adds to every PE's counters; the checkpoint allreduces what each PE added and each
//    owner compares its counters with the exact totals.
//  - messages: a put_signal into PE t's mailbox for this sender; the receiver checks the whole payload once the
//    signal shows the message's number, and acknowledges it (the sender sends nothing new to t before that).
//  - the checkpoint's ring of p + wait_until and put_signal + signal_wait_until checks itself.
// The PEs report how many operations they issued and how many effects they verified through a shared mapping; the
// test requires the two totals to agree (every operation verified, nothing lost) and prints them.
//
// Both runs (processes, then threads) take about 1 s each on 2 cores, 2-4 s under ASan + UBSan, so the count stays 10^6
// everywhere; SYMM_SOAK_OPS overrides it (a longer soak, or a shorter one on a very slow machine). SYMM_SOAK_SECONDS
// makes it a soak of time instead: epochs go on until PE 0 has run that long (the suite `soak`: 60 s per launch mode).
#include <symm/symm.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <new>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../pe_check.hpp"
#include "catch.hpp"

namespace {

constexpr int soak_pes = 4;
constexpr std::uint64_t default_ops = 1'000'000;
constexpr std::uint64_t ops_per_epoch = 2'500;  // per PE, between checkpoints
constexpr std::size_t slots = 2048;             // S: data slots each PE owns on every PE
constexpr std::size_t owned_words = 64;         // A: atomic words each PE owns on every PE
constexpr std::size_t counter_words = 16;       // C: shared counters per PE (64- and 32-bit)
constexpr std::size_t mailbox_words = 256;      // M: mailbox words per sender on every PE
constexpr std::size_t max_outstanding_nbi = 64; // a quiet() once this many nbi operations are pending

std::uint64_t soak_ops() {
  if (const char* text = std::getenv("SYMM_SOAK_OPS"); text != nullptr && *text != '\0') {
    return std::stoull(text);
  }
  return default_ops;
}

//! SYMM_SOAK_SECONDS, or 0: a soak of a count of operations.
double soak_seconds() {
  const char* text = std::getenv("SYMM_SOAK_SECONDS");
  return text != nullptr && *text != '\0' ? std::stod(text) : 0.0;
}

//! What each PE reports to the test, in memory shared by the forked PEs and the test process.
struct tally {
  std::uint64_t issued[soak_pes];
  std::uint64_t verified[soak_pes];
  std::uint64_t epochs[soak_pes];
};

std::uint64_t mix(std::uint64_t x) { // splitmix64's finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A data value: bits 0-15 the slot, 16-19 the target, 20-23 the writer, 24-63 the writer's sequence number (from 1).
std::uint64_t encode(int writer, int target, std::size_t slot, std::uint64_t seq) {
  return seq << 24 | static_cast<std::uint64_t>(writer) << 20 | static_cast<std::uint64_t>(target) << 16 | slot;
}

std::size_t message_length(int from, int to, std::uint64_t seq) {
  return 1 + mix(seq * 64 + static_cast<std::uint64_t>(from * 8 + to)) % mailbox_words;
}
std::uint64_t message_word(int from, int to, std::uint64_t seq, std::size_t i) {
  return mix(seq << 20 ^ static_cast<std::uint64_t>(from) << 16 ^ static_cast<std::uint64_t>(to) << 12 ^ i);
}

[[noreturn]] void soak_fail(int me, std::uint64_t epoch, const std::string& what) {
  throw std::runtime_error(fmt::format("soak: PE {} in epoch {} (seed {:#x}): {}", me, epoch, symm_test::seed(), what));
}

class soak_pe {
public:
  soak_pe(symm::world& world, std::uint64_t ops)
      : world_(world), me_(world.my_pe()), n_(world.n_pes()), ops_(ops), data_(world, n_ * slots),
        owned_(world, n_ * owned_words), counters_(world, counter_words), counters32_(world, counter_words),
        added_(world, 2 * n_ * counter_words), totals_(world, 2 * n_ * counter_words), mail_(world, n_ * mailbox_words),
        mail_signals_(world, n_), acks_(world, n_), ring_(world, 64), ring_signal_(world), ring_flag_(world),
        go_on_(world), rng_(symm_test::seed() ^ mix(static_cast<std::uint64_t>(me_) + 1)) {
    std::fill(data_.local().begin(), data_.local().end(), 0);
    std::fill(owned_.local().begin(), owned_.local().end(), 0);
    std::fill(counters_.local().begin(), counters_.local().end(), 0);
    std::fill(counters32_.local().begin(), counters32_.local().end(), 0);
    std::fill(acks_.local().begin(), acks_.local().end(), 0);
    ring_flag_.local() = 0;
    model_.assign(static_cast<std::size_t>(n_), std::vector<std::uint64_t>(slots, 0));
    pending_.assign(static_cast<std::size_t>(n_), std::vector<char>(slots, 0));
    owned_model_.assign(static_cast<std::size_t>(n_), std::vector<std::uint64_t>(owned_words, 0));
    added_model_.assign(2 * static_cast<std::size_t>(n_) * counter_words, 0);
    cursor_.assign(static_cast<std::size_t>(n_), 0);
    sent_.assign(static_cast<std::size_t>(n_), 0);
    consumed_.assign(static_cast<std::size_t>(n_), 0);
    world.barrier();
  }

  //! `seconds` > 0: epochs of ops_per_epoch go on until PE 0 has run that long (it decides; every PE follows).
  void run(tally& out, double seconds) {
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t epochs = seconds > 0 ? ~std::uint64_t{0} : (ops_ + ops_per_epoch - 1) / ops_per_epoch;
    for (epoch_ = 1; epoch_ <= epochs; ++epoch_) {
      const std::uint64_t first = (epoch_ - 1) * ops_per_epoch;
      const std::uint64_t count = seconds > 0 ? ops_per_epoch : std::min(ops_per_epoch, ops_ - first);
      // Until `count` operations were issued (a message to a PE that has not consumed the last one is skipped).
      const std::uint64_t target = issued_ + count;
      for (std::uint64_t i = 0; issued_ < target; ++i) {
        one_operation();
        if ((i & 3) == 0) receive_messages();
      }
      checkpoint();
      if (seconds > 0 &&
          !another_epoch(std::chrono::steady_clock::now() - start < std::chrono::duration<double>(seconds))) {
        break;
      }
    }
    out.issued[me_] = issued_;
    out.verified[me_] = verified_;
    out.epochs[me_] = std::min(epoch_, epochs);
  }

private:
  int random_pe() { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n_)); }
  std::size_t random_length(std::size_t max) { return 1 + static_cast<std::size_t>(rng_() % max); }
  std::size_t mine(std::size_t slot) const { return static_cast<std::size_t>(me_) * slots + slot; }
  std::vector<std::uint64_t>& model(int t) { return model_[static_cast<std::size_t>(t)]; }

  void one_operation() {
    const auto choice = rng_() % 100;
    if (choice < 16) put(false);
    else if (choice < 26) p();
    else if (choice < 35) put(true);
    else if (choice < 44) get();
    else if (choice < 51) g();
    else if (choice < 56) get_nbi();
    else if (choice < 68) owned_atomic();
    else if (choice < 79) counter_atomic();
    else if (choice < 94) send_message();
    else if (choice < 97) fence_then_p();
    else do_quiet();
  }

  //! `count` fresh slots (not written since the last checkpoint) on `t`, or none when the epoch used them all.
  std::optional<std::size_t> fresh(int t, std::size_t count) {
    std::size_t& c = cursor_[static_cast<std::size_t>(t)];
    if (c + count > slots) return std::nullopt;
    std::size_t first = c;
    c += count;
    return first;
  }

  std::vector<std::uint64_t> values_for(int t, std::size_t first, std::size_t count) {
    std::vector<std::uint64_t> v(count);
    for (std::size_t i = 0; i < count; ++i)
      v[i] = encode(me_, t, first + i, ++seq_);
    return v;
  }

  void put(bool nbi) {
    const int t = random_pe();
    const std::size_t count = random_length(nbi ? 16 : 8);
    auto first = fresh(t, count);
    if (!first) return get();
    auto values = values_for(t, *first, count);
    std::copy(values.begin(), values.end(), model(t).begin() + static_cast<std::ptrdiff_t>(*first));
    auto dst = symm::remote(data_, t).subspan(mine(*first), count);
    if (nbi) {
      sources_.push_back(std::move(values)); // the source must stay until the put completes
      futures_.push_back(symm::put_nbi(dst, std::span<const std::uint64_t>(sources_.back())));
      for (std::size_t i = 0; i < count; ++i)
        pending_[static_cast<std::size_t>(t)][*first + i] = 1;
      pending_slots_.push_back({t, *first, count});
      if (rng_() % 4 == 0) futures_.back().wait(); // complete now; quiet() later completes the rest
      if (futures_.size() + gets_.size() >= max_outstanding_nbi) do_quiet();
    } else {
      dst = values;
    }
    ++issued_;
    ++writes_this_epoch_;
  }

  void p() {
    const int t = random_pe();
    auto slot = fresh(t, 1);
    if (!slot) return g();
    std::uint64_t v = encode(me_, t, *slot, ++seq_);
    model(t)[*slot] = v;
    symm::remote(data_, t)[mine(*slot)] = v;
    ++issued_;
    ++writes_this_epoch_;
  }

  void fence_then_p() {
    symm::fence();
    p();
  }

  //! A read of `count` slots from `first` on `t` may not race with an nbi put still in flight to them.
  void settle(int t, std::size_t first, std::size_t count) {
    const auto& pending = pending_[static_cast<std::size_t>(t)];
    if (std::any_of(pending.begin() + static_cast<std::ptrdiff_t>(first),
                    pending.begin() + static_cast<std::ptrdiff_t>(first + count), [](char c) { return c != 0; })) {
      do_quiet();
    }
  }

  void compare(int t, std::size_t first, std::span<const std::uint64_t> got, const char* how) {
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (got[i] != model(t)[first + i]) {
        soak_fail(me_, epoch_,
                  fmt::format("{} of my slot {} on PE {} gave {:#x}, expected {:#x}", how, first + i, t, got[i],
                              model(t)[first + i]));
      }
    }
  }

  void get() {
    const int t = random_pe();
    const std::size_t count = random_length(16);
    const std::size_t first = static_cast<std::size_t>(rng_() % (slots - count + 1));
    settle(t, first, count);
    std::vector<std::uint64_t> got(count);
    symm::remote(data_, t).subspan(mine(first), count).get(got);
    compare(t, first, got, "get");
    ++issued_;
    ++verified_;
  }

  void g() {
    const int t = random_pe();
    const std::size_t slot = static_cast<std::size_t>(rng_() % slots);
    settle(t, slot, 1);
    std::uint64_t got = symm::remote(data_, t)[mine(slot)];
    compare(t, slot, std::span(&got, 1), "g");
    ++issued_;
    ++verified_;
  }

  struct pending_get {
    int target;
    std::size_t first;
    std::vector<std::uint64_t> buffer, expected;
    symm::future<> done;
  };

  void get_nbi() {
    const int t = random_pe();
    const std::size_t count = random_length(16);
    // Only slots written this epoch: no put writes them again before the checkpoint, so the value cannot change
    // while the get is in flight.
    const std::size_t written = cursor_[static_cast<std::size_t>(t)];
    if (written < count) return get();
    const std::size_t first = static_cast<std::size_t>(rng_() % (written - count + 1));
    settle(t, first, count);
    auto& g = gets_.emplace_back();
    g.target = t;
    g.first = first;
    g.buffer.assign(count, 0);
    g.expected.assign(model(t).begin() + static_cast<std::ptrdiff_t>(first),
                      model(t).begin() + static_cast<std::ptrdiff_t>(first + count));
    g.done = symm::get_nbi(std::span<std::uint64_t>(g.buffer), symm::remote(data_, t).subspan(mine(first), count));
    ++issued_;
    if (rng_() % 2 == 0) { // complete it through its future; the rest complete through quiet()
      g.done.wait();
      check_get(g);
      gets_.pop_back();
    }
    if (futures_.size() + gets_.size() >= max_outstanding_nbi) do_quiet();
  }

  void check_get(const pending_get& g) {
    for (std::size_t i = 0; i < g.buffer.size(); ++i) {
      if (g.buffer[i] != g.expected[i]) {
        soak_fail(me_, epoch_,
                  fmt::format("get_nbi of my slot {} on PE {} gave {:#x}, expected {:#x}", g.first + i, g.target,
                              g.buffer[i], g.expected[i]));
      }
    }
    ++verified_;
  }

  //! quiet(): completes every nbi put and get; the gets are then checked, and the put slots may be read again.
  void do_quiet() {
    symm::quiet();
    for (auto& f : futures_) {
      if (f.valid() && !f.ready()) soak_fail(me_, epoch_, "a put_nbi is not complete after quiet()");
    }
    for (auto& g : gets_) {
      if (!g.done.ready()) soak_fail(me_, epoch_, "a get_nbi is not complete after quiet()");
      check_get(g);
    }
    gets_.clear();
    futures_.clear();
    sources_.clear();
    for (auto [t, first, count] : pending_slots_) {
      auto& pending = pending_[static_cast<std::size_t>(t)];
      std::fill(pending.begin() + static_cast<std::ptrdiff_t>(first),
                pending.begin() + static_cast<std::ptrdiff_t>(first + count), 0);
    }
    pending_slots_.clear();
    ++issued_;
    ++verified_; // every completion it promised was checked above (the puts' data at the checkpoint)
  }

  //! An atomic on one of this PE's words of `owned` on a random PE: nobody else touches it, so the model is exact.
  void owned_atomic() {
    const int t = random_pe();
    const std::size_t j = static_cast<std::size_t>(rng_() % owned_words);
    std::uint64_t& m = owned_model_[static_cast<std::size_t>(t)][j];
    const std::uint64_t before = m;
    auto word = symm::remote(owned_, t)[static_cast<std::size_t>(me_) * owned_words + j];
    const std::uint64_t v = rng_();
    std::uint64_t old = before; // what the operation saw (a store sees nothing)
    switch (rng_() % 9) {
      case 0:
        word.store(v, cuda::memory_order_release);
        m = v;
        break;
      case 1:
        old = word.exchange(v);
        m = v;
        break;
      case 2: old = word.load(cuda::memory_order_acquire); break;
      case 3: { // succeeds: expected is the value
        std::uint64_t expected = before;
        if (!word.compare_exchange(expected, v)) soak_fail(me_, epoch_, "compare_exchange with the right value failed");
        old = expected;
        m = v;
        break;
      }
      case 4: { // fails: expected is not the value, which comes back in `expected`
        std::uint64_t expected = before + 1;
        if (word.compare_exchange(expected, v)) soak_fail(me_, epoch_, "compare_exchange with a wrong value succeeded");
        old = expected;
        break;
      }
      case 5:
        old = word.fetch_add(v % 1000, cuda::memory_order_relaxed);
        m += v % 1000;
        break;
      case 6:
        old = word.fetch_xor(v);
        m ^= v;
        break;
      case 7:
        old = word.fetch_min(v);
        m = std::min(m, v);
        break;
      default:
        old = word.fetch_or(v & 0xff);
        m |= v & 0xff;
        break;
    }
    if (old != before) {
      soak_fail(me_, epoch_,
                fmt::format("an atomic on my word {} of PE {} saw {:#x}, expected {:#x}", j, t, old, before));
    }
    ++issued_;
    ++verified_;
  }

  //! An addition to a shared counter on a random PE (every PE adds to every counter): checked by exact totals.
  void counter_atomic() {
    const int t = random_pe();
    const std::size_t c = static_cast<std::size_t>(rng_() % counter_words);
    const std::uint64_t k = 1 + rng_() % 1000;
    bool narrow = false; // the 32-bit counters
    switch (rng_() % 5) {
      case 0: (void) symm::remote(counters_, t)[c].fetch_add(k); break;
      case 1: symm::remote(counters_, t)[c].add(k, cuda::memory_order_relaxed); break;
      case 2: { // a compare_exchange loop: another PE may add in between
        auto word = symm::remote(counters_, t)[c];
        std::uint64_t expected = word.load();
        while (!word.compare_exchange(expected, expected + k)) {
        }
        break;
      }
      case 3:
        (void) symm::remote(counters32_, t)[c].fetch_add(static_cast<std::uint32_t>(k));
        narrow = true;
        break;
      default:
        symm::remote(counters32_, t)[c].add(static_cast<std::uint32_t>(k), cuda::memory_order_relaxed);
        narrow = true;
        break;
    }
    added_model_[(static_cast<std::size_t>(t) * 2 + (narrow ? 1 : 0)) * counter_words + c] += k;
    ++issued_;
    ++counter_ops_this_epoch_;
  }

  //! A put_signal into t's mailbox for this PE, once t has acknowledged the previous one.
  void send_message() {
    const int t = random_pe();
    auto& sent = sent_[static_cast<std::size_t>(t)];
    const std::uint64_t acked = symm::remote(acks_, me_)[static_cast<std::size_t>(t)].load(cuda::memory_order_acquire);
    if (acked != sent) return receive_messages(); // the previous message is not consumed yet
    const std::uint64_t seq = sent + 1;
    const std::size_t length = message_length(me_, t, seq);
    std::vector<std::uint64_t> payload(length);
    for (std::size_t i = 0; i < length; ++i)
      payload[i] = message_word(me_, t, seq, i);
    auto dst = symm::remote(mail_, t).subspan(static_cast<std::size_t>(me_) * mailbox_words, length);
    auto sig = symm::remote(mail_signals_[static_cast<std::size_t>(me_)], t);
    const bool set = rng_() % 2 == 0;
    const std::uint64_t value = set ? seq : 1; // the signal becomes seq either way
    const auto op = set ? symm::signal_op::set : symm::signal_op::add;
    if (rng_() % 3 == 0) {
      auto f = symm::put_signal_nbi(dst, std::span<const std::uint64_t>(payload), sig, value, op);
      f.wait();
    } else {
      symm::put_signal(dst, std::span<const std::uint64_t>(payload), sig, value, op);
    }
    sent = seq;
    ++issued_; // verified by the receiver
  }

  //! Checks every message that has arrived (at most one per sender) and acknowledges it.
  void receive_messages() {
    for (int src = 0; src < n_; ++src) {
      auto& consumed = consumed_[static_cast<std::size_t>(src)];
      const auto sig = mail_signals_[static_cast<std::size_t>(src)];
      const std::uint64_t now = symm::signal_fetch(sig);
      if (now == consumed) continue;
      const std::uint64_t seq = consumed + 1;
      if (now != seq) soak_fail(me_, epoch_, fmt::format("the signal of PE {} shows {}, expected {}", src, now, seq));
      if (symm::signal_wait_until(sig, symm::cmp::ge, seq) != seq) soak_fail(me_, epoch_, "signal_wait_until");
      const std::size_t length = message_length(src, me_, seq);
      const std::uint64_t* box = mail_.local().data() + static_cast<std::size_t>(src) * mailbox_words;
      for (std::size_t i = length; i-- > 0;) { // from the end: what a copy writes last
        if (box[i] != message_word(src, me_, seq, i)) {
          soak_fail(me_, epoch_,
                    fmt::format("message {} from PE {}: word {} of {} is {:#x}, expected {:#x} (the signal came "
                                "before the data)",
                                seq, src, i, length, box[i], message_word(src, me_, seq, i)));
        }
      }
      consumed = seq;
      symm::remote(acks_, src)[static_cast<std::size_t>(me_)].store(seq, cuda::memory_order_release);
      ++verified_; // the sender's put_signal
    }
  }

  //! PE 0's decision, `more`, as every PE sees it (a put to each PE, then a barrier).
  bool another_epoch(bool more) {
    if (me_ == 0) {
      for (int t = 0; t < n_; ++t)
        symm::remote(go_on_, t) = more ? 1u : 0u;
    }
    world_.barrier();
    return go_on_.local() != 0;
  }

  void checkpoint() {
    // 1. Everything this PE issued is complete; the barrier makes everyone's complete.
    do_quiet();
    world_.barrier();
    // 2. Messages: at most one per sender is unconsumed; take it, then every message sent is acknowledged.
    receive_messages();
    world_.barrier();
    for (int t = 0; t < n_; ++t) {
      const std::uint64_t acked = acks_.local()[static_cast<std::size_t>(t)];
      if (acked != sent_[static_cast<std::size_t>(t)]) {
        soak_fail(me_, epoch_,
                  fmt::format("PE {} acknowledged {} of my {} messages", t, acked, sent_[static_cast<std::size_t>(t)]));
      }
    }
    // 3. Counters: the allreduce of what every PE added gives each owner its exact totals.
    std::copy(added_model_.begin(), added_model_.end(), added_.local().begin());
    symm::allreduce(world_.team(), totals_, added_, symm::plus{});
    const std::size_t base = static_cast<std::size_t>(me_) * 2 * counter_words;
    for (std::size_t c = 0; c < counter_words; ++c) {
      const std::uint64_t want = totals_.local()[base + c];
      const std::uint32_t want32 = static_cast<std::uint32_t>(totals_.local()[base + counter_words + c]);
      if (counters_.local()[c] != want || counters32_.local()[c] != want32) {
        soak_fail(me_, epoch_,
                  fmt::format("counter {} holds {} (32-bit: {}), but the PEs added {} ({})", c, counters_.local()[c],
                              counters32_.local()[c], want, want32));
      }
    }
    verified_ += counter_ops_this_epoch_ + 1; // every addition, and the allreduce
    issued_ += 1;
    counter_ops_this_epoch_ = 0;
    // 4. Data: read back all of this PE's slots and owned words on every PE; check every value on this PE's copy.
    std::vector<std::uint64_t> got(slots), got_owned(owned_words);
    for (int t = 0; t < n_; ++t) {
      symm::remote(data_, t).subspan(mine(0), slots).get(got);
      compare(t, 0, got, "the checkpoint's get");
      symm::remote(owned_, t).subspan(static_cast<std::size_t>(me_) * owned_words, owned_words).get(got_owned);
      if (got_owned != owned_model_[static_cast<std::size_t>(t)]) {
        soak_fail(me_, epoch_, fmt::format("my atomic words on PE {} differ from their model", t));
      }
    }
    verified_ += writes_this_epoch_;
    writes_this_epoch_ = 0;
    for (int w = 0; w < n_; ++w) {
      for (std::size_t s = 0; s < slots; ++s) {
        const std::uint64_t v = data_.local()[static_cast<std::size_t>(w) * slots + s];
        if (v != 0 && ((v & 0xffff) != s || ((v >> 16) & 0xf) != static_cast<std::uint64_t>(me_) ||
                       ((v >> 20) & 0xf) != static_cast<std::uint64_t>(w))) {
          soak_fail(me_, epoch_,
                    fmt::format("slot {} of PE {} holds {:#x}: not a value PE {} wrote there", s, w, v, w));
        }
      }
    }
    // 5. A ring: p + wait_until and put_signal + signal_wait_until to the right-hand neighbour.
    const int right = (me_ + 1) % n_, left = (me_ + n_ - 1) % n_;
    const auto e32 = static_cast<std::uint32_t>(epoch_);
    symm::remote(ring_flag_, right) = e32;
    if (symm::wait_until(ring_flag_, symm::cmp::ge, e32) != e32) soak_fail(me_, epoch_, "ring wait_until");
    std::vector<std::uint64_t> ring(64);
    for (std::size_t i = 0; i < ring.size(); ++i)
      ring[i] = message_word(me_, right, epoch_, i + 1000);
    symm::put_signal(symm::remote(ring_, right), ring, symm::remote(ring_signal_, right), epoch_, symm::signal_op::set);
    if (symm::signal_wait_until(ring_signal_, symm::cmp::eq, epoch_) != epoch_) soak_fail(me_, epoch_, "ring signal");
    for (std::size_t i = 0; i < ring.size(); ++i) {
      if (ring_.local()[i] != message_word(left, me_, epoch_, i + 1000)) soak_fail(me_, epoch_, "ring payload");
    }
    issued_ += 2;
    verified_ += 2;
    // 6. Nobody writes the next epoch's values before everyone has checked this one's.
    world_.barrier();
    issued_ += 3; // the three barriers, checked by what follows each
    verified_ += 3;
    std::fill(cursor_.begin(), cursor_.end(), 0);
  }

  symm::world& world_;
  int me_, n_;
  std::uint64_t ops_;
  symm::array<std::uint64_t> data_, owned_, counters_;
  symm::array<std::uint32_t> counters32_;
  symm::array<std::uint64_t> added_, totals_, mail_;
  symm::signal_array mail_signals_;
  symm::array<std::uint64_t> acks_; // on the sender: acks_[t] = how many of its messages PE t has consumed
  symm::array<std::uint64_t> ring_;
  symm::signal ring_signal_;
  symm::scalar<std::uint32_t> ring_flag_;
  symm::scalar<std::uint32_t> go_on_; // PE 0's word: another epoch (1) or the end (0)
  std::mt19937_64 rng_;

  std::vector<std::vector<std::uint64_t>> model_;       // [target][slot]: what this PE wrote to its slots there
  std::vector<std::vector<char>> pending_;              // [target][slot]: an nbi put in flight
  std::vector<std::vector<std::uint64_t>> owned_model_; // [target][word]
  std::vector<std::uint64_t> added_model_;              // [target][0: 64-bit, 1: 32-bit][counter]: what this PE added
  std::vector<std::size_t> cursor_;                     // [target]: next fresh slot this epoch
  std::vector<std::uint64_t> sent_, consumed_;
  struct slot_range {
    int target;
    std::size_t first, count;
  };
  std::vector<slot_range> pending_slots_;
  std::deque<std::vector<std::uint64_t>> sources_;
  std::vector<symm::future<>> futures_;
  std::deque<pending_get> gets_;

  std::uint64_t epoch_ = 0, seq_ = 0;
  std::uint64_t issued_ = 0, verified_ = 0, writes_this_epoch_ = 0, counter_ops_this_epoch_ = 0;
};

} // namespace

TEST_CASE("soak: mixed operations on 4 PEs (10^6, or SYMM_SOAK_SECONDS of them), every effect verified, nothing lost",
          "[soak]") {
  const double seconds = soak_seconds();
  const std::uint64_t total = seconds > 0 ? 0 : soak_ops();
  const std::uint64_t per_pe = (total + soak_pes - 1) / soak_pes;
  const symm::world_options host{.backend = symm::backend::host, .heap_size = std::size_t{8} << 20};
  CAPTURE(symm_test::seed(), total, seconds);
  // As processes (the way symmrun runs PEs), then as threads of this process.
  for (auto mode : {symm::launch_mode::processes, symm::launch_mode::threads}) {
    const char* mode_name = mode == symm::launch_mode::processes ? "processes" : "threads";
    CAPTURE(mode_name);
    // Shared with forked PEs: each writes its own entries once, the test reads them after launch returns.
    void* shared = ::mmap(nullptr, sizeof(tally), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(shared != MAP_FAILED);
    auto* result = new (shared) tally{};
    const auto start = std::chrono::steady_clock::now();
    REQUIRE_NOTHROW(symm::launch(soak_pes, [&](symm::world& world) { soak_pe(world, per_pe).run(*result, seconds); },
                                 {.mode = mode, .world = host}));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::uint64_t issued = 0, verified = 0;
    for (int pe = 0; pe < soak_pes; ++pe) {
      CAPTURE(pe);
      REQUIRE(result->epochs[pe] == (seconds > 0 ? result->epochs[0] : (per_pe + ops_per_epoch - 1) / ops_per_epoch));
      issued += result->issued[pe];
      verified += result->verified[pe];
    }
    const std::uint64_t epochs = result->epochs[0];
    ::munmap(shared, sizeof(tally));
    std::printf("soak: %d PEs as %s: %llu operations issued, %llu verified, in %llu epochs, %.1f s\n", soak_pes,
                mode_name, static_cast<unsigned long long>(issued), static_cast<unsigned long long>(verified),
                static_cast<unsigned long long>(epochs), took);
    std::fflush(stdout);
    if (seconds > 0) REQUIRE(took >= seconds); // it ran for the time asked
    REQUIRE(issued >= total);                  // the random operations, plus each checkpoint's own
    REQUIRE(verified == issued);               // every effect checked: nothing lost
  }
}
