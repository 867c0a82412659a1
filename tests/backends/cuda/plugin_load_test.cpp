// Loading the CUDA plugin through `ember plugins --json` (the failure table of ARCHITECTURE.md,
// "Discovery and loading"): on a host with the CUDA libraries but no GPU it loads with 0 devices
// and a reason; with libcudnn hidden from the loader it is reported as a missing dependency; the
// CPU plugin loads anyway.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

struct RunResult {
  int exit_code;
  std::string out;
};

// Runs a shell command line; captures stdout.
RunResult run(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// The report's record for `file` (compared by canonical path), or null.
nlohmann::json record_for(const nlohmann::json& report, const std::string& file) {
  const fs::path want = fs::weakly_canonical(file);
  for (const auto& p : report["plugins"]) {
    if (fs::weakly_canonical(p["file"].get<std::string>()) == want) return p;
  }
  return nullptr;
}

// The loaded record of the plugin named `name`, or null.
nlohmann::json loaded_named(const nlohmann::json& report, const std::string& name) {
  for (const auto& p : report["plugins"]) {
    if (p["name"] == name && p["outcome"] == "loaded") return p;
  }
  return nullptr;
}

bool contains(const nlohmann::json& list, const std::string& item) {
  for (const auto& x : list) {
    if (x.get<std::string>() == item) return true;
  }
  return false;
}

class CudaPluginLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ember-cuda-load-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "plugins");
    fs::create_directories(dir_ / "libs");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Links into dir_/libs each library of `dirs` whose name starts with one of `prefixes` (the
  // first of a name where the directories hold it twice).
  void link_libraries(std::initializer_list<const char*> dirs,
                      std::initializer_list<const char*> prefixes) {
    for (const char* dir : dirs) {
      for (const auto& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        bool wanted = false;
        for (const char* prefix : prefixes) wanted = wanted || name.rfind(prefix, 0) == 0;
        if (wanted && !fs::exists(dir_ / "libs" / name)) {
          fs::create_symlink(fs::canonical(e.path()), dir_ / "libs" / name);
        }
      }
    }
  }

  // Runs `ember plugins --json` on a copy of the plugin linked without a RUNPATH, under the
  // dynamic loader `ld_so` with its cache off and dir_/libs as the one extra library directory
  // (Note [Hiding libcudnn from the loader]); sets the report and the copy's record in it.
  void report_without_runpath(const char* ld_so, nlohmann::json* report, nlohmann::json* cuda) {
    const fs::path copy = dir_ / "plugins" / "libember-cuda.so";
    fs::copy_file(EMBER_CUDA_PLUGIN_NORPATH, copy);
    const RunResult r = run("EMBER_PLUGIN_PATH=" + (dir_ / "plugins").string() + " " + ld_so +
                            " --inhibit-cache --library-path " + (dir_ / "libs").string() + " " +
                            EMBER_CLI + " plugins --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    *report = nlohmann::json::parse(r.out);
    *cuda = record_for(*report, copy.string());
    ASSERT_FALSE(cuda->is_null()) << r.out;
  }

  fs::path dir_;
};

TEST_F(CudaPluginLoad, WithoutAGpuItLoadsWithZeroDevicesAndAReason) {
  const RunResult r = run(std::string("EMBER_PLUGIN_PATH=") + EMBER_CUDA_PLUGIN + " " + EMBER_CLI +
                          " plugins --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json cuda = record_for(j, EMBER_CUDA_PLUGIN);
  ASSERT_FALSE(cuda.is_null()) << r.out;
  EXPECT_EQ(cuda["name"], "cuda");
  // Its kernels are registered either way.
  EXPECT_TRUE(contains(cuda["ops"], "matmul")) << cuda.dump();
  EXPECT_TRUE(contains(cuda["ops"], "add")) << cuda.dump();
  ASSERT_FALSE(loaded_named(j, "cpu").is_null()) << r.out;
  if (cuda["outcome"] == "loaded") {  // a host with a GPU: devices are listed instead
    EXPECT_NE(cuda["devices"][0].get<std::string>().find("cuda ("), std::string::npos)
        << cuda.dump();
    GTEST_SKIP() << "this host has a CUDA device; the no-device case was not exercised";
  }
  EXPECT_EQ(cuda["outcome"], "unusable") << cuda.dump();
  const std::string reason = cuda["reason"];
  EXPECT_NE(reason.find("no CUDA device"), std::string::npos) << reason;
  EXPECT_NE(cuda["devices"][0].get<std::string>().find("cuda (0 devices: no CUDA device"),
            std::string::npos)
      << cuda.dump();
}

// Note [Lazy cuBLAS] in backends/cuda: libcublas is dlopen'ed by the first matmul, so it must
// not be DT_NEEDED (loading it costs ~120 ms and ~150 MiB); cudart and cuDNN stay linked.
TEST_F(CudaPluginLoad, ThePluginExportsOnlyTheEntrySymbolAndNeedsCudartAndCudnnButNotCublas) {
  const RunResult syms = run(std::string("nm -D --defined-only ") + EMBER_CUDA_PLUGIN);
  if (syms.exit_code != 0) GTEST_SKIP() << "nm is not available";
  EXPECT_NE(syms.out.find("ember_plugin_entry_v1"), std::string::npos) << syms.out;
  int lines = 0;
  for (char c : syms.out) lines += c == '\n';
  EXPECT_EQ(lines, 1) << syms.out;
  const RunResult dyn = run(std::string("readelf -d ") + EMBER_CUDA_PLUGIN);
  ASSERT_EQ(dyn.exit_code, 0);
  for (const char* lib : {"libcudart.so", "libcudnn.so"}) {
    EXPECT_NE(dyn.out.find(std::string("Shared library: [") + lib), std::string::npos) << dyn.out;
  }
  EXPECT_EQ(dyn.out.find("libcublas"), std::string::npos) << "cuBLAS is loaded lazily\n" << dyn.out;
  // Nor may any cuBLAS function be left for the loader to bind (it would fail at first call).
  const RunResult undef = run(std::string("nm -D --undefined-only ") + EMBER_CUDA_PLUGIN);
  ASSERT_EQ(undef.exit_code, 0);
  EXPECT_EQ(undef.out.find("cublas"), std::string::npos) << undef.out;
  EXPECT_EQ(dyn.out.find("libember_core"), std::string::npos) << "a plugin never links the core";
}

// Note [Hiding libcudnn from the loader]
// The CUDA libraries are normally found through /etc/ld.so.cache and the plugin's RUNPATH, so
// clearing LD_LIBRARY_PATH hides nothing. Instead the CLI runs under the dynamic loader with
// --inhibit-cache, the test loads a copy of the plugin linked without a RUNPATH, and the only
// extra library directory holds links to libcudart and libcublas but not libcudnn: exactly a
// host where cuDNN is not installed. The loader's built-in directories still provide the
// Debian packages the core and the CPU plugin need.
TEST_F(CudaPluginLoad, MissingCudnnIsReportedAndCpuStillLoads) {
  const RunResult dyn = run(std::string("readelf -d ") + EMBER_CUDA_PLUGIN_NORPATH);
  if (dyn.exit_code == 0) {
    EXPECT_EQ(dyn.out.find("RUNPATH"), std::string::npos) << dyn.out;
    EXPECT_EQ(dyn.out.find("RPATH"), std::string::npos) << dyn.out;
  }
  const char* ld_so = "/lib64/ld-linux-x86-64.so.2";
  if (!fs::exists(ld_so)) GTEST_SKIP() << "no " << ld_so << " on this host";
  link_libraries({EMBER_CUDA_LIB_DIR}, {"libcudart.so", "libcublas"});
  nlohmann::json j, cuda;
  ASSERT_NO_FATAL_FAILURE(report_without_runpath(ld_so, &j, &cuda));
  EXPECT_EQ(cuda["outcome"], "missing_dependency") << cuda.dump();
  EXPECT_EQ(cuda["reason"], "missing dependency libcudnn.so.9") << cuda.dump();
  EXPECT_FALSE(loaded_named(j, "cpu").is_null()) << j.dump();
}

// With libcublas absent (and cuDNN present) the plugin still loads: cuBLAS is only needed by
// the first matmul on a device (Note [Lazy cuBLAS]). Same loader setup as above.
TEST_F(CudaPluginLoad, MissingCublasDoesNotStopThePluginFromLoading) {
  const char* ld_so = "/lib64/ld-linux-x86-64.so.2";
  if (!fs::exists(ld_so)) GTEST_SKIP() << "no " << ld_so << " on this host";
  link_libraries({EMBER_CUDA_LIB_DIR, EMBER_CUDNN_LIB_DIR}, {"libcudart.so", "libcudnn"});
  nlohmann::json j, cuda;
  ASSERT_NO_FATAL_FAILURE(report_without_runpath(ld_so, &j, &cuda));
  EXPECT_TRUE(cuda["outcome"] == "loaded" || cuda["outcome"] == "unusable") << cuda.dump();
  EXPECT_TRUE(contains(cuda["ops"], "matmul")) << cuda.dump();
  EXPECT_FALSE(loaded_named(j, "cpu").is_null()) << j.dump();
}

}  // namespace
