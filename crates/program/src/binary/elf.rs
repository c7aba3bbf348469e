//! What the ELF file itself says, without debug information: the TLS segment (PT_TLS:
//! `.tdata` initialised + `.tbss` zeroed, per thread) and the data objects of the symbol
//! table with their sizes and sections. Before the `object` crate parses anything, the
//! header and the extent of its tables are checked (`check_header`), so a file that only
//! starts like an ELF file is refused naming its defect instead of read as an empty one.

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
    if data.starts_with(&object::elf::ELFMAG) {
        check_header(data).map_err(|why| format!("it is not a valid ELF file: {why}"))?;
    }
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

/// Checks that an ELF file's header is whole and its fields sane, and that the program
/// and section header tables it points to lie inside the file with entries of the size
/// of its class; the reason names the first defect.
pub(crate) fn check_header(data: &[u8]) -> Result<(), String> {
    let mut h = Header::read(data)?;
    if h.shoff != 0 {
        h.check_sections()?;
    } else if h.shnum != 0 {
        return Err(format!("it claims {} sections at offset 0", h.shnum));
    }
    if h.phnum > 0 {
        if h.phoff == 0 {
            return Err(format!("it claims {} program headers at offset 0", h.phnum));
        }
        let ph_size = if h.wide { 56 } else { 32 };
        if h.phentsize != ph_size {
            return Err(format!(
                "its program header entries are {} bytes, not the {ph_size} of its class",
                h.phentsize
            ));
        }
        h.table_end("program headers", h.phoff, h.phnum, ph_size)?;
    }
    if h.shnum == 0 && h.phnum == 0 {
        return Err("it has neither sections nor segments".to_string());
    }
    Ok(())
}

// The numbers of the System V ABI (object's constants are typed wrappers).
const ELFCLASS32: u8 = 1;
const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const ELFDATA2MSB: u8 = 2;
const EV_CURRENT: u8 = 1;
const PN_XNUM: u64 = 0xffff;
const SHN_XINDEX: u64 = 0xffff;

/// The ELF header's fields `check_header` judges, read from the file's bytes.
struct Header<'a> {
    data: &'a [u8],
    wide: bool,
    big: bool,
    phoff: u64,
    shoff: u64,
    phentsize: u64,
    phnum: u64,
    shentsize: u64,
    shnum: u64,
    shstrndx: u64,
}

impl<'a> Header<'a> {
    /// The identification and the header, whole and of a known class, encoding and version.
    fn read(data: &'a [u8]) -> Result<Header<'a>, String> {
        let length = data.len() as u64;
        if data.len() < 16 {
            return Err(format!(
                "the file is {length} bytes, shorter than the 16 of the ELF identification"
            ));
        }
        let wide = match data[4] {
            ELFCLASS32 => false,
            ELFCLASS64 => true,
            other => {
                return Err(format!(
                    "class {other} is neither 1 (32-bit) nor 2 (64-bit)"
                ))
            }
        };
        let big = match data[5] {
            ELFDATA2LSB => false,
            ELFDATA2MSB => true,
            other => {
                return Err(format!(
                    "data encoding {other} is neither 1 (little-endian) nor 2 (big-endian)"
                ))
            }
        };
        if data[6] != EV_CURRENT {
            return Err(format!("ELF version {} is not 1", data[6]));
        }
        let header_size = if wide { 64 } else { 52 };
        if length < header_size {
            return Err(format!(
                "the file is {length} bytes, shorter than the {header_size}-byte header of its \
                 class"
            ));
        }
        let mut h = Header {
            data,
            wide,
            big,
            phoff: 0,
            shoff: 0,
            phentsize: 0,
            phnum: 0,
            shentsize: 0,
            shnum: 0,
            shstrndx: 0,
        };
        // Fixed offsets of the ELF header (System V ABI): the 64-bit header widens the
        // three address-sized fields (entry, phoff, shoff).
        let rest;
        (h.phoff, h.shoff, rest) = if wide {
            (h.field(32, 8), h.field(40, 8), 52)
        } else {
            (h.field(28, 4), h.field(32, 4), 40)
        };
        h.phentsize = h.field(rest + 2, 2);
        h.phnum = h.field(rest + 4, 2);
        h.shentsize = h.field(rest + 6, 2);
        h.shnum = h.field(rest + 8, 2);
        h.shstrndx = h.field(rest + 10, 2);
        Ok(h)
    }

    /// The unsigned field of `width` bytes at `at`, in the file's byte order.
    fn field(&self, at: usize, width: usize) -> u64 {
        let bytes = &self.data[at..at + width];
        let mut value = 0u64;
        for i in 0..width {
            let byte = if self.big {
                bytes[i]
            } else {
                bytes[width - 1 - i]
            };
            value = value << 8 | u64::from(byte);
        }
        value
    }

    /// A table of `count` entries of `size` bytes at `offset` ends inside the file.
    fn table_end(&self, what: &str, offset: u64, count: u64, size: u64) -> Result<(), String> {
        let length = self.data.len() as u64;
        let end = count
            .checked_mul(size)
            .and_then(|bytes| bytes.checked_add(offset));
        match end {
            Some(end) if end <= length => Ok(()),
            _ => Err(format!(
                "its {what} ({count} of {size} bytes at offset {offset}) end beyond the \
                 file's {length} bytes"
            )),
        }
    }

    /// The section header table: entries of its class's size, inside the file, with a
    /// section name table among them; extended numbering read from section header 0.
    fn check_sections(&mut self) -> Result<(), String> {
        let sh_size = if self.wide { 64 } else { 40 };
        if self.shentsize != sh_size {
            return Err(format!(
                "its section header entries are {} bytes, not the {sh_size} of its class",
                self.shentsize
            ));
        }
        // Extended numbering: with more than 0xff00 sections (or 0xffff segments) the
        // real counts and the string table index live in section header 0.
        if self.shnum == 0 || self.phnum == PN_XNUM || self.shstrndx == SHN_XINDEX {
            self.table_end("section header 0", self.shoff, 1, sh_size)?;
            let at = usize::try_from(self.shoff).map_err(|_| "its section offset is too large")?;
            let (size, link, info) = if self.wide {
                (
                    self.field(at + 32, 8),
                    self.field(at + 40, 4),
                    self.field(at + 44, 4),
                )
            } else {
                (
                    self.field(at + 20, 4),
                    self.field(at + 24, 4),
                    self.field(at + 28, 4),
                )
            };
            if self.shnum == 0 {
                self.shnum = size;
            }
            if self.phnum == PN_XNUM {
                self.phnum = info;
            }
            if self.shstrndx == SHN_XINDEX {
                self.shstrndx = link;
            }
        }
        let (shnum, shstrndx) = (self.shnum, self.shstrndx);
        self.table_end("section headers", self.shoff, shnum, sh_size)?;
        if shnum > 0 && shstrndx == 0 {
            return Err("it has sections but no section name table (e_shstrndx 0)".into());
        }
        if shnum > 0 && shstrndx >= shnum {
            return Err(format!(
                "its section name table index {shstrndx} is not below its {shnum} sections"
            ));
        }
        Ok(())
    }
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
pub(crate) fn demangle(name: &str) -> String {
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

    #[test]
    fn a_file_that_only_starts_like_elf_is_refused_naming_the_defect() {
        let why = |bytes: &[u8]| match read(bytes) {
            Ok(_) => "read without error".to_string(),
            Err(e) => e,
        };
        // 7 bytes of magic (class, data, version) and zeros.
        let mut fake = b"\x7fELF\x02\x01\x01".to_vec();
        fake.resize(1 << 16, 0);
        let e = why(&fake);
        assert!(
            e.contains("not a valid ELF file") && e.contains("neither sections nor segments"),
            "{e}"
        );
        assert!(why(&fake[..40]).contains("shorter than the 64-byte header"));
        assert!(why(&fake[..10]).contains("shorter than the 16"));
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        check_header(&me).unwrap();
        let mut damaged = me.clone();
        // e_shoff (64-bit, little-endian on the hosts this runs on) past the end.
        damaged[40..48].copy_from_slice(&(me.len() as u64).to_le_bytes());
        assert!(
            why(&damaged).contains("section headers"),
            "{}",
            why(&damaged)
        );
        let mut damaged = me.clone();
        damaged[58..60].copy_from_slice(&40u16.to_le_bytes()); // e_shentsize
        assert!(why(&damaged).contains("entries are 40 bytes, not the 64"));
        let mut damaged = me.clone();
        damaged[62..64].copy_from_slice(&u16::MAX.to_le_bytes()); // e_shstrndx = SHN_XINDEX
        assert!(why(&damaged).contains("name table"), "{}", why(&damaged));
        let mut damaged = me.clone();
        damaged[4] = 3;
        assert!(why(&damaged).contains("class 3"));
        let near_end = me.len() as u64 - 8;
        let mut damaged = me;
        damaged[32..40].copy_from_slice(&near_end.to_le_bytes()); // e_phoff
        assert!(
            why(&damaged).contains("program headers"),
            "{}",
            why(&damaged)
        );
    }
}
