#include "dist/threads.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::dist {
namespace {

// What one rank brings to a meeting: its operand and what it asks for.
struct Post {
  const void* data = nullptr;
  int64_t bytes = -1;        // all_gather_bytes; -1 for a collective
  ir::CollectiveCall call;  // a collective
};

class Meeting {
 public:
  Meeting(int size, int timeout_s) : size_(size), timeout_(timeout_s), posts_(size_t(size)), here_(size_t(size), 0) {}

  int size() const { return size_; }

  // Posts rank's contribution, waits for everyone, runs `use` on all posts (in rank order), and
  // waits again until every rank has finished its `use`.
  absl::Status meet(int rank, const Post& post, const std::string& what,
                    const std::function<absl::Status(const std::vector<Post>&)>& use) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!failed_.ok()) return failed_;
      posts_[size_t(rank)] = post;
      if (absl::Status s = barrier(&lock, rank, what); !s.ok()) return s;
    }
    absl::Status used = use(posts_);
    std::unique_lock<std::mutex> lock(mu_);
    if (absl::Status s = barrier(&lock, rank, what); !s.ok()) return s;
    return used;
  }

 private:
  absl::Status barrier(std::unique_lock<std::mutex>* lock, int rank, const std::string& what) {
    const uint64_t gen = generation_;
    here_[size_t(rank)] = 1;
    if (++arrived_ == size_) {
      arrived_ = 0;
      std::fill(here_.begin(), here_.end(), 0);
      ++generation_;
      cv_.notify_all();
      return absl::OkStatus();
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_);
    while (generation_ == gen && failed_.ok())
      if (cv_.wait_until(*lock, deadline) == std::cv_status::timeout && generation_ == gen && failed_.ok()) {
        std::vector<int> missing;
        for (int r = 0; r < size_; ++r)
          if (!here_[size_t(r)]) missing.push_back(r);
        failed_ = absl::DeadlineExceededError(absl::StrCat(
            what, ": rank", missing.size() > 1 ? "s " : " ", absl::StrJoin(missing, ", "), " of the ", size_,
            "-rank thread group did not join within ", timeout_, " s (KILN_DIST_TIMEOUT); the group is unusable now"));
        cv_.notify_all();
      }
    return generation_ == gen ? failed_ : absl::OkStatus();
  }

  const int size_, timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Post> posts_;
  std::vector<char> here_;  // who has reached the current barrier
  int arrived_ = 0;
  uint64_t generation_ = 0;
  absl::Status failed_;
};

class ThreadCommunicator : public ir::Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<Meeting> m, int rank) : m_(std::move(m)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return m_->size(); }
  std::string name() const override { return "threads"; }

  absl::Status all_gather_bytes(const void* in, int64_t bytes, void* out) override {
    Post p;
    p.data = in;
    p.bytes = bytes;
    return m_->meet(rank_, p, "exchanging bytes", [&](const std::vector<Post>& all) {
      for (size_t r = 0; r < all.size(); ++r)
        if (all[r].bytes != bytes)
          return absl::InvalidArgumentError(absl::StrCat("ranks exchange different byte counts: rank ", rank_, " ", bytes,
                                                         ", rank ", r, " ", all[r].bytes));
      for (size_t r = 0; r < all.size(); ++r)
        std::memcpy(static_cast<char*>(out) + int64_t(r) * bytes, all[r].data, size_t(bytes));
      return absl::OkStatus();
    });
  }

  absl::Status run(const ir::CollectiveCall& c, const void* in, void* out) override {
    Post p;
    p.data = in;
    p.call = c;
    return m_->meet(rank_, p, ir::describe(c.attrs), [&](const std::vector<Post>& all) {
      std::vector<ir::CollectiveCall> calls;
      std::vector<const void*> operands;
      for (const Post& q : all) {
        if (q.bytes >= 0) return absl::InvalidArgumentError(absl::StrCat(ir::describe(c.attrs), ": another rank is exchanging bytes"));
        calls.push_back(q.call);
        operands.push_back(q.data);
      }
      if (absl::Status s = ir::check_same_call(calls); !s.ok()) return s;
      ir::collective_from_all(c, rank_, operands, out);
      return absl::OkStatus();
    });
  }

 private:
  std::shared_ptr<Meeting> m_;
  int rank_;
};

}  // namespace

std::vector<std::shared_ptr<ir::Communicator>> make_thread_group(int size, int timeout_s) {
  auto m = std::make_shared<Meeting>(size, timeout_s);
  std::vector<std::shared_ptr<ir::Communicator>> out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_shared<ThreadCommunicator>(m, r));
  return out;
}

}  // namespace kiln::dist
