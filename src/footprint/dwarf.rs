//! (filled in on its branch)
