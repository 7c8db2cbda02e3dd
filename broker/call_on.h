#pragma once
// Running a piece of work on another strand from a coroutine, and coming back.
#include <boost/asio.hpp>
#include <type_traits>
#include <utility>

namespace sluice::broker {

namespace asio = boost::asio;

/// Runs `f()` on `executor` (typically a partition's strand) and resumes the calling coroutine on its own
/// executor with the result: `R r = co_await call_on(strand, f);`. `f` must return a non-void,
/// move-constructible value. Two posts per call; no locks. Used wherever a handler needs state owned by
/// another strand (DESIGN.md §3). Not itself a coroutine: the executor and `f` travel as initiation
/// arguments, owned by the awaitable operation until it completes.
template <typename Executor, typename F>
auto call_on(Executor executor, F f) {
  using R = std::invoke_result_t<F&>;
  static_assert(!std::is_void_v<R>, "call_on needs a value to carry back");
  return asio::async_initiate<decltype(asio::use_awaitable), void(R)>(
      [](auto handler, Executor target, F work) {
        asio::post(target, [work = std::move(work), handler = std::move(handler)]() mutable {
          R value = work();
          auto back = asio::get_associated_executor(handler);
          asio::post(back, [handler = std::move(handler), value = std::move(value)]() mutable {
            std::move(handler)(std::move(value));
          });
        });
      },
      asio::use_awaitable, std::move(executor), std::move(f));
}

}  // namespace sluice::broker
