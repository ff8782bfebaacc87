// The control worker: one thread for the controller work a request asks for that blocks
// (creating topics: a metadata-log append, directories and fsyncs, in a cluster the partition
// states' etcd transactions), so that the event loop that received the request goes on serving
// its other connections meanwhile. Kafka's network threads never wait for its controller either:
// the controller runs its operations one at a time on its own event-queue thread.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <type_traits>
#include <utility>

#include "broker/handler.h"

namespace tarn::broker {

class control_worker {
 public:
  control_worker() : pool_(1) {}
  ~control_worker() { join(); }
  control_worker(const control_worker&) = delete;
  control_worker& operator=(const control_worker&) = delete;

  // Runs fn() on the worker, after the work handed over before it, and resumes the calling
  // coroutine on its own executor with what fn returned (an exception fn throws is rethrown
  // there). The caller's frame stays suspended meanwhile, so fn may use what it holds; fn must
  // not touch its connection's state, only thread-safe services.
  template <class F>
  asio::awaitable<std::invoke_result_t<F&>> run(F fn) {
    using result_type = std::invoke_result_t<F&>;
    // Not connected to the caller's cancellation slot: a cancellation the caller's loop emits
    // (its connection closing) would otherwise reach the work's frame on the worker thread while
    // it runs there (a data race ThreadSanitizer reports in asio's cancellation_state). The work
    // is short and always completes; the caller resumes after it.
    co_return co_await asio::co_spawn(
        pool_.get_executor(), [&fn]() -> asio::awaitable<result_type> { co_return fn(); },
        asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable));
  }

  // Waits for the work handed over so far; the server calls it once its loops have stopped,
  // before what that work uses goes away.
  void join() { pool_.join(); }

 private:
  asio::thread_pool pool_;
};

// fn() on the server's control worker, or at once on the caller's thread where there is none
// (the handlers' unit tests).
template <class F>
asio::awaitable<std::invoke_result_t<F&>> run_control_work(broker_services& services, F fn) {
  if (services.control == nullptr) co_return fn();
  co_return co_await services.control->run(std::move(fn));
}

}  // namespace tarn::broker
