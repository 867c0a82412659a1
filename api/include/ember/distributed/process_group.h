// Process groups and collectives: ember::distributed, on the communication backends plugins
// register (gloo, nccl, mpi). ARCHITECTURE.md, "Distributed".
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/distributed/store.h"
#include "ember/tensor.h"

namespace ember::distributed {

/** How all_reduce and reduce_scatter combine the ranks' values. */
enum class ReduceOp { Sum, Avg, Product, Min, Max };

/** A collective started asynchronously: wait() returns when it finished (or throws its error). */
class Work {
 public:
  struct State;
  /** A handle on a started collective (made by ProcessGroup). */
  explicit Work(std::shared_ptr<State> state) : state_(std::move(state)) {}
  /** Blocks until the operation finished; throws ember::Error if it failed or timed out. */
  void wait() const;
  /** True once the operation finished, successfully or not; never blocks. */
  bool is_completed() const;

 private:
  std::shared_ptr<State> state_;
};

/** How init_process_group finds the other ranks. */
struct InitOptions {
  std::string backend = "gloo";        // a communication backend `ember plugins` lists
  std::string init_method = "env://";  // "env://", "tcp://host:port" or "file:///path"
  int rank = -1;                       // -1: from RANK (or the backend's launcher, mpi)
  int world_size = -1;                 // -1: from WORLD_SIZE
  std::chrono::milliseconds timeout = std::chrono::minutes(30);  // every wait, every collective
  int device_index = -1;  // device backends (nccl): -1 takes LOCAL_RANK
};

/** The ranks of one job and a communicator among them; collectives are issued in the same
 *  order on every rank and run in that order on one worker thread. */
class ProcessGroup {
 public:
  struct Impl;
  /** A group over `impl` (made by init_process_group). */
  explicit ProcessGroup(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  /** This process's rank, 0 .. size()-1. */
  int rank() const;
  /** Number of ranks. */
  int size() const;
  /** The communication backend's name. */
  const std::string& backend() const;
  /** The timeout of every collective. */
  std::chrono::milliseconds timeout() const;

  /** In place: `t` becomes the reduction of every rank's `t`. */
  void all_reduce(const Tensor& t, ReduceOp op = ReduceOp::Sum) const;
  /** In place: `t` becomes rank `root`'s `t`. */
  void broadcast(const Tensor& t, int root) const;
  /** `output` (size() * input.numel() elements) gets every rank's `input`, in rank order. */
  void all_gather(const Tensor& output, const Tensor& input) const;
  /** `output` (input.numel() / size() elements) gets block rank() of the reduced `input`. */
  void reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum) const;
  /** Block r of `output` gets block rank() of rank r's `input` (equal blocks). */
  void all_to_all(const Tensor& output, const Tensor& input) const;
  /** Returns when every rank reached it. */
  void barrier() const;
  /** Sends `t` to rank `dst`; matched by (this rank, tag) on the receiver. */
  void send(const Tensor& t, int dst, int tag = 0) const;
  /** Receives into `t` from rank `src`. */
  void recv(const Tensor& t, int src, int tag = 0) const;

  /** Asynchronous all_reduce: the tensor must not be used until wait() returned. */
  Work all_reduce_async(const Tensor& t, ReduceOp op = ReduceOp::Sum) const;
  /** Asynchronous broadcast. */
  Work broadcast_async(const Tensor& t, int root) const;
  /** Asynchronous all_gather. */
  Work all_gather_async(const Tensor& output, const Tensor& input) const;
  /** Asynchronous reduce_scatter. */
  Work reduce_scatter_async(const Tensor& output, const Tensor& input,
                            ReduceOp op = ReduceOp::Sum) const;
  /** Asynchronous all_to_all. */
  Work all_to_all_async(const Tensor& output, const Tensor& input) const;
  /** Asynchronous barrier. */
  Work barrier_async() const;
  /** Asynchronous send. */
  Work send_async(const Tensor& t, int dst, int tag = 0) const;
  /** Asynchronous recv. */
  Work recv_async(const Tensor& t, int src, int tag = 0) const;

 private:
  std::shared_ptr<Impl> impl_;
};

/** Joins the job (Note [Rendezvous]) and makes the default process group. */
ProcessGroup init_process_group(const InitOptions& options = {});
/** True between init_process_group and destroy_process_group. */
bool is_initialized();
/** The default process group; throws if none was initialized. */
ProcessGroup default_group();
/** This process's rank in the default group. */
int get_rank();
/** Number of ranks in the default group. */
int get_world_size();
/** Leaves the default group (waits for its queued work first). */
void destroy_process_group();
/** The communication backends loaded plugins registered, usable or not ("gloo", ...). */
std::vector<std::string> available_backends();

}  // namespace ember::distributed
