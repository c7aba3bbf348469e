//! (the DWARF reader is filled in on its branch; this stand-in has its API)

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variable {
    pub name: String,
    pub type_name: String,
    pub size: u64,
    pub tls: bool,
    pub address: Option<u64>,
    pub dimensions: Vec<(u64, Option<String>)>,
    pub layout: Option<Layout>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    pub name: String,
    pub size: u64,
    pub members: Vec<Member>,
    pub holes: Vec<(u64, u64)>,
    pub padding: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub name: String,
    pub type_name: String,
    pub offset: u64,
    pub size: u64,
    pub bits: Option<(u64, u64)>,
}

pub fn variables(_data: &[u8]) -> Result<Vec<Variable>, String> {
    Ok(Vec::new())
}
