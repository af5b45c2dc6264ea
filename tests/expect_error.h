#pragma once
// Checks that a call fails the way vkgraph promises: a vkgraph::Error of the expected kind whose
// message contains the expected words. Shared by the host and the GPU tests.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "vkgraph/error.h"

namespace vkgraph::testing {

template <typename Fn>
void expect_error(Fn&& fn, ErrorKind kind, std::initializer_list<std::string> needles) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected " << to_string(kind);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.kind(), kind) << msg;
    for (const std::string& n : needles)
      EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' missing from: " << msg;
  }
}

template <typename Fn>
void expect_error(Fn&& fn, ErrorKind kind, const std::string& needle) {
  expect_error(std::forward<Fn>(fn), kind, {needle});
}

}  // namespace vkgraph::testing
