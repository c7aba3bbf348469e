//! `memscope footprint BINARY`: a binary's per-thread (TLS) and static data against the
//! measured caches.

pub mod dwarf;
