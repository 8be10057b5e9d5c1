// RefManager, history: ResolveRef (names, tags, commit prefixes and their
// "~N"/"^N" modifiers), Log (a page resumes from the walk's frontier where the
// previous one stopped) and the merge base of two commits.
#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <regex>
#include <unordered_set>

#include "catalog/catalog_internal.h"
#include "catalog/catalog_refs_internal.h"
#include "catalog/keys.h"
#include "catalog/ref_manager.h"
#include "kv/kv.h"

namespace sediment::catalog {

using internal::ClampAmount;
using internal::ParseBranch;
using refs_internal::kMaxAncestorCount;

namespace {

// Splits "name~N^M..." into the name (in *ref) and its modifiers: "~N" (N-th
// first parent), "^N" (N-th parent).
Result<std::vector<std::pair<char, int>>> SplitModifiers(const std::string& ref_in, std::string* ref) {
  std::vector<std::pair<char, int>> mods;
  *ref = ref_in;
  size_t mod_pos = ref->find_first_of("~^");
  if (mod_pos == std::string::npos) return mods;
  std::string tail = ref->substr(mod_pos);
  ref->resize(mod_pos);
  for (size_t i = 0; i < tail.size();) {
    char op = tail[i++];
    if (op != '~' && op != '^') return InvalidArgument(fmt::format("invalid ref \"{}\"", ref_in));
    size_t j = i;
    int64_t n = 0;
    while (j < tail.size() && isdigit(static_cast<unsigned char>(tail[j]))) {
      n = std::min(n * 10 + (tail[j] - '0'), kMaxAncestorCount + 1);  // saturates: never overflows
      ++j;
    }
    if (j == i) n = 1;
    if (n > kMaxAncestorCount) {
      return InvalidArgument(fmt::format("invalid ref \"{}\": {}{} is too large (at most {}{})", ref_in, op,
                                         tail.substr(i, j - i), op, kMaxAncestorCount));
    }
    mods.emplace_back(op, static_cast<int>(n));
    i = j;
  }
  return mods;
}

}  // namespace

Result<ResolvedRef> RefManager::ResolveRef(const std::string& repo, const std::string& ref_in) {
  if (ref_in.empty()) return InvalidArgument("empty ref");
  // Modifiers "~N", "^N"; a trailing "@" means the committed state of a branch.
  std::string ref;
  ARROW_ASSIGN_OR_RAISE(auto mods, SplitModifiers(ref_in, &ref));
  bool committed_only = false;
  if (!ref.empty() && ref.back() == '@') {
    committed_only = true;
    ref.pop_back();
  }
  ResolvedRef out;
  if (!ValidateBranchName(ref).ok() && ValidateTagName(ref).ok()) {  // only a tag can have this name
    auto tag = kv_->Get(TagKey(repo, ref));
    if (tag.ok()) {
      out.commit_id = *tag;
    } else if (!IsNotFound(tag.status())) {
      return tag.status();
    }
  } else if (ValidateBranchName(ref).ok()) {
    auto raw = kv_->Get(BranchKey(repo, ref));
    if (raw.ok()) {
      ARROW_ASSIGN_OR_RAISE(auto b, ParseBranch(ref, *raw));
      out.commit_id = b.commit_id;
      if (!committed_only && mods.empty()) out.branch = std::move(b);
    } else if (!IsNotFound(raw.status())) {
      return raw.status();
    } else {
      auto tag = kv_->Get(TagKey(repo, ref));
      if (tag.ok()) {
        out.commit_id = *tag;
      } else if (!IsNotFound(tag.status())) {
        return tag.status();
      }
    }
  }
  if (out.commit_id.empty()) {
    static const std::regex hex("^[0-9a-f]{4,64}$");
    if (std::regex_match(ref, hex)) {
      ARROW_ASSIGN_OR_RAISE(auto page, kv_->Scan(CommitKey(repo, ref), "", 2));
      if (page.items.size() == 1) out.commit_id = page.items[0].key.substr(CommitsPrefix(repo).size());
      if (page.items.size() > 1) return InvalidArgument(fmt::format("ambiguous commit prefix \"{}\"", ref));
    }
  }
  if (out.commit_id.empty()) return NotFound(fmt::format("ref \"{}\" not found in \"{}\"", ref_in, repo));
  for (auto [op, n] : mods) {
    ARROW_ASSIGN_OR_RAISE(auto c, GetCommit(repo, out.commit_id));
    if (op == '^') {
      if (n == 0) continue;
      if (n > static_cast<int>(c.parents.size())) return NotFound(fmt::format("ref \"{}\" not found", ref_in));
      out.commit_id = c.parents[n - 1];
    } else {
      for (int i = 0; i < n; ++i) {
        if (c.parents.empty()) return NotFound(fmt::format("ref \"{}\" not found", ref_in));
        out.commit_id = c.parents[0];
        if (i + 1 < n) {
          ARROW_ASSIGN_OR_RAISE(c, GetCommit(repo, out.commit_id));
        }
      }
    }
  }
  return out;
}

namespace {

constexpr size_t kLogCursors = 4096;

std::string LogCursorKey(const std::string& repo, const std::string& head, const std::string& after,
                         bool first_parent) {
  return fmt::format("{}\n{}\n{}\n{}", repo, head, after, first_parent ? 1 : 0);
}

}  // namespace

Result<Page<Commit>> RefManager::Log(const std::string& repo_id, const std::string& ref, const std::string& after,
                                     int64_t amount_in, bool first_parent) {
  ARROW_RETURN_NOT_OK(GetRepository(repo_id).status());
  ARROW_ASSIGN_OR_RAISE(auto resolved, ResolveRef(repo_id, ref));
  int64_t amount = ClampAmount(amount_in);
  // Newest generation first, then newest date: a topological order of the
  // history (a parent's generation is below its children's), so the walk
  // lists every commit after all of its descendants.
  auto cmp = [](const Commit& a, const Commit& b) {
    if (a.generation != b.generation) return a.generation < b.generation;
    if (a.creation_date != b.creation_date) return a.creation_date < b.creation_date;
    return a.id < b.id;
  };
  std::vector<Commit> heap;  // a max-heap by cmp: the next commit to list on top
  std::unordered_set<std::string> seen;
  auto push = [&](const std::string& id) -> Status {
    if (!seen.insert(id).second) return Status::OK();
    ARROW_ASSIGN_OR_RAISE(auto c, GetCommit(repo_id, id));
    heap.push_back(std::move(c));
    std::push_heap(heap.begin(), heap.end(), cmp);
    return Status::OK();
  };
  // Resume where the previous page stopped, if this server saw it stop.
  bool emitting = after.empty();
  if (!emitting) {
    std::lock_guard<std::mutex> lock(log_cursors_.mu);
    auto it = log_cursors_.frontier.find(LogCursorKey(repo_id, resolved.commit_id, after, first_parent));
    if (it != log_cursors_.frontier.end()) {
      emitting = true;
      for (const auto& id : it->second) seen.insert(id);
    }
  }
  if (emitting && !after.empty()) {
    std::vector<std::string> frontier(seen.begin(), seen.end());
    seen.clear();
    for (const auto& id : frontier) ARROW_RETURN_NOT_OK(push(id));
  } else {
    ARROW_RETURN_NOT_OK(push(resolved.commit_id));
  }
  Page<Commit> out;
  while (!heap.empty()) {
    if (emitting && static_cast<int64_t>(out.items.size()) == amount) {
      out.has_more = true;
      break;
    }
    std::pop_heap(heap.begin(), heap.end(), cmp);
    Commit c = std::move(heap.back());
    heap.pop_back();
    size_t n_parents = first_parent ? std::min<size_t>(1, c.parents.size()) : c.parents.size();
    for (size_t i = 0; i < n_parents; ++i) ARROW_RETURN_NOT_OK(push(c.parents[i]));
    if (!emitting) {
      if (c.id == after) emitting = true;
      continue;
    }
    out.items.push_back(std::move(c));
  }
  if (out.has_more && !out.items.empty()) {
    // What the walk looks at next: the next page starts there.
    std::vector<std::string> frontier;
    for (const auto& c : heap) frontier.push_back(c.id);
    std::string key = LogCursorKey(repo_id, resolved.commit_id, out.items.back().id, first_parent);
    std::lock_guard<std::mutex> lock(log_cursors_.mu);
    if (log_cursors_.frontier.emplace(key, std::move(frontier)).second) {
      log_cursors_.order.push_back(key);
      if (log_cursors_.order.size() > kLogCursors) {
        log_cursors_.frontier.erase(log_cursors_.order.front());
        log_cursors_.order.erase(log_cursors_.order.begin());
      }
    }
  }
  return out;
}

Result<std::string> RefManager::MergeBase(const std::string& repo, const std::string& a, const std::string& b) {
  std::unordered_set<std::string> ancestors;
  std::vector<std::string> stack = {a};
  while (!stack.empty()) {
    std::string id = stack.back();
    stack.pop_back();
    if (!ancestors.insert(id).second) continue;
    ARROW_ASSIGN_OR_RAISE(auto c, GetCommit(repo, id));
    for (const auto& p : c.parents) stack.push_back(p);
  }
  auto cmp = [](const Commit& x, const Commit& y) { return x.generation < y.generation; };
  std::priority_queue<Commit, std::vector<Commit>, decltype(cmp)> queue(cmp);
  std::unordered_set<std::string> seen = {b};
  ARROW_ASSIGN_OR_RAISE(auto head, GetCommit(repo, b));
  queue.push(std::move(head));
  while (!queue.empty()) {
    Commit c = queue.top();
    queue.pop();
    if (ancestors.count(c.id)) return c.id;
    for (const auto& p : c.parents) {
      if (!seen.insert(p).second) continue;
      ARROW_ASSIGN_OR_RAISE(auto pc, GetCommit(repo, p));
      queue.push(std::move(pc));
    }
  }
  return NotFound(fmt::format("commits {} and {} have no common ancestor", a, b));
}

}  // namespace sediment::catalog
