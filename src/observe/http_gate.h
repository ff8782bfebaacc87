// http_gate: cpp-httplib's server behind a gate that lets a connection reach a worker only once
// its whole request (line, headers and a declared body up to the cap) has arrived, within a
// deadline from its accept. One poll() thread does the waiting, so slow clients (slowloris, a body
// sent a byte at a time) hold a descriptor, never one of the few workers; past the cap on open
// connections a new one is answered 503 at once. cpp-httplib 0.11 times out each read, not a
// request, so a client sending a byte every few seconds would otherwise keep a worker forever.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace tarn::observe {

struct gate_limits {
  size_t workers = 4;                 // threads running handlers
  size_t max_connections = 512;       // admitted and not yet closed (waiting, queued, served)
  size_t max_head_bytes = 16 * 1024;  // request line and headers; beyond, the gate answers 400
  size_t max_body_bytes = 64 * 1024;  // a larger declared body goes to httplib (413)
  std::chrono::milliseconds request_timeout{5000};  // accept -> whole request arrived
  std::chrono::milliseconds io_timeout{5000};       // each read or write of a worker
  std::chrono::milliseconds answer_timeout{10000};  // a worker's whole exchange
  std::chrono::milliseconds linger_timeout{2000};   // answered -> the client's end of input
};

// What the gate did (/metrics exports it as tarn_http_*).
struct gate_counts {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused{0};    // 503: max_connections open
  std::atomic<uint64_t> timed_out{0};  // 408: the request did not arrive in time
};

// An httplib::Server whose accepted sockets go through the gate. Routes and handlers are set as
// on any httplib::Server; bind as usual, then listen_after_bind(). Each connection serves one
// request (Connection: close): a kept-alive connection would wait for its next request on a
// worker again.
class gated_server : public httplib::Server {
 public:
  explicit gated_server(gate_limits limits);
  ~gated_server() override;
  gated_server(const gated_server&) = delete;
  gated_server& operator=(const gated_server&) = delete;

  // After bind_to_port: a listen backlog of `backlog` (cpp-httplib 0.11 listens with 5, so a
  // burst of connections would see SYNs dropped and retried a second later).
  void set_backlog(int backlog);
  // After httplib's stop() and the end of listen_after_bind(): closes the connections still
  // waiting, lets the workers finish the requests they serve and joins the threads.
  void close_gate();

  const gate_counts& counts() const { return counts_; }

 private:
  // A connection whose request is arriving: the bytes read so far (the gate reads them off the
  // socket, so poll() only wakes for new ones) go to the worker with it.
  struct waiting {
    int fd = -1;
    std::chrono::steady_clock::time_point deadline;
    std::string bytes;
    size_t head_end = 0;  // 0 until the blank line that ends the headers has arrived
    size_t need = 0;      // bytes of the whole request, once head_end is known
  };

  // A connection being closed lingering (see linger()), watched by the poll thread.
  struct lingering {
    int fd = -1;
    std::chrono::steady_clock::time_point deadline;
  };

  // Called by httplib's acceptor thread for each accepted socket (through an inline task queue).
  bool process_and_close_socket(socket_t sock) override;
  void admit(int fd);
  // Puts an open connection on `list` (incoming_ or lingering_, under mu_) and wakes the poll
  // thread; once the gate is closing, closes it instead.
  void hand_to_poller(std::vector<int>& list, int fd);
  void poll_loop();
  // Reads what `w`'s socket has. False when the connection is over (closed by the peer, an error,
  // or it cannot become a request); `arrived` when the request is whole, or past a cap that
  // httplib answers itself (a 400 for a header line too long, a 413 for a body too large).
  bool read_some(waiting& w, bool& arrived);
  void work();
  void serve(waiting w);
  void finish(int fd);  // closes an admitted connection
  // An answered connection: sends FIN, then the poll thread reads and drops what the client still
  // sends until its end of input (or linger_timeout) before closing. Closing with unread bytes
  // would answer them with a reset, which can destroy the answer in the client's receive queue
  // (a 400 for a 1 MiB header, a 413 for a body past the cap): a lingering close, as Apache's.
  void linger(int fd);
  void answer_and_close(int fd, std::string_view answer);
  // Poll thread: writes a whole answer the gate gives itself (400, 408) and closes lingering.
  void answer_lingering(int fd, std::string_view answer, std::chrono::steady_clock::time_point now,
                        std::vector<lingering>& lingers);

  const gate_limits limits_;
  gate_counts counts_;
  std::atomic<size_t> open_{0};
  int wake_fd_ = -1;  // eventfd: admit() or stop wakes the poll thread

  std::mutex mu_;
  std::condition_variable ready_cv_;
  std::vector<int> incoming_;   // admitted, not yet seen by the poll thread
  std::vector<int> lingering_;  // answered, not yet seen by the poll thread
  std::deque<waiting> ready_;   // whole requests waiting for a worker
  bool stopping_ = false;

  std::thread poller_;
  std::vector<std::thread> workers_;
};

}  // namespace tarn::observe
