// symm/version.hpp: the library version, as macros and as constants.
#pragma once

#define SYMM_VERSION_MAJOR 0
#define SYMM_VERSION_MINOR 1
#define SYMM_VERSION_PATCH 0
#define SYMM_VERSION (SYMM_VERSION_MAJOR * 10000 + SYMM_VERSION_MINOR * 100 + SYMM_VERSION_PATCH)

namespace symm {
inline namespace v0 {
inline constexpr int version_major = SYMM_VERSION_MAJOR;
inline constexpr int version_minor = SYMM_VERSION_MINOR;
inline constexpr int version_patch = SYMM_VERSION_PATCH;
} // namespace v0
} // namespace symm
