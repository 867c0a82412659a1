#include <gtest/gtest.h>

#include <dlpack/dlpack.h>

#include <string>
#include <vector>

#include <ember/ember.h>

#include "core/tensor/dlpack_versioned.h"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using testing::expect_error;

std::vector<int64_t> dl_shape(const DLTensor& t) {
  return {t.shape, t.shape + t.ndim};
}
std::vector<int64_t> dl_strides(const DLTensor& t) {
  return {t.strides, t.strides + t.ndim};
}

TEST(DLPack, ExportsAContiguousTensorWithoutCopying) {
  Tensor t = arange(0, 12, 1, f32).reshape({3, 4});
  DLManagedTensor* m = to_dlpack(t);
  ASSERT_NE(m, nullptr);
  const DLTensor& dl = m->dl_tensor;
  EXPECT_EQ(dl.data, t.data_ptr());
  EXPECT_EQ(dl.byte_offset, 0u);
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  EXPECT_EQ(dl.device.device_id, 0);
  EXPECT_EQ(dl.ndim, 2);
  EXPECT_EQ(dl_shape(dl), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(dl_strides(dl), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.dtype.lanes, 1);
  // The export keeps the storage alive after the tensor handle is gone.
  float* data = static_cast<float*>(dl.data);
  t = Tensor();
  EXPECT_EQ(data[7], 7.0f);
  data[7] = -1;  // still valid memory
  m->deleter(m);
}

TEST(DLPack, ExportsAViewWithItsStridesAndOffset) {
  Tensor base = arange(0, 24, 1, f64).reshape({4, 6});
  Tensor v = base.slice(1, 1, 6, 2).t();  // [3, 4], strides [2, 6], offset 1
  DLManagedTensor* m = to_dlpack(v);
  const DLTensor& dl = m->dl_tensor;
  EXPECT_EQ(static_cast<char*>(dl.data) + dl.byte_offset, static_cast<char*>(v.data_ptr()));
  EXPECT_EQ(dl_shape(dl), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(dl_strides(dl), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 64);
  // Element [i, j] read through DLPack's geometry is the view's element.
  const double* p = reinterpret_cast<const double*>(static_cast<char*>(dl.data) + dl.byte_offset);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(p[i * dl.strides[0] + j * dl.strides[1]], static_cast<double>(j * 6 + 1 + 2 * i));
  // Zero-copy: a write through the view shows in the exported memory.
  v.fill_(5);
  EXPECT_EQ(p[0], 5.0);
  m->deleter(m);
  EXPECT_EQ(base.data_ptr<double>()[1], 5.0);
}

TEST(DLPack, DtypeCodes) {
  struct Case {
    DType dtype;
    uint8_t code, bits;
  };
  for (const Case& c : {Case{f16, kDLFloat, 16}, Case{bf16, kDLBfloat, 16}, Case{i64, kDLInt, 64},
                        Case{i32, kDLInt, 32}, Case{i8, kDLInt, 8}, Case{u8, kDLUInt, 8}}) {
    DLManagedTensor* m = to_dlpack(zeros({2}, c.dtype));
    EXPECT_EQ(m->dl_tensor.dtype.code, c.code) << fmt::format("{}", c.dtype);
    EXPECT_EQ(m->dl_tensor.dtype.bits, c.bits) << fmt::format("{}", c.dtype);
    Tensor back = from_dlpack(m);
    EXPECT_EQ(back.dtype(), c.dtype);
  }
  // 0-d tensors export with ndim 0.
  DLManagedTensor* m = to_dlpack(full({}, 3.0));
  EXPECT_EQ(m->dl_tensor.ndim, 0);
  EXPECT_EQ(from_dlpack(m).item(), 3.0);
}

struct Owner {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  int64_t strides[2] = {1, 2};  // column-major
  int deleted = 0;
  DLManagedTensor managed{};

  // A float32 CPU tensor of `ndim` dims over `data` with `shape` and `strides`, whose deleter
  // counts its calls in `deleted`.
  explicit Owner(int32_t ndim) {
    DLTensor& t = managed.dl_tensor;
    t.data = data.data();
    t.device = {kDLCPU, 0};
    t.ndim = ndim;
    t.dtype = {kDLFloat, 32, 1};
    t.shape = shape;
    t.strides = strides;
    t.byte_offset = 0;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) {
      ++static_cast<Owner*>(self->manager_ctx)->deleted;
    };
  }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
};

TEST(DLPack, ImportsAHandBuiltTensorAndCallsItsDeleterOnce) {
  Owner o(2);
  {
    Tensor t = from_dlpack(&o.managed);
    EXPECT_EQ(t.data_ptr(), o.data.data());
    EXPECT_EQ(t.sizes(), Shape({2, 3}));
    EXPECT_EQ(t.strides(), Shape({1, 2}));
    EXPECT_EQ(t.dtype(), f32);
    EXPECT_EQ(t.select(0, 1).select(0, 2).item(), 6.0);
    Tensor row = t.select(0, 0);
    t = Tensor();
    EXPECT_EQ(o.deleted, 0);
    row.fill_(0);  // zero-copy: writes reach the producer's memory
    EXPECT_EQ(o.data, (std::vector<float>{0, 2, 0, 4, 0, 6}));
    Tensor c = row.contiguous();  // a copy does not hold the import
    row = Tensor();
    EXPECT_EQ(o.deleted, 1);
    EXPECT_EQ(c.numel(), 3);
  }
  EXPECT_EQ(o.deleted, 1);
}

TEST(DLPack, ImportHonoursByteOffsetAndNullStrides) {
  Owner o(1);
  o.shape[0] = 4;
  o.managed.dl_tensor.strides = nullptr;  // compact row-major
  o.managed.dl_tensor.byte_offset = 2 * sizeof(float);
  {
    Tensor t = from_dlpack(&o.managed);
    EXPECT_EQ(t.strides(), Shape({1}));
    EXPECT_EQ(t.data_ptr(), o.data.data() + 2);
    EXPECT_EQ(t.select(0, 0).item(), 3.0);
    EXPECT_EQ(t.select(0, 3).item(), 6.0);
  }
  EXPECT_EQ(o.deleted, 1);
}

TEST(DLPack, RoundTripSharesData) {
  Tensor t = arange(0, 6, 1, f32).reshape({2, 3}).t();
  Tensor back = from_dlpack(to_dlpack(t));
  EXPECT_EQ(back.data_ptr(), t.data_ptr());
  EXPECT_EQ(back.sizes(), t.sizes());
  EXPECT_EQ(back.strides(), t.strides());
  EXPECT_EQ(back.dtype(), t.dtype());
  back.select(0, 2).fill_(-1);
  EXPECT_EQ(t.select(0, 2).select(0, 1).item(), -1.0);
  // The original may go first: the import holds the storage through the export's context.
  void* p = t.data_ptr();
  t = Tensor();
  EXPECT_EQ(back.data_ptr(), p);
  EXPECT_EQ(back.select(0, 0).select(0, 1).item(), 3.0);
}

TEST(DLPack, RejectsWhatItCannotRepresent) {
  Owner o(1);
  o.managed.dl_tensor.strides = nullptr;
  o.managed.dl_tensor.dtype = {kDLComplex, 64, 1};
  expect_error([&] { from_dlpack(&o.managed); }, {"[from_dlpack]", "unsupported"});
  o.managed.dl_tensor.dtype = {kDLFloat, 32, 4};
  expect_error([&] { from_dlpack(&o.managed); }, {"[from_dlpack]", "lanes"});
  o.managed.dl_tensor.dtype = {kDLFloat, 32, 1};
  o.managed.dl_tensor.device = {kDLOpenCL, 0};
  expect_error([&] { from_dlpack(&o.managed); }, {"[from_dlpack]", "device"});
  EXPECT_EQ(o.deleted, 0);  // a refused import leaves ownership with the caller
  expect_error([] { from_dlpack(static_cast<DLManagedTensor*>(nullptr)); },
               {"[from_dlpack]", "null"});
  expect_error([] { to_dlpack(Tensor()); }, {"[to_dlpack]", "undefined"});
}

TEST(DLPack, ImportOfMoreDimsThanTheLimitIsRefusedBeforeTakingOwnership) {
  std::vector<int64_t> shape(EMBER_MAX_DIMS + 1, 1);
  float value = 1;
  int deleted = 0;
  DLManagedTensor managed{};
  managed.dl_tensor.data = &value;
  managed.dl_tensor.device = {kDLCPU, 0};
  managed.dl_tensor.ndim = EMBER_MAX_DIMS + 1;
  managed.dl_tensor.dtype = {kDLFloat, 32, 1};
  managed.dl_tensor.shape = shape.data();
  managed.manager_ctx = &deleted;
  managed.deleter = [](DLManagedTensor* self) { ++*static_cast<int*>(self->manager_ctx); };
  EXPECT_THROW(from_dlpack(&managed), ValueError);
  testing::expect_error([&] { from_dlpack(&managed); }, {"[from_dlpack]", "too many dims"});
  EXPECT_EQ(deleted, 0);  // still the caller's
  managed.dl_tensor.ndim = EMBER_MAX_DIMS;
  {
    const Tensor t = from_dlpack(&managed);
    EXPECT_EQ(t.dim(), EMBER_MAX_DIMS);
    EXPECT_EQ(t.item(), 1.0);
  }
  EXPECT_EQ(deleted, 1);
}

// DLPack 1.0: versioned exports and imports, bool as kDLBool, read-only memory copied.
TEST(DLPack, VersionedRoundTripBoolAndReadOnly) {
  Tensor t = arange(0, 6, 1, f32).reshape({2, 3});
  DLManagedTensorVersioned* m = to_dlpack_versioned(t);
  EXPECT_EQ(m->version.major, 1u);
  EXPECT_EQ(m->flags, 0u);
  EXPECT_EQ(m->dl_tensor.data, t.data_ptr());
  const Tensor back = from_dlpack(m);
  EXPECT_EQ(back.data_ptr(), t.data_ptr());  // shared, not copied
  // Bool is kDLBool in both layouts, and comes back as bool.
  DLManagedTensor* b = to_dlpack(ones({2}, DType::Bool));
  EXPECT_EQ(b->dl_tensor.dtype.code, kDLBool);
  EXPECT_EQ(from_dlpack(b).dtype(), DType::Bool);
  // A producer's read-only memory is copied (Ember's tensors are writable), and its deleter
  // runs at once.
  struct ReadOnly {
    float data[2] = {4, 5};
    int64_t shape[1] = {2};
    int deleted = 0;
    DLManagedTensorVersioned managed{};
  } ro;
  ro.managed.version = {1, 0};
  ro.managed.flags = 1;  // read-only
  ro.managed.dl_tensor.data = ro.data;
  ro.managed.dl_tensor.device = {kDLCPU, 0};
  ro.managed.dl_tensor.ndim = 1;
  ro.managed.dl_tensor.shape = ro.shape;
  ro.managed.dl_tensor.dtype = {kDLFloat, 32, 1};
  ro.managed.manager_ctx = &ro.deleted;
  ro.managed.deleter = [](DLManagedTensorVersioned* self) {
    ++*static_cast<int*>(self->manager_ctx);
  };
  const Tensor copy = from_dlpack(&ro.managed);
  EXPECT_EQ(ro.deleted, 1);
  EXPECT_NE(copy.data_ptr(), static_cast<void*>(ro.data));
  EXPECT_EQ(testing::values(copy), (std::vector<double>{4, 5}));
  // A version Ember does not read is refused before taking ownership.
  ro.managed.version = {2, 0};
  expect_error([&] { from_dlpack(&ro.managed); }, {"[from_dlpack]", "DLPack 2.0"});
  EXPECT_EQ(ro.deleted, 1);
  EXPECT_EQ(dlpack_type(DType::BFloat16).code, kDLBfloat);
}

}  // namespace
}  // namespace ember
