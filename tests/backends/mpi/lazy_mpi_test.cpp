// The lazily loaded MPI table (backends/mpi/lazy_mpi.h, Note [Lazy MPI], Note [Open MPI's handles
// are data symbols]): nothing is loaded until the first request, which resolves every function
// and, with Open MPI, every predefined handle, once; mpi.h's handle macros then read the loaded
// library. A library that cannot be opened, or is not MPI, is an error naming it. Needs the MPI
// library but no launcher (MPI is never initialized).
#include "backends/mpi/lazy_mpi.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace ember::mpi_backend {
namespace {

TEST(LazyMpi, NothingIsLoadedBeforeTheFirstRequestThenEveryEntryResolvesOnce) {
  EXPECT_EQ(mpi_api_if_loaded(), nullptr);
  EXPECT_EQ(std::string(mpi_library_name()).rfind("libmpi.so.", 0), 0u) << mpi_library_name();
  EXPECT_FALSE(std::string(mpi_library_dir()).empty());
#if defined(OPEN_MPI)
  // Before, the handle macros read null: nothing may evaluate one earlier.
  EXPECT_EQ(MPI_COMM_WORLD, nullptr);
  EXPECT_EQ(MPI_FLOAT, nullptr);
#endif
  // Concurrent first requests load once and all see the same table.
  std::vector<const MpiApi*> seen(8, nullptr);
  std::vector<int32_t> status(8, -1);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      char error[256] = {0};
      status[i] = mpi_api(&seen[i], error, sizeof(error));
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(status[i], EMBER_OK);
    EXPECT_EQ(seen[i], seen[0]);
  }
  const MpiApi* api = seen[0];
  EXPECT_EQ(mpi_api_if_loaded(), api);
  // This test links libmpi too, so the loaded soname is that library: each entry is the very
  // function its name says (a table entry resolved under another name would differ).
  EXPECT_EQ(api->init_thread, &::MPI_Init_thread);
  EXPECT_EQ(api->initialized, &::MPI_Initialized);
  EXPECT_EQ(api->finalized, &::MPI_Finalized);
  EXPECT_EQ(api->finalize, &::MPI_Finalize);
  EXPECT_EQ(api->query_thread, &::MPI_Query_thread);
  EXPECT_EQ(api->error_string, &::MPI_Error_string);
  EXPECT_EQ(api->comm_set_errhandler, &::MPI_Comm_set_errhandler);
  EXPECT_EQ(api->comm_rank, &::MPI_Comm_rank);
  EXPECT_EQ(api->comm_size, &::MPI_Comm_size);
  EXPECT_EQ(api->comm_idup, &::MPI_Comm_idup);
  EXPECT_EQ(api->comm_get_attr, &::MPI_Comm_get_attr);
  EXPECT_EQ(api->comm_free, &::MPI_Comm_free);
  EXPECT_EQ(api->type_contiguous, &::MPI_Type_contiguous);
  EXPECT_EQ(api->type_commit, &::MPI_Type_commit);
  EXPECT_EQ(api->op_create, &::MPI_Op_create);
  EXPECT_EQ(api->test, &::MPI_Test);
  EXPECT_EQ(api->cancel, &::MPI_Cancel);
  EXPECT_EQ(api->get_count, &::MPI_Get_count);
  EXPECT_EQ(api->iallreduce, &::MPI_Iallreduce);
  EXPECT_EQ(api->ibcast, &::MPI_Ibcast);
  EXPECT_EQ(api->iallgather, &::MPI_Iallgather);
  EXPECT_EQ(api->ireduce_scatter_block, &::MPI_Ireduce_scatter_block);
  EXPECT_EQ(api->ialltoall, &::MPI_Ialltoall);
  EXPECT_EQ(api->ibarrier, &::MPI_Ibarrier);
  EXPECT_EQ(api->isend, &::MPI_Isend);
  EXPECT_EQ(api->irecv, &::MPI_Irecv);
  // Open MPI aborts the process on most calls before MPI_Init; MPI_Initialized is allowed.
  int initialized = 1;
  ASSERT_EQ(api->initialized(&initialized), MPI_SUCCESS);
  EXPECT_EQ(initialized, 0);
#if defined(OPEN_MPI)
  // Each handle is the object libmpi itself uses: the one this executable's own reference binds
  // to (a copy in the executable when it was linked with a copy relocation, as here).
#define EMBER_EXPECT_HANDLE(symbol) \
  EXPECT_EQ(api->handles.symbol, static_cast<const void*>(&::symbol)) << #symbol;
  EMBER_OMPI_HANDLES(EMBER_EXPECT_HANDLE)
#undef EMBER_EXPECT_HANDLE
  // And the macros the plugin writes now read them.
  EXPECT_EQ(MPI_COMM_WORLD, static_cast<MPI_Comm>(static_cast<void*>(&::ompi_mpi_comm_world)));
  EXPECT_EQ(MPI_FLOAT, static_cast<MPI_Datatype>(static_cast<void*>(&::ompi_mpi_float)));
  EXPECT_EQ(MPI_SUM, static_cast<MPI_Op>(static_cast<void*>(&::ompi_mpi_op_sum)));
  EXPECT_EQ(MPI_REQUEST_NULL, static_cast<MPI_Request>(static_cast<void*>(&::ompi_request_null)));
#endif
}

TEST(LazyMpi, ALibraryThatCannotBeOpenedIsNamedWithEveryDlerror) {
  MpiApi api{};
  char error[1024] = {0};
  const int32_t s =
      mpi_load("libember-no-such-mpi.so.40", "/nonexistent-ember-dir", &api, error, sizeof(error));
  EXPECT_EQ(s, EMBER_ERR_PEER);  // raised by the core as a DistributedError
  const std::string message = error;
  EXPECT_EQ(message.rfind("[mpi] cannot open libember-no-such-mpi.so.40: ", 0), 0u) << message;
  EXPECT_NE(message.find("libember-no-such-mpi.so.40: cannot open shared object file"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("/nonexistent-ember-dir/libember-no-such-mpi.so.40: cannot open"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("LD_LIBRARY_PATH"), std::string::npos) << message;
  EXPECT_EQ(api.init_thread, nullptr);
}

TEST(LazyMpi, ALibraryThatIsNotMpiIsNamedWithTheMissingFunction) {
  MpiApi api{};
  char error[1024] = {0};
  EXPECT_EQ(mpi_load("libc.so.6", "", &api, error, sizeof(error)), EMBER_ERR_PEER);
  const std::string message = error;
  EXPECT_EQ(message.rfind("[mpi] libc.so.6 is not the MPI this plugin was built with: ", 0), 0u)
      << message;
  EXPECT_NE(message.find("MPI_Init_thread"), std::string::npos) << message;
}

}  // namespace
}  // namespace ember::mpi_backend
