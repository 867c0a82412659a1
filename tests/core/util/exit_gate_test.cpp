// ExitGate (Note [Exit gates]): the closing thread passes, the region empties before the wait
// ends, later threads are kept out, and a reset gate lets them in again.
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include <ember/util/exit_gate.h>

namespace ember {
namespace {

using std::chrono::milliseconds;

TEST(ExitGate, TheClosingThreadPassesAndASecondCloseIsANoOp) {
  ExitGate gate;
  EXPECT_FALSE(gate.parks_here());
  EXPECT_TRUE(gate.close());
  EXPECT_FALSE(gate.close());
  EXPECT_FALSE(gate.parks_here());
  gate.enter();  // returns: this thread closed it
  gate.leave();
  EXPECT_TRUE(gate.wait_empty(milliseconds(0)));
}

TEST(ExitGate, WaitEmptyReturnsOnceTheThreadsInsideHaveLeft) {
  ExitGate gate;
  std::atomic<bool> inside{false}, done{false};
  std::thread t([&] {
    gate.enter();
    inside = true;
    std::this_thread::sleep_for(milliseconds(50));
    done = true;
    gate.leave();
  });
  while (!inside) std::this_thread::yield();
  gate.close();
  EXPECT_FALSE(done.load());
  EXPECT_TRUE(gate.wait_empty(std::chrono::seconds(10)));
  EXPECT_TRUE(done.load());
  t.join();
}

TEST(ExitGate, WaitEmptyGivesUpAfterItsLimit) {
  ExitGate gate;
  gate.enter();  // "another thread" still inside: the count is what the wait reads
  std::thread([&] {
    gate.close();
    EXPECT_FALSE(gate.wait_empty(milliseconds(20)));
  }).join();
  gate.leave();
  EXPECT_TRUE(gate.wait_empty(milliseconds(0)));
}

TEST(ExitGate, AThreadArrivingAfterTheCloseParksUntilAReset) {
  static ExitGate* gate = new ExitGate();  // the parked thread outlives the test
  static std::atomic<bool> passed{false};
  gate->close();
  EXPECT_FALSE(gate->parks_here());
  std::thread([] {
    EXPECT_TRUE(gate->parks_here());
    gate->enter();  // parks for good
    passed = true;
  }).detach();
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(passed.load());
  EXPECT_TRUE(gate->wait_empty(milliseconds(1000)));  // a parked thread is not inside
  gate->reset();
  std::atomic<bool> entered{false};
  std::thread([&] {
    gate->enter();
    entered = true;
    gate->leave();
  }).join();
  EXPECT_TRUE(entered.load());
}

}  // namespace
}  // namespace ember
