#include "dist/tcp.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kiln::dist {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMagic = 0x6b6c6e31;  // "kln1"

struct Hello {
  uint32_t magic;
  int32_t rank, world;
};

class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Waits until `fd` is ready for `events` or the deadline passes.
absl::Status wait_for(int fd, short events, Clock::time_point deadline, const std::string& who) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return absl::DeadlineExceededError(absl::StrCat(who, " did not answer in time"));
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, int(std::min<int64_t>(left, 1000)));
    if (r > 0) return absl::OkStatus();
    if (r < 0 && errno != EINTR) return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
  }
}

absl::Status send_all(int fd, const void* data, int64_t bytes, Clock::time_point deadline, const std::string& who) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    if (absl::Status s = wait_for(fd, POLLOUT, deadline, who); !s.ok()) return s;
    const ssize_t n = ::send(fd, p, size_t(bytes), MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat(who, " went away (", std::strerror(errno), ")"));
    p += n;
    bytes -= n;
  }
  return absl::OkStatus();
}

absl::Status recv_all(int fd, void* data, int64_t bytes, Clock::time_point deadline, const std::string& who) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    if (absl::Status s = wait_for(fd, POLLIN, deadline, who); !s.ok()) return s;
    const ssize_t n = ::recv(fd, p, size_t(bytes), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat(who, " went away", n < 0 ? absl::StrCat(" (", std::strerror(errno), ")") : ""));
    p += n;
    bytes -= n;
  }
  return absl::OkStatus();
}

void no_delay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

class TcpCommunicator : public ir::Communicator {
 public:
  TcpCommunicator(int rank, int world, int timeout_s, std::vector<Socket> peers)
      : rank_(rank), world_(world), timeout_(timeout_s), peers_(std::move(peers)) {}
  int rank() const override { return rank_; }
  int size() const override { return world_; }
  std::string name() const override { return "tcp"; }

  absl::Status all_gather_bytes(const void* in, int64_t bytes, void* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    return gather(in, bytes, out, "exchanging bytes");
  }

  absl::Status run(const ir::CollectiveCall& c, const void* in, void* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string what = ir::describe(c.attrs);
    const ir::GatherBytes gather = [&](const void* i, int64_t n, void* o) { return this->gather(i, n, o, what); };
    if (absl::Status s = ir::agree_on_call(c, world_, gather); !s.ok()) return s;
    return ir::run_on_host(c, rank_, in, out, gather);
  }

 private:
  std::string peer(int r) const { return absl::StrCat(r == 0 ? "rank 0 (MASTER_ADDR)" : absl::StrCat("rank ", r), " of the ", world_, "-rank TCP group"); }

  // Through rank 0: [i64 size][bytes] up; [i64 total or -1][everything] down.
  absl::Status gather(const void* in, int64_t bytes, void* out, const std::string& what) {
    if (failed_.ok() == false) return failed_;
    const auto deadline = Clock::now() + std::chrono::seconds(timeout_);
    absl::Status s = rank_ == 0 ? gather_root(in, bytes, out, deadline) : gather_peer(in, bytes, out, deadline);
    if (!s.ok() && (absl::IsDeadlineExceeded(s) || absl::IsUnavailable(s))) {
      failed_ = absl::Status(s.code(), absl::StrCat(what, ": ", s.message(), " (KILN_DIST_TIMEOUT ", timeout_, " s); the group is unusable now"));
      return failed_;
    }
    return s.ok() ? s : absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
  }

  absl::Status gather_root(const void* in, int64_t bytes, void* out, Clock::time_point deadline) {
    char* o = static_cast<char*>(out);
    std::memcpy(o, in, size_t(bytes));
    std::vector<int64_t> sizes(size_t(world_), bytes);
    std::vector<char> spill;
    for (int r = 1; r < world_; ++r) {
      const int fd = peers_[size_t(r)].fd();
      if (absl::Status s = recv_all(fd, &sizes[size_t(r)], 8, deadline, peer(r)); !s.ok()) return s;
      const int64_t n = sizes[size_t(r)];
      if (n < 0 || n > (int64_t(1) << 40)) return absl::InternalError(absl::StrCat(peer(r), " sent a bad frame"));
      char* dst = o + int64_t(r) * bytes;
      if (n != bytes) {
        spill.resize(size_t(n));
        dst = spill.data();
      }
      if (absl::Status s = recv_all(fd, dst, n, deadline, peer(r)); !s.ok()) return s;
    }
    int differs = -1;
    for (int r = 1; r < world_ && differs < 0; ++r)
      if (sizes[size_t(r)] != bytes) differs = r;
    const int64_t total = differs >= 0 ? -1 : bytes * world_;
    for (int r = 1; r < world_; ++r) {
      const int fd = peers_[size_t(r)].fd();
      if (absl::Status s = send_all(fd, &total, 8, deadline, peer(r)); !s.ok()) return s;
      if (total >= 0)
        if (absl::Status s = send_all(fd, o, total, deadline, peer(r)); !s.ok()) return s;
    }
    if (differs >= 0)
      return absl::InvalidArgumentError(absl::StrCat("ranks exchange different byte counts: rank 0 ", bytes, ", rank ", differs, " ",
                                                     sizes[size_t(differs)]));
    return absl::OkStatus();
  }

  absl::Status gather_peer(const void* in, int64_t bytes, void* out, Clock::time_point deadline) {
    const int fd = peers_[0].fd();
    if (absl::Status s = send_all(fd, &bytes, 8, deadline, peer(0)); !s.ok()) return s;
    if (absl::Status s = send_all(fd, in, bytes, deadline, peer(0)); !s.ok()) return s;
    int64_t total = 0;
    if (absl::Status s = recv_all(fd, &total, 8, deadline, peer(0)); !s.ok()) return s;
    if (total < 0) return absl::InvalidArgumentError("ranks exchange different byte counts (rank 0 found them differ)");
    if (total != bytes * world_) return absl::InternalError(absl::StrCat(peer(0), " sent a bad frame"));
    return recv_all(fd, out, total, deadline, peer(0));
  }

  const int rank_, world_, timeout_;
  std::vector<Socket> peers_;  // rank 0: one per other rank (index = rank); others: [0] = rank 0
  std::mutex mu_;
  absl::Status failed_;
};

absl::StatusOr<sockaddr_in> resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0 || !res)
    return absl::InvalidArgumentError(absl::StrCat("MASTER_ADDR '", host, "' does not resolve: ", ::gai_strerror(rc)));
  sockaddr_in a = *reinterpret_cast<sockaddr_in*>(res->ai_addr);
  ::freeaddrinfo(res);
  a.sin_port = htons(uint16_t(port));
  return a;
}

}  // namespace

absl::StatusOr<std::shared_ptr<ir::Communicator>> tcp_group(int rank, int world, const std::string& master_addr, int master_port,
                                                            int timeout_s) {
  if (world < 1 || rank < 0 || rank >= world)
    return absl::InvalidArgumentError(absl::StrCat("kiln::dist: rank ", rank, " of a ", world, "-rank group"));
  if (master_port <= 0 || master_port > 65535) return absl::InvalidArgumentError(absl::StrCat("kiln::dist: MASTER_PORT ", master_port));
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  std::vector<Socket> peers(static_cast<size_t>(world));
  auto addr = resolve(master_addr, master_port);
  if (!addr.ok()) return addr.status();
  const std::string where = absl::StrCat(master_addr, ":", master_port);
  if (rank == 0) {
    Socket listener(::socket(AF_INET, SOCK_STREAM, 0));
    if (listener.fd() < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
    int one = 1;
    ::setsockopt(listener.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in any = *addr;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(listener.fd(), reinterpret_cast<sockaddr*>(&any), sizeof any) != 0)
      return absl::UnavailableError(absl::StrCat("kiln::dist: rank 0 cannot listen on port ", master_port, ": ", std::strerror(errno)));
    if (::listen(listener.fd(), world) != 0) return absl::InternalError(absl::StrCat("listen: ", std::strerror(errno)));
    for (int joined = 1; joined < world;) {
      if (absl::Status s = wait_for(listener.fd(), POLLIN, deadline, "the other ranks"); !s.ok()) {
        std::string missing;
        for (int r = 1; r < world; ++r)
          if (peers[size_t(r)].fd() < 0) absl::StrAppend(&missing, missing.empty() ? "" : ", ", r);
        return absl::DeadlineExceededError(absl::StrCat("kiln::dist: rank(s) ", missing, " of ", world, " did not join at ", where,
                                                        " within ", timeout_s, " s (KILN_DIST_TIMEOUT)"));
      }
      Socket c(::accept(listener.fd(), nullptr, nullptr));
      if (c.fd() < 0) continue;
      no_delay(c.fd());
      Hello h{};
      if (!recv_all(c.fd(), &h, sizeof h, deadline, "a joining rank").ok() || h.magic != kMagic) continue;  // not one of ours
      if (h.world != world || h.rank <= 0 || h.rank >= world || peers[size_t(h.rank)].fd() >= 0)
        return absl::InvalidArgumentError(absl::StrCat("kiln::dist: a process joined as rank ", h.rank, " of ", h.world,
                                                       "; rank 0 expects ranks 1..", world - 1, " of ", world, ", each once"));
      peers[size_t(h.rank)] = std::move(c);
      ++joined;
    }
  } else {
    for (;;) {
      Socket c(::socket(AF_INET, SOCK_STREAM, 0));
      if (c.fd() < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
      if (::connect(c.fd(), reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) == 0) {
        no_delay(c.fd());
        Hello h{kMagic, rank, world};
        if (absl::Status s = send_all(c.fd(), &h, sizeof h, deadline, "rank 0"); !s.ok()) return s;
        peers[0] = std::move(c);
        break;
      }
      if (Clock::now() > deadline)
        return absl::DeadlineExceededError(absl::StrCat("kiln::dist: rank ", rank, " could not reach rank 0 at ", where, " within ",
                                                        timeout_s, " s (KILN_DIST_TIMEOUT)"));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return std::shared_ptr<ir::Communicator>(std::make_shared<TcpCommunicator>(rank, world, timeout_s, std::move(peers)));
}

}  // namespace kiln::dist
