// Symbol visibility for libember_core.so: everything is hidden unless marked EMBER_API.
#pragma once

/** Marks a declaration as part of the core library's public ABI. */
#if defined(EMBER_CORE_BUILDING)
#define EMBER_API __attribute__((visibility("default")))
#else
#define EMBER_API
#endif
