//! Root safety through the real binary: what memscope run as root does with files and
//! shared state that another user prepared (issue 25). One test binary, one module per
//! part.

mod root_safety {
    pub mod outputs;
}
