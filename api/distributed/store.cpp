#include "ember/distributed/store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "ember/util/error.h"

namespace ember::distributed {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Note [The TCP store]
// Rank 0 serves a map of keys to bytes; every rank (rank 0 too) is a client on one connection.
// A request is: command (1 byte), key length (4), key, value length (8), value, an integer
// (8: the wait in milliseconds for get, the delta for add). The answer is a status byte (0 ok,
// 1 timed out) and a value (length, bytes). A get waits on the server, so a key that appears is
// seen at once without polling; the server answers "timed out" when the client's wait ends.
// One thread per connection keeps the server simple: a job has tens of ranks, not thousands.
// A client may name who it is (kOwner, "rank 3"); when that connection closes the server sets
// "closed/<name>", so a rank that died is told apart from one that is only slow (Note [Naming
// the ranks that failed]).
//
// Note [The store outlives a failure]
// Rank 0 serves the store, so when rank 0 exits the diagnosis of every other rank loses it. A
// rank can stay inside a failed collective until its own timeout (Gloo does not wake a large send
// whose peer reset the connection), long after rank 0 reported the failure and exited. So once
// any rank has set the key "failed" (each diagnosis does), a server that is destroyed first keeps
// serving until every other client has closed its connection, for at most its timeout and never
// more than a minute: the ranks still inside the collective diagnose it with the store up. A job
// that never failed ends at once, as before.
enum : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kOwner = 5 };
enum : uint8_t { kOk = 0, kTimedOut = 1 };

std::string errno_text(int err) {
  return std::strerror(err);
}

// Waits until `fd` is ready for `events` or `deadline`; false on timeout.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return true;  // let the read or write report it
  }
}

// Reads or writes exactly `n` bytes before `deadline`: "" on success, else why not.
std::string io_all(int fd, void* buf, size_t n, bool write, Clock::time_point deadline) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    if (!wait_fd(fd, write ? POLLOUT : POLLIN, deadline)) return "timed out";
    const ssize_t r = write ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (r == 0) return "the connection was closed";
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errno_text(errno);
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return "";
}

struct Request {
  uint8_t cmd = 0;
  std::string key;
  std::vector<uint8_t> value;
  int64_t arg = 0;
};

std::vector<uint8_t> encode(const Request& r) {
  std::vector<uint8_t> out(1 + 4 + r.key.size() + 8 + r.value.size() + 8);
  uint8_t* p = out.data();
  const uint32_t klen = static_cast<uint32_t>(r.key.size());
  const uint64_t vlen = r.value.size();
  *p++ = r.cmd;
  std::memcpy(p, &klen, 4), p += 4;
  std::memcpy(p, r.key.data(), klen), p += klen;
  std::memcpy(p, &vlen, 8), p += 8;
  if (vlen) std::memcpy(p, r.value.data(), vlen), p += vlen;
  std::memcpy(p, &r.arg, 8);
  return out;
}

// Most bytes a key or value may have: a guard against a stray client sending garbage.
constexpr uint64_t kMaxKey = 1 << 16, kMaxValue = 1ull << 30;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Server

struct StoreServer {
  int listen_fd = -1;
  int wake[2] = {-1, -1};  // closing wakes the accept loop
  std::mutex mu;
  std::condition_variable changed;
  std::map<std::string, std::vector<uint8_t>> data;
  std::vector<std::thread> threads;
  std::vector<int> clients;
  std::atomic<bool> stopping{false};
  std::thread acceptor;
  int open = 0;                  // connections being served, under mu
  milliseconds linger_limit{0};  // Note [The store outlives a failure]

  ~StoreServer() {
    {
      std::unique_lock lock(mu);
      if (data.count(TCPStore::kFailedKey))
        changed.wait_for(lock, std::min<milliseconds>(linger_limit, std::chrono::minutes(1)),
                         [&] { return open == 0; });
    }
    stopping = true;
    if (wake[1] >= 0) (void)!::write(wake[1], "x", 1);
    {
      std::lock_guard lock(mu);
      for (int fd : clients) ::shutdown(fd, SHUT_RDWR);
      changed.notify_all();
    }
    if (acceptor.joinable()) acceptor.join();
    for (auto& t : threads) t.join();
    for (int fd : clients) ::close(fd);
    if (listen_fd >= 0) ::close(listen_fd);
    if (wake[0] >= 0) ::close(wake[0]), ::close(wake[1]);
  }

  void serve(int fd) {
    std::string owner;
    serve_requests(fd, owner);
    std::lock_guard lock(mu);
    if (!owner.empty()) data["closed/" + owner] = {1};
    --open;
    changed.notify_all();
  }

  void serve_requests(int fd, std::string& owner) {
    const auto forever = Clock::now() + std::chrono::hours(24 * 365);
    for (;;) {
      Request r;
      uint32_t klen = 0;
      uint64_t vlen = 0;
      if (!io_all(fd, &r.cmd, 1, false, forever).empty() ||
          !io_all(fd, &klen, 4, false, forever).empty() || klen > kMaxKey)
        return;
      r.key.resize(klen);
      if (!io_all(fd, r.key.data(), klen, false, forever).empty() ||
          !io_all(fd, &vlen, 8, false, forever).empty() || vlen > kMaxValue)
        return;
      r.value.resize(vlen);
      if (!io_all(fd, r.value.data(), vlen, false, forever).empty() ||
          !io_all(fd, &r.arg, 8, false, forever).empty())
        return;
      uint8_t status = kOk;
      std::vector<uint8_t> answer;
      {
        std::unique_lock lock(mu);
        switch (r.cmd) {
          case kSet:
            data[r.key] = std::move(r.value);
            changed.notify_all();
            break;
          case kGet: {
            const bool found = changed.wait_for(lock, milliseconds(std::max<int64_t>(r.arg, 0)),
                                                [&] { return stopping || data.count(r.key); });
            if (found && data.count(r.key))
              answer = data[r.key];
            else
              status = kTimedOut;
            break;
          }
          case kAdd: {
            int64_t v = 0;
            auto it = data.find(r.key);
            if (it != data.end() && it->second.size() == 8) std::memcpy(&v, it->second.data(), 8);
            v += r.arg;
            std::vector<uint8_t> bytes(8);
            std::memcpy(bytes.data(), &v, 8);
            data[r.key] = bytes;
            answer = bytes;
            changed.notify_all();
            break;
          }
          case kCheck:
            answer.push_back(data.count(r.key) ? 1 : 0);
            break;
          case kOwner:
            owner = r.key;
            break;
          default:
            return;  // not a store client
        }
      }
      const uint64_t n = answer.size();
      if (!io_all(fd, &status, 1, true, forever).empty() ||
          !io_all(fd, const_cast<uint64_t*>(&n), 8, true, forever).empty() ||
          !io_all(fd, answer.data(), n, true, forever).empty())
        return;
    }
  }

  void accept_loop() {
    while (!stopping) {
      pollfd p[2] = {{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
      if (stopping || (p[1].revents & POLLIN)) return;
      if (!(p[0].revents & POLLIN)) continue;
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::lock_guard lock(mu);
      clients.push_back(fd);
      ++open;
      threads.emplace_back([this, fd] { serve(fd); });
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Client

struct TCPStore::Impl {
  std::string host;
  int port = 0;
  milliseconds timeout;
  std::unique_ptr<StoreServer> server;
  int fd = -1;
  std::mutex mu;  // one request at a time on the connection
  std::string local;

  ~Impl() {
    if (fd >= 0) ::close(fd);
  }

  std::string where() const { return host + ":" + std::to_string(port); }

  void start_server() {
    auto s = std::make_unique<StoreServer>();
    s->listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EMBER_CHECK_AS(DistributedError, s->listen_fd >= 0, "[distributed] cannot make a socket: {}",
                   errno_text(errno));
    int one = 1;
    ::setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(s->listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      const int err = errno;
      EMBER_CHECK_AS(DistributedError, err != EADDRINUSE,
                     "[distributed] the rendezvous port is already in use: MASTER_PORT={} (another "
                     "job or an earlier run still holds it; pick another MASTER_PORT)",
                     port);
      throw DistributedError(
          fmt::format("[distributed] cannot listen on port {}: {}", port, errno_text(err)));
    }
    EMBER_CHECK_AS(DistributedError, ::listen(s->listen_fd, 1024) == 0,
                   "[distributed] cannot listen on port {}: {}", port, errno_text(errno));
    EMBER_CHECK_AS(DistributedError, ::pipe2(s->wake, O_CLOEXEC) == 0,
                   "[distributed] cannot make a pipe: {}", errno_text(errno));
    s->linger_limit = timeout;
    StoreServer* raw = s.get();
    s->acceptor = std::thread([raw] { raw->accept_loop(); });
    server = std::move(s);
  }

  void connect_to_server() {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    const auto deadline = Clock::now() + timeout;
    std::string last = "no attempt";
    for (int attempt = 0;; ++attempt) {
      addrinfo* res = nullptr;
      const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
      EMBER_CHECK_AS(DistributedError, gai == 0,
                     "[distributed] cannot resolve MASTER_ADDR '{}': {} (check MASTER_ADDR)", host,
                     ::gai_strerror(gai));
      const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      int err = ::connect(s, res->ai_addr, res->ai_addrlen) == 0 ? 0 : errno;
      ::freeaddrinfo(res);
      if (err == EINPROGRESS) {
        if (wait_fd(s, POLLOUT, std::min(deadline, Clock::now() + std::chrono::seconds(2)))) {
          socklen_t len = sizeof(err);
          ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
        } else {
          err = ETIMEDOUT;
        }
      }
      if (err == 0) {
        int one = 1;
        ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        fd = s;
        sockaddr_in me{};
        socklen_t len = sizeof(me);
        char text[INET_ADDRSTRLEN] = {0};
        if (::getsockname(s, reinterpret_cast<sockaddr*>(&me), &len) == 0)
          ::inet_ntop(AF_INET, &me.sin_addr, text, sizeof(text));
        local = text[0] ? text : "127.0.0.1";
        return;
      }
      ::close(s);
      last = errno_text(err);
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(
          std::min<milliseconds>(milliseconds(100 * (1 + attempt % 5)), timeout));
    }
    throw DistributedError(fmt::format(
        "[distributed] cannot reach the rendezvous store at {} within {} ms: {} (is rank 0 "
        "running? check MASTER_ADDR and MASTER_PORT)",
        where(), timeout.count(), last));
  }

  // Sends a request and reads the answer; throws if the server went away.
  std::pair<uint8_t, std::vector<uint8_t>> call(const Request& r, milliseconds wait) {
    std::lock_guard lock(mu);
    EMBER_CHECK_AS(DistributedError, fd >= 0, "[distributed] the store at {} is closed", where());
    const auto deadline = Clock::now() + wait + timeout;
    std::vector<uint8_t> bytes = encode(r);
    std::string why = io_all(fd, bytes.data(), bytes.size(), true, deadline);
    uint8_t status = 0;
    uint64_t n = 0;
    std::vector<uint8_t> value;
    if (why.empty()) why = io_all(fd, &status, 1, false, deadline);
    if (why.empty()) why = io_all(fd, &n, 8, false, deadline);
    if (why.empty() && n <= kMaxValue) {
      value.resize(n);
      why = io_all(fd, value.data(), n, false, deadline);
    }
    if (!why.empty()) {
      ::close(fd);
      fd = -1;
      throw DistributedError(fmt::format(
          "[distributed] lost the rendezvous store at {} (served by rank 0): {} (did rank 0 "
          "exit or fail?)",
          where(), why));
    }
    return {status, std::move(value)};
  }
};

TCPStore::TCPStore(const std::string& host, int port, bool is_server, milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  EMBER_CHECK(port > 0 && port < 65536, "[distributed] bad rendezvous port: {} (1..65535)", port);
  impl_->host = host;
  impl_->port = port;
  impl_->timeout = timeout;
  if (is_server) impl_->start_server();
  impl_->connect_to_server();
}

TCPStore::~TCPStore() = default;

void TCPStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  impl_->call({kSet, key, value, 0}, milliseconds(0));
}

std::vector<uint8_t> TCPStore::get(const std::string& key, milliseconds timeout) {
  auto [status, value] = impl_->call({kGet, key, {}, timeout.count()}, timeout);
  EMBER_CHECK_AS(DistributedError, status == kOk,
                 "[distributed] timed out after {} ms waiting for key '{}' in the store at {}",
                 timeout.count(), key, impl_->where());
  return value;
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  auto [status, value] = impl_->call({kAdd, key, {}, delta}, milliseconds(0));
  int64_t v = 0;
  if (value.size() == 8) std::memcpy(&v, value.data(), 8);
  return v;
}

bool TCPStore::check(const std::string& key) {
  auto [status, value] = impl_->call({kCheck, key, {}, 0}, milliseconds(0));
  return !value.empty() && value[0] == 1;
}

void TCPStore::set_owner(const std::string& name) {
  impl_->call({kOwner, name, {}, 0}, milliseconds(0));
}

std::string TCPStore::local_address() const {
  return impl_->local;
}

// ---------------------------------------------------------------------------------------------
// File store

// Note [The file store]
// One file per key, named by the key's hex bytes (any key is a valid name), written to a
// temporary name and renamed, so a reader sees a whole value or none. add() takes an flock on a
// lock file in the directory. A get polls the file every few milliseconds: a shared file system
// offers no portable way to wait for a file to appear.
FileStore::FileStore(std::string path) : dir_(std::move(path)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  EMBER_CHECK_AS(IoError, fs::is_directory(dir_, ec),
                 "[distributed] cannot use '{}' as a file store: {} (give a directory on a file "
                 "system every rank mounts)",
                 dir_, ec ? ec.message() : "not a directory");
}

std::string FileStore::file_of(const std::string& key) const {
  static const char* hex = "0123456789abcdef";
  std::string name;
  for (unsigned char c : key) name += {hex[c >> 4], hex[c & 15]};
  return dir_ + "/k" + name;
}

void FileStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  const std::string file = file_of(key);
  const std::string tmp = file + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(value.data()),
              static_cast<std::streamsize>(value.size()));
    EMBER_CHECK_AS(IoError, out.good(), "[distributed] cannot write the file store key '{}' in {}",
                   key, dir_);
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  EMBER_CHECK_AS(IoError, !ec, "[distributed] cannot write the file store key '{}' in {}: {}", key,
                 dir_, ec.message());
}

std::vector<uint8_t> FileStore::get(const std::string& key, milliseconds timeout) {
  const std::string file = file_of(key);
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    std::ifstream in(file, std::ios::binary);
    if (in) return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    EMBER_CHECK_AS(DistributedError, Clock::now() < deadline,
                   "[distributed] timed out after {} ms waiting for key '{}' in the file store {}",
                   timeout.count(), key, dir_);
    std::this_thread::sleep_for(milliseconds(5));
  }
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  const std::string lock_file = dir_ + "/lock";
  const int fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  EMBER_CHECK_AS(IoError, fd >= 0, "[distributed] cannot open {}: {}", lock_file,
                 errno_text(errno));
  ::flock(fd, LOCK_EX);
  int64_t v = 0;
  std::ifstream in(file_of(key), std::ios::binary);
  if (in) in.read(reinterpret_cast<char*>(&v), 8);
  v += delta;
  std::vector<uint8_t> bytes(8);
  std::memcpy(bytes.data(), &v, 8);
  try {
    set(key, bytes);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);  // releases the lock
  return v;
}

bool FileStore::check(const std::string& key) {
  std::error_code ec;
  return fs::exists(file_of(key), ec);
}

}  // namespace ember::distributed
