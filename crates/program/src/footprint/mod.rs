//! `memscope footprint BINARY`: a binary's per-thread (TLS) and static data against the
//! caches. The analysis (ELF, DWARF, the objects against the caches, --pid mappings) is
//! `binary`'s, below this room because `sweep` reads each variant's binary with it too;
//! this room holds what is the command's own: its flags and their plan (`params`) and
//! its sections (`view`).

pub mod params;
pub mod view;
