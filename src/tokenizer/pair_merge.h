#pragma once
// The merge loop shared by byte-level BPE and llama2.c-style scored
// tokenizers: repeatedly merge the adjacent pair ranked first (leftmost on
// ties) until no pair merges. The two differ only in how a pair is ranked.
// O(n log n): a priority queue of candidates, symbols in a linked list,
// candidates made stale by earlier merges skipped when popped.
#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

namespace fsvd {

struct PairMerge {
  double priority;  // lower merges first
  int32_t merged_id;
};

// `lookup(left_id, right_id)` returns the merge of that pair, or nullopt.
template <typename Lookup>
void merge_pairs(std::vector<int32_t>& ids, const Lookup& lookup) {
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // indices, -1 at the ends
  };
  std::vector<Symbol> sym(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto idx = static_cast<int32_t>(i);
    sym[i] = {ids[i], idx - 1, i + 1 < ids.size() ? idx + 1 : -1};
  }
  struct Candidate {
    double priority;
    int32_t left;  // index of the left symbol
    int32_t left_id, right_id, merged_id;
    bool operator>(const Candidate& o) const { return priority != o.priority ? priority > o.priority : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto push = [&](int32_t left) {
    if (left < 0 || sym[left].next < 0) return;
    const int32_t right = sym[left].next;
    if (const std::optional<PairMerge> m = lookup(sym[left].id, sym[right].id))
      queue.push({m->priority, left, sym[left].id, sym[right].id, m->merged_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(sym.size()); ++i) push(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = sym[c.left];
    // Stale when either side has merged since the candidate was queued (a
    // symbol merged into its left neighbour has id -1).
    if (left.id != c.left_id || left.next < 0 || sym[left.next].id != c.right_id) continue;
    Symbol& right = sym[left.next];
    left.id = c.merged_id;
    right.id = -1;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = c.left;
    push(left.prev);
    push(c.left);
  }
  ids.clear();
  for (int32_t i = sym.empty() ? -1 : 0; i >= 0; i = sym[i].next) ids.push_back(sym[i].id);
}

}  // namespace fsvd
