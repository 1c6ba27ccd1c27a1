// Where recorded nodes live: a per-thread free list of node-sized blocks.
//
// Every recorded op allocates one LazyNode (with its shared_ptr control block, one block via
// std::allocate_shared) and a chain of ops frees them in bursts when it dies, which is where
// the general allocator is slowest (glibc's per-thread cache keeps 7 blocks of a size). The pool
// keeps up to kKeep freed blocks per thread and hands them back to the next nodes recorded on
// that thread; beyond that, and for a thread that is exiting, blocks go to operator delete. A
// node freed on another thread than it was made on simply joins that thread's list. Under ASan
// and TSan every node comes from operator new, so that they see each node's lifetime.
#pragma once

#include <cstddef>
#include <new>

#include "frontend/fast_tls.h"

namespace kiln::detail {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kNodePoolOn = false;
#else
inline constexpr bool kNodePoolOn = true;
#endif

template <size_t Size>
class NodeFreeList {
 public:
  static constexpr size_t kKeep = 4096;

  static void* take() {
    if (!kNodePoolOn || exited_) return ::operator new(Size);
    NodeFreeList& l = local();
    if (l.head_) {
      Block* b = l.head_;
      l.head_ = b->next;
      --l.count_;
      return b;
    }
    return ::operator new(Size);
  }
  static void give(void* p) {
    if (!kNodePoolOn || exited_) return ::operator delete(p);
    NodeFreeList& l = local();
    if (l.count_ >= kKeep) return ::operator delete(p);
    l.head_ = new (p) Block{l.head_};
    ++l.count_;
  }

  ~NodeFreeList() {
    exited_ = true;  // nodes freed later in this thread's teardown bypass the list
    while (head_) {
      Block* b = head_;
      head_ = b->next;
      ::operator delete(b);
    }
  }

 private:
  struct Block {
    Block* next;
  };
  static_assert(Size >= sizeof(Block));
  static NodeFreeList& local() {
    static KILN_FAST_TLS NodeFreeList l;
    return l;
  }
  static inline KILN_FAST_TLS bool exited_ = false;
  Block* head_ = nullptr;
  size_t count_ = 0;
};

// The allocator std::allocate_shared uses for nodes (stateless: every instance is equal).
template <class T>
struct NodeAllocator {
  using value_type = T;
  NodeAllocator() = default;
  template <class U>
  NodeAllocator(const NodeAllocator<U>&) {}
  T* allocate(size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(NodeFreeList<sizeof(T)>::take());
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) return ::operator delete(p);
    NodeFreeList<sizeof(T)>::give(p);
  }
  template <class U>
  bool operator==(const NodeAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const NodeAllocator<U>&) const { return false; }
};

}  // namespace kiln::detail
