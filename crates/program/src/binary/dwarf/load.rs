//! Loading the DWARF sections of an object file, decompressed, and with a relocatable
//! object's (`cc -c`) relocations applied to them.

use std::borrow::Cow;

use gimli::{EndianSlice, RunTimeEndian, SectionId};
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationKind};

/// The section reader the module works with.
pub(super) type R<'a> = EndianSlice<'a, RunTimeEndian>;

/// The file's DWARF sections, owned or borrowed from the file.
pub(super) struct Sections<'data> {
    sections: gimli::DwarfSections<Cow<'data, [u8]>>,
    endian: RunTimeEndian,
}

/// x86-64's R_X86_64_DTPOFF64 and R_X86_64_DTPOFF32: a TLS variable's offset in its
/// module's block, which the DWARF of a relocatable object refers to.
const R_X86_64_DTPOFF64: u32 = 17;
const R_X86_64_DTPOFF32: u32 = 21;
/// AArch64's R_AARCH64_TLS_DTPREL64 (the same, for AArch64).
const R_AARCH64_TLS_DTPREL64: u32 = 1028;

impl<'data> Sections<'data> {
    /// Ok(None) when the file has no .debug_info; Err when it is not an object file or a
    /// section cannot be read or decompressed.
    pub(super) fn load(data: &'data [u8]) -> Result<Option<Self>, String> {
        let file = object::File::parse(data)
            .map_err(|e| format!("The file is not a readable object file: {e}."))?;
        if file.section_by_name(SectionId::DebugInfo.name()).is_none() {
            return Ok(None);
        }
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let relocatable = file.kind() == object::ObjectKind::Relocatable;
        let sections = gimli::DwarfSections::load(|id: SectionId| {
            load_section(&file, id.name(), relocatable)
        })?;
        Ok(Some(Sections { sections, endian }))
    }

    /// The sections as gimli's `Dwarf`, borrowing from `self`.
    pub(super) fn dwarf(&self) -> gimli::Dwarf<R<'_>> {
        self.sections
            .borrow(|section| EndianSlice::new(section.as_ref(), self.endian))
    }
}

fn load_section<'data>(
    file: &object::File<'data>,
    name: &str,
    relocatable: bool,
) -> Result<Cow<'data, [u8]>, String> {
    let Some(section) = file.section_by_name(name) else {
        return Ok(Cow::Borrowed(&[]));
    };
    let data = section
        .uncompressed_data()
        .map_err(|e| format!("The section {name} could not be read or decompressed: {e}."))?;
    if !relocatable || section.relocations().next().is_none() {
        return Ok(data);
    }
    let mut bytes = data.into_owned();
    for (offset, relocation) in section.relocations() {
        let r_type = match relocation.flags() {
            RelocationFlags::Elf { r_type } => Some(r_type.0),
            _ => None,
        };
        let tls = matches!(
            r_type,
            Some(R_X86_64_DTPOFF64 | R_X86_64_DTPOFF32 | R_AARCH64_TLS_DTPREL64)
        );
        if relocation.kind() != RelocationKind::Absolute && !tls {
            continue;
        }
        let symbol_value = match relocation.target() {
            object::RelocationTarget::Symbol(index) => match file.symbol_by_index(index) {
                Ok(symbol) => symbol.address(),
                Err(_) => continue,
            },
            _ => continue,
        };
        let size = match (relocation.size(), r_type) {
            (0, Some(R_X86_64_DTPOFF64 | R_AARCH64_TLS_DTPREL64)) => 64,
            (0, Some(R_X86_64_DTPOFF32)) => 32,
            (size, _) => size,
        };
        let Ok(start) = usize::try_from(offset) else {
            continue;
        };
        let width = usize::from(size / 8);
        let Some(slot) = bytes.get_mut(start..start.saturating_add(width)) else {
            continue;
        };
        let addend = if relocation.has_implicit_addend() {
            read_uint(slot, file.is_little_endian()) as i64
        } else {
            relocation.addend()
        };
        let value = symbol_value.wrapping_add_signed(addend);
        write_uint(slot, value, file.is_little_endian());
    }
    Ok(Cow::Owned(bytes))
}

fn read_uint(slot: &[u8], little: bool) -> u64 {
    let mut value = 0u64;
    for (i, byte) in slot.iter().enumerate() {
        let shift = if little { i } else { slot.len() - 1 - i };
        value |= u64::from(*byte) << (8 * shift);
    }
    value
}

fn write_uint(slot: &mut [u8], value: u64, little: bool) {
    let len = slot.len();
    for (i, byte) in slot.iter_mut().enumerate() {
        let shift = if little { i } else { len - 1 - i };
        *byte = (value >> (8 * shift)) as u8;
    }
}
