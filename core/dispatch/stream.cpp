#include "ember/dispatch/stream.h"

#include <utility>

#include "ember/dispatch/device_registry.h"
#include "ember/dispatch/runtime.h"
#include "ember/util/error.h"

namespace ember {
namespace {

// The table of an available device (loading plugins first).
const ember_device_type_v1& table_of(Device device, const char* op) {
  ensure_plugins_loaded();
  check_device(device, op);
  return device_type(device.type).table;
}

}  // namespace

void Stream::synchronize() const {
  const ember_device_type_v1& t = table_of(device_, "Stream.synchronize");
  if (!t.stream_synchronize) {
    ember::synchronize(device_);
    return;
  }
  detail::call_checked(
      [&](char* e, size_t cap) {
        return t.stream_synchronize(t.ctx, device_.index, handle_, e, cap);
      },
      "[Stream.synchronize] {} failed", device_.str());
}

bool Stream::query() const {
  const ember_device_type_v1& t = table_of(device_, "Stream.query");
  if (!t.stream_query) return true;
  int32_t done = 0;
  detail::call_checked(
      [&](char* e, size_t cap) {
        return t.stream_query(t.ctx, device_.index, handle_, &done, e, cap);
      },
      "[Stream.query] {} failed", device_.str());
  return done != 0;
}

void Stream::wait(const Event& event) const {
  const ember_device_type_v1& t = table_of(device_, "Stream.wait");
  EMBER_CHECK_TYPE(event.device().type == device_.type,
                   "[Stream.wait] a stream of {} cannot wait for an event of {} (different device "
                   "types; synchronize the event instead)",
                   device_.str(), event.device().str());
  if (!t.stream_wait_event) {  // work here is synchronous: the host waits instead
    event.synchronize();
    return;
  }
  detail::call_checked(
      [&](char* e, size_t cap) {
        return t.stream_wait_event(t.ctx, device_.index, handle_, event.handle(), e, cap);
      },
      "[Stream.wait] {} failed", device_.str());
}

void Stream::wait(const Stream& other) const {
  if (other == *this) return;
  const ember_device_type_v1& t = table_of(other.device(), "Stream.wait");
  if (!t.event_create || other.device().type != device_.type) {
    other.synchronize();
    return;
  }
  Event marker(other.device());
  marker.record(other);
  wait(marker);  // the wait captures the event's state; destroying it afterwards is fine
}

Stream current_stream(Device device) {
  const ember_device_type_v1& t = table_of(device, "current_stream");
  return Stream(device,
                t.stream_get ? t.stream_get(t.ctx, device.index, EMBER_STREAM_CURRENT) : nullptr);
}

Stream default_stream(Device device) {
  const ember_device_type_v1& t = table_of(device, "default_stream");
  return Stream(device,
                t.stream_get ? t.stream_get(t.ctx, device.index, EMBER_STREAM_DEFAULT) : nullptr);
}

Stream stream_from_pool(Device device, bool high_priority) {
  const ember_device_type_v1& t = table_of(device, "stream_from_pool");
  EMBER_CHECK_NOT_IMPLEMENTED(t.stream_from_pool != nullptr,
                              "[stream_from_pool] device type '{}' has no streams (its work runs "
                              "synchronously; use current_stream({}))",
                              device.type_name(), device.str());
  void* handle = nullptr;
  detail::call_checked(
      [&](char* e, size_t cap) {
        return t.stream_from_pool(t.ctx, device.index, high_priority ? 1 : 0, &handle, e, cap);
      },
      "[stream_from_pool] {} failed", device.str());
  return Stream(device, handle);
}

void set_current_stream(const Stream& stream) {
  const Device device = stream.device();
  const ember_device_type_v1& t = table_of(device, "set_current_stream");
  if (!t.stream_set_current) {
    EMBER_CHECK_TYPE(stream.handle() == nullptr,
                     "[set_current_stream] device type '{}' has no streams, but the stream has a "
                     "handle ({}): it was not made by this device type",
                     device.type_name(), stream.handle());
    return;
  }
  detail::call_checked(
      [&](char* e, size_t cap) {
        return t.stream_set_current(t.ctx, device.index, stream.handle(), e, cap);
      },
      "[set_current_stream] {} failed", device.str());
}

StreamGuard::StreamGuard(const Stream& stream) : previous_(current_stream(stream.device())) {
  set_current_stream(stream);
}

StreamGuard::~StreamGuard() {
  try {
    set_current_stream(previous_);
  } catch (...) {  // restoring a stream that was current a moment ago cannot fail; never throw
  }
}

Event::Event(Device device, bool enable_timing) : device_(device), timing_(enable_timing) {
  const ember_device_type_v1& t = table_of(device, "Event");
  EMBER_CHECK_NOT_IMPLEMENTED(t.event_create != nullptr,
                              "[Event] device type '{}' has no events (its work runs "
                              "synchronously, so there is nothing to wait for or time)",
                              device.type_name());
  EMBER_CHECK_PLUGIN(t.event_destroy && t.event_record && t.event_query && t.event_synchronize,
                     "[Event] the plugin of device type '{}' offers event_create but not all of "
                     "event_destroy, event_record, event_query and event_synchronize",
                     device.type_name());
  detail::call_checked(
      [&](char* e, size_t cap) {
        return t.event_create(t.ctx, device.index, enable_timing ? EMBER_EVENT_TIMING : 0, &handle_,
                              e, cap);
      },
      "[Event] {} failed", device.str());
}

Event::~Event() {
  if (!handle_) return;
  const ember_device_type_v1& t = device_type(device_.type).table;
  if (t.event_destroy) t.event_destroy(t.ctx, device_.index, handle_);
}

Event::Event(Event&& other) noexcept
    : device_(other.device_),
      handle_(std::exchange(other.handle_, nullptr)),
      timing_(other.timing_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event dead(std::move(*this));  // destroys this one's event on scope exit
    device_ = other.device_;
    handle_ = std::exchange(other.handle_, nullptr);
    timing_ = other.timing_;
  }
  return *this;
}

void Event::record() {
  record(current_stream(device_));
}

void Event::record(const Stream& stream) {
  EMBER_CHECK_TYPE(handle_ != nullptr, "[Event.record] the event was moved from");
  EMBER_CHECK_TYPE(stream.device() == device_,
                   "[Event.record] an event of {} cannot record a stream of {} (make the event on "
                   "the stream's device)",
                   device_.str(), stream.device().str());
  const ember_device_type_v1& t = device_type(device_.type).table;
  detail::call_checked(
      [&](char* e, size_t cap) {
        return t.event_record(t.ctx, device_.index, handle_, stream.handle(), e, cap);
      },
      "[Event.record] {} failed", device_.str());
}

bool Event::query() const {
  EMBER_CHECK_TYPE(handle_ != nullptr, "[Event.query] the event was moved from");
  const ember_device_type_v1& t = device_type(device_.type).table;
  int32_t done = 0;
  detail::call_checked(
      [&](char* e, size_t cap) {
        return t.event_query(t.ctx, device_.index, handle_, &done, e, cap);
      },
      "[Event.query] {} failed", device_.str());
  return done != 0;
}

void Event::synchronize() const {
  EMBER_CHECK_TYPE(handle_ != nullptr, "[Event.synchronize] the event was moved from");
  const ember_device_type_v1& t = device_type(device_.type).table;
  detail::call_checked(
      [&](char* e, size_t cap) {
        return t.event_synchronize(t.ctx, device_.index, handle_, e, cap);
      },
      "[Event.synchronize] {} failed", device_.str());
}

double Event::elapsed_ms(const Event& end) const {
  EMBER_CHECK_TYPE(handle_ != nullptr && end.handle_ != nullptr,
                   "[Event.elapsed_ms] an event was moved from");
  EMBER_CHECK(timing_ && end.timing_,
              "[Event.elapsed_ms] both events need enable_timing=true: got {} and {}", timing_,
              end.timing_);
  EMBER_CHECK_TYPE(end.device_ == device_,
                   "[Event.elapsed_ms] events of different devices: {} and {}", device_.str(),
                   end.device_.str());
  const ember_device_type_v1& t = device_type(device_.type).table;
  EMBER_CHECK_NOT_IMPLEMENTED(t.event_elapsed_ms != nullptr,
                              "[Event.elapsed_ms] device type '{}' cannot time events",
                              device_.type_name());
  double ms = 0;
  detail::call_checked(
      [&](char* e, size_t cap) {
        return t.event_elapsed_ms(t.ctx, device_.index, handle_, end.handle_, &ms, e, cap);
      },
      "[Event.elapsed_ms] {} failed", device_.str());
  return ms;
}

}  // namespace ember
