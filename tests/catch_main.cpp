// tests/catch_main.cpp: Catch2 2's main(), compiled once (tests/meson.build). Catch2 3 brings its own
// (catch2-with-main), and this file is not built.
#define CATCH_CONFIG_MAIN
#include "catch.hpp"
