//! What the ELF file itself says, without debug information: the TLS segment (PT_TLS:
//! `.tdata` initialised + `.tbss` zeroed, per thread) and the data objects of the symbol
//! table with their sizes and sections.

use object::read::elf::{ElfFile, FileHeader, ProgramHeader};
use object::{Object, ObjectSection, ObjectSymbol, SectionIndex, SymbolKind};
use serde::{Deserialize, Serialize};

/// The PT_TLS program header: what every thread gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsSegment {
    /// `.tdata`: initialised per-thread data.
    pub initialized_bytes: u64,
    /// `.tdata` + `.tbss`: the per-thread block.
    pub bytes: u64,
    pub align: u64,
}

/// A data object of the symbol table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataSymbol {
    pub name: String,
    /// ".tdata", ".tbss", ".data", ".bss", ".rodata" …
    pub section: String,
    pub size: u64,
    /// The address, or the offset in the TLS block for a TLS symbol.
    pub address: u64,
    pub tls: bool,
}

/// What the ELF file gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElfFacts {
    pub tls: Option<TlsSegment>,
    pub symbols: Vec<DataSymbol>,
    /// Sizes of the data sections: (name, bytes).
    pub sections: Vec<(String, u64)>,
    /// A `.symtab` was present (not stripped); else only dynamic symbols were read.
    pub symtab: bool,
    /// `.debug_info` was present.
    pub debug_info: bool,
}

/// Reads an ELF file (32- or 64-bit, either byte order); an error names what it is not.
pub fn read(data: &[u8]) -> Result<ElfFacts, String> {
    match object::FileKind::parse(data) {
        Ok(object::FileKind::Elf64) => {
            read_elf::<object::elf::FileHeader64<object::Endianness>>(data)
        }
        Ok(object::FileKind::Elf32) => {
            read_elf::<object::elf::FileHeader32<object::Endianness>>(data)
        }
        Ok(other) => Err(format!("it is a {other:?} file, not ELF")),
        Err(_) => Err("it is not an ELF file (no ELF header)".to_string()),
    }
}

fn read_elf<Elf: FileHeader<Endian = object::Endianness>>(data: &[u8]) -> Result<ElfFacts, String> {
    let file =
        ElfFile::<Elf>::parse(data).map_err(|e| format!("its ELF headers do not read: {e}"))?;
    let endian = file.endian();
    let tls = file
        .elf_program_headers()
        .iter()
        .find(|p| p.p_type(endian) == object::elf::PT_TLS)
        .map(|p| TlsSegment {
            initialized_bytes: p.p_filesz(endian).into(),
            bytes: p.p_memsz(endian).into(),
            align: p.p_align(endian).into(),
        });
    let section_name = |index: Option<SectionIndex>| {
        index
            .and_then(|i| file.section_by_index(i).ok())
            .and_then(|s| s.name().ok().map(str::to_string))
            .unwrap_or_default()
    };
    let symtab = file.symbol_table().is_some();
    let symbols: Vec<_> = if symtab {
        file.symbols().collect()
    } else {
        file.dynamic_symbols().collect()
    };
    let mut out: Vec<DataSymbol> = symbols
        .iter()
        .filter(|s| matches!(s.kind(), SymbolKind::Data | SymbolKind::Tls) && s.size() > 0)
        .filter(|s| is_data_section(&section_name(s.section_index())))
        .filter_map(|s| {
            let name = demangle(s.name().ok()?);
            Some(DataSymbol {
                name,
                section: section_name(s.section_index()),
                size: s.size(),
                address: s.address(),
                tls: s.kind() == SymbolKind::Tls,
            })
        })
        .collect();
    out.sort_by(|a, b| b.size.cmp(&a.size).then(a.name.cmp(&b.name)));
    out.dedup_by(|a, b| a.name == b.name && a.address == b.address);
    let sections = file
        .sections()
        .filter_map(|s| {
            let name = s.name().ok()?;
            [
                ".tdata",
                ".tbss",
                ".data",
                ".bss",
                ".rodata",
                ".data.rel.ro",
            ]
            .contains(&name)
            .then(|| (name.to_string(), s.size()))
        })
        .collect();
    Ok(ElfFacts {
        tls,
        symbols: out,
        sections,
        symtab,
        debug_info: file.section_by_name(".debug_info").is_some()
            || file.section_by_name(".zdebug_info").is_some(),
    })
}

/// The sections that hold program data (not notes, not code).
fn is_data_section(name: &str) -> bool {
    [
        ".tdata", ".tbss", ".data", ".bss", ".rodata", ".lbss", ".ldata", ".lrodata",
    ]
    .iter()
    .any(|prefix| name == *prefix || name.starts_with(&format!("{prefix}.")))
}

/// Rust symbols demangled (without the hash); C and other names as they are.
pub fn demangle(name: &str) -> String {
    match rustc_demangle::try_demangle(name) {
        Ok(d) => format!("{d:#}"),
        Err(_) => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_binary_is_read_and_junk_is_refused() {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let facts = read(&me).unwrap();
        assert!(facts.symtab);
        assert!(facts.symbols.iter().any(|s| s.size > 0));
        assert!(read(b"definitely not an ELF file")
            .unwrap_err()
            .contains("not an ELF"));
        assert_eq!(
            demangle("_ZN4core3num7dec2flt5table17POWER_OF_FIVE_128E"),
            "core::num::dec2flt::table::POWER_OF_FIVE_128"
        );
        assert_eq!(demangle("tcache"), "tcache");
        let truncated = &me[..200];
        assert!(read(truncated).is_err());
    }
}
