// Key-value stores every rank of a job shares: the rendezvous of process groups.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember::distributed {

/** A key-value store every rank sees; values are bytes. Every wait is bounded. */
class Store {
 public:
  virtual ~Store() = default;
  /** Sets `key` (replacing an old value). */
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  /** Waits up to `timeout` for `key`, then returns its value; throws naming the key. */
  virtual std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  /** Adds `delta` to the integer at `key` (0 if absent) and returns the new value. */
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /** True if `key` exists; never waits. */
  virtual bool check(const std::string& key) = 0;
};

/** A store served over TCP by one process (rank 0) at host:port; the others connect to it. */
class TCPStore : public Store {
 public:
  struct Impl;
  /** Serves on `port` (all interfaces) if `is_server`, then connects to host:port, retrying
   *  until `timeout`. Throws a clear error for a port in use or an unreachable server. */
  TCPStore(const std::string& host, int port, bool is_server, std::chrono::milliseconds timeout);
  ~TCPStore() override;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::string& key) override;
  /** Names this client ("rank 3"): when its connection closes, the server sets
   *  "closed/<name>", which tells the other ranks it exited. */
  void set_owner(const std::string& name);
  /** The address of this host on the connection to the server (reachable by the others). */
  std::string local_address() const;
  /** The key a rank sets when a collective failed: a server destroyed after that keeps serving
   *  until the other clients have closed their connections (its timeout, a minute at most). */
  static constexpr const char* kFailedKey = "failed";

 private:
  std::unique_ptr<Impl> impl_;
};

/** A store in a directory on a file system every rank mounts (one file per key). */
class FileStore : public Store {
 public:
  /** Uses (and creates) directory `path`; it must be new or empty for each job. */
  explicit FileStore(std::string path);
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::string& key) override;

 private:
  std::string file_of(const std::string& key) const;
  std::string dir_;
};

/** Keys of `base` under "prefix/": one process group's private part of a job's store. */
class PrefixStore : public Store {
 public:
  /** Prefixes every key with `prefix` + "/". */
  PrefixStore(std::string prefix, std::shared_ptr<Store> base)
      : prefix_(std::move(prefix) + "/"), base_(std::move(base)) {}
  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    base_->set(prefix_ + key, value);
  }
  std::vector<uint8_t> get(const std::string& key, std::chrono::milliseconds timeout) override {
    return base_->get(prefix_ + key, timeout);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    return base_->add(prefix_ + key, delta);
  }
  bool check(const std::string& key) override { return base_->check(prefix_ + key); }

 private:
  std::string prefix_;
  std::shared_ptr<Store> base_;
};

}  // namespace ember::distributed
